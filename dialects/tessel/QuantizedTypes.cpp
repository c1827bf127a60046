//===- QuantizedTypes.cpp - Tessel's use of MLIR's quant types ------------===//

#include "dialects/tessel/QuantizedTypes.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APFloat.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tessel {

quant::QuantizedType getQuantizedType(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (isa<quant::UniformQuantizedType, quant::UniformQuantizedPerAxisType>(element))
    return cast<quant::QuantizedType>(element);
  return {};
}

IntegerType storageElementType(quant::QuantizedType type) {
  return IntegerType::get(type.getContext(), type.getStorageTypeIntegralWidth(),
                          type.isSigned() ? IntegerType::Signless : IntegerType::Unsigned);
}

Type storageType(Type type) {
  quant::QuantizedType quantized = getQuantizedType(type);
  if (!quantized)
    return type;
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(storageElementType(quantized));
  return storageElementType(quantized);
}

Type expressedType(Type type) {
  if (quant::QuantizedType quantized = getQuantizedType(type))
    return quantized.getExpressedType();
  return getElementTypeOrSelf(type);
}

QuantParams quantParams(quant::QuantizedType type, int64_t channel) {
  if (auto perTensor = dyn_cast<quant::UniformQuantizedType>(type))
    return {perTensor.getScale(), perTensor.getZeroPoint()};
  auto perAxis = cast<quant::UniformQuantizedPerAxisType>(type);
  return {perAxis.getScales()[channel], perAxis.getZeroPoints()[channel]};
}

int64_t quantChannelCount(quant::QuantizedType type) {
  if (auto perAxis = dyn_cast<quant::UniformQuantizedPerAxisType>(type))
    return perAxis.getScales().size();
  return 1;
}

std::optional<int32_t> quantizedAxis(quant::QuantizedType type) {
  if (auto perAxis = dyn_cast<quant::UniformQuantizedPerAxisType>(type))
    return perAxis.getQuantizedDimension();
  return std::nullopt;
}

bool hasUniformParams(quant::QuantizedType type) {
  QuantParams first = quantParams(type, 0);
  for (int64_t channel = 1, count = quantChannelCount(type); channel < count; ++channel) {
    QuantParams params = quantParams(type, channel);
    if (params.scale != first.scale || params.zeroPoint != first.zeroPoint)
      return false;
  }
  return true;
}

quant::UniformQuantizedType perTensorType(Type expressed, bool isSigned, unsigned bits,
                                          double scale, int64_t zeroPoint) {
  MLIRContext *context = expressed.getContext();
  return quant::UniformQuantizedType::get(
      isSigned ? quant::QuantizationFlags::Signed : 0, IntegerType::get(context, bits),
      expressed, scale, zeroPoint,
      quant::QuantizedType::getDefaultMinimumForInteger(isSigned, bits),
      quant::QuantizedType::getDefaultMaximumForInteger(isSigned, bits));
}

quant::UniformQuantizedPerAxisType perAxisType(Type expressed, bool isSigned, unsigned bits,
                                               ArrayRef<double> scales,
                                               ArrayRef<int64_t> zeroPoints, int32_t axis) {
  MLIRContext *context = expressed.getContext();
  return quant::UniformQuantizedPerAxisType::get(
      isSigned ? quant::QuantizationFlags::Signed : 0, IntegerType::get(context, bits),
      expressed, scales, zeroPoints, axis,
      quant::QuantizedType::getDefaultMinimumForInteger(isSigned, bits),
      quant::QuantizedType::getDefaultMaximumForInteger(isSigned, bits));
}

quant::QuantizedType accumulatorType(quant::QuantizedType input,
                                     quant::QuantizedType weight, int32_t axis) {
  Type expressed = input.getExpressedType();
  double inputScale = quantParams(input).scale;
  if (!quantizedAxis(weight))
    return perTensorType(expressed, true, 32,
                         roundToExpressed(expressed, inputScale * quantParams(weight).scale),
                         0);
  SmallVector<double> scales;
  for (int64_t channel = 0; channel < quantChannelCount(weight); ++channel)
    scales.push_back(
        roundToExpressed(expressed, inputScale * quantParams(weight, channel).scale));
  return perAxisType(expressed, true, 32, scales, SmallVector<int64_t>(scales.size(), 0),
                     axis);
}

