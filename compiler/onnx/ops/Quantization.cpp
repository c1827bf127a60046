//===- Quantization.cpp - Quantized ONNX operators as quantized types -----===//
//
// QuantizeLinear, DequantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger
// and ConvInteger whose scales and zero points are known at compile time
// import onto quantized tensors: the integer tensors ONNX passes between
// them are storage casts (tessel.bitcast) of tensors whose element types
// carry scale and zero point, so that kernel formation and the targets see
// INT8 arithmetic instead of its float formula. Parameters known only at
// run time, per-row scales and the 2- and 4-bit and 8-bit float types take
// the float form (QuantizationFloat.cpp).
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Handlers.h"
#include "compiler/onnx/ops/QuantizationFloat.h"
#include "dialects/tessel/TesselDialect.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

double toDouble(APFloat value) {
  bool losesInfo;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
  return value.convertToDouble();
}

/// The quantized type that the constant scale (input `scaleIndex`) and zero
/// point (input `zeroIndex`, absent meaning 0) give a tensor of `storage`
/// elements and rank `rank`: per tensor for one scale, else along `axis`.
/// Null when the parameters are not compile-time constants or the storage
/// is not an 8- or 16-bit integer (or i32, the accumulator's).
quant::QuantizedType constantQuantization(NodeImporter &node, size_t scaleIndex,
                                          size_t zeroIndex, Type storage, int64_t rank,
                                          int64_t axis) {
  auto integer = dyn_cast<IntegerType>(storage);
  if (!integer)
    return {};
  unsigned width = integer.getWidth();
  bool isSigned = !integer.isUnsigned();
  if (width != 8 && width != 16 && !(width == 32 && isSigned))
    return {};
  ElementsAttr scale = node.constantInput(scaleIndex);
  if (!scale)
    return {};
  Type expressed = scale.getElementType();
  if (!expressed.isF32() && !expressed.isF16())
    return {};
  SmallVector<double> scales;
  for (const APFloat &value : scale.getValues<APFloat>()) {
    double real = toDouble(value);
    if (!(real > 0) || !std::isfinite(real))
      return {};
    scales.push_back(real);
  }
  SmallVector<int64_t> zeroPoints(scales.size(), 0);
  if (node.input(zeroIndex)) {
    // One zero point for every scale, or one for all of them.
    ElementsAttr zero = node.constantInput(zeroIndex);
    if (!zero || zero.getElementType() != storage ||
        (zero.getNumElements() != static_cast<int64_t>(scales.size()) &&
         zero.getNumElements() != 1))
      return {};
    for (auto [index, value] : llvm::enumerate(zero.getValues<APInt>()))
      zeroPoints[index] = isSigned ? value.getSExtValue() : value.getZExtValue();
    if (zero.getNumElements() == 1)
      llvm::fill(zeroPoints, zeroPoints.front());
  }
  auto scaleType = cast<ShapedType>(scale.getType());
  if (scales.size() == 1 && scaleType.getRank() <= 1)
    return perTensorType(expressed, isSigned, width, scales.front(), zeroPoints.front());
  std::optional<int64_t> normalized = normalizeAxis(axis, rank);
  if (scaleType.getRank() != 1 || !normalized)
    return {};
  return perAxisType(expressed, isSigned, width, scales, zeroPoints, *normalized);
}

/// `value` (a tensor of storage integers) as the quantized tensor `type`.
Value asQuantized(NodeImporter &node, Value value, quant::QuantizedType type) {
  auto tensor = cast<RankedTensorType>(value.getType());
  return BitCastOp::create(node.builder(), node.loc(), tensor.clone(type), value);
}

/// The storage integers of the quantized tensor `value`.
Value asStorage(NodeImporter &node, Value value) {
  return BitCastOp::create(node.builder(), node.loc(), storageType(value.getType()), value);
}

/// Gives `product`, a matmul just created with its inferred
/// (expressed) element type, the quantized result type `type`.
Value withResultType(Value product, quant::QuantizedType type) {
  if (!product)
    return {};
  product.setType(cast<RankedTensorType>(product.getType()).clone(type));
  return product;
}

bool isPerTensor(quant::QuantizedType type) { return type && !quantizedAxis(type); }

