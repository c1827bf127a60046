//===- Unique.cpp - ONNX Unique (opset 11) --------------------------------===//
//
// Unique of the elements of a tensor, or of its slices along an axis: each
// slice is a row of a [n, L] matrix, and every pair of rows is compared at
// once (equal everywhere; lexicographically less). A row is a first
// occurrence when no earlier row equals it; their positions, in input
// order, are the unsorted result, and a count of the rows less than each
// sorts them. How many distinct rows there are depends on the values, so
// the model must state it (the output's shape), and the run checks it.
// Comparing all pairs takes n^2 L elements, which bounds n.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

class UniqueBuilder {
public:
  explicit UniqueBuilder(NodeImporter &node) : node(node), b(node.builder()), loc(node.loc()) {}

  Value reshape(Value value, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(value.getType());
    return ReshapeOp::create(b, loc, type.clone(shape), value);
  }
  Value toI64(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    return CastOp::create(b, loc, type.clone(b.getI64Type()), value);
  }
  Value reduce(StringRef kind, Value value, int64_t axis) {
    return node.createInferred<ReduceOp>(b.getStringAttr(kind), value,
                                         b.getDenseI64ArrayAttr({axis}));
  }
  Value gather(Value value, Value indices, int64_t axis) {
    return node.createInferred<GatherOp>(value, indices, b.getI64IntegerAttr(axis));
  }

  /// Of rows [n, L], whether row i equals row j ([n, n], 0 or 1) and
  /// whether it sorts before it, lexicographically.
  std::pair<Value, Value> comparePairs(Value rows) {
    auto type = cast<RankedTensorType>(rows.getType());
    int64_t n = type.getDimSize(0), length = type.getDimSize(1);
    Value left = reshape(rows, {n, 1, length}), right = reshape(rows, {1, n, length});
    Value same = toI64(compare("eq", left, right));
    Value equal = reduce("min", same, 2);
    // Row i is less where, at its first entry that differs, it is less.
    Value differ = node.createInferred<SubOp>(node.int64Constant({1}, {}), same);
    Value differedBefore = CumSumOp::create(b, loc, cast<RankedTensorType>(differ.getType()),
                                            differ, b.getI64IntegerAttr(2), b.getBoolAttr(true),
                                            b.getBoolAttr(false));
    Value decides = node.createInferred<AndOp>(
        compare("eq", differedBefore, node.int64Constant({0}, {})), compare("lt", left, right));
    return {equal, reduce("max", toI64(decides), 2)};
  }

  Value compare(StringRef predicate, Value lhs, Value rhs) {
    return node.createInferred<CompareOp>(b.getStringAttr(predicate), lhs, rhs);
  }

private:
  NodeImporter &node;
  OpBuilder &b;
  Location loc;
};

/// How many distinct values (or slices) the model states Unique has: from
/// Y's extent along the axis (its only axis without one), or from the
/// length of indices or counts.
std::optional<int64_t> statedDistinct(NodeImporter &node, std::optional<int64_t> axis) {
  if (RankedTensorType y = node.declaredOutputType(0))
    if (y.getRank() == (axis ? node.inputType(0).getRank() : 1) &&
        !ShapedType::isDynamic(y.getDimSize(axis.value_or(0))))
      return y.getDimSize(axis.value_or(0));
  for (size_t output : {1, 3})
    if (node.numOutputs() > output)
      if (RankedTensorType stated = node.declaredOutputType(output);
          stated && stated.getRank() == 1 && !stated.isDynamicDim(0))
        return stated.getDimSize(0);
  return std::nullopt;
}

LogicalResult importUnique(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape() || type.getNumElements() == 0)
    return node.unsupported("X must have a static, non-empty shape");
  std::optional<int64_t> axis;
  if (std::optional<int64_t> given = node.intAttr("axis")) {
    axis = normalizeAxis(*given, type.getRank());
    if (!axis)
      return node.unsupported("axis " + Twine(*given) + " is out of range");
  }
  bool sorted = node.intAttr("sorted", 1) != 0;
  std::optional<int64_t> distinct = statedDistinct(node, axis);
  if (!distinct || *distinct <= 0)
    return node.unsupported("how many distinct values there are depends on X's values: "
                            "state the shape of output Y (value_info, or --value-shape)");
  // Slices along the axis as rows; without an axis, every element is one.
  int64_t rank = type.getRank();
  SmallVector<int64_t> perm;
  if (axis) {
    perm.push_back(*axis);
    for (int64_t dim = 0; dim < rank; ++dim)
      if (dim != *axis)
        perm.push_back(dim);
  }
  int64_t n = axis ? type.getDimSize(*axis) : type.getNumElements();
  int64_t length = type.getNumElements() / n;
  if (failed(checkComputeBudget(node, double(n) * double(n) * double(length),
                                "pairwise comparisons")))
    return failure();
  if (*distinct > n)
    return node.unsupported("the model states " + Twine(*distinct) + " distinct values of " +
                            Twine(n));

  UniqueBuilder u(node);
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value moved = axis ? node.createInferred<TransposeOp>(node.input(0),
                                                        b.getDenseI64ArrayAttr(perm))
                     : node.input(0);
  Value rows = u.reshape(moved, {n, length});
  auto [equal, less] = u.comparePairs(rows);
  // Row i occurs first when no row j < i equals it.
  SmallVector<int64_t> earlier(n * n, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j)
      earlier[i * n + j] = 1;
  Value repeats = u.reduce(
      "max", node.createInferred<MulOp>(equal, node.int64Constant(earlier, {n, n})), 1);
  Value first = node.createInferred<SubOp>(node.int64Constant({1}, {}), repeats);
  Value order = positionsOfNonzero(node, first, *distinct,
                                   "Unique input with another number of distinct values");
  if (sorted) {
    // The k-th first occurrence goes where the count of those less than it
    // says (no two are equal).
    Value lessAmongFirst = u.gather(u.gather(less, order, 0), order, 1);
    Value place = u.reduce("sum", lessAmongFirst, 0);
    auto indexType = RankedTensorType::get({*distinct}, b.getI64Type());
    order = ScatterElementsOp::create(b, loc, indexType, node.int64Constant(
                                          SmallVector<int64_t>(*distinct, 0), {*distinct}),
                                      place, order, b.getI64IntegerAttr(0),
                                      b.getStringAttr("none"));
  }

  SmallVector<int64_t> yShape{*distinct};
  if (axis)
    for (int64_t dim : ArrayRef<int64_t>(perm).drop_front())
      yShape.push_back(type.getDimSize(dim));
  Value y = u.reshape(u.gather(rows, order, 0), yShape);
  if (axis) {
    SmallVector<int64_t> inverse(rank);
    for (int64_t i = 0; i < rank; ++i)
      inverse[perm[i]] = i;
    y = node.createInferred<TransposeOp>(y, b.getDenseI64ArrayAttr(inverse));
  }
  if (failed(node.setInferredOutput(0, y)))
    return failure();
  // Row i against each distinct row, in output order.
  Value matches = u.gather(equal, order, 1);
  if (node.numOutputs() > 1)
    node.setOutput(1, order);
  if (node.numOutputs() > 2)
    node.setOutput(2, node.createInferred<ArgReduceOp>(b.getStringAttr("max"), matches,
                                                       b.getI64IntegerAttr(1),
                                                       b.getBoolAttr(false)));
  if (node.numOutputs() > 3)
    node.setOutput(3, u.reduce("sum", matches, 0));
  return success();
}

} // namespace

void registerUniqueHandlers(OpRegistry &registry) { registry.on("Unique", 11, importUnique); }

} // namespace tessel::onnx_import
