//===- Reduction.cpp - Reduce*, Arg*, LogSoftmax, Hardmax, CumSum, TopK ---===//
//
// Every reduction is a tessel.reduce (sum, prod, max or min) with elementwise
// maps around it: ReduceL2 is sqrt(sum(x * x)), ReduceLogSumExp is
// log(sum(exp(x - max))) + max, and so on. Kept dimensions are a reshape.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"
#include <limits>
#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The axes to reduce, sorted and non-negative; nullopt after recording why.
/// Opsets before `axesInputSince` name them in an attribute, later ones in
/// the optional second input. No axes means all of them, unless
/// noop_with_empty_axes asks for the identity.
std::optional<SmallVector<int64_t>> readReducedAxes(NodeImporter &node,
                                                    int64_t axesInputSince) {
  int64_t rank = node.inputType(0).getRank();
  SmallVector<int64_t> axes;
  bool noopWhenEmpty = false;
  if (node.opset() >= axesInputSince) {
    noopWhenEmpty = node.intAttr("noop_with_empty_axes", 0) != 0;
    if (node.input(1)) {
      std::optional<SmallVector<int64_t>> given = node.constantInts(1, "axes");
      if (!given)
        return std::nullopt;
      axes = *given;
    }
  } else if (std::optional<std::vector<int64_t>> given = node.intsAttr("axes")) {
    axes.assign(given->begin(), given->end());
  }
  if (axes.empty() && !noopWhenEmpty)
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  if (!normalizeAxes(node, axes, rank))
    return std::nullopt;
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    (void)node.unsupported("an axis is listed twice");
    return std::nullopt;
  }
  return axes;
}

/// `type`'s shape with the reduced axes set to 1 (ONNX's keepdims).
RankedTensorType keptType(RankedTensorType type, ArrayRef<int64_t> axes,
                          Type elementType) {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t axis : axes)
    shape[axis] = 1;
  return RankedTensorType::get(shape, elementType);
}

/// The reduction as the node asks for it: `kind` over the axes, with
/// `before` applied to each element and `after` to each result.
enum class Reduction { Sum, Mean, Prod, Max, Min, SumSquare, L1, L2, LogSum, LogSumExp };

Value reduce(NodeImporter &node, StringRef kind, Value input, ArrayRef<int64_t> axes) {
  return node.createInferred<ReduceOp>(node.builder().getStringAttr(kind), input,
                                       node.builder().getDenseI64ArrayAttr(axes));
}

/// The node's reduction of its input over `axes` (sorted, non-negative);
/// null after recording why not.
template <Reduction reduction>
Value reduceOver(NodeImporter &node, ArrayRef<int64_t> axes, bool keepDims) {
  RankedTensorType type = node.inputType(0);
  Type elementType = type.getElementType();
  if (llvm::any_of(axes, [&](int64_t axis) { return type.isDynamicDim(axis); })) {
    (void)node.unsupported("a reduced axis has a dimension unknown at compile time");
    return {};
  }
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value x = node.input(0);
  Value result;
  switch (reduction) {
  case Reduction::Sum:
  case Reduction::Mean:
    result = reduce(node, "sum", x, axes);
    break;
  case Reduction::Prod:
    result = reduce(node, "prod", x, axes);
    break;
  case Reduction::Max:
    result = reduce(node, "max", x, axes);
    break;
  case Reduction::Min:
    result = reduce(node, "min", x, axes);
    break;
  case Reduction::SumSquare:
  case Reduction::L2:
    result = reduce(node, "sum", MulOp::create(b, loc, type, x, x), axes);
    break;
  case Reduction::L1:
    result = reduce(node, "sum", AbsOp::create(b, loc, type, x), axes);
    break;
  case Reduction::LogSum:
    result = reduce(node, "sum", x, axes);
    break;
  case Reduction::LogSumExp: {
    // Shifting by the maximum keeps exp from overflowing.
    Value max = reduce(node, "max", x, axes);
    if (!max)
      return {};
    Value keptMax = ReshapeOp::create(b, loc, keptType(type, axes, elementType), max);
    Value shifted = node.createInferred<SubOp>(x, keptMax);
    Value sum = reduce(node, "sum", ExpOp::create(b, loc, type, shifted), axes);
    if (!sum)
      return {};
    result = node.createInferred<AddOp>(LogOp::create(b, loc, sum.getType(), sum), max);
    break;
  }
  }
  if (!result)
    return {};
  auto resultType = cast<RankedTensorType>(result.getType());
  if (reduction == Reduction::Mean) {
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= type.getDimSize(axis);
    result = DivOp::create(b, loc, resultType, result,
                           node.splatConstant(elementType, double(count)));
  } else if (reduction == Reduction::L2) {
    result = SqrtOp::create(b, loc, resultType, result);
  } else if (reduction == Reduction::LogSum) {
    result = LogOp::create(b, loc, resultType, result);
  }
  if (keepDims)
    result = ReshapeOp::create(b, loc, keptType(type, axes, elementType), result);
  return result;
}

