//===- QuantizationFloat.cpp - Quantized ops as float formulas ------------===//
//
// QuantizeLinear, DequantizeLinear and the QLinear/Integer ops computed in
// f32 as ONNX's reference computes them: integer products accumulate exactly
// in f32 (while the sums stay below 2^24), results are rounded half to even
// and saturated. The importer takes this form only where quantized types
// cannot hold the node (parameters known only at run time, 8-bit floats,
// 2- and 4-bit integers, per-row scales); Quantization.cpp types the rest.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/QuantizationFloat.h"

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

class Quantizer {
public:
  explicit Quantizer(NodeImporter &node) : node(node), b(node.builder()), loc(node.loc()) {}

  RankedTensorType typeOf(Value value) { return cast<RankedTensorType>(value.getType()); }
  Value toF32(Value value) { return convertElements(node, value, b.getF32Type()); }
  Value f32(double value) { return node.splatConstant(b.getF32Type(), value); }

  /// A per-axis parameter [C] shaped to broadcast along `axis` of `rank`;
  /// scalars stay scalars.
  Value alongAxis(Value parameter, int64_t axis, int64_t rank) {
    RankedTensorType type = typeOf(parameter);
    if (type.getNumElements() == 1 && type.getRank() <= 1)
      return ReshapeOp::create(b, loc, type.clone(ArrayRef<int64_t>{}), parameter);
    SmallVector<int64_t> shape(rank, 1);
    shape[axis] = type.getNumElements();
    return ReshapeOp::create(b, loc, type.clone(shape), parameter);
  }

  /// (x - zero point) as f32.
  Value centered(Value x, Value zeroPoint) {
    Value result = toF32(x);
    if (zeroPoint)
      result = node.createInferred<SubOp>(result, toF32(zeroPoint));
    return result;
  }

  /// round-half-even(x) + zero point, saturated to `type` and cast to it.
  /// Float targets round in the cast, saturating if `saturateFloat`.
  Value saturate(Value x, Value zeroPoint, Type type, bool saturateFloat) {
    if (isa<FloatType>(type)) {
      if (zeroPoint)
        x = node.createInferred<AddOp>(x, toF32(zeroPoint));
      return CastOp::create(b, loc, typeOf(x).clone(type), x, saturateFloat);
    }
    Value rounded = RoundOp::create(b, loc, x.getType(), x);
    if (zeroPoint)
      rounded = node.createInferred<AddOp>(rounded, toF32(zeroPoint));
    unsigned width = type.getIntOrFloatBitWidth();
    bool isUnsigned = type.isUnsignedInteger();
    double low = isUnsigned ? 0.0 : -std::ldexp(1.0, width - 1);
    double high = isUnsigned ? std::ldexp(1.0, width) - 1 : std::ldexp(1.0, width - 1) - 1;
    Value clipped = ClipOp::create(b, loc, rounded.getType(), rounded, f32(low), f32(high));
    return CastOp::create(b, loc, typeOf(clipped).clone(type), clipped);
  }

  NodeImporter &node;
  OpBuilder &b;
  Location loc;
};

/// 2-, 4-, 8- and 16-bit integers of either signedness, signless i32 (what
/// ConvInteger accumulates), and the 8- and 4-bit floats.
bool isQuantizedType(Type type) {
  if (isa<FloatType>(type))
    return type.getIntOrFloatBitWidth() <= 8;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer)
    return false;
  unsigned width = integer.getWidth();
  return width == 2 || width == 4 || width == 8 || width == 16 || type.isInteger(32);
}

/// The axis of per-axis or blocked quantization; a scalar scale makes it
/// irrelevant.
std::optional<int64_t> quantizationAxis(NodeImporter &node, int64_t rank) {
  int64_t axis = node.intAttr("axis", 1);
  if (node.intAttr("block_size", 0) == 0 && node.inputType(1).getNumElements() == 1)
    return 0;
  std::optional<int64_t> normalized = normalizeAxis(axis, rank);
  if (!normalized)
    (void)node.unsupported("axis is out of range");
  return normalized;
}

