//===- NonMaxSuppression.cpp - ONNX NonMaxSuppression (opsets 10, 11) -----===//
//
// Greedy non-maximum suppression of every batch and class at once, as one
// tessel.scan whose steps a target runs as a loop. Each step takes, in
// every (batch, class), the best box still alive (highest score, lowest
// index among equal scores), records it, and retires it with every alive
// box that overlaps it by more than iou_threshold. That selects the boxes
// ONNX's greedy loop selects: a box it keeps is never overlapped by a box
// kept before it, and those are the boxes a step retires. A step records
// nothing once no box is alive or max_output_boxes_per_class are taken.
//
// How many boxes are selected depends on the values, so the model must
// state the output's shape [K, 3]; the run checks that K were. A (batch,
// class) selects at most min(K, boxes, max_output_boxes_per_class when it
// is a constant) boxes, which is the number of steps.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <limits>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The boxes' corners and areas, each [B, 1, N] (broadcasting over
/// classes), and the same as the rows of a [B * N, 5] table, from which a
/// step gathers each (batch, class)'s chosen box.
struct Corners {
  Value xMin, yMin, xMax, yMax, area;
  Value table;
};

/// The corners of the box each (batch, class) chose, each [B, C, 1].
struct Chosen {
  Value xMin, yMin, xMax, yMax, area;
};

class SuppressionBuilder : public Formula {
public:
  explicit SuppressionBuilder(NodeImporter &node) : Formula(node) {}