Type transposeQuantizedType(Type elementType, ArrayRef<int64_t> perm) {
  auto perAxis = dyn_cast<quant::UniformQuantizedPerAxisType>(elementType);
  if (!perAxis)
    return elementType;
  int32_t axis = perAxis.getQuantizedDimension();
  auto moved = llvm::find(perm, axis);
  if (moved == perm.end())
    return elementType;
  return quant::UniformQuantizedPerAxisType::get(
      perAxis.getFlags(), perAxis.getStorageType(), perAxis.getExpressedType(),
      perAxis.getScales(), perAxis.getZeroPoints(), moved - perm.begin(),
      perAxis.getStorageTypeMin(), perAxis.getStorageTypeMax());
}

static llvm::APFloat toExpressed(Type type, double value) {
  llvm::APFloat result(value);
  bool losesInfo;
  result.convert(cast<FloatType>(type).getFloatSemantics(),
                 llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return result;
}

static double toDouble(llvm::APFloat value) {
  bool losesInfo;
  value.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return value.convertToDouble();
}

double roundToExpressed(Type type, double value) {
  return toDouble(toExpressed(type, value));
}

double requantizationMultiplier(Type expressed, double lhsScale, double rhsScale,
                                double resultScale) {
  llvm::APFloat product = toExpressed(expressed, lhsScale);
  product.multiply(toExpressed(expressed, rhsScale), llvm::APFloat::rmNearestTiesToEven);
  product.divide(toExpressed(expressed, resultScale), llvm::APFloat::rmNearestTiesToEven);
  return toDouble(product);
}

/// Relative difference below which two scales are the same (one computed in
/// double, the other in the expressed type).
static bool sameScale(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b));
}

LogicalResult verifyQuantizedProduct(Operation *op, Type input, Type weight, Type bias,
                                     Type result, int64_t weightChannelAxis,
                                     int64_t resultChannelAxis) {
  quant::QuantizedType inputType = getQuantizedType(input);
  quant::QuantizedType weightType = getQuantizedType(weight);
  quant::QuantizedType resultType = getQuantizedType(result);
  quant::QuantizedType biasType = bias ? getQuantizedType(bias) : nullptr;
  if (!inputType || !weightType || !resultType || (bias && !biasType))
    return op->emitOpError("quantized operands need quantized operands and result "
                           "throughout");
  Type expressed = inputType.getExpressedType();
  for (quant::QuantizedType type : {weightType, resultType, biasType})
    if (type && type.getExpressedType() != expressed)
      return op->emitOpError("quantized types must share the expressed type ") << expressed;
  if (quantizedAxis(inputType))
    return op->emitOpError("the input must be quantized per tensor");
  if (inputType.getStorageTypeIntegralWidth() != 8 ||
      weightType.getStorageTypeIntegralWidth() != 8)
    return op->emitOpError("quantized operands must have 8-bit storage");
  if (std::optional<int32_t> axis = quantizedAxis(weightType); axis && *axis != weightChannelAxis)
    return op->emitOpError("the weight may be quantized per axis along axis ")
           << weightChannelAxis << " only, not " << *axis;

  // The scales of the accumulator, channel by channel.
  double inputScale = quantParams(inputType).scale;
  auto accumulatorScale = [&](int64_t channel) {
    return inputScale * quantParams(weightType, quantChannelCount(weightType) == 1 ? 0 : channel)
                            .scale;
  };
  auto verifyAccumulator = [&](quant::QuantizedType type, StringRef what,
                               int64_t axis) -> LogicalResult {
    if (type.getStorageTypeIntegralWidth() != 32 || !type.isSigned())
      return op->emitOpError() << what << " must have i32 storage";
    if (std::optional<int32_t> typeAxis = quantizedAxis(type); typeAxis && *typeAxis != axis)
      return op->emitOpError() << what << " may be quantized per axis along axis " << axis
                               << " only";
    int64_t channels = quantChannelCount(type);
    if (channels != 1 && quantChannelCount(weightType) != 1 &&
        channels != quantChannelCount(weightType))
      return op->emitOpError() << what << " has " << channels << " channels, the weight "
                               << quantChannelCount(weightType);
    for (int64_t channel = 0; channel < std::max(channels, quantChannelCount(weightType));
         ++channel) {
      QuantParams params = quantParams(type, channels == 1 ? 0 : channel);
      if (params.zeroPoint != 0)
        return op->emitOpError() << what << " must have zero point 0";
      if (!sameScale(params.scale, accumulatorScale(channel)))
        return op->emitOpError()
               << what << " scale " << params.scale << " of channel " << channel
               << " is not input scale x weight scale (" << accumulatorScale(channel) << ")";
    }
    return success();
  };
  if (biasType && failed(verifyAccumulator(biasType, "the bias", 0)))
    return failure();
  if (resultType.getStorageTypeIntegralWidth() == 32)
    return verifyAccumulator(resultType, "an i32 result", resultChannelAxis);
  if (resultType.getStorageTypeIntegralWidth() != 8 || quantizedAxis(resultType))
    return op->emitOpError("a quantized result must be 8-bit per tensor, or an i32 "
                           "accumulator");
  return success();
}

