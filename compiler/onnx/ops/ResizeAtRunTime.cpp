//===- ResizeAtRunTime.cpp - Resize with run-time scales ------------------===//
//
// A Resize whose scales (or sizes with an aspect-ratio policy, or region of
// interest) are known only at run time, given the result shape the model
// states. Each resized axis is computed as the compile-time tables of
// Resize.cpp are, but by ops that run: the source coordinate of every
// output position, its neighbours and their weights, in f64 as ONNX's
// reference computes them. A gather of the neighbours, weighted and summed
// over the taps, resizes the axis.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "compiler/onnx/ops/ResizeMode.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// f64 (and i64) tensor arithmetic with broadcasting.
class Arithmetic {
public:
  explicit Arithmetic(NodeImporter &node) : node(node), b(node.builder()) {}

  Value constant(double value) { return node.splatConstant(b.getF64Type(), value); }
  Value counting(int64_t count) {
    SmallVector<int64_t> values(count);
    std::iota(values.begin(), values.end(), 0);
    return toF64(node.int64Constant(values, {count}));
  }
  Value add(Value x, Value y) { return node.createInferred<AddOp>(x, y); }
  Value sub(Value x, Value y) { return node.createInferred<SubOp>(x, y); }
  Value mul(Value x, Value y) { return node.createInferred<MulOp>(x, y); }
  Value div(Value x, Value y) { return node.createInferred<DivOp>(x, y); }
  Value floor(Value x) { return FloorOp::create(b, node.loc(), x.getType(), x); }
  Value compare(StringRef predicate, Value x, Value y) {
    return node.createInferred<CompareOp>(b.getStringAttr(predicate), x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return node.createInferred<WhereOp>(condition, x, y);
  }
  Value either(Value x, Value y) { return node.createInferred<OrOp>(x, y); }
  Value convert(Value x, Type element) { return convertElements(node, x, element); }
  Value toF64(Value x) { return convert(x, b.getF64Type()); }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(x.getType());
    return ReshapeOp::create(b, node.loc(), type.clone(shape), x);
  }
  /// Entry `i` of a 1-D tensor as a 0-D f64 tensor.
  Value entry(Value vector, int64_t i) {
    Value one = node.createInferred<GatherOp>(vector, node.int64Constant({i}, {1}),
                                              b.getI64IntegerAttr(0));
    return toF64(reshape(one, {}));
  }

  NodeImporter &node;
  OpBuilder &b;
};

/// Source coordinate of each output position (a [output] f64 tensor), as
/// sourceCoordinate in Resize.cpp computes it for a run-time scale.
Value sourceCoordinates(Arithmetic &a, const ResizeMode &m, Value scale, int64_t input,
                        int64_t output, Value roiStart, Value roiEnd) {
  Value y = a.counting(output), half = a.constant(0.5);
  Value width = a.mul(scale, a.constant(double(input)));
  Value singleOutput = a.compare("eq", width, a.constant(1.0));
  Value halfPixel = a.sub(a.div(a.add(y, half), scale), half);
  const std::string &c = m.coordinates;
  if (c == "align_corners")
    return a.select(singleOutput, a.constant(0.0),
                    a.div(a.mul(y, a.constant(double(input - 1))),
                          a.sub(width, a.constant(1.0))));
  if (c == "asymmetric")
    return a.div(y, scale);
  if (c == "tf_crop_and_resize") {
    Value span = a.mul(a.sub(roiEnd, roiStart), a.constant(double(input - 1)));
    Value spread = a.select(singleOutput, a.div(span, a.constant(2.0)),
                            a.div(a.mul(y, span), a.sub(width, a.constant(1.0))));
    return a.add(spread, a.mul(roiStart, a.constant(double(input - 1))));
  }
  if (c == "tf_half_pixel_for_nn")
    return a.div(a.add(y, half), scale);
  if (c == "pytorch_half_pixel")
    return a.select(singleOutput, a.constant(-0.5), halfPixel);
  if (c == "half_pixel_symmetric") {
    Value adjustment = a.div(a.constant(double(output)), width);
    Value offset = a.mul(a.constant(input / 2.0), a.sub(a.constant(1.0), adjustment));
    return a.add(offset, halfPixel);
  }
  return halfPixel;
}