/// A scale or zero point (input `index`) shaped to broadcast over the
/// input, whose quantization axis is `axis`. Blocked quantization
/// (block_size) gives parameters of the input's rank with ceil(D /
/// block_size) entries along the axis, each of which covers a block of D:
/// every entry is gathered once per element of its block.
Value quantizationParameter(Quantizer &q, size_t index, int64_t axis) {
  NodeImporter &node = q.node;
  RankedTensorType input = node.inputType(0);
  Value parameter = node.input(index);
  int64_t blockSize = node.intAttr("block_size", 0);
  if (blockSize == 0)
    return q.alongAxis(parameter, axis, input.getRank());
  RankedTensorType type = q.typeOf(parameter);
  int64_t extent = input.getDimSize(axis);
  auto shaped = [&] {
    return type.getRank() == input.getRank() &&
           llvm::all_of(llvm::seq<int64_t>(0, input.getRank()), [&](int64_t d) {
             return d == axis ? type.getDimSize(d) == (extent + blockSize - 1) / blockSize
                              : type.getDimSize(d) == input.getDimSize(d);
           });
  };
  if (blockSize < 0 || ShapedType::isDynamic(extent) || !shaped()) {
    (void)node.unsupported(
        "blocked quantization needs a positive block_size and parameters shaped like the "
        "input with ceil(D / block_size) entries along the axis");
    return {};
  }
  SmallVector<int64_t> blockOf(extent);
  for (int64_t i = 0; i < extent; ++i)
    blockOf[i] = i / blockSize;
  return node.createInferred<GatherOp>(parameter, node.int64Constant(blockOf, {extent}),
                                       q.b.getI64IntegerAttr(axis));
}

/// (a - a_zp) @ (b - b_zp), exact in f32 for the usual sizes.
Value integerProduct(Quantizer &q, Value a, Value aZero, Value b, Value bZero) {
  NodeImporter &node = q.node;
  // A per-row (a) or per-column (b) zero point broadcasts along its axis.
  auto zero = [&](Value zeroPoint, Value operand, bool perRow) -> Value {
    if (!zeroPoint || q.typeOf(zeroPoint).getNumElements() == 1)
      return zeroPoint;
    int64_t rank = q.typeOf(operand).getRank();
    return q.alongAxis(zeroPoint, perRow ? rank - 2 : rank - 1, rank);
  };
  return node.createInferred<MatMulOp>(q.centered(a, zero(aZero, a, true)),
                                       q.centered(b, zero(bZero, b, false)));
}

/// QLinearMatMul and QLinearConv share their operand order from input 1 on
/// (a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): the integer result
/// times a_scale * b_scale / y_scale, rounded, shifted and saturated.
Value requantize(Quantizer &q, Value product, Value bScale) {
  NodeImporter &node = q.node;
  Value multiplier = node.createInferred<DivOp>(
      node.createInferred<MulOp>(q.alongAxis(q.toF32(node.input(1)), 0, 1), bScale),
      q.alongAxis(q.toF32(node.input(6)), 0, 1));
  Value scaled = node.createInferred<MulOp>(product, multiplier);
  Type target = node.input(7) ? node.inputType(7).getElementType()
                              : node.inputType(0).getElementType();
  Value zeroPoint = node.input(7) ? q.alongAxis(node.input(7), 0, 1) : Value();
  return q.saturate(scaled, zeroPoint, target, /*saturateFloat=*/true);
}

/// Conv on zero-point-centred f32 operands; the weight's zero point may be
/// per output channel.
Value integerConvolution(NodeImporter &node, Quantizer &q, Value x, Value xZero, Value w,
                         Value wZero) {
  int64_t rank = q.typeOf(w).getRank();
  if (wZero && q.typeOf(wZero).getNumElements() > 1)
    wZero = q.alongAxis(wZero, 0, rank);
  else if (wZero)
    wZero = q.alongAxis(wZero, 0, 1);
  if (xZero)
    xZero = q.alongAxis(xZero, 0, 1);
  return convolutionFromAttributes(node, q.centered(x, xZero), q.centered(w, wZero), Value());
}

} // namespace

LogicalResult importFloatQuantizeLinear(NodeImporter &node) {
  Quantizer q(node);
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis = quantizationAxis(node, type.getRank());
  if (!axis)
    return failure();
  bool saturate = node.intAttr("saturate", 1) != 0; // integer targets always do
  Type target = node.input(2) ? node.inputType(2).getElementType() : q.b.getIntegerType(8, false);
  if (std::optional<int64_t> dtype = node.intAttr("output_dtype"); dtype && *dtype != 0)
    target = elementTypeFor(q.b.getContext(), *dtype);
  if (!target || !isQuantizedType(target) || target.isInteger(32))
    return node.unsupported("quantizing to this type is not supported (2- to 16-bit "
                            "integers and 8- and 4-bit floats are)");
  Value scale = quantizationParameter(q, 1, *axis);
  Value zeroPoint = node.input(2) ? quantizationParameter(q, 2, *axis) : Value();
  if (!scale || (node.input(2) && !zeroPoint))
    return failure();
  Value scaled = node.createInferred<DivOp>(q.toF32(node.input(0)), q.toF32(scale));
  node.setOutput(0, q.saturate(scaled, zeroPoint, target, saturate));
  return success();
}