bool compatibleInferredTypes(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [expected, given] : llvm::zip(inferred, actual)) {
    if (expected == given)
      continue;
    auto expectedTensor = dyn_cast<RankedTensorType>(expected);
    auto givenTensor = dyn_cast<RankedTensorType>(given);
    if (!expectedTensor || !givenTensor ||
        expectedTensor.getShape() != givenTensor.getShape() || !isQuantized(givenTensor) ||
        expressedType(givenTensor) != expectedTensor.getElementType())
      return false;
  }
  return true;
}

static LogicalResult verifyQuantizedTensor(Operation *op, Type type) {
  quant::QuantizedType quantized = getQuantizedType(type);
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!quantized || !tensor)
    return success();
  std::optional<int32_t> axis = quantizedAxis(quantized);
  if (!axis)
    return success();
  if (*axis >= tensor.getRank())
    return op->emitOpError("quantization axis ")
           << *axis << " is out of range for " << type;
  int64_t extent = tensor.getDimSize(*axis), channels = quantChannelCount(quantized);
  if (!ShapedType::isDynamic(extent) && channels != 1 && channels != extent)
    return op->emitOpError("has ") << channels << " quantization parameters along axis "
                                   << *axis << " of extent " << extent << " in " << type;
  return success();
}

LogicalResult verifyQuantizedTypes(Operation *op) {
  for (Type type : op->getOperandTypes())
    if (failed(verifyQuantizedTensor(op, type)))
      return failure();
  for (Type type : op->getResultTypes())
    if (failed(verifyQuantizedTensor(op, type)))
      return failure();
  return success();
}

bool hasPerAxisQuantization(Operation *op) {
  auto perAxis = [](Type type) {
    quant::QuantizedType quantized = getQuantizedType(type);
    return quantized && quantizedAxis(quantized);
  };
  return llvm::any_of(op->getOperandTypes(), perAxis) ||
         llvm::any_of(op->getResultTypes(), perAxis);
}

Type inferredElementType(Type operand) { return expressedType(operand); }

int64_t quantizeScalar(double real, quant::QuantizedType type) {
  QuantParams params = quantParams(type);
  double scaled = std::nearbyint(static_cast<float>(real) / static_cast<float>(params.scale));
  return std::clamp<int64_t>(static_cast<int64_t>(scaled) + params.zeroPoint,
                             type.getStorageTypeMin(), type.getStorageTypeMax());
}

} // namespace tessel