bool sameExpressed(std::initializer_list<quant::QuantizedType> types) {
  Type expressed = types.begin()->getExpressedType();
  return llvm::all_of(types, [&](quant::QuantizedType type) {
    return type.getExpressedType() == expressed;
  });
}


Value typedQuantizeLinear(NodeImporter &node) {
  if (node.intAttr("block_size", 0) != 0)
    return {};
  RankedTensorType input = node.inputType(0);
  Type target = node.input(2) ? node.inputType(2).getElementType()
                              : node.builder().getIntegerType(8, false);
  if (std::optional<int64_t> dtype = node.intAttr("output_dtype"); dtype && *dtype != 0)
    target = elementTypeFor(node.builder().getContext(), *dtype);
  (void)node.intAttr("saturate", 1); // integer targets always saturate
  quant::QuantizedType type = constantQuantization(node, 1, 2, target, input.getRank(),
                                                   node.intAttr("axis", 1));
  if (!type || type.getExpressedType() != input.getElementType() ||
      type.getStorageTypeIntegralWidth() == 32)
    return {};
  Value quantized =
      QuantizeOp::create(node.builder(), node.loc(), input.clone(type), node.input(0));
  return asStorage(node, quantized);
}

Value typedDequantizeLinear(NodeImporter &node) {
  if (node.intAttr("block_size", 0) != 0)
    return {};
  RankedTensorType input = node.inputType(0);
  quant::QuantizedType type =
      constantQuantization(node, 1, 2, input.getElementType(), input.getRank(),
                           node.intAttr("axis", 1));
  if (!type)
    return {};
  Value result = DequantizeOp::create(node.builder(), node.loc(),
                                      input.clone(type.getExpressedType()),
                                      asQuantized(node, node.input(0), type));
  if (std::optional<int64_t> dtype = node.intAttr("output_dtype"); dtype && *dtype != 0) {
    Type wanted = elementTypeFor(node.builder().getContext(), *dtype);
    if (wanted && wanted != type.getExpressedType())
      result = CastOp::create(node.builder(), node.loc(), input.clone(wanted), result);
  }
  return result;
}

/// QLinearMatMul and QLinearConv: operands (x, x_scale, x_zp, w, w_scale,
/// w_zp, y_scale, y_zp, [bias]), the weight per tensor or along
/// `weightAxis`.
struct QLinearTypes {
  quant::QuantizedType input, weight, result, bias;
};

std::optional<QLinearTypes> qlinearTypes(NodeImporter &node, int64_t weightAxis) {
  RankedTensorType input = node.inputType(0), weight = node.inputType(3);
  Type resultStorage = node.input(7) ? node.inputType(7).getElementType()
                                     : input.getElementType();
  QLinearTypes types;
  types.input = constantQuantization(node, 1, 2, input.getElementType(), input.getRank(), 0);
  types.weight = constantQuantization(node, 4, 5, weight.getElementType(), weight.getRank(),
                                      weightAxis);
  types.result = constantQuantization(node, 6, 7, resultStorage, 1, 0);
  if (!isPerTensor(types.input) || !types.weight || !isPerTensor(types.result) ||
      !sameExpressed({types.input, types.weight, types.result}))
    return std::nullopt;
  for (quant::QuantizedType type : {types.input, types.weight, types.result})
    if (type.getStorageTypeIntegralWidth() != 8)
      return std::nullopt;
  return types;
}

Value typedQLinearMatMul(NodeImporter &node) {
  std::optional<QLinearTypes> types =
      qlinearTypes(node, node.inputType(3).getRank() - 1);
  if (!types)
    return {};
  Value product = node.createInferred<MatMulOp>(asQuantized(node, node.input(0), types->input),
                                                asQuantized(node, node.input(3), types->weight));
  if (!product)
    return {};
  return asStorage(node, withResultType(product, types->result));
}

Value typedQLinearConv(NodeImporter &node) {
  std::optional<QLinearTypes> types = qlinearTypes(node, 0);
  if (!types)
    return {};
  Value bias;
  if (node.input(8)) {
    if (node.inputType(8).getRank() != 1)
      return {};
    bias = asQuantized(node, node.input(8), accumulatorType(types->input, types->weight, 0));
  }
  Value result = convolutionFromAttributes(node, asQuantized(node, node.input(0), types->input),
                                           asQuantized(node, node.input(3), types->weight),
                                           bias, types->result);
  if (!result)
    return {};
  return asStorage(node, result);
}

