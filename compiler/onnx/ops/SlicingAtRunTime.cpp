//===- SlicingAtRunTime.cpp - Slice and Pad with run-time parameters ------===//
//
// A Slice's starts, ends, axes and steps, or a Pad's pads and axes, that
// are known only at run time, given the result shape the model states.
// Each result axis becomes a gather of run-time positions of the input
// axis: every parameter entry is applied to every axis in [entries, rank]
// tables (entry k lists axis j or not), clamped as ONNX says, and summed
// over the entries. The run checks that the parameters give the stated
// shape; positions are clamped into the input as well, so nothing is read
// out of bounds before that check ends the run.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// i64 tensor arithmetic for the tables, with broadcasting.
class IndexArithmetic {
public:
  IndexArithmetic(NodeImporter &node, RankedTensorType input, int64_t entries)
      : rank(input.getRank()), entries(entries), dims(input.getShape()), node(node),
        b(node.builder()) {}

  Value constant(ArrayRef<int64_t> values, ArrayRef<int64_t> shape) {
    return node.int64Constant(values, shape);
  }
  Value scalar(int64_t value) { return constant({value}, {}); }
  Value add(Value x, Value y) { return node.createInferred<AddOp>(x, y); }
  Value sub(Value x, Value y) { return node.createInferred<SubOp>(x, y); }
  Value mul(Value x, Value y) { return node.createInferred<MulOp>(x, y); }
  Value max(Value x, Value y) { return node.createInferred<MaxOp>(x, y); }
  Value min(Value x, Value y) { return node.createInferred<MinOp>(x, y); }
  Value clamp(Value x, Value low, Value high) { return min(max(x, low), high); }
  Value less(Value x, Value y) {
    return node.createInferred<CompareOp>(b.getStringAttr("lt"), x, y);
  }
  Value equal(Value x, Value y) {
    return node.createInferred<CompareOp>(b.getStringAttr("eq"), x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return node.createInferred<WhereOp>(condition, x, y);
  }
  /// Negative entries (counted from the end of `size`) made non-negative.
  Value fromEnd(Value x, Value size) { return select(less(x, scalar(0)), add(x, size), x); }

  /// The input's sizes, one per column.
  Value dimRow() { return constant(dims, {1, rank}); }
  /// Input `input` as an [entries, 1] column, or `fallback` for each
  /// entry when the input is absent.
  Value column(size_t input, ArrayRef<int64_t> fallback) {
    if (!node.input(input))
      return constant(fallback, {entries, 1});
    return ReshapeOp::create(b, node.loc(), i64({entries, 1}), runtimeInt64s(node, input));
  }
  /// The table saying which axis each entry of `axes` (a column) lists.
  Value lists(Value axes) { return axisTable(node, axes, rank); }
  /// Per axis, the value of the entry listing it (0 when none does).
  Value perAxis(Value lists, Value table) { return sumFirstAxis(mul(lists, table)); }
  /// How many entries of an i1 tensor hold.
  Value countTrue(Value flags) {
    auto type = cast<RankedTensorType>(flags.getType());
    Value asInts = CastOp::create(b, node.loc(), type.clone(b.getI64Type()), flags);
    Value flat = ReshapeOp::create(b, node.loc(), i64({type.getNumElements()}), asInts);
    return sumFirstAxis(flat);
  }
  /// Stops the run unless `extents` (one per axis) are `stated`'s.
  Value countWrongExtents(Value extents, ArrayRef<int64_t> stated) {
    return countTrue(node.createInferred<NotOp>(equal(extents, constant(stated, {rank}))));
  }
  /// Entry `axis` of a per-axis vector, as a [1] tensor.
  Value entry(Value perAxis, int64_t axis) {
    return node.createInferred<GatherOp>(perAxis, constant({axis}, {1}), b.getI64IntegerAttr(0));
  }
  /// 0, 1, ..., extent - 1.
  Value counting(int64_t extent) {
    SmallVector<int64_t> values(extent);
    std::iota(values.begin(), values.end(), 0);
    return constant(values, {extent});
  }
  /// x's rows `positions` along `axis`, the positions clamped into it.
  Value gather(Value x, int64_t axis, Value positions) {
    positions = clamp(positions, scalar(0), scalar(dims[axis] - 1));
    return node.createInferred<GatherOp>(x, positions, b.getI64IntegerAttr(axis));
  }

  const int64_t rank, entries;
  const SmallVector<int64_t> dims;

private:
  RankedTensorType i64(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI64Type());
  }
  Value sumFirstAxis(Value x) {
    return node.createInferred<ReduceOp>(b.getStringAttr("sum"), x, b.getDenseI64ArrayAttr({0}));
  }

  NodeImporter &node;
  OpBuilder &b;
};

/// An empty constant of the stated shape when it has no elements, for
/// which no gathers are built.
Value emptyResult(NodeImporter &node, RankedTensorType stated, Type elementType) {
  return ConstantOp::create(node.builder(), node.loc(),
                            DenseElementsAttr::get(stated.clone(elementType),
                                                   ArrayRef<Attribute>{}));
}

} // namespace

