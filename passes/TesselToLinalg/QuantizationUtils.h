//===- QuantizationUtils.h - What the quantized lowerings share -*- C++ -*-===//
//
// Quantization parameters as operands and constants of generics, and the
// integer conversions every quantized formula ends with.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_TESSELTOLINALG_QUANTIZATIONUTILS_H
#define TESSEL_PASSES_TESSELTOLINALG_QUANTIZATIONUTILS_H

#include "dialects/tessel/QuantizedTypes.h"

#include "mlir/IR/Builders.h"

namespace tessel {

/// `values` as an arith constant shaped to broadcast along `axis` of a
/// rank-`rank` tensor ([1, ..., C, ..., 1]).
mlir::Value channelConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type elementType,
                            llvm::ArrayRef<double> values, int64_t axis, int64_t rank);

/// The scale and zero point of a quantized tensor inside an elementwise
/// generic over it, in the `real` type: constants of the body per tensor,
/// operands broadcast along the axis per axis.
struct ChannelParameters {
  ChannelParameters(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                    mlir::Type real);

  /// Appends the per-axis operands (if any) to the generic's `operands`.
  void addOperands(llvm::SmallVectorImpl<mlir::Value> &operands);
  /// The parameters of the current element, given the body's arguments.
  mlir::Value scale(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange args) const;
  mlir::Value zeroPoint(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange args) const;

  mlir::quant::QuantizedType type;
  mlir::Type real;
  mlir::Value scaleTensor, zeroPointTensor;
  size_t firstOperand = 0;
};

/// `integer` (a storage value) widened to i32 by its signedness.
mlir::Value extendToI32(mlir::OpBuilder &b, mlir::Location loc, mlir::Value integer,
                        bool isUnsigned);

/// A storage constant (signless, of the storage width) holding `value`.
mlir::Value storageConstant(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::quant::QuantizedType type, int64_t value);

/// A real number that is already an integer (or NaN or infinite), clamped
/// into `type`'s storage range and converted to its storage integer.
mlir::Value saturateToStorage(mlir::OpBuilder &b, mlir::Location loc, mlir::Value real,
                              mlir::quant::QuantizedType type);

/// Likewise for a real integer known to lie within i32's range: converted
/// first and clamped in integers, which vectors do on twice the lanes of
/// f64 and fold into saturating packs.
mlir::Value saturateI32ToStorage(mlir::OpBuilder &b, mlir::Location loc, mlir::Value real,
                                 mlir::quant::QuantizedType type);

} // namespace tessel

#endif // TESSEL_PASSES_TESSELTOLINALG_QUANTIZATIONUTILS_H