/// The weights of the taps around each source position ([output] f64
/// tensors, one per tap) whose distance past its floor is `ratio`, as
/// coefficients in Resize.cpp computes them without antialiasing.
SmallVector<Value> tapWeights(Arithmetic &a, const ResizeMode &m, Value ratio) {
  auto indicator = [&](Value condition) { return a.toF64(condition); };
  Value half = a.constant(0.5), one = a.constant(1.0);
  if (m.mode == "nearest") {
    if (m.nearest == "round_prefer_floor")
      return {indicator(a.compare("le", ratio, half)), indicator(a.compare("gt", ratio, half))};
    if (m.nearest == "round_prefer_ceil")
      return {indicator(a.compare("lt", ratio, half)), indicator(a.compare("ge", ratio, half))};
    if (m.nearest == "floor") { // an integer position (ratio 1) is its own
      Value whole = a.compare("eq", ratio, one);
      return {a.sub(one, indicator(whole)), indicator(whole)};
    }
    Value zeros = a.mul(ratio, a.constant(0.0)); // ceil: always the upper one
    return {zeros, a.add(zeros, one)};
  }
  if (m.mode == "linear")
    return {a.sub(one, ratio), ratio};
  // Cubic convolution with coefficient A: two taps on each side.
  Value A = a.constant(m.cubicA), two = a.constant(2.0), three = a.constant(3.0);
  auto outer = [&](Value t) { // t in [1, 2]
    Value u = a.add(t, one);
    return a.sub(a.mul(a.add(a.mul(a.sub(a.mul(A, u), a.mul(a.constant(5.0), A)), u),
                             a.mul(a.constant(8.0), A)),
                       u),
                 a.mul(a.constant(4.0), A));
  };
  auto inner = [&](Value t) { // t in [0, 1]
    return a.add(a.mul(a.mul(a.sub(a.mul(a.add(A, two), t), a.add(A, three)), t), t), one);
  };
  Value rest = a.sub(one, ratio);
  return {outer(ratio), inner(ratio), inner(rest), outer(rest)};
}

/// Resizes `x` along `axis` to `output` positions at a run-time `scale`.
Value resizeAxis(Arithmetic &a, const ResizeMode &m, Value x, int64_t axis, Value scale,
                 int64_t output, Value roiStart, Value roiEnd) {
  NodeImporter &node = a.node;
  OpBuilder &b = a.b;
  auto type = cast<RankedTensorType>(x.getType());
  int64_t input = type.getDimSize(axis);
  Value source = sourceCoordinates(a, m, scale, input, output, roiStart, roiEnd);
  Value below = a.floor(source);
  Value ratio = a.select(a.compare("eq", source, below), a.constant(1.0), a.sub(source, below));
  SmallVector<Value> weights = tapWeights(a, m, ratio);
  auto taps = static_cast<int64_t>(weights.size());
  // The reference pads by ceil(taps / 2) and takes the nearest positions.
  int64_t pad = (taps + 1) / 2;
  Value padded = a.add(source, a.constant(double(pad)));
  Value whole = a.floor(padded);
  Value offset = a.select(a.compare("eq", a.sub(padded, whole), a.constant(0.0)),
                          a.constant(double(-(taps / 2))), a.constant(double(-(taps / 2) + 1)));
  Value first = a.add(whole, a.sub(offset, a.constant(double(pad))));
  SmallVector<Value> positions;
  for (int64_t t = 0; t < taps; ++t)
    positions.push_back(a.add(first, a.constant(double(t))));
  auto outsideInput = [&](Value position) {
    return a.either(a.compare("lt", position, a.constant(0.0)),
                    a.compare("gt", position, a.constant(double(input - 1))));
  };
  if (m.excludeOutside) {
    Value sum = a.constant(0.0);
    for (auto [weight, position] : llvm::zip(weights, positions)) {
      weight = a.select(outsideInput(position), a.constant(0.0), weight);
      sum = a.add(sum, weight);
    }
    Value divisor = a.select(a.compare("eq", sum, a.constant(0.0)), a.constant(1.0), sum);
    for (Value &weight : weights)
      weight = a.div(weight, divisor);
  }
  auto clamped = [&](Value position) {
    Value low = a.select(a.compare("lt", position, a.constant(0.0)), a.constant(0.0), position);
    Value inside = a.select(a.compare("gt", low, a.constant(double(input - 1))),
                            a.constant(double(input - 1)), low);
    return a.convert(inside, b.getI64Type());
  };

  Value result;
  if (m.mode == "nearest") {
    // One weight is 1, the other 0: gather the chosen neighbour only.
    Value chosen = a.select(a.compare("eq", weights[0], a.constant(0.0)),
                            clamped(positions[1]), clamped(positions[0]));
    result = node.createInferred<GatherOp>(x, chosen, b.getI64IntegerAttr(axis));
  } else {
    SmallVector<Value> indexColumns, weightColumns;
    for (auto [weight, position] : llvm::zip(weights, positions)) {
      indexColumns.push_back(a.reshape(clamped(position), {output, 1}));
      weightColumns.push_back(a.reshape(weight, {output, 1}));
    }
    Value indices = node.createInferred<ConcatOp>(indexColumns, b.getI64IntegerAttr(1));
    Value table = node.createInferred<ConcatOp>(weightColumns, b.getI64IntegerAttr(1));
    SmallVector<int64_t> weightShape(type.getRank() + 1, 1);
    weightShape[axis] = output;
    weightShape[axis + 1] = taps;
    table = a.reshape(a.convert(table, type.getElementType()), weightShape);
    Value neighbours = node.createInferred<GatherOp>(x, indices, b.getI64IntegerAttr(axis));
    result = node.createInferred<ReduceOp>(b.getStringAttr("sum"),
                                           node.createInferred<MulOp>(neighbours, table),
                                           b.getDenseI64ArrayAttr({axis + 1}));
  }
  if (m.coordinates == "tf_crop_and_resize") {
    SmallVector<int64_t> maskShape(type.getRank(), 1);
    maskShape[axis] = output;
    result = a.select(a.reshape(outsideInput(source), maskShape),
                      node.splatConstant(type.getElementType(), m.extrapolation), result);
  }
  return result;
}

} // namespace

