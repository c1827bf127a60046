//===- TesselToLinalg.h - Shared lowering of tessel ops ---------*- C++ -*-===//

#ifndef TESSEL_PASSES_TESSELTOLINALG_TESSELTOLINALG_H
#define TESSEL_PASSES_TESSELTOLINALG_TESSELTOLINALG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace tessel {

/// Converts tensor types for the lowered form: unsigned integer elements
/// become signless (linalg and arith only take signless integers), and
/// quantized elements their signless storage integers.
class TesselToLinalgTypeConverter : public mlir::TypeConverter {
public:
  TesselToLinalgTypeConverter();
};

/// The compile-time values of kernel arguments. Kernel formation passes
/// large constants (weights) to kernels as arguments so that they become the
/// artifact's weights; a lowering that computes something from a weight at
/// compile time (a quantized product's zero-point terms) finds it here.
class KernelConstants {
public:
  explicit KernelConstants(mlir::ModuleOp module);
  /// The value of `value` if it is a constant or a kernel argument that the
  /// kernel's call passes a constant; null otherwise.
  mlir::ElementsAttr lookup(mlir::Value value) const;

private:
  llvm::DenseMap<mlir::Value, mlir::ElementsAttr> arguments;
};

/// Adds the patterns that lower every tessel op to linalg/tensor/arith.
void populateTesselToLinalgPatterns(const mlir::TypeConverter &converter,
                                    const KernelConstants &constants,
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
void populateQuantizationToLinalgPatterns(const mlir::TypeConverter &converter,
                                          mlir::RewritePatternSet &patterns);
void populateRecurrenceToLinalgPatterns(const mlir::TypeConverter &converter,
                                        mlir::RewritePatternSet &patterns);
void populateQuantizedProductsToLinalgPatterns(const mlir::TypeConverter &converter,
                                               const KernelConstants &constants,
                                               mlir::RewritePatternSet &patterns);

} // namespace tessel

#endif // TESSEL_PASSES_TESSELTOLINALG_TESSELTOLINALG_H