/// A reduction whose axes input is known only at run time, given the
/// result shape the model states. Axes sets that differ only in axes of
/// size 1 reduce alike; when distinct sets give the stated shape (keepdims
/// = 0 over [3, 2, 2] to [3, 2]: axis 1 or 2), each is computed and the
/// run selects the one its axes input names, after checking it names one.
template <Reduction reduction>
LogicalResult importReduceAlongRuntimeAxes(NodeImporter &node, bool keepDims) {
  RankedTensorType type = node.inputType(0), axesType = node.inputType(1);
  RankedTensorType stated = node.declaredOutputType(0);
  int64_t rank = type.getRank();
  auto refuse = [&] { return refuseRunTimeShapeInput(node, 1, "axes"); };
  if (!stated || !type.hasStaticShape() || !axesType.hasStaticShape() ||
      axesType.getRank() != 1)
    return refuse();
  auto givesStated = [&](ArrayRef<int64_t> axes) {
    SmallVector<int64_t> shape;
    for (int64_t i = 0; i < rank; ++i) {
      if (!llvm::is_contained(axes, i))
        shape.push_back(type.getDimSize(i));
      else if (keepDims)
        shape.push_back(1);
    }
    return ArrayRef<int64_t>(shape) == stated.getShape();
  };
  // One set per distinct choice of the axes longer than 1.
  SmallVector<SmallVector<int64_t>> choices, wideAxes;
  for (SmallVector<int64_t> &axes : axisSetsGiving(rank, axesType.getNumElements(), givesStated)) {
    SmallVector<int64_t> wide;
    llvm::copy_if(axes, std::back_inserter(wide),
                  [&](int64_t axis) { return type.getDimSize(axis) != 1; });
    if (llvm::is_contained(wideAxes, wide))
      continue;
    wideAxes.push_back(wide);
    choices.push_back(std::move(axes));
  }
  // Each choice is a reduction computed at run time.
  constexpr size_t kMaxChoices = 8;
  if (choices.empty())
    return refuse();
  if (choices.size() > kMaxChoices)
    return node.unsupported(Twine(choices.size()) + " axis sets give the stated result shape " +
                            formatShape(stated.getShape()) + "; at most " + Twine(kMaxChoices) +
                            " are computed at run time");
  if (failed(checkIndices(node, 1, {rank})))
    return failure();

  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto i64Type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI64Type());
  };
  int64_t count = axesType.getNumElements();
  // named[i]: 1 where the axes input lists axis i.
  Value axes = ReshapeOp::create(b, loc, i64Type({count, 1}), runtimeInt64s(node, 1));
  Value named = node.createInferred<ReduceOp>(b.getStringAttr("max"), axisTable(node, axes, rank),
                                              b.getDenseI64ArrayAttr({0}));
  SmallVector<int64_t> isWide;
  for (int64_t i = 0; i < rank; ++i)
    isWide.push_back(type.getDimSize(i) != 1);
  Value namedWide = node.createInferred<MulOp>(named, node.int64Constant(isWide, {rank}));

  Value result, noneNamed;
  for (auto [axesChoice, wide] : llvm::reverse(llvm::zip(choices, wideAxes))) {
    Value reduced = reduceOver<reduction>(node, axesChoice, keepDims);
    if (!reduced)
      return failure();
    reduced = ReshapeOp::create(b, loc, stated.clone(type.getElementType()), reduced);
    SmallVector<int64_t> expected(rank, 0);
    for (int64_t axis : wide)
      expected[axis] = 1;
    Value differs = node.createInferred<NotOp>(node.createInferred<CompareOp>(
        b.getStringAttr("eq"), namedWide, node.int64Constant(expected, {rank})));
    Value mismatch = node.createInferred<ReduceOp>(
        b.getStringAttr("max"), CastOp::create(b, loc, i64Type({rank}), differs),
        b.getDenseI64ArrayAttr({0}));
    noneNamed = noneNamed ? node.createInferred<MulOp>(noneNamed, mismatch) : mismatch;
    if (!result) {
      result = reduced;
      continue;
    }
    Value chosen = node.createInferred<CompareOp>(b.getStringAttr("eq"), mismatch,
                                                  node.int64Constant({0}, {}));
    result = node.createInferred<WhereOp>(chosen, reduced, result);
  }
  stopUnlessZero(node, noneNamed,
                 "axes inputs naming none of the axis sets that give the result shape " +
                     formatShape(stated.getShape()) + " the model states");
  return node.setInferredOutput(0, result);
}

