//===- TesselToLinalg.h - Shared lowering of tessel ops ---------*- C++ -*-===//

#ifndef TESSEL_PASSES_TESSELTOLINALG_TESSELTOLINALG_H
#define TESSEL_PASSES_TESSELTOLINALG_TESSELTOLINALG_H

#include "mlir/Transforms/DialectConversion.h"

namespace tessel {

/// Converts tensor types for the lowered form: unsigned integer elements
/// become signless (linalg and arith only take signless integers).
class TesselToLinalgTypeConverter : public mlir::TypeConverter {
public:
  TesselToLinalgTypeConverter();
};

/// Adds the patterns that lower every tessel op to linalg/tensor/arith.
void populateTesselToLinalgPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);

// The patterns of each op family (one source file each).
void populateElementwiseToLinalgPatterns(const mlir::TypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
void populateActivationsToLinalgPatterns(const mlir::TypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
void populateContractionToLinalgPatterns(const mlir::TypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
void populateWindowToLinalgPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);
void populateReductionToLinalgPatterns(const mlir::TypeConverter &converter,
                                       mlir::RewritePatternSet &patterns);
void populateIndexingToLinalgPatterns(const mlir::TypeConverter &converter,
                                      mlir::RewritePatternSet &patterns);
void populateNormalizationToLinalgPatterns(const mlir::TypeConverter &converter,
                                           mlir::RewritePatternSet &patterns);
void populateDataMovementToLinalgPatterns(const mlir::TypeConverter &converter,
                                          mlir::RewritePatternSet &patterns);

} // namespace tessel

#endif // TESSEL_PASSES_TESSELTOLINALG_TESSELTOLINALG_H