  Value isPositive(Value value) { return compare("gt", value, f32(0)); }
  Value both(Value lhs, Value rhs) { return node.createInferred<AndOp>(lhs, rhs); }
  Value reduce(StringRef kind, Value value, int64_t axis) {
    return node.createInferred<ReduceOp>(b.getStringAttr(kind), value,
                                         b.getDenseI64ArrayAttr({axis}));
  }
  Value gather(Value data, Value indices) {
    return node.createInferred<GatherOp>(data, indices, b.getI64IntegerAttr(0));
  }
  /// 0, 1, ..., count - 1 as i64, shaped `shape`.
  Value iota(int64_t count, ArrayRef<int64_t> shape) {
    SmallVector<int64_t> values(count);
    std::iota(values.begin(), values.end(), 0);
    return node.int64Constant(values, shape);
  }
  /// Column `column` of `value`, whose last axis holds the columns.
  Value column(Value value, int64_t column) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape()), starts(type.getRank(), 0);
    shape.back() = 1;
    starts.back() = column;
    return SliceOp::create(b, node.loc(), type.clone(shape), value, b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(SmallVector<int64_t>(type.getRank(), 1)));
  }

  /// The boxes' corners: given as two corners in either order
  /// ([y1, x1, y2, x2]), or as a centre and a size ([x, y, w, h]).
  Corners corners(Value boxes, bool centerPointBox) {
    auto type = cast<RankedTensorType>(boxes.getType());
    int64_t batches = type.getDimSize(0), count = type.getDimSize(1);
    Value c0 = column(boxes, 0), c1 = column(boxes, 1);
    Value c2 = column(boxes, 2), c3 = column(boxes, 3);
    Value xMin, yMin, xMax, yMax;
    if (centerPointBox) {
      Value halfWidth = div(c2, f32(2));
      Value halfHeight = div(c3, f32(2));
      xMin = sub(c0, halfWidth);
      xMax = add(c0, halfWidth);
      yMin = sub(c1, halfHeight);
      yMax = add(c1, halfHeight);
    } else {
      yMin = min(c0, c2);
      yMax = max(c0, c2);
      xMin = min(c1, c3);
      xMax = max(c1, c3);
    }
    Value area = mul(sub(xMax, xMin), sub(yMax, yMin));
    SmallVector<Value> columns = {xMin, yMin, xMax, yMax, area};
    Value table = reshape(node.createInferred<ConcatOp>(columns, b.getI64IntegerAttr(2)),
                          {batches * count, 5});
    for (Value &value : columns)
      value = reshape(value, {batches, 1, count});
    return {columns[0], columns[1], columns[2], columns[3], columns[4], table};
  }

  /// Whether each box overlaps the chosen box of its (batch, class) by
  /// more than `threshold`, which is iou_threshold raised to 0. ONNX's
  /// reference also asks for a positive overlap along both axes, positive
  /// areas and union: the overlap's width and height are clamped at 0, so
  /// that a ratio above a threshold of at least 0 implies them.
  Value overlapsChosen(const Chosen &chosen, const Corners &boxes, Value threshold) {
    auto extent = [&](Value chosenMin, Value chosenMax, Value boxMin, Value boxMax) {
      return max(sub(min(chosenMax, boxMax), max(chosenMin, boxMin)), f32(0));
    };
    Value intersection = mul(extent(chosen.xMin, chosen.xMax, boxes.xMin, boxes.xMax),
                             extent(chosen.yMin, chosen.yMax, boxes.yMin, boxes.yMax));
    Value unionArea = sub(add(boxes.area, chosen.area), intersection);
    return compare("gt", div(intersection, unionArea), threshold);
  }

  /// The step of the scan: from `alive` and `picks` ([B, C, N], 0 or 1 and
  /// 0 or box + 1) and this step's `slot` ([N], one-hot at the step's
  /// index, zero once max_output_boxes_per_class are taken), the next
  /// ones. Tensors of booleans between ops would keep them from
  /// vectorizing: flags are f32 0 or 1, compared where they are read, and
  /// the box indices f32 (exact up to 2^24 boxes).
  SmallVector<Value> step(Value alive, Value picks, Value slot, Value scores, const Corners &boxes,
                          Value threshold) {
    auto type = cast<RankedTensorType>(alive.getType());
    int64_t batches = type.getDimSize(0), classes = type.getDimSize(1), count = type.getDimSize(2);
    double infinity = std::numeric_limits<double>::infinity();
    // The best alive box: the first of the highest score (-inf included),
    // or `count` when none is alive.
    Value best = reshape(reduce("max", select(isPositive(alive), scores, f32(-infinity)), 2),
                         {batches, classes, 1});
    Value positions = convert(iota(count, {count}), b.getF32Type());
    Value pick = reshape(reduce("min",
                                select(both(isPositive(alive), compare("eq", scores, best)),
                                       positions, f32(double(count))),
                                2),
                         {batches, classes, 1});
    Value taken =
        select(both(compare("lt", pick, f32(double(count))), isPositive(reduce("max", slot, 0))),
               f32(1), f32(0));
    // Its corners, gathered from the table's rows b * N + pick.
    Value row = add(min(convert(pick, b.getI64Type()), i64(count - 1)),
                    mul(iota(batches, {batches, 1, 1}), i64(count)));
    Value corners = gather(boxes.table, row);
    auto corner = [&](int64_t k) { return reshape(column(corners, k), {batches, classes, 1}); };
    Chosen chosen{corner(0), corner(1), corner(2), corner(3), corner(4)};

    Value retired = node.createInferred<OrOp>(compare("eq", positions, pick),
                                              overlapsChosen(chosen, boxes, threshold));
    Value nextAlive = select(both(retired, isPositive(taken)), f32(0), alive);
    Value record = mul(taken, add(pick, f32(1)));
    Value nextPicks = add(picks, mul(slot, record));
    return {nextAlive, nextPicks};
  }

  /// The selected_indices rows [batch, class, box] of `picks` ([B * C, T],
  /// each (batch, class)'s selected boxes + 1 in slots 0, 1, ..., then 0),
  /// after a run-time check that `selected` were. Row r belongs to the
  /// (batch, class) g whose selections end past r, and is its slot r minus
  /// the selections before g: [K, B * C] comparisons, not [K, B * C * T].
  Value selectedIndices(Value picks, int64_t classes, int64_t selected) {
    auto type = cast<RankedTensorType>(picks.getType());
    int64_t groups = type.getDimSize(0), steps = type.getDimSize(1);
    Value counts = reduce("sum", convert(isPositive(picks), b.getI64Type()), 1);
    Value wrongCount =
        convert(node.createInferred<NotOp>(compare("eq", reduce("sum", counts, 0), i64(selected))),
                b.getI64Type());
    stopUnlessZero(node, wrongCount,
                   "NonMaxSuppression selecting another number of boxes than the " +
                       Twine(selected) + " the model states");
    if (selected == 0)
      return node.int64Constant({}, {0, 3});
    auto i64Type = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, b.getI64Type());
    };
    Value ends = CumSumOp::create(b, node.loc(), i64Type({groups}), counts, b.getI64IntegerAttr(0),
                                  b.getBoolAttr(false), b.getBoolAttr(false));
    Value rows = iota(selected, {selected, 1});
    Value group = min(
        reduce("sum", convert(compare("le", reshape(ends, {1, groups}), rows), b.getI64Type()), 1),
        i64(groups - 1));
    Value start = gather(sub(ends, counts), group);
    Value slot = min(max(sub(reshape(rows, {selected}), start), i64(0)), i64(steps - 1));
    Value flatSlot = add(mul(group, i64(steps)), slot);
    Value box =
        sub(convert(gather(reshape(picks, {groups * steps}), flatSlot), b.getI64Type()), i64(1));
    Value batch = div(group, i64(classes));
    Value classIndex = sub(group, mul(batch, i64(classes)));
    SmallVector<Value> columns;
    for (Value value : {batch, classIndex, box})
      columns.push_back(reshape(value, {selected, 1}));
    return node.createInferred<ConcatOp>(columns, b.getI64IntegerAttr(1));
  }
};