LogicalResult importFloatDequantizeLinear(NodeImporter &node) {
  Quantizer q(node);
  RankedTensorType type = node.inputType(0);
  if (!isQuantizedType(type.getElementType()))
    return node.unsupported("dequantizing this type is not supported (2- to 32-bit "
                            "integers and 8- and 4-bit floats are)");
  std::optional<int64_t> axis = quantizationAxis(node, type.getRank());
  if (!axis)
    return failure();
  Type resultType = node.inputType(1).getElementType();
  if (std::optional<int64_t> dtype = node.intAttr("output_dtype"); dtype && *dtype != 0)
    resultType = elementTypeFor(q.b.getContext(), *dtype);
  Value zeroPoint = node.input(2) ? quantizationParameter(q, 2, *axis) : Value();
  Value scale = quantizationParameter(q, 1, *axis);
  if (!scale || (node.input(2) && !zeroPoint))
    return failure();
  Value result = node.createInferred<MulOp>(q.centered(node.input(0), zeroPoint), q.toF32(scale));
  if (!result)
    return failure();
  if (resultType != q.b.getF32Type())
    result = CastOp::create(q.b, q.loc, q.typeOf(result).clone(resultType), result);
  node.setOutput(0, result);
  return success();
}


LogicalResult importFloatQLinearMatMul(NodeImporter &node) {
  Quantizer q(node);
  Value product = integerProduct(q, node.input(0), node.input(2), node.input(3), node.input(5));
  if (!product)
    return failure();
  Value bScale = q.alongAxis(q.toF32(node.input(4)), 0, 1);
  node.setOutput(0, requantize(q, product, bScale));
  return success();
}

LogicalResult importFloatMatMulInteger(NodeImporter &node) {
  Quantizer q(node);
  Value product = integerProduct(q, node.input(0), node.input(2), node.input(1), node.input(3));
  if (!product)
    return failure();
  node.setOutput(0, CastOp::create(q.b, q.loc, q.typeOf(product).clone(q.b.getI32Type()),
                                   product));
  return success();
}

LogicalResult importFloatConvInteger(NodeImporter &node) {
  Quantizer q(node);
  Value result = integerConvolution(node, q, node.input(0), node.input(2), node.input(1),
                                    node.input(3));
  if (!result)
    return failure();
  node.setOutput(0, CastOp::create(q.b, q.loc, q.typeOf(result).clone(q.b.getI32Type()),
                                   result));
  return success();
}

LogicalResult importFloatQLinearConv(NodeImporter &node) {
  Quantizer q(node);
  Value result = integerConvolution(node, q, node.input(0), node.input(2), node.input(3),
                                    node.input(5));
  if (!result)
    return failure();
  if (node.input(8)) // the int32 bias is already in the product's scale
    result = node.createInferred<AddOp>(
        result, q.alongAxis(q.toF32(node.input(8)), 1, q.typeOf(result).getRank()));
  int64_t rank = q.typeOf(result).getRank();
  Value weightScale = q.typeOf(node.input(4)).getNumElements() > 1
                          ? q.alongAxis(q.toF32(node.input(4)), 1, rank)
                          : q.alongAxis(q.toF32(node.input(4)), 0, 1);
  node.setOutput(0, requantize(q, result, weightScale));
  return success();
}

/// DynamicQuantizeLinear: uint8 with the range [min(0, x), max(0, x)].
LogicalResult importFloatDynamicQuantizeLinear(NodeImporter &node) {
  Quantizer q(node);
  RankedTensorType type = node.inputType(0);
  if (!type.getElementType().isF32())
    return node.unsupported("only f32 inputs are supported");
  OpBuilder &b = q.b;
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < type.getRank(); ++i)
    all.push_back(i);
  auto reduce = [&](StringRef kind) {
    return node.createInferred<ReduceOp>(b.getStringAttr(kind), node.input(0),
                                         b.getDenseI64ArrayAttr(all));
  };
  Value high = node.createInferred<MaxOp>(reduce("max"), q.f32(0.0));
  Value low = node.createInferred<MinOp>(reduce("min"), q.f32(0.0));
  Value range = node.createInferred<SubOp>(high, low);
  Value empty = node.createInferred<CompareOp>(b.getStringAttr("eq"), range, q.f32(0.0));
  range = node.createInferred<WhereOp>(empty, q.f32(1.0), range);
  Value scale = node.createInferred<DivOp>(range, q.f32(255.0));
  Value initialZero = node.createInferred<SubOp>(q.f32(0.0), node.createInferred<DivOp>(low, scale));
  Value zero = RoundOp::create(b, q.loc, initialZero.getType(),
                               ClipOp::create(b, q.loc, initialZero.getType(), initialZero,
                                              q.f32(0.0), q.f32(255.0)));
  Value scaled = node.createInferred<DivOp>(node.input(0), scale);
  Type u8 = b.getIntegerType(8, false);
  node.setOutput(0, q.saturate(scaled, zero, u8, /*saturateFloat=*/true));
  if (node.outputUsed(1))
    node.setOutput(1, scale);
  if (node.outputUsed(2))
    node.setOutput(2, CastOp::create(b, q.loc, q.typeOf(zero).clone(u8), zero));
  return success();
}

} // namespace tessel::onnx_import