/// keepdims, which ONNX defines as 0 or 1: runtimes read other values
/// differently (onnxruntime keeps dimensions only for 1), so they are
/// refused rather than guessed at.
std::optional<bool> keepDimsOf(NodeImporter &node) {
  int64_t keep = node.intAttr("keepdims", 1);
  if (keep == 0 || keep == 1)
    return keep == 1;
  (void)node.unsupported("keepdims is " + Twine(keep) + "; ONNX defines only 0 and 1");
  return std::nullopt;
}

template <Reduction reduction>
LogicalResult importReduce(NodeImporter &node, int64_t axesInputSince) {
  Type elementType = node.inputType(0).getElementType();
  constexpr bool needsFloat = reduction == Reduction::L1 || reduction == Reduction::L2 ||
                              reduction == Reduction::LogSum ||
                              reduction == Reduction::LogSumExp;
  if (needsFloat && !isa<FloatType>(elementType))
    return node.unsupported("only floating-point inputs are supported");
  std::optional<bool> keeping = keepDimsOf(node);
  if (!keeping)
    return failure();
  bool keepDims = *keeping;
  if (node.opset() >= axesInputSince && node.input(1) && !node.constantInput(1)) {
    (void)node.intAttr("noop_with_empty_axes", 0); // an empty axes input is a constant
    return importReduceAlongRuntimeAxes<reduction>(node, keepDims);
  }
  std::optional<SmallVector<int64_t>> axes = readReducedAxes(node, axesInputSince);
  if (!axes)
    return failure();
  return node.setInferredOutput(0, reduceOver<reduction>(node, *axes, keepDims));
}

/// Registers `reduction` for op `name`, whose axes became an input at
/// `axesInputSince`.
template <Reduction reduction>
void registerReduce(OpRegistry &registry, StringRef name, int64_t axesInputSince) {
  auto handler = [axesInputSince](NodeImporter &node) {
    return importReduce<reduction>(node, axesInputSince);
  };
  registry.on(name, 1, handler);
}

LogicalResult importArgReduce(NodeImporter &node, StringRef kind) {
  std::optional<bool> keepDims = keepDimsOf(node);
  if (!keepDims)
    return failure();
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  bool selectLast = node.opset() >= 12 && node.intAttr("select_last_index", 0) != 0;
  OpBuilder &b = node.builder();
  Value result = node.createInferred<ArgReduceOp>(
      b.getStringAttr(kind), node.input(0), b.getI64IntegerAttr(*axis),
      b.getBoolAttr(selectLast));
  if (!result)
    return failure();
  if (*keepDims)
    result = ReshapeOp::create(b, node.loc(), keptType(type, {*axis}, b.getI64Type()),
                               result);
  node.setOutput(0, result);
  return success();
}

/// One-hot of the first maximum along `axis`, in x's element type.
Value hardmax(NodeImporter &node, Value x, int64_t axis) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto type = cast<RankedTensorType>(x.getType());
  Value index = node.createInferred<ArgReduceOp>(
      b.getStringAttr("max"), x, b.getI64IntegerAttr(axis), b.getBoolAttr(false));
  Value keptIndex =
      ReshapeOp::create(b, loc, keptType(type, {axis}, b.getI64Type()), index);
  // The position along the axis, broadcast over the others.
  SmallVector<int64_t> positionShape(type.getRank(), 1);
  positionShape[axis] = type.getDimSize(axis);
  SmallVector<int64_t> positions(positionShape[axis]);
  std::iota(positions.begin(), positions.end(), 0);
  Value isMax = node.createInferred<CompareOp>(
      b.getStringAttr("eq"), node.int64Constant(positions, positionShape), keptIndex);
  return CastOp::create(b, loc, type, isMax);
}

