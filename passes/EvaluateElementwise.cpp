//===- EvaluateElementwise.cpp - Elementwise ops on one number ------------===//
//
// Each formula is the one the shared lowering gives the op (Activations.cpp,
// Elementwise.cpp), in float arithmetic, so that a table computed here holds
// what the kernels would have computed.
//
//===----------------------------------------------------------------------===//

#include "passes/EvaluateElementwise.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace tessel {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float softplus(float x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

float elu(float x, float alpha) { return x < 0 ? alpha * std::expm1(x) : x; }

/// round(x / scale) + zero point, saturated: ONNX's QuantizeLinear.
float quantize(float x, quant::QuantizedType type) {
  QuantParams params = quantParams(type);
  float scaled = std::nearbyint(x / static_cast<float>(params.scale)) + params.zeroPoint;
  if (std::isnan(scaled))
    return type.getStorageTypeMin();
  return std::clamp<float>(scaled, type.getStorageTypeMin(), type.getStorageTypeMax());
}

/// (q - zero point) * scale: ONNX's DequantizeLinear.
float dequantize(float q, quant::QuantizedType type) {
  QuantParams params = quantParams(type);
  return (q - static_cast<float>(params.zeroPoint)) * static_cast<float>(params.scale);
}

/// The single value of a scalar bound of clip.
std::optional<float> scalarConstant(Value value) {
  DenseElementsAttr attr;
  if (!value || !matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1 ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToFloat();
}

} // namespace

std::optional<float> evaluateElementwise(Operation *op, ArrayRef<float> operands) {
  float x = operands.empty() ? 0.0f : operands[0];
  auto perTensor = [](Type type) -> quant::QuantizedType {
    quant::QuantizedType quantized = getQuantizedType(type);
    return quantized && !quantizedAxis(quantized) ? quantized : nullptr;
  };
  // Quantized values appear as their storage; other ops compute on f32.
  for (Type type : op->getResultTypes())
    if (!isa<QuantizeOp>(op) && !getElementTypeOrSelf(type).isF32())
      return std::nullopt;
  return llvm::TypeSwitch<Operation *, std::optional<float>>(op)
      .Case([&](QuantizeOp quantizeOp) -> std::optional<float> {
        if (quant::QuantizedType type = perTensor(quantizeOp.getType()))
          return quantize(x, type);
        return std::nullopt;
      })
      .Case([&](DequantizeOp dequantizeOp) -> std::optional<float> {
        if (quant::QuantizedType type = perTensor(dequantizeOp.getInput().getType()))
          return dequantize(x, type);
        return std::nullopt;
      })
      .Case([&](AddOp) { return operands[0] + operands[1]; })
      .Case([&](SubOp) { return operands[0] - operands[1]; })
      .Case([&](MulOp) { return operands[0] * operands[1]; })
      .Case([&](DivOp) { return operands[0] / operands[1]; })
      .Case([&](MinOp) { return std::isnan(x) || std::isnan(operands[1]) ? NAN : std::min(x, operands[1]); })
      .Case([&](MaxOp) { return std::isnan(x) || std::isnan(operands[1]) ? NAN : std::max(x, operands[1]); })
      .Case([&](PowOp) { return std::pow(operands[0], operands[1]); })
      .Case([&](ReluOp) { return std::isnan(x) ? x : std::max(x, 0.0f); })
      .Case([&](SigmoidOp) { return sigmoid(x); })
      .Case([&](TanhOp) { return std::tanh(x); })
      .Case([&](AbsOp) { return std::fabs(x); })
      .Case([&](NegOp) { return -x; })
      .Case([&](ExpOp) { return std::exp(x); })
      .Case([&](LogOp) { return std::log(x); })
      .Case([&](SqrtOp) { return std::sqrt(x); })
      .Case([&](ReciprocalOp) { return 1.0f / x; })
      .Case([&](FloorOp) { return std::floor(x); })
      .Case([&](CeilOp) { return std::ceil(x); })
      .Case([&](RoundOp) { return std::nearbyint(x); })
      .Case([&](SignOp) { return x > 0 ? 1.0f : (x < 0 ? -1.0f : x); })
      .Case([&](ErfOp) { return std::erf(x); })
      .Case([&](SoftplusOp) { return softplus(x); })
      .Case([&](SoftsignOp) { return x / (1.0f + std::fabs(x)); })
      .Case([&](HardSwishOp) {
        return x * std::min(std::max(x * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
      })
      .Case([&](MishOp) { return x * std::tanh(softplus(x)); })
      .Case([&](LeakyReluOp relu) {
        return x < 0 ? x * relu.getAlpha().convertToFloat() : x;
      })
      .Case([&](EluOp eluOp) { return elu(x, eluOp.getAlpha().convertToFloat()); })
      .Case([&](SeluOp selu) {
        return selu.getGamma().convertToFloat() * elu(x, selu.getAlpha().convertToFloat());
      })
      .Case([&](CeluOp celu) {
        float alpha = celu.getAlpha().convertToFloat();
        return std::max(x, 0.0f) + std::min(alpha * std::expm1(x / alpha), 0.0f);
      })
      .Case([&](HardSigmoidOp hard) {
        float linear = x * hard.getAlpha().convertToFloat() + hard.getBeta().convertToFloat();
        return std::min(std::max(linear, 0.0f), 1.0f);
      })
      .Case([&](ThresholdedReluOp relu) {
        return x > relu.getAlpha().convertToFloat() ? x : 0.0f;
      })
      .Case([&](GeluOp gelu) {
        if (gelu.getTanh()) {
          float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
          return x * (0.5f * (1.0f + std::tanh(inner)));
        }
        return x * (0.5f * (1.0f + std::erf(x * 0.7071067811865476f)));
      })
      .Case([&](ClipOp clip) -> std::optional<float> {
        std::optional<float> low = scalarConstant(clip.getMin());
        std::optional<float> high = scalarConstant(clip.getMax());
        if ((clip.getMin() && !low) || (clip.getMax() && !high))
          return std::nullopt;
        float value = x;
        if (low)
          value = std::isnan(value) ? value : std::max(value, *low);
        if (high)
          value = std::isnan(value) ? value : std::min(value, *high);
        return value;
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace tessel