/// MatMulInteger and ConvInteger: (x, w, x_zp, w_zp) of scale 1, the
/// weight's zero point per tensor or along `weightAxis`, accumulated in i32.
Value typedIntegerProduct(NodeImporter &node, int64_t weightAxis, bool convolution) {
  MLIRContext *context = node.builder().getContext();
  Type f32 = Float32Type::get(context);
  auto unitScale = [&](size_t valueIndex, size_t zeroIndex, int64_t axis) -> quant::QuantizedType {
    RankedTensorType type = node.inputType(valueIndex);
    auto integer = dyn_cast<IntegerType>(type.getElementType());
    if (!integer || integer.getWidth() != 8)
      return {};
    bool isSigned = !integer.isUnsigned();
    if (!node.input(zeroIndex))
      return perTensorType(f32, isSigned, 8, 1.0, 0);
    ElementsAttr zero = node.constantInput(zeroIndex);
    if (!zero || zero.getElementType() != integer)
      return {};
    SmallVector<int64_t> zeroPoints;
    for (const APInt &value : zero.getValues<APInt>())
      zeroPoints.push_back(isSigned ? value.getSExtValue() : value.getZExtValue());
    if (zeroPoints.size() == 1)
      return perTensorType(f32, isSigned, 8, 1.0, zeroPoints.front());
    if (axis < 0 || static_cast<int64_t>(zeroPoints.size()) != type.getDimSize(axis))
      return {};
    return perAxisType(f32, isSigned, 8, SmallVector<double>(zeroPoints.size(), 1.0),
                       zeroPoints, axis);
  };
  quant::QuantizedType inputType = unitScale(0, 2, -1);
  quant::QuantizedType weightType = unitScale(1, 3, weightAxis);
  if (!inputType || !weightType)
    return {};
  Value x = asQuantized(node, node.input(0), inputType);
  Value w = asQuantized(node, node.input(1), weightType);
  quant::QuantizedType accumulator = perTensorType(f32, true, 32, 1.0, 0);
  Value product = convolution
                      ? convolutionFromAttributes(node, x, w, Value(), accumulator)
                      : withResultType(node.createInferred<MatMulOp>(x, w), accumulator);
  if (!product)
    return {};
  return asStorage(node, product);
}

/// Imports `node` by `typed`, or by `fallback` when `typed` declines.
LogicalResult importEither(NodeImporter &node, Value (*typed)(NodeImporter &),
                           LogicalResult (*fallback)(NodeImporter &)) {
  if (Value result = typed(node)) {
    node.setOutput(0, result);
    return success();
  }
  if (!node.problems().empty())
    return failure();
  return fallback(node);
}

} // namespace

void registerQuantizationHandlers(OpRegistry &registry) {
  registry.on("QuantizeLinear", 10, [](NodeImporter &node) {
    return importEither(node, typedQuantizeLinear, importFloatQuantizeLinear);
  });
  registry.on("DequantizeLinear", 10, [](NodeImporter &node) {
    return importEither(node, typedDequantizeLinear, importFloatDequantizeLinear);
  });
  registry.on("QLinearMatMul", 10, [](NodeImporter &node) {
    return importEither(node, typedQLinearMatMul, importFloatQLinearMatMul);
  });
  registry.on("QLinearConv", 10, [](NodeImporter &node) {
    return importEither(node, typedQLinearConv, importFloatQLinearConv);
  });
  registry.on("MatMulInteger", 10, [](NodeImporter &node) {
    return importEither(
        node,
        [](NodeImporter &n) {
          return typedIntegerProduct(n, n.inputType(1).getRank() - 1, false);
        },
        importFloatMatMulInteger);
  });
  registry.on("ConvInteger", 10, [](NodeImporter &node) {
    return importEither(
        node, [](NodeImporter &n) { return typedIntegerProduct(n, 0, true); },
        importFloatConvInteger);
  });
  registry.on("DynamicQuantizeLinear", 11, importFloatDynamicQuantizeLinear);
}

} // namespace tessel::onnx_import