/// Softmax-like ops: from opset 13 along one axis; before, over all axes
/// from `axis` on (the input flattened to 2-D there).
template <Value (*normalize)(NodeImporter &, Value, int64_t)>
LogicalResult importAlongAxis(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  bool flattens = node.opset() < 13;
  std::optional<int64_t> axis =
      normalizeAxis(node.intAttr("axis", flattens ? 1 : -1), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  if (!flattens || *axis == type.getRank() - 1) {
    node.setOutput(0, normalize(node, node.input(0), *axis));
    return success();
  }
  OpBuilder &b = node.builder();
  Value flat = node.createInferred<FlattenOp>(node.input(0), b.getI64IntegerAttr(*axis));
  if (!flat)
    return failure();
  Value normalized = normalize(node, flat, 1);
  node.setOutput(0, ReshapeOp::create(b, node.loc(), type, normalized));
  return success();
}

/// A cumulative op along an axis known only at run time (the result's shape
/// does not depend on it): the op along every axis, the one the axis names
/// selected, after a run-time check that it names one.
template <typename OpTy>
LogicalResult importCumulativeAlongRuntimeAxis(NodeImporter &node) {
  RankedTensorType type = node.inputType(0), axisType = node.inputType(1);
  if (axisType.getNumElements() != 1)
    return node.unsupported("axis must hold one value");
  int64_t rank = type.getRank();
  if (failed(checkIndices(node, 1, {rank})))
    return failure();
  OpBuilder &b = node.builder();
  SmallVector<std::pair<int64_t, Value>> alongEach;
  for (int64_t dimension = 0; dimension < rank; ++dimension)
    alongEach.push_back(
        {dimension, OpTy::create(b, node.loc(), type, node.input(0),
                                 b.getI64IntegerAttr(dimension),
                                 b.getBoolAttr(node.intAttr("exclusive", 0) != 0),
                                 b.getBoolAttr(node.intAttr("reverse", 0) != 0))});
  // The last axis is what remains once the others are ruled out.
  return node.setInferredOutput(0, selectAlongRunTimeAxis(node, 1, rank, alongEach));
}

template <typename OpTy>
LogicalResult importCumulative(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!node.constantInput(1))
    return importCumulativeAlongRuntimeAxis<OpTy>(node);
  std::optional<SmallVector<int64_t>> axis = node.constantInts(1, "axis");
  if (!axis)
    return failure();
  if (axis->size() != 1)
    return node.unsupported("axis must hold one value");
  std::optional<int64_t> normalized = normalizeAxis(axis->front(), type.getRank());
  if (!normalized)
    return node.unsupported("axis is out of range");
  OpBuilder &b = node.builder();
  node.setOutput(0, OpTy::create(b, node.loc(), type, node.input(0),
                                 b.getI64IntegerAttr(*normalized),
                                 b.getBoolAttr(node.intAttr("exclusive", 0) != 0),
                                 b.getBoolAttr(node.intAttr("reverse", 0) != 0)));
  return success();
}