LogicalResult resizeAtRunTime(NodeImporter &node, const ResizeMode &m,
                              const RunTimeResize &given, ArrayRef<int64_t> axes,
                              RankedTensorType stated) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape() || stated.getRank() != type.getRank())
    return node.unsupported("the input must have a static shape of the result's rank");
  Arithmetic a(node);
  auto count = static_cast<int64_t>(axes.size());
  // One scale per resized axis: the sizes' ratio to the input's, or with
  // a policy the smallest (not_larger) or largest (not_smaller) of them.
  SmallVector<Value> scales;
  if (given.scales) {
    for (int64_t i = 0; i < count; ++i)
      scales.push_back(a.entry(given.scales, i));
  } else {
    SmallVector<int64_t> inputSizes;
    for (int64_t axis : axes)
      inputSizes.push_back(type.getDimSize(axis));
    Value ratios = a.div(a.toF64(given.sizes), a.toF64(node.int64Constant(inputSizes, {count})));
    if (given.policy == "stretch") {
      for (int64_t i = 0; i < count; ++i)
        scales.push_back(a.entry(ratios, i));
    } else {
      Value common = node.createInferred<ReduceOp>(
          node.builder().getStringAttr(given.policy == "not_larger" ? "min" : "max"), ratios,
          node.builder().getDenseI64ArrayAttr({0}));
      scales.assign(count, common);
    }
  }
  Value wrong = node.int64Constant({0}, {});
  for (auto [i, axis] : llvm::enumerate(axes)) {
    Value extent = a.mul(scales[i], a.constant(double(type.getDimSize(axis))));
    if (!given.scales) // rounded to nearest, as the reference sizes the result
      extent = a.add(extent, a.constant(0.5));
    Value differs = node.createInferred<NotOp>(
        a.compare("eq", a.floor(extent), a.constant(double(stated.getDimSize(axis)))));
    wrong = a.add(wrong, a.convert(differs, node.builder().getI64Type()));
  }
  stopUnlessZero(node, wrong,
                 "Resize axes whose scales give another size than the result shape " +
                     formatShape(stated.getShape()) + " the model states");

  Value x = node.input(0);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    Value roiStart = given.roi ? a.entry(given.roi, i) : a.constant(0.0);
    Value roiEnd = given.roi ? a.entry(given.roi, count + i) : a.constant(1.0);
    x = resizeAxis(a, m, x, axis, scales[i], stated.getDimSize(axis), roiStart, roiEnd);
    if (!x)
      return failure();
  }
  return node.setInferredOutput(0, x);
}

} // namespace tessel::onnx_import