/// Whether optional input `i` is given: present and not empty.
bool given(NodeImporter &node, size_t i) {
  return i < node.numInputs() && node.input(i) && node.inputType(i).getNumElements() != 0;
}

/// Given input `i` as a scalar.
Value scalarInput(NodeImporter &node, size_t i) {
  RankedTensorType type = node.inputType(i);
  return ReshapeOp::create(node.builder(), node.loc(), type.clone(ArrayRef<int64_t>{}),
                           node.input(i));
}

LogicalResult importNonMaxSuppression(NodeImporter &node) {
  RankedTensorType boxesType = node.inputType(0), scoresType = node.inputType(1);
  if (!boxesType.hasStaticShape() || !scoresType.hasStaticShape() || boxesType.getRank() != 3 ||
      boxesType.getDimSize(2) != 4 || scoresType.getRank() != 3 ||
      scoresType.getDimSize(0) != boxesType.getDimSize(0) ||
      scoresType.getDimSize(2) != boxesType.getDimSize(1))
    return node.unsupported("boxes must be [B, N, 4] and scores [B, C, N], of static shapes");
  int64_t batches = boxesType.getDimSize(0), count = boxesType.getDimSize(1),
          classes = scoresType.getDimSize(1);
  if (batches * classes * count == 0)
    return node.unsupported("empty boxes or scores are not supported");
  for (size_t i : {2, 3, 4})
    if (given(node, i) &&
        (!node.inputType(i).hasStaticShape() || node.inputType(i).getNumElements() != 1))
      return node.unsupported("input " + Twine(i) + " must hold one value");
  int64_t center = node.intAttr("center_point_box", 0);
  if (center != 0 && center != 1)
    return node.unsupported("center_point_box must be 0 or 1");
  RankedTensorType stated = node.declaredOutputType(0);
  if (!stated || stated.getRank() != 2 || stated.isDynamicDim(0) || stated.getDimSize(1) != 3)
    return node.unsupported("how many boxes are selected depends on the scores: state the "
                            "shape of selected_indices as [K, 3] (value_info, or --value-shape)");
  int64_t selected = stated.getDimSize(0);

  OpBuilder &b = node.builder();
  Location loc = node.loc();
  SuppressionBuilder s(node);
  Type f32 = b.getF32Type();
  // Steps: the most boxes one (batch, class) can select; at least one, so
  // that the run can check that nothing is selected when K is 0.
  int64_t steps = std::min(count, selected);
  if (given(node, 2))
    if (ElementsAttr constant = node.constantInput(2))
      steps = std::min(steps, (*constant.getValues<APInt>().begin()).getSExtValue());
  steps = std::max<int64_t>(steps, 1);
  // ONNX's defaults: select nothing; retire any overlapping box.
  Value maxOutput = given(node, 2) ? scalarInput(node, 2) : node.int64Constant({0}, {});
  // A box overlapping by a ratio above a negative threshold overlaps at
  // all, which a ratio above 0 says.
  Value threshold = s.max(given(node, 3) ? scalarInput(node, 3) : s.f32(0), s.f32(0));
  Value scoreThreshold = given(node, 4) ? scalarInput(node, 4) : Value();

  Value scores = node.input(1);
  Value alive = scoreThreshold
                    ? s.select(s.compare("gt", scores, scoreThreshold), s.f32(1), s.f32(0))
                    : node.splatConstant(f32, 1, scoresType.getShape());
  Value picks = node.splatConstant(f32, 0, scoresType.getShape());
  // slot[t] is one-hot at t while t < max_output_boxes_per_class.
  Value stepIndex = s.iota(steps, {steps, 1});
  Value slots = s.select(s.both(s.compare("eq", stepIndex, s.iota(count, {1, count})),
                                s.compare("lt", stepIndex, maxOutput)),
                         s.f32(1), s.f32(0));
  Corners boxes = s.corners(node.input(0), center == 1);

  SmallVector<Value> invariants = {scores,     boxes.xMin, boxes.yMin,  boxes.xMax,
                                   boxes.yMax, boxes.area, boxes.table, threshold};
  SmallVector<int64_t> stacked = {steps, 2};
  llvm::append_range(stacked, scoresType.getShape());
  auto scan =
      ScanOp::create(b, loc, RankedTensorType::get(stacked, f32), invariants,
                     ValueRange{alive, picks}, ValueRange{slots}, /*length=*/Value(), false);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = b.createBlock(&scan.getBody());
    SmallVector<Value> inside;
    for (Value invariant : invariants)
      inside.push_back(body->addArgument(invariant.getType(), loc));
    Value aliveNow = body->addArgument(alive.getType(), loc);
    Value picksNow = body->addArgument(picks.getType(), loc);
    Value slot = body->addArgument(RankedTensorType::get({count}, f32), loc);
    Corners insideBoxes{inside[1], inside[2], inside[3], inside[4], inside[5], inside[6]};
    YieldOp::create(b, loc, s.step(aliveNow, picksNow, slot, inside[0], insideBoxes, inside[7]));
  }

  // The last step's picks: slot t of each (batch, class) holds its t-th
  // selected box + 1, or 0.
  Value finalPicks = SliceOp::create(
      b, loc, RankedTensorType::get({1, 1, batches, classes, steps}, f32), scan.getResult(),
      b.getDenseI64ArrayAttr({steps - 1, 1, 0, 0, 0}), b.getDenseI64ArrayAttr({1, 1, 1, 1, 1}));
  return node.setInferredOutput(
      0, s.selectedIndices(s.reshape(finalPicks, {batches * classes, steps}), classes, selected));
}

} // namespace

void registerNonMaxSuppressionHandlers(OpRegistry &registry) {
  registry.on("NonMaxSuppression", 10, importNonMaxSuppression);
}

} // namespace tessel::onnx_import