LogicalResult importSliceAtRunTime(NodeImporter &node, RankedTensorType stated) {
  RankedTensorType type = node.inputType(0);
  int64_t entries = node.inputType(1).getNumElements();
  if (entries > type.getRank())
    return node.unsupported("starts lists more axes than the input has");
  for (size_t i = 2; i <= 4; ++i)
    if (node.input(i) && node.inputType(i).getNumElements() != entries)
      return node.unsupported("starts, ends, axes and steps differ in length");
  IndexArithmetic a(node, type, entries);
  SmallVector<int64_t> firstAxes(entries);
  std::iota(firstAxes.begin(), firstAxes.end(), 0);
  Value zero = a.scalar(0), one = a.scalar(1);
  Value dims = a.dimRow(), last = a.sub(dims, one);
  Value steps = a.column(4, SmallVector<int64_t>(entries, 1));
  Value lists = a.lists(a.column(3, firstAxes));
  // Entry k clamped to axis j, as ONNX clamps: to [0, size] going
  // forward, to [0, size - 1] (start) and [-1, size - 1] (end) backward.
  Value forward = a.less(zero, steps);
  Value start = a.fromEnd(a.column(1, {}), dims);
  start = a.select(forward, a.clamp(start, zero, dims), a.clamp(start, zero, last));
  Value end = a.fromEnd(a.column(2, {}), dims);
  end = a.select(forward, a.clamp(end, zero, dims), a.clamp(end, a.scalar(-1), last));
  Value span = a.select(forward, a.sub(end, start), a.sub(start, end));
  // A zero step is counted as an error below, never divided by.
  Value stride = a.max(a.select(forward, steps, a.sub(zero, steps)), one);
  Value length = a.max(zero, node.createInferred<DivOp>(a.add(span, a.sub(stride, one)), stride));

  // An axis no entry lists is taken whole.
  Value unlisted = a.sub(one, a.perAxis(lists, a.constant(SmallVector<int64_t>(entries, 1),
                                                          {entries, 1})));
  Value axisStart = a.perAxis(lists, start);
  Value axisStep = a.add(a.perAxis(lists, steps), unlisted);
  Value axisLength =
      a.add(a.perAxis(lists, length), a.mul(unlisted, a.constant(a.dims, {a.rank})));
  stopUnlessZero(node,
                 a.add(a.countWrongExtents(axisLength, stated.getShape()),
                       a.countTrue(a.equal(steps, zero))),
                 "Slice inputs giving another result shape than the " +
                     formatShape(stated.getShape()) + " the model states, or a zero step");

  if (stated.getNumElements() == 0)
    return node.setInferredOutput(0, emptyResult(node, stated, type.getElementType()));
  Value x = node.input(0);
  for (int64_t axis = 0; axis < a.rank && x; ++axis)
    x = a.gather(x, axis,
                 a.add(a.entry(axisStart, axis),
                       a.mul(a.counting(stated.getDimSize(axis)), a.entry(axisStep, axis))));
  return node.setInferredOutput(0, x);
}

LogicalResult importPadAtRunTime(NodeImporter &node, RankedTensorType stated, StringRef mode,
                                 Value value) {
  RankedTensorType type = node.inputType(0);
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return node.unsupported("mode '" + mode + "' is not supported");
  if (llvm::is_contained(type.getShape(), 0))
    return node.unsupported("the input must not be empty");
  int64_t rank = type.getRank();
  int64_t entries = node.input(3) ? node.inputType(3).getNumElements() : rank;
  if (entries > rank)
    return node.unsupported("axes lists more axes than the input has");
  if (node.inputType(1).getNumElements() != 2 * entries)
    return node.unsupported("pads needs two entries per padded axis");
  IndexArithmetic a(node, type, entries);
  SmallVector<int64_t> allAxes(entries);
  std::iota(allAxes.begin(), allAxes.end(), 0);
  Value lists = a.lists(a.column(3, allAxes));
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto half = [&](int64_t offset) {
    Value pads = runtimeInt64s(node, 1);
    Value part = node.createInferred<GatherOp>(pads, a.add(a.counting(entries), a.scalar(offset)),
                                               b.getI64IntegerAttr(0));
    return ReshapeOp::create(b, loc, RankedTensorType::get({entries, 1}, b.getI64Type()), part);
  };
  Value before = a.perAxis(lists, half(0));
  Value after = a.perAxis(lists, half(entries));
  Value extents = a.add(a.add(before, after), a.constant(a.dims, {rank}));
  stopUnlessZero(node, a.countWrongExtents(extents, stated.getShape()),
                 "pads giving another result shape than the " + formatShape(stated.getShape()) +
                     " the model states");

  if (stated.getNumElements() == 0)
    return node.setInferredOutput(0, emptyResult(node, stated, type.getElementType()));
  Value zero = a.scalar(0);
  Value x = node.input(0);
  for (int64_t axis = 0; axis < rank && x; ++axis) {
    int64_t extent = stated.getDimSize(axis), size = type.getDimSize(axis);
    // The input position each result position reads.
    Value source = a.sub(a.counting(extent), a.entry(before, axis));
    Value position = source;
    if (mode == "reflect" && size > 1) { // mirrored about the first and last
      Value high = a.scalar(size - 1);
      position = a.select(a.less(source, zero), a.sub(zero, source), source);
      position = a.select(a.less(high, position), a.sub(a.scalar(2 * (size - 1)), position),
                          position);
    }
    if (mode == "wrap") { // source modulo the size, from 0 up
      Value size = a.scalar(type.getDimSize(axis));
      Value remainder =
          a.sub(source, a.mul(node.createInferred<DivOp>(source, size), size));
      position = a.fromEnd(remainder, size);
    }
    x = a.gather(x, axis, position);
    if (mode != "constant" || !x)
      continue;
    Value outside = node.createInferred<OrOp>(
        a.less(source, zero), a.less(a.scalar(size - 1), source));
    SmallVector<int64_t> maskShape(rank, 1);
    maskShape[axis] = extent;
    outside = ReshapeOp::create(b, loc, RankedTensorType::get(maskShape, b.getI1Type()), outside);
    x = a.select(outside, value, x);
  }
  return node.setInferredOutput(0, x);
}

} // namespace tessel::onnx_import
