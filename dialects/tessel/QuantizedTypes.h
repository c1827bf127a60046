//===- QuantizedTypes.h - Tessel's use of MLIR's quant types ----*- C++ -*-===//
//
// Quantized tensors carry their quantization in their element type, one of
// MLIR's uniform quant types: `!quant.uniform<u8:f32, 0.02:128>` per tensor,
// `!quant.uniform<i8:f32:0, {0.1, 0.2}>` per axis. Every pass and target
// reads scale and zero point from the type, so they agree on them.
//
// In memory a quantized element is its storage integer; at the tessel level
// that integer is spelled the ONNX way (`ui8` for unsigned storage, `i8`
// for signed), and a quantized constant holds its storage values.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECTS_TESSEL_QUANTIZEDTYPES_H
#define TESSEL_DIALECTS_TESSEL_QUANTIZEDTYPES_H

#include "mlir/Dialect/Quant/IR/QuantTypes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include <optional>

namespace tessel {

/// The uniform quantized element type of `type` (a tensor or an element
/// type), per tensor or per axis; null for anything else.
mlir::quant::QuantizedType getQuantizedType(mlir::Type type);

/// Whether `type` (a tensor or an element type) is uniformly quantized.
inline bool isQuantized(mlir::Type type) { return bool(getQuantizedType(type)); }

/// The index along `axis` of the element at row-major position `linear` of
/// a tensor of `shape`: the channel of a per-axis quantized element.
inline int64_t indexAlong(int64_t linear, llvm::ArrayRef<int64_t> shape, int64_t axis) {
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d > axis; --d)
    stride *= shape[d];
  return (linear / stride) % shape[axis];
}

/// The storage integer of a quantized element type, signed `iN` or unsigned
/// `uiN`.
mlir::IntegerType storageElementType(mlir::quant::QuantizedType type);

/// A tensor type with quantized elements replaced by their storage type;
/// any other type is returned unchanged.
mlir::Type storageType(mlir::Type type);

/// The expressed (real) type of quantized elements (f32, f16); `type`
/// itself for other element types.
mlir::Type expressedType(mlir::Type type);

/// Scale and zero point of one channel (any channel of a per-tensor type).
struct QuantParams {
  double scale;
  int64_t zeroPoint;
};
QuantParams quantParams(mlir::quant::QuantizedType type, int64_t channel = 0);

/// Channels with their own parameters: 1 per tensor, the scale count per axis.
int64_t quantChannelCount(mlir::quant::QuantizedType type);

/// The axis of a per-axis type; nullopt per tensor.
std::optional<int32_t> quantizedAxis(mlir::quant::QuantizedType type);

/// Whether every channel's parameters are those of channel 0.
bool hasUniformParams(mlir::quant::QuantizedType type);

/// A per-tensor type with `bits`-wide storage (full range).
mlir::quant::UniformQuantizedType perTensorType(mlir::Type expressed, bool isSigned,
                                                unsigned bits, double scale,
                                                int64_t zeroPoint);

/// A per-axis type with `bits`-wide storage (full range).
mlir::quant::UniformQuantizedPerAxisType
perAxisType(mlir::Type expressed, bool isSigned, unsigned bits,
            llvm::ArrayRef<double> scales, llvm::ArrayRef<int64_t> zeroPoints,
            int32_t axis);

/// The i32 type of an accumulator (or bias) of a product of `input` and
/// `weight`: zero point 0 and the products of their scales (rounded to the
/// expressed type), along `axis` when the weight is per axis.
mlir::quant::QuantizedType accumulatorType(mlir::quant::QuantizedType input,
                                           mlir::quant::QuantizedType weight, int32_t axis);

/// `type` with the parameters of a per-axis type moved along with its axis
/// by a transpose (result axis i is operand axis perm[i]).
mlir::Type transposeQuantizedType(mlir::Type elementType, llvm::ArrayRef<int64_t> perm);

/// The storage value that quantizing `real` to the per-tensor `type` gives
/// (ONNX QuantizeLinear: divided in f32, rounded half to even, saturated).
int64_t quantizeScalar(double real, mlir::quant::QuantizedType type);

/// `value` rounded to the expressed type `type` (f32 or f16), as a double:
/// ONNX computes quantization parameters in the scales' type.
double roundToExpressed(mlir::Type type, double value);

/// The factor that requantizes an accumulator of a product of operands with
/// scales `lhsScale` and `rhsScale` to `resultScale`, computed as ONNX's
/// QLinearConv and QLinearMatMul compute it: (lhs * rhs) / result, each
/// step rounded to the expressed type.
double requantizationMultiplier(mlir::Type expressed, double lhsScale, double rhsScale,
                                double resultScale);

/// Checks a quantized matrix product or convolution: `input` per tensor,
/// `weight` per tensor or per axis along `weightChannelAxis`, `bias` (if
/// any) i32 with zero point 0 and the scales input * weight, and `result`
/// 8-bit per tensor, or an i32 accumulator with the bias's scales along
/// `resultChannelAxis`. All of 8-bit storage and one expressed type.
mlir::LogicalResult verifyQuantizedProduct(mlir::Operation *op, mlir::Type input,
                                           mlir::Type weight, mlir::Type bias,
                                           mlir::Type result, int64_t weightChannelAxis,
                                           int64_t resultChannelAxis);

/// Whether types that an op infers are compatible with the ones it has:
/// equal, or of equal shape where the inferred element type is the
/// expressed type of a quantized one (see inferredElementType).
bool compatibleInferredTypes(mlir::TypeRange inferred, mlir::TypeRange actual);

/// Checks every quantized operand and result type of `op`: a per-axis type
/// needs its axis within the tensor's rank and one parameter per index of it
/// (or one for all). Every tessel op checks this (QuantizedTypesConsistent).
mlir::LogicalResult verifyQuantizedTypes(mlir::Operation *op);

/// Whether an operand or result of `op` is quantized per axis: passes that
/// move axes around (layout changes, reshapes) leave such ops alone.
bool hasPerAxisQuantization(mlir::Operation *op);

/// The element type ops infer for results computed from `operand`: its
/// expressed type when quantized, since the result's quantization is the
/// op's own choice; `operand` itself otherwise.
mlir::Type inferredElementType(mlir::Type operand);

} // namespace tessel

#endif // TESSEL_DIALECTS_TESSEL_QUANTIZEDTYPES_H