/// TopK as k rounds of arg-max (or min): each round picks the best remaining
/// element along the axis (the lowest index among equals, as ONNX orders
/// ties) and masks it out. Linear in k, so k is bounded.
LogicalResult importTopK(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", -1), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  int64_t k = 0;
  if (node.opset() >= 10) {
    std::optional<SmallVector<int64_t>> given =
        shapeGivingInts(node, 1, "K", [&]() -> std::optional<ImpliedInts> {
          RankedTensorType stated = node.declaredOutputType(0);
          if (!stated || stated.getRank() != type.getRank())
            return std::nullopt;
          return exactly({stated.getDimSize(*axis)});
        });
    if (!given)
      return failure();
    k = given->front();
  } else {
    k = node.intAttr("k").value_or(0);
  }
  constexpr int64_t kMaxK = 256;
  if (k < 1 || k > type.getDimSize(*axis) || k > kMaxK)
    return node.unsupported("K must be between 1 and the axis size (at most " +
                            Twine(kMaxK) + ")");
  bool largest = node.opset() < 11 || node.intAttr("largest", 1) != 0;
  node.ignoreAttr("sorted"); // the rounds produce sorted results anyway
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = type.getElementType();
  SmallVector<int64_t> keptShape(type.getShape());
  keptShape[*axis] = 1;
  SmallVector<int64_t> positionShape(type.getRank(), 1), positions(type.getDimSize(*axis));
  positionShape[*axis] = positions.size();
  std::iota(positions.begin(), positions.end(), 0);
  Value position = node.int64Constant(positions, positionShape);
  Value excluded;
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    double infinity = std::numeric_limits<double>::infinity();
    excluded = node.splatConstant(elementType, largest ? -infinity : infinity);
  } else {
    unsigned width = elementType.getIntOrFloatBitWidth();
    APInt value = largest ? APInt::getSignedMinValue(width) : APInt::getSignedMaxValue(width);
    if (elementType.isUnsignedInteger())
      value = largest ? APInt::getMinValue(width) : APInt::getMaxValue(width);
    excluded = ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                                       ArrayRef<APInt>(value)));
  }
  Value remaining = node.input(0);
  SmallVector<Value> values, indices;
  for (int64_t round = 0; round < k; ++round) {
    Value best = node.createInferred<ArgReduceOp>(b.getStringAttr(largest ? "max" : "min"),
                                                  remaining, b.getI64IntegerAttr(*axis),
                                                  b.getBoolAttr(false));
    if (!best)
      return failure();
    Value index = ReshapeOp::create(b, loc, RankedTensorType::get(keptShape, b.getI64Type()),
                                    best);
    indices.push_back(index);
    values.push_back(GatherElementsOp::create(b, loc, type.clone(keptShape), node.input(0),
                                              index, b.getI64IntegerAttr(*axis)));
    if (round + 1 < k) {
      Value taken = node.createInferred<CompareOp>(b.getStringAttr("eq"), position, index);
      remaining = node.createInferred<WhereOp>(taken, excluded, remaining);
    }
  }
  auto join = [&](SmallVector<Value> &parts) {
    return parts.size() == 1 ? parts.front()
                             : node.createInferred<ConcatOp>(ValueRange(parts),
                                                             b.getI64IntegerAttr(*axis));
  };
  node.setOutput(0, join(values));
  if (node.outputUsed(1))
    node.setOutput(1, join(indices));
  return success();
}

} // namespace

/// log(softmax(x)) = (x - max) - log(sum(exp(x - max))) along `axis`.
Value logSoftmax(NodeImporter &node, Value x, int64_t axis) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto type = cast<RankedTensorType>(x.getType());
  RankedTensorType kept = keptType(type, {axis}, type.getElementType());
  Value max = reduce(node, "max", x, {axis});
  Value shifted = node.createInferred<SubOp>(x, ReshapeOp::create(b, loc, kept, max));
  Value sum = reduce(node, "sum", ExpOp::create(b, loc, type, shifted), {axis});
  Value logSum = LogOp::create(b, loc, sum.getType(), sum);
  return node.createInferred<SubOp>(shifted, ReshapeOp::create(b, loc, kept, logSum));
}

void registerReductionHandlers(OpRegistry &registry) {
  registerReduce<Reduction::Sum>(registry, "ReduceSum", 13);
  registerReduce<Reduction::Mean>(registry, "ReduceMean", 18);
  registerReduce<Reduction::Prod>(registry, "ReduceProd", 18);
  registerReduce<Reduction::Max>(registry, "ReduceMax", 18);
  registerReduce<Reduction::Min>(registry, "ReduceMin", 18);
  registerReduce<Reduction::SumSquare>(registry, "ReduceSumSquare", 18);
  registerReduce<Reduction::L1>(registry, "ReduceL1", 18);
  registerReduce<Reduction::L2>(registry, "ReduceL2", 18);
  registerReduce<Reduction::LogSum>(registry, "ReduceLogSum", 18);
  registerReduce<Reduction::LogSumExp>(registry, "ReduceLogSumExp", 18);
  registry.on("ArgMax", 1, [](NodeImporter &node) { return importArgReduce(node, "max"); });
  registry.on("ArgMin", 1, [](NodeImporter &node) { return importArgReduce(node, "min"); });
  registry.on("LogSoftmax", 1, importAlongAxis<logSoftmax>);
  registry.on("Hardmax", 1, importAlongAxis<hardmax>);
  registry.on("CumSum", 11, importCumulative<CumSumOp>);
  registry.on("CumProd", 26, importCumulative<CumProdOp>);
  registry.on("TopK", 1, importTopK);
}

} // namespace tessel::onnx_import
