//===- ControlFlow.cpp - If, Scan and Loop in place of their nodes --------===//
//
// Shapes are static, so control flow is mostly resolved at import:
//  - an If whose condition folds is the branch it takes; one whose
//    condition is a run-time value computes both branches and selects;
//  - a Scan is one tessel.scan when its states share one type and its
//    inputs one direction, else its body unrolled over the scanned axis
//    (whose length is static), the states threaded from one step to the
//    next;
//  - a Loop whose trip count and conditions fold is its body unrolled as
//    many times as it runs (one tessel.scan when its values share one
//    type); one whose trip count, initial condition or body condition is
//    known only at run time is a tessel.loop, which reads its trip count
//    and tests the condition when the model runs, if it has no scan
//    outputs (values of several types packed into one state), and else its
//    body unrolled as many times as its scan
//    outputs' stated shape says, checked when the model runs.
// A subgraph's nodes are imported like the graph's own (importBody), its
// names bound while it is imported and forgotten after: a loop body's next
// step binds them anew, and no name outside a subgraph may refer to one
// inside it.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/GraphImporter.h"
#include "compiler/onnx/ModelValidation.h"
#include "compiler/onnx/NodeImporter.h"
#include "compiler/onnx/Sequences.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/ScopeExit.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {

namespace {

/// `value`, a tensor of one element, as a 0-d tensor; null for null.
Value scalarOf(OpBuilder &b, Location loc, Value value) {
  if (!value)
    return {};
  auto type = cast<RankedTensorType>(value.getType());
  return ReshapeOp::create(b, loc, type.clone(ArrayRef<int64_t>{}), value);
}

/// A 0-d tensor of the integer type `element` holding `value`.
Value scalarConstant(OpBuilder &b, Location loc, Type element, int64_t value) {
  auto type = RankedTensorType::get({}, element);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getIntegerAttr(element, value)));
}

/// The run-time check of a Loop unrolled as many times as its stated scan
/// outputs say, when its trip count M or condition is known only at run
/// time: each iteration must be entered (i < M, the condition true), and
/// the one after the last must not (i = M, or the condition false).
class RunTimeLoopCheck {
public:
  /// `tripCount` and `condition` are the Loop's inputs (null when absent).
  RunTimeLoopCheck(OpBuilder &builder, Location loc, Value tripCount, Value condition)
      : b(builder), loc(loc), tripCount(scalarOf(builder, loc, tripCount)),
        condition(scalarOf(builder, loc, condition)) {}

  void entering(int64_t iteration) {
    if (!tripCount && !condition)
      return;
    Value entered = within(iteration);
    if (condition)
      entered = entered ? AndOp::create(b, loc, flagType(), entered, condition) : condition;
    Value skipped = NotOp::create(b, loc, flagType(), entered);
    wrong = wrong ? OrOp::create(b, loc, flagType(), wrong, skipped) : skipped;
  }
  /// The body's condition output for the next iteration.
  void continuing(Value bodyCondition) { condition = scalarOf(b, loc, bodyCondition); }
  void finish(int64_t iterations, StringRef node) {
    Value more = within(iterations);
    if (more && condition)
      more = AndOp::create(b, loc, flagType(), more, condition);
    else if (!more)
      more = condition;
    if (more)
      wrong = wrong ? OrOp::create(b, loc, flagType(), wrong, more) : more;
    if (!wrong)
      return;
    Value count = CastOp::create(b, loc, RankedTensorType::get({}, b.getI64Type()), wrong);
    CheckZeroOp::create(b, loc, count, b.getStringAttr(node),
                        b.getStringAttr("Loop trip count and conditions giving another "
                                        "number of iterations than the " +
                                        std::to_string(iterations) +
                                        " its scan outputs' stated shape says"));
  }

private:
  RankedTensorType flagType() { return RankedTensorType::get({}, b.getI1Type()); }
  /// iteration < M, or null without a trip count.
  Value within(int64_t iteration) {
    if (!tripCount)
      return {};
    Value index = scalarConstant(b, loc, b.getI64Type(), iteration);
    return CompareOp::create(b, loc, flagType(), b.getStringAttr("lt"), index, tripCount);
  }

  OpBuilder &b;
  Location loc;
  Value tripCount, condition, wrong;
};

/// The graph-valued attribute `name` of `node`, if it has one.
const onnx::GraphProto *graphAttribute(const onnx::NodeProto &node, llvm::StringRef name) {
  for (const onnx::AttributeProto &attribute : node.attribute())
    if (attribute.name() == name && attribute.has_g())
      return &attribute.g();
  return nullptr;
}

/// The ints attribute `name` of `node`, or `count` copies of `fallback`.
SmallVector<int64_t> intsAttribute(const onnx::NodeProto &node, llvm::StringRef name,
                                   size_t count, int64_t fallback) {
  for (const onnx::AttributeProto &attribute : node.attribute())
    if (attribute.name() == name)
      return SmallVector<int64_t>(attribute.ints().begin(), attribute.ints().end());
  return SmallVector<int64_t>(count, fallback);
}

/// The value of a constant holding one integer or bool, if it is one.
std::optional<int64_t> constantScalar(Value value) {
  ElementsAttr constant;
  if (!matchPattern(value, m_Constant(&constant)) || constant.getNumElements() != 1 ||
      !isa<IntegerType>(constant.getElementType()))
    return std::nullopt;
  return (*constant.value_begin<APInt>()).getSExtValue();
}

} // namespace

/// `slices` (of one type) stacked along a new axis `axis`; null if their
/// types differ.
Value stack(OpBuilder &builder, Location loc, ArrayRef<Value> slices, int64_t axis) {
  auto sliceType = cast<RankedTensorType>(slices.front().getType());
  SmallVector<int64_t> unit(sliceType.getShape());
  unit.insert(unit.begin() + axis, 1);
  SmallVector<Value> parts;
  for (Value slice : slices) {
    if (slice.getType() != sliceType)
      return {};
    parts.push_back(ReshapeOp::create(builder, loc, sliceType.clone(unit), slice));
  }
  if (parts.size() == 1)
    return parts.front();
  SmallVector<int64_t> stacked = unit;
  stacked[axis] = static_cast<int64_t>(parts.size());
  return ConcatOp::create(builder, loc, sliceType.clone(stacked), parts,
                          builder.getI64IntegerAttr(axis));
}

/// `whenTrue` where the 0-d `condition` holds, else `whenFalse`: tensors of
/// one type, or sequences of as many such tensors, or two empty optionals;
/// null for any other pair.
static Value selectAtRunTime(OpBuilder &builder, Location loc, Value condition, Value whenTrue,
                             Value whenFalse) {
  if (whenTrue.getType() != whenFalse.getType())
    return {};
  if (isEmptyOptional(whenTrue))
    return whenTrue;
  std::optional<SmallVector<Value>> onTrue = sequenceElements(whenTrue);
  std::optional<SmallVector<Value>> onFalse = sequenceElements(whenFalse);
  if (!onTrue || !onFalse)
    return WhereOp::create(builder, loc, whenTrue.getType(), condition, whenTrue, whenFalse);
  SmallVector<Value> selected;
  for (auto [left, right] : llvm::zip(*onTrue, *onFalse))
    selected.push_back(WhereOp::create(builder, loc, left.getType(), condition, left, right));
  return makeSequence(builder, loc, selected);
}

/// An If whose condition is a constant (computed from shapes, attributes
/// or initializers, as exporters of scripted code write them) is the branch
/// it takes: that branch's nodes are imported in its place. One whose
/// condition is known only at run time computes both branches and selects
/// each output (tessel.where), when the branches' outputs have the same
/// types.
void GraphImporter::importIf(const onnx::NodeProto &node, int index,
                             const std::string &label) {
  std::optional<SmallVector<Value>> inputs = nodeInputs(node, label);
  if (!inputs)
    return poisonOutputs(node);
  Value condition = inputs->empty() ? Value() : inputs->front();
  if (!condition)
    return refuse(node, label, "an If needs its condition");
  auto conditionType = dyn_cast<RankedTensorType>(condition.getType());
  if (!conditionType || conditionType.getNumElements() != 1 ||
      !conditionType.getElementType().isInteger(1))
    return refuse(node, label, "the condition must hold one bool");
  // A branch's outputs, or nothing after recording why.
  auto importBranch = [&](llvm::StringRef name) -> std::optional<SmallVector<Value>> {
    const onnx::GraphProto *branch = graphAttribute(node, name);
    if (!branch || branch->output_size() != node.output_size()) {
      problems.push_back(label + name.str() + " must give one output per output of the If");
      return std::nullopt;
    }
    return importBody(*branch, {}, index, label);
  };
  SmallVector<Value> results;
  if (std::optional<int64_t> constant = constantScalar(condition)) {
    std::optional<SmallVector<Value>> outputs =
        importBranch(*constant ? "then_branch" : "else_branch");
    if (!outputs)
      return poisonOutputs(node);
    results = *outputs;
  } else {
    std::optional<SmallVector<Value>> onTrue = importBranch("then_branch");
    std::optional<SmallVector<Value>> onFalse = importBranch("else_branch");
    if (!onTrue || !onFalse)
      return poisonOutputs(node);
    Location loc = nodeLocation(node, index);
    Value scalar = scalarOf(builder, loc, condition);
    for (auto [output, whenTrue, whenFalse] : llvm::zip(node.output(), *onTrue, *onFalse)) {
      Value selected = selectAtRunTime(builder, loc, scalar, whenTrue, whenFalse);
      if (!selected)
        return refuse(node, label,
                      "the condition is known only at run time and the branches give output '" +
                          output + "' different types (" + describeValue(whenTrue) + " and " +
                          describeValue(whenFalse) + ")");
      results.push_back(selected);
    }
  }
  bindOutputs(node, results);
}

void GraphImporter::poisonOutputs(const onnx::NodeProto &node) {
  for (const std::string &output : node.output())
    poisoned.insert(output);
}

void GraphImporter::refuse(const onnx::NodeProto &node, const std::string &label,
                           const std::string &why) {
  problems.push_back(label + why);
  poisonOutputs(node);
}

std::optional<SmallVector<Value>> GraphImporter::nodeInputs(const onnx::NodeProto &node,
                                                            const std::string &label) {
  SmallVector<Value> inputs;
  for (const std::string &name : node.input()) {
    if (poisoned.contains(name))
      return std::nullopt;
    Value value = name.empty() ? Value() : lookup(name);
    if (!value && !name.empty()) {
      problems.push_back(label + "input '" + name +
                         "' is not produced by any earlier node, input or initializer");
      return std::nullopt;
    }
    inputs.push_back(value);
  }
  return inputs;
}

void GraphImporter::bindOutputs(const onnx::NodeProto &node, ArrayRef<Value> results) {
  for (auto [output, result] : llvm::zip(node.output(), results)) {
    if (output.empty())
      continue;
    values[output] = foldConstantInputs(result);
    ElementsAttr constant;
    if (matchPattern(values[output], m_Constant(&constant)))
      constants[output] = constant;
  }
}

std::optional<SmallVector<Value>> GraphImporter::importBody(const onnx::GraphProto &body,
                                                           ArrayRef<Value> arguments,
                                                           int index,
                                                           const std::string &label) {
  if (body.input_size() != static_cast<int>(arguments.size())) {
    problems.push_back(label + "the body takes " + std::to_string(body.input_size()) +
                       " inputs but is given " + std::to_string(arguments.size()));
    return std::nullopt;
  }
  if (body.sparse_initializer_size() > 0) {
    problems.push_back(label + "sparse initializers are not supported");
    return std::nullopt;
  }
  std::vector<std::string> own;
  for (auto [input, argument] : llvm::zip(body.input(), arguments)) {
    values[input.name()] = argument;
    ElementsAttr constant;
    if (matchPattern(argument, m_Constant(&constant)))
      constants[input.name()] = constant;
    own.push_back(input.name());
  }
  for (const onnx::TensorProto &tensor : body.initializer()) {
    initializers[tensor.name()] = &tensor;
    own.push_back(tensor.name());
  }
  for (const onnx::NodeProto &inner : body.node())
    llvm::append_range(own, inner.output());

  size_t before = problems.size();
  for (const onnx::NodeProto &inner : body.node())
    importNode(inner, index, /*nested=*/true);
  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &result : body.output()) {
    Value produced = poisoned.contains(result.name()) ? Value() : lookup(result.name());
    if (!produced && !poisoned.contains(result.name()))
      problems.push_back(label + "body output '" + result.name() +
                         "' is not produced by the body or the graph");
    outputs.push_back(produced);
  }
  for (const std::string &name : own) {
    values.erase(name);
    constants.erase(name);
    poisoned.erase(name);
  }
  if (problems.size() > before)
    return std::nullopt;
  return outputs;
}

/// value[position] along `axis`, without that axis.
static Value sliceAt(OpBuilder &builder, Location loc, Value value, int64_t axis,
                     int64_t position) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
  SmallVector<int64_t> shape(type.getShape());
  starts[axis] = position;
  shape[axis] = 1;
  Value slice = SliceOp::create(builder, loc, type.clone(shape), value,
                                builder.getDenseI64ArrayAttr(starts),
                                builder.getDenseI64ArrayAttr(steps));
  shape.erase(shape.begin() + axis);
  return ReshapeOp::create(builder, loc, type.clone(shape), slice);
}

/// `value` with its axis `from` moved to position `to`, the others in order.
static Value moveAxis(OpBuilder &builder, Location loc, Value value, int64_t from, int64_t to) {
  if (from == to)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != from)
      order.push_back(d);
  order.insert(order.begin() + to, from);
  SmallVector<int64_t> moved;
  for (int64_t d : order)
    moved.push_back(type.getDimSize(d));
  return TransposeOp::create(builder, loc, type.clone(moved), value,
                             builder.getDenseI64ArrayAttr(order));
}

/// From opset 9 on, the node's scan_input_axes, scan_input_directions,
/// scan_output_axes and scan_output_directions; before, every scan input
/// and output of one batch element is scanned along axis 0, the inputs in
/// the node's `directions`.
std::optional<GraphImporter::ScanShape> GraphImporter::scanAttributes(const onnx::NodeProto &node,
                                                                      int64_t states,
                                                                      int64_t scanCount,
                                                                      int64_t outputCount) const {
  ScanShape shape{states, outputCount, -1, {}, {}, {}, {}};
  if (opset < 9) {
    shape.inputAxes.assign(scanCount, 0);
    shape.inputDirections = intsAttribute(node, "directions", scanCount, 0);
    shape.outputAxes.assign(outputCount, 0);
    shape.outputDirections.assign(outputCount, 0);
  } else {
    shape.inputAxes = intsAttribute(node, "scan_input_axes", scanCount, 0);
    shape.inputDirections = intsAttribute(node, "scan_input_directions", scanCount, 0);
    shape.outputAxes = intsAttribute(node, "scan_output_axes", outputCount, 0);
    shape.outputDirections = intsAttribute(node, "scan_output_directions", outputCount, 0);
  }
  if (static_cast<int64_t>(shape.inputAxes.size()) != scanCount ||
      static_cast<int64_t>(shape.inputDirections.size()) != scanCount ||
      static_cast<int64_t>(shape.outputAxes.size()) != outputCount ||
      static_cast<int64_t>(shape.outputDirections.size()) != outputCount)
    return std::nullopt;
  return shape;
}

/// Scan: the body runs once per position along each scan input's axis
/// (forward or reversed), taking the states and each scan input's slice
/// there; it gives the next states and one slice of each scan output,
/// stacked along that output's axis. Before opset 9 every input has a
/// leading batch axis, whose elements are scanned apart, and an optional
/// first input, sequence_lens.
void GraphImporter::importScan(const onnx::NodeProto &node, int index,
                               const std::string &label) {
  auto refuse = [&](const std::string &why) { this->refuse(node, label, why); };
  bool batched = opset < 9;
  int64_t leading = batched ? 1 : 0; // sequence_lens
  const onnx::GraphProto *body = graphAttribute(node, "body");
  int64_t scanCount = -1;
  for (const onnx::AttributeProto &attribute : node.attribute())
    if (attribute.name() == "num_scan_inputs")
      scanCount = attribute.i();
  int64_t stateCount = node.input_size() - leading - scanCount;
  if (!body || scanCount < 1 || stateCount < 0)
    return refuse("a Scan needs a body and num_scan_inputs between 1 and its input count");
  int64_t outputCount = body->output_size() - stateCount;
  if (outputCount < 0 || outputCount != node.output_size() - stateCount)
    return refuse("the body must give the states and then one slice per scan output");
  std::optional<ScanShape> shape = scanAttributes(node, stateCount, scanCount, outputCount);
  if (!shape)
    return refuse("the scan axes and directions must give one entry per scan input and output");

  std::optional<SmallVector<Value>> inputs = nodeInputs(node, label);
  if (!inputs)
    return poisonOutputs(node);
  if (batched && (*inputs)[0])
    return refuse("sequence_lens (Scan before opset 9) is not supported; omit it to scan every "
                  "batch element's whole sequence");
  ArrayRef<Value> operands = ArrayRef<Value>(*inputs).drop_front(leading);
  if (llvm::is_contained(operands, Value()))
    return refuse("a Scan's inputs may not be omitted");
  for (auto [name, operand] : llvm::zip(node.input(), *inputs))
    if (operand && !isa<RankedTensorType>(operand.getType()))
      return refuse("input '" + name + "' is " + describeValue(operand) +
                    ", but a Scan's states and inputs are tensors");
  if (!batched) {
    if (std::optional<SmallVector<Value>> results =
            scanResults(node, index, label, operands, *shape))
      bindOutputs(node, *results);
    return;
  }

  // Before opset 9: each batch element scanned on its own, the results
  // stacked along the batch axis again.
  int64_t batch = -1;
  for (Value operand : operands) {
    auto type = cast<RankedTensorType>(operand.getType());
    if (!type.hasStaticShape() || type.getRank() < 1 || (batch >= 0 && type.getDimSize(0) != batch))
      return refuse("every input of a Scan before opset 9 needs a static shape with the same "
                    "batch axis first");
    batch = type.getDimSize(0);
  }
  Location loc = nodeLocation(node, index);
  std::vector<SmallVector<Value>> perElement(node.output_size());
  for (int64_t element = 0; element < batch; ++element) {
    SmallVector<Value> elementInputs;
    for (Value operand : operands)
      elementInputs.push_back(sliceAt(builder, loc, operand, 0, element));
    std::optional<SmallVector<Value>> results =
        scanResults(node, index, label, elementInputs, *shape);
    if (!results)
      return;
    for (auto [i, result] : llvm::enumerate(*results))
      perElement[i].push_back(result);
  }
  if (batch == 0)
    return refuse("a Scan over a batch of 0 elements has no results to give");
  SmallVector<Value> stacked;
  for (ArrayRef<Value> values : perElement)
    stacked.push_back(stack(builder, loc, values, 0));
  bindOutputs(node, stacked);
}

std::optional<SmallVector<Value>> GraphImporter::scanResults(const onnx::NodeProto &node, int index,
                                                             const std::string &label,
                                                             ArrayRef<Value> inputs,
                                                             ScanShape shape) {
  auto refuse = [&](const std::string &why) {
    this->refuse(node, label, why);
    return std::nullopt;
  };
  const onnx::GraphProto *body = graphAttribute(node, "body");
  int64_t stateCount = shape.states, outputCount = shape.outputs;
  int64_t scanCount = static_cast<int64_t>(shape.inputAxes.size());
  SmallVector<int64_t> &inputAxes = shape.inputAxes;
  // The scanned length, the same along every scan input's axis.
  int64_t length = -1;
  for (int64_t j = 0; j < scanCount; ++j) {
    auto type = cast<RankedTensorType>(inputs[stateCount + j].getType());
    std::optional<int64_t> axis = normalizeAxis(inputAxes[j], type.getRank());
    if (!axis || !type.hasStaticShape())
      return refuse("scan input " + std::to_string(j) + " needs a static shape and an axis in it");
    inputAxes[j] = *axis;
    if (length >= 0 && type.getDimSize(*axis) != length)
      return refuse("the scan inputs have different lengths along their axes");
    length = type.getDimSize(*axis);
  }
  shape.length = length;
  SmallVector<Value> results;
  switch (importScanAsLoop(node, index, label, inputs, shape, results)) {
  case ScanImport::Done:
    return results;
  case ScanImport::Failed:
    return std::nullopt;
  case ScanImport::Unroll:
    break;
  }
  if (length > kMaxUnrolledSteps)
    return refuse("a Scan of " + std::to_string(length) + " steps is longer than the " +
                  std::to_string(kMaxUnrolledSteps) + " it unrolls");

  Location loc = nodeLocation(node, index);
  SmallVector<Value> states(inputs.begin(), inputs.begin() + stateCount);
  std::vector<SmallVector<Value>> slices(outputCount);
  for (int64_t step = 0; step < length; ++step) {
    SmallVector<Value> arguments = states;
    for (int64_t j = 0; j < scanCount; ++j)
      arguments.push_back(sliceAt(builder, loc, inputs[stateCount + j], inputAxes[j],
                                  shape.inputDirections[j] ? length - 1 - step : step));
    std::optional<SmallVector<Value>> outputs = importBody(*body, arguments, index, label);
    if (!outputs) {
      poisonOutputs(node);
      return std::nullopt;
    }
    for (int64_t i = 0; i < stateCount; ++i) {
      if ((*outputs)[i].getType() != states[i].getType())
        return refuse("the body changes the type of state " + std::to_string(i));
      states[i] = (*outputs)[i];
    }
    for (int64_t k = 0; k < outputCount; ++k)
      slices[k].push_back((*outputs)[stateCount + k]);
  }

  results = states;
  for (int64_t k = 0; k < outputCount; ++k) {
    if (length == 0)
      return refuse("a Scan of no steps has no scan outputs to give");
    auto sliceType = cast<RankedTensorType>(slices[k].front().getType());
    std::optional<int64_t> axis = normalizeAxis(shape.outputAxes[k], sliceType.getRank() + 1);
    if (!axis)
      return refuse("scan output " + std::to_string(k) + "'s axis is out of range");
    if (shape.outputDirections[k])
      std::reverse(slices[k].begin(), slices[k].end());
    Value stacked = stack(builder, loc, slices[k], *axis);
    if (!stacked)
      return refuse("the body gives scan output " + std::to_string(k) +
                    " slices of different types");
    results.push_back(stacked);
  }
  return results;
}

/// Every step's value of state `index` of `scan`: [steps, ...].
static Value stateSlot(OpBuilder &builder, Location loc, ScanOp scan, int64_t index) {
  return sliceAt(builder, loc, scan.getResult(), 1, index);
}

/// State `index` after the last step of `scan`.
static Value finalState(OpBuilder &builder, Location loc, ScanOp scan, int64_t index) {
  return sliceAt(builder, loc, stateSlot(builder, loc, scan, index), 0,
                 scan.getReverse() ? 0 : scan.getSteps() - 1);
}

/// Values that `body`, an op's region isolated from above, takes from the
/// graph: constants are copied in, others become the op's `invariants`,
/// whose block arguments start at `firstInvariant`.
static void captureInvariants(OpBuilder &builder, Location loc, Region &body,
                              MutableOperandRange invariants, unsigned firstInvariant) {
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(body, captured);
  Block &block = body.front();
  for (Value value : captured) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&block);
    Value inside;
    if (auto constant = value.getDefiningOp<ConstantOp>()) {
      inside = builder.clone(*constant)->getResult(0);
    } else {
      inside = block.insertArgument(firstInvariant + invariants.size(), value.getType(), loc);
      invariants.append(value);
    }
    replaceAllUsesInRegionWith(value, inside, body);
  }
}

/// Whether `body` checks a value when the model runs (tessel.check_zero),
/// which only the entry function can.
static bool checksAtRunTime(Region &body) {
  return body.walk([](CheckZeroOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

GraphImporter::ScanImport GraphImporter::buildScanLoop(Location loc, ArrayRef<Value> states,
                                                       ArrayRef<Value> scanned, bool reverse,
                                                       const LoopBodyBuilder &buildBody,
                                                       ScanOp &built) {
  auto stateType = cast<RankedTensorType>(states.front().getType());
  int64_t steps = cast<RankedTensorType>(scanned.front().getType()).getDimSize(0);
  SmallVector<int64_t> stacked = {steps, static_cast<int64_t>(states.size())};
  llvm::append_range(stacked, stateType.getShape());
  auto scan = ScanOp::create(builder, loc, stateType.clone(stacked), ValueRange{}, states, scanned,
                             /*length=*/Value(), reverse);
  {
    OpBuilder::InsertionGuard guard(builder);
    Block *body = builder.createBlock(&scan.getBody());
    SmallVector<Value> arguments;
    for (Value state : states)
      arguments.push_back(body->addArgument(state.getType(), loc));
    for (Value input : scanned) {
      auto type = cast<RankedTensorType>(input.getType());
      arguments.push_back(body->addArgument(type.clone(type.getShape().drop_front()), loc));
    }
    ScanImport outcome = ScanImport::Done;
    SmallVector<Value> next = buildBody(arguments, outcome);
    if (outcome == ScanImport::Done &&
        llvm::any_of(next, [&](Value value) { return value.getType() != stateType; }))
      outcome = ScanImport::Unroll;
    // A check of a value at run time (an index's range, say) stops the
    // run from the entry function: the steps, unrolled there, may check.
    if (outcome == ScanImport::Done && checksAtRunTime(scan.getBody()))
      outcome = ScanImport::Unroll;
    if (outcome != ScanImport::Done) {
      scan.erase();
      return outcome;
    }
    YieldOp::create(builder, loc, next);
  }
  captureInvariants(builder, loc, scan.getBody(), scan.getInvariantsMutable(),
                    /*firstInvariant=*/0);
  built = scan;
  return ScanImport::Done;
}

/// Zeros of `type`: the initial value of a scan output carried as a state.
static Value zerosOf(OpBuilder &builder, Location loc, RankedTensorType type) {
  return ConstantOp::create(builder, loc, type,
                            DenseElementsAttr::get(type, builder.getZeroAttr(type.getElementType())));
}

/// Scan as one tessel.scan, whose steps a target runs as a loop, when its
/// states share one type and its scan inputs one direction: each scan
/// output rides along as one more state of that type (its value before a
/// step unused), so that the stacked result holds every step's outputs.
/// Anything else is unrolled (scanResults).
GraphImporter::ScanImport GraphImporter::importScanAsLoop(const onnx::NodeProto &node, int index,
                                                          const std::string &label,
                                                          ArrayRef<Value> inputs,
                                                          const ScanShape &shape,
                                                          SmallVector<Value> &results) {
  if (shape.states == 0 || shape.length == 0 || !llvm::all_equal(shape.inputDirections))
    return ScanImport::Unroll;
  auto stateType = cast<RankedTensorType>(inputs.front().getType());
  ArrayRef<Value> initial = inputs.take_front(shape.states);
  if (llvm::any_of(initial, [&](Value state) { return state.getType() != stateType; }) ||
      !stateType.hasStaticShape())
    return ScanImport::Unroll;
  Location loc = nodeLocation(node, index);
  bool reverse = shape.inputDirections.front() != 0;

  // Each scan input with its scanned axis first.
  SmallVector<Value> scanned;
  for (auto [j, input] : llvm::enumerate(inputs.drop_front(shape.states)))
    scanned.push_back(moveAxis(builder, loc, input, shape.inputAxes[j], 0));
  SmallVector<Value> states(initial);
  states.append(shape.outputs, zerosOf(builder, loc, stateType));
  const onnx::GraphProto &body = *graphAttribute(node, "body");
  ScanOp scan;
  ScanImport outcome = buildScanLoop(
      loc, states, scanned, reverse,
      [&](ArrayRef<Value> arguments, ScanImport &outcome) -> SmallVector<Value> {
        // The outputs' carried values are not the body's inputs.
        SmallVector<Value> bodyArguments(arguments.take_front(shape.states));
        llvm::append_range(bodyArguments, arguments.drop_front(states.size()));
        std::optional<SmallVector<Value>> outputs =
            importBody(body, bodyArguments, index, label);
        if (!outputs)
          outcome = ScanImport::Failed;
        return outputs.value_or(SmallVector<Value>());
      },
      scan);
  if (outcome == ScanImport::Failed)
    poisonOutputs(node);
  if (outcome != ScanImport::Done)
    return outcome;

  // Final states; scan outputs stacked in the order ONNX gives them, along
  // their axes.
  for (int64_t i = 0; i < shape.states; ++i)
    results.push_back(finalState(builder, loc, scan, i));
  for (int64_t k = 0; k < shape.outputs; ++k) {
    Value output = stateSlot(builder, loc, scan, shape.states + k);
    auto type = cast<RankedTensorType>(output.getType());
    // result[p] comes from the step at position p; ONNX stacks a forward
    // output in the order of the steps, a reverse one in the opposite.
    if (reverse != (shape.outputDirections[k] != 0)) {
      SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
      starts[0] = shape.length - 1;
      steps[0] = -1;
      output = SliceOp::create(builder, loc, type, output, builder.getDenseI64ArrayAttr(starts),
                               builder.getDenseI64ArrayAttr(steps));
    }
    std::optional<int64_t> axis = normalizeAxis(shape.outputAxes[k], type.getRank());
    if (!axis) {
      refuse(node, label, "scan output " + std::to_string(k) + "'s axis is out of range");
      return ScanImport::Failed;
    }
    results.push_back(moveAxis(builder, loc, output, 0, *axis));
  }
  return ScanImport::Done;
}

/// The most iterations of a Loop run as a tessel.scan: its iteration
/// numbers are a constant of that many elements.
constexpr int64_t kMaxLoopSteps = int64_t(1) << 24;

/// How many times `nodes`, and the subgraphs of their attributes, read
/// `name`.
static int64_t readsOf(const google::protobuf::RepeatedPtrField<onnx::NodeProto> &nodes,
                       const std::string &name) {
  int64_t reads = 0;
  for (const onnx::NodeProto &node : nodes) {
    reads += llvm::count(node.input(), name);
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.has_g())
        reads += readsOf(attribute.g().node(), name);
      for (const onnx::GraphProto &graph : attribute.graphs())
        reads += readsOf(graph.node(), name);
    }
  }
  return reads;
}

/// Whether the Loop `body` only ever appends one tensor to its carried
/// value `k` (a sequence, empty when the Loop starts): what scripted code's
/// list.append in a loop exports, a scan output in all but name. Its one
/// reader is a SequenceInsert at the back that gives the body's next value.
static bool appendsTo(const onnx::GraphProto &body, int64_t k) {
  const std::string &list = body.input(2 + k).name();
  const std::string &next = body.output(1 + k).name();
  if (readsOf(body.node(), list) != 1 || readsOf(body.node(), next) != 0 ||
      llvm::count_if(body.output(), [&](const onnx::ValueInfoProto &output) {
        return output.name() == next || output.name() == list;
      }) != 1)
    return false;
  return llvm::any_of(body.node(), [&](const onnx::NodeProto &node) {
    return node.op_type() == "SequenceInsert" && node.input_size() == 2 && node.input(0) == list &&
           node.output_size() == 1 && node.output(0) == next;
  });
}

/// Loop as one tessel.scan when its trip count is a constant, it starts
/// running and its body's condition folds to true whatever the iteration:
/// the iteration numbers are its scanned operand, and the loop-carried
/// values and scan outputs (carried as states, as for Scan) share one type.
/// A carried sequence that starts empty and that the body only appends to
/// is a scan output too, whose slices the sequence's tensors are.
bool GraphImporter::importLoopAsScan(const onnx::NodeProto &node, int index, const std::string &label,
                                ArrayRef<Value> inputs, int64_t tripCount, int64_t scanCount) {
  ArrayRef<Value> initial = inputs.drop_front(2);
  if (tripCount <= 0 || tripCount > kMaxLoopSteps || initial.empty())
    return false;
  const onnx::GraphProto &body = *graphAttribute(node, "body");
  // Which carried values are lists the body appends to; the others are
  // the loop's carried states.
  SmallVector<bool> appended;
  SmallVector<Value> carried;
  for (auto [k, value] : llvm::enumerate(initial)) {
    std::optional<SmallVector<Value>> elements = sequenceElements(value);
    appended.push_back(elements && elements->empty() && tripCount <= kMaxUnrolledSteps &&
                       body.input_size() == static_cast<int>(initial.size()) + 2 &&
                       appendsTo(body, k));
    if (!appended.back())
      carried.push_back(value);
  }
  int64_t appendedCount = initial.size() - carried.size();
  if (carried.empty())
    return false;
  auto stateType = dyn_cast<RankedTensorType>(carried.front().getType());
  if (!stateType || !stateType.hasStaticShape() ||
      llvm::any_of(carried, [&](Value value) { return value.getType() != stateType; }))
    return false;
  Location loc = nodeLocation(node, index);
  SmallVector<int64_t> numbers(tripCount);
  std::iota(numbers.begin(), numbers.end(), 0);
  auto numberType = RankedTensorType::get({tripCount}, builder.getI64Type());
  Value iterations = ConstantOp::create(builder, loc, numberType,
                                        DenseElementsAttr::get(numberType, ArrayRef(numbers)));
  // The states: the carried values, then the scan outputs, then the
  // appended lists.
  SmallVector<Value> states(carried);
  states.append(scanCount + appendedCount, zerosOf(builder, loc, stateType));
  ScanOp scan;
  ScanImport outcome = buildScanLoop(
      loc, states, iterations, /*reverse=*/false,
      [&](ArrayRef<Value> arguments, ScanImport &outcome) -> SmallVector<Value> {
        SmallVector<Value> bodyArguments = {arguments.back(),
                                            scalarConstant(builder, loc, builder.getI1Type(), 1)};
        // The iteration number lies in [0, tripCount): indices from it need
        // no run-time check.
        integerRanges[arguments.back()] = {0, tripCount - 1};
        llvm::scope_exit forgetRange([&] { integerRanges.erase(arguments.back()); });
        ArrayRef<Value> carriedArguments = arguments.take_front(carried.size());
        for (bool list : appended) {
          if (list) {
            bodyArguments.push_back(makeSequence(builder, loc, {}));
          } else {
            bodyArguments.push_back(carriedArguments.front());
            carriedArguments = carriedArguments.drop_front();
          }
        }
        std::optional<SmallVector<Value>> outputs =
            importBody(body, bodyArguments, index, label);
        if (!outputs) {
          outcome = ScanImport::Failed;
          return {};
        }
        std::optional<int64_t> condition = constantScalar(foldConstantInputs(outputs->front()));
        if (condition.value_or(0) == 0)
          outcome = ScanImport::Unroll;
        SmallVector<Value> next, appendedTensors;
        for (auto [k, list] : llvm::enumerate(appended)) {
          Value output = (*outputs)[1 + k];
          if (!list) {
            next.push_back(output);
            continue;
          }
          // The list holds the one tensor this iteration appended.
          std::optional<SmallVector<Value>> elements = sequenceElements(output);
          if (!elements || elements->size() != 1) {
            outcome = ScanImport::Unroll;
            return {};
          }
          appendedTensors.push_back(elements->front());
        }
        llvm::append_range(next, ArrayRef(*outputs).drop_front(1 + initial.size()));
        llvm::append_range(next, appendedTensors);
        return next;
      },
      scan);
  if (outcome == ScanImport::Failed)
    poisonOutputs(node);
  if (outcome != ScanImport::Done)
    return outcome == ScanImport::Failed;
  SmallVector<Value> results;
  int64_t nextCarried = 0, nextList = carried.size() + scanCount;
  for (bool list : appended) {
    if (!list) {
      results.push_back(finalState(builder, loc, scan, nextCarried++));
      continue;
    }
    Value stacked = stateSlot(builder, loc, scan, nextList++);
    SmallVector<Value> tensors;
    for (int64_t i = 0; i < tripCount; ++i)
      tensors.push_back(sliceAt(builder, loc, stacked, 0, i));
    results.push_back(makeSequence(builder, loc, tensors));
  }
  for (int64_t k = 0; k < scanCount; ++k)
    results.push_back(stateSlot(builder, loc, scan, carried.size() + k));
  bindOutputs(node, results);
  return true;
}

/// Erases the op that computed `value`, when nothing uses it, and so on
/// back through its operands, stopping at `kept`.
static void eraseUnusedSince(Value value, ArrayRef<Value> kept) {
  Operation *op = value.getDefiningOp();
  if (!op || !op->use_empty() || llvm::is_contained(kept, value))
    return;
  SmallVector<Value> operands(op->getOperands());
  op->erase();
  for (Value operand : operands)
    eraseUnusedSince(operand, kept);
}

namespace {

/// A Loop's carried values of different types, which a tessel.loop (one
/// state type) carries as one state: each is converted exactly to a
/// signless integer of the widest width among them (integers extended,
/// floats widened to the float of that width, at least f32, and bitcast),
/// flattened, and the values concatenated. Unpacking converts back.
class PackedStates {
public:
  /// The packing of values of `types`, if each is a static tensor of
  /// integers or floats.
  static std::optional<PackedStates> of(TypeRange types) {
    PackedStates packed;
    unsigned width = 8;
    for (Type type : types) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || !tensor.hasStaticShape())
        return std::nullopt;
      Type element = tensor.getElementType();
      if (auto integer = dyn_cast<IntegerType>(element);
          integer && llvm::is_contained({1u, 8u, 16u, 32u, 64u}, integer.getWidth()))
        width = std::max(width, integer.getWidth());
      else if (isa<FloatType>(element))
        width = std::max({width, element.getIntOrFloatBitWidth(), 32u});
      else
        return std::nullopt;
      packed.types.push_back(tensor);
      packed.total += tensor.getNumElements();
    }
    MLIRContext *context = types.front().getContext();
    packed.word = IntegerType::get(context, width);
    packed.wordFloat =
        width == 64 ? FloatType(Float64Type::get(context)) : FloatType(Float32Type::get(context));
    return packed;
  }

  RankedTensorType packedType() const { return RankedTensorType::get({total}, word); }

  Value pack(OpBuilder &b, Location loc, ValueRange values) const {
    SmallVector<Value> words;
    for (auto [value, type] : llvm::zip(values, types)) {
      Value flat = ReshapeOp::create(b, loc, type.clone({type.getNumElements()}), value);
      words.push_back(toWords(b, loc, flat));
    }
    if (words.size() == 1)
      return words.front();
    return ConcatOp::create(b, loc, packedType(), words, b.getI64IntegerAttr(0));
  }

  SmallVector<Value> unpack(OpBuilder &b, Location loc, Value packed) const {
    SmallVector<Value> values;
    int64_t offset = 0;
    for (RankedTensorType type : types) {
      int64_t count = type.getNumElements();
      Value words = SliceOp::create(b, loc, packedType().clone({count}), packed,
                                    b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({1}));
      offset += count;
      values.push_back(ReshapeOp::create(b, loc, type, fromWords(b, loc, words, type)));
    }
    return values;
  }

private:
  /// `flat`, a 1-D tensor, as words: integers converted, floats widened
  /// and their bits taken.
  Value toWords(OpBuilder &b, Location loc, Value flat) const {
    if (isa<IntegerType>(getElementTypeOrSelf(flat)))
      return convert(b, loc, flat, word);
    return convert(b, loc, convert(b, loc, flat, wordFloat), word, /*bits=*/true);
  }

  /// 1-D `words` back as the elements of `type` (flat).
  Value fromWords(OpBuilder &b, Location loc, Value words, RankedTensorType type) const {
    Type element = type.getElementType();
    if (isa<IntegerType>(element))
      return convert(b, loc, words, element);
    return convert(b, loc, convert(b, loc, words, wordFloat, /*bits=*/true), element);
  }

  /// `value` with elements of type `element`, converted (or with `bits`
  /// reinterpreted); itself when it has them.
  static Value convert(OpBuilder &b, Location loc, Value value, Type element, bool bits = false) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getElementType() == element)
      return value;
    if (bits)
      return BitCastOp::create(b, loc, type.clone(element), value);
    return CastOp::create(b, loc, type.clone(element), value);
  }

  SmallVector<RankedTensorType> types;
  int64_t total = 0;
  IntegerType word;
  FloatType wordFloat;
};

} // namespace

bool GraphImporter::importLoopAtRunTime(const onnx::NodeProto &node, int index,
                                        const std::string &label, ArrayRef<Value> inputs) {
  ArrayRef<Value> initial = inputs.drop_front(2);
  if (initial.empty())
    return false;
  // Values of one type are the loop's states; values of several types are
  // packed into one.
  std::optional<PackedStates> packing;
  auto firstType = dyn_cast<RankedTensorType>(initial.front().getType());
  if (!firstType || !firstType.hasStaticShape() ||
      llvm::any_of(initial, [&](Value value) { return value.getType() != firstType; })) {
    packing = PackedStates::of(ValueRange(initial).getTypes());
    if (!packing)
      return false;
  }
  Location loc = nodeLocation(node, index);
  auto countOf = [&](int64_t value) {
    return scalarConstant(builder, loc, builder.getI64Type(), value);
  };
  SmallVector<Value> states(initial);
  if (packing)
    states = {packing->pack(builder, loc, initial)};
  auto stateType = cast<RankedTensorType>(states.front().getType());

  // The body first, with a trip count to be replaced: whether its
  // condition is known decides the loop's form.
  SmallVector<int64_t> stacked = {static_cast<int64_t>(states.size())};
  llvm::append_range(stacked, stateType.getShape());
  Value placeholder = countOf(0);
  auto loop =
      LoopOp::create(builder, loc, stateType.clone(stacked), placeholder, ValueRange{}, states);
  auto discard = [&] {
    loop.erase();
    placeholder.getDefiningOp()->erase();
    if (packing)
      eraseUnusedSince(states.front(), initial);
  };
  std::optional<int64_t> bodyCondition;
  {
    OpBuilder::InsertionGuard guard(builder);
    Block *body = builder.createBlock(&loop.getBody());
    SmallVector<Value> arguments = {
        body->addArgument(RankedTensorType::get({}, builder.getI64Type()), loc),
        scalarConstant(builder, loc, builder.getI1Type(), 1)};
    for (Value state : states)
      arguments.push_back(body->addArgument(state.getType(), loc));
    if (packing) {
      SmallVector<Value> values = packing->unpack(builder, loc, arguments.back());
      arguments.pop_back();
      llvm::append_range(arguments, values);
    }
    std::optional<SmallVector<Value>> outputs =
        importBody(*graphAttribute(node, "body"), arguments, index, label);
    if (!outputs) {
      discard();
      poisonOutputs(node);
      return true;
    }
    ArrayRef<Value> next = ArrayRef(*outputs).drop_front();
    if (llvm::any_of(llvm::zip(next, initial), [](auto pair) {
          return std::get<0>(pair).getType() != std::get<1>(pair).getType();
        })) {
      discard();
      return false;
    }
    Value condition = foldConstantInputs(outputs->front());
    bodyCondition = constantScalar(condition);
    bool neverRuns = inputs[1] && constantScalar(inputs[1]) == 0;
    if (!inputs[0] && bodyCondition.value_or(0) != 0 && !neverRuns) {
      discard();
      refuse(node, label,
             "the Loop has no trip count and its body's condition is always true: it would "
             "never end");
      return true;
    }
    // Known counts and conditions unroll, or make a tessel.scan.
    if (bodyCondition && (!inputs[0] || constantScalar(inputs[0])) &&
        (!inputs[1] || constantScalar(inputs[1]))) {
      discard();
      return false;
    }
    if (checksAtRunTime(loop.getBody())) {
      discard();
      refuse(node, label,
             "its body checks a value when the model runs (an index's range, say), which a "
             "Loop whose trip count or condition is known only at run time cannot do yet");
      return true;
    }
    SmallVector<Value> yielded;
    if (!bodyCondition || *bodyCondition == 0) {
      loop.setConditional(true);
      yielded.push_back(scalarOf(builder, loc, condition));
    }
    if (packing)
      yielded.push_back(packing->pack(builder, loc, next));
    else
      llvm::append_range(yielded, next);
    YieldOp::create(builder, loc, yielded);
  }

  // The trip count, or without one as many iterations as the condition
  // allows; none when the initial condition is false.
  builder.setInsertionPoint(loop);
  Value count =
      inputs[0] ? scalarOf(builder, loc, inputs[0]) : countOf(std::numeric_limits<int64_t>::max());
  if (inputs[1] && !constantScalar(inputs[1]))
    count = WhereOp::create(builder, loc, count.getType(), scalarOf(builder, loc, inputs[1]), count,
                            countOf(0));
  else if (inputs[1] && *constantScalar(inputs[1]) == 0)
    count = countOf(0);
  loop.getTripCountMutable().assign(count);
  placeholder.getDefiningOp()->erase();
  builder.setInsertionPointAfter(loop);

  captureInvariants(builder, loc, loop.getBody(), loop.getInvariantsMutable(),
                    /*firstInvariant=*/1);
  SmallVector<Value> results;
  for (int64_t i = 0; i < static_cast<int64_t>(states.size()); ++i)
    results.push_back(sliceAt(builder, loc, loop.getResult(), 0, i));
  if (packing)
    results = packing->unpack(builder, loc, results.front());
  bindOutputs(node, results);
  return true;
}

/// Loop: the body runs while the trip count (input M) lasts and its
/// condition holds, taking the iteration number, the condition and the
/// loop-carried values; it gives the next condition and values and one
/// slice of each scan output, stacked along a new first axis. See the
/// top of the file for the forms it takes.
void GraphImporter::importLoop(const onnx::NodeProto &node, int index,
                               const std::string &label) {
  auto refuse = [&](const std::string &why) { this->refuse(node, label, why); };
  const onnx::GraphProto *body = graphAttribute(node, "body");
  int64_t carriedCount = node.input_size() - 2;
  if (!body || carriedCount < 0)
    return refuse("a Loop needs a body, M and cond inputs");
  int64_t scanCount = body->output_size() - 1 - carriedCount;
  if (scanCount < 0 || node.output_size() != carriedCount + scanCount)
    return refuse("the body must give the condition, the loop-carried values and the scan "
                  "outputs");
  std::optional<SmallVector<Value>> given = nodeInputs(node, label);
  if (!given)
    return poisonOutputs(node);
  ArrayRef<Value> inputs = *given;
  for (int i = 0; i < 2; ++i)
    if (inputs[i] && !isa<RankedTensorType>(inputs[i].getType()))
      return refuse("input '" + node.input(i) + "' is " + describeValue(inputs[i]) +
                    ", but a Loop's trip count and condition are tensors");
  std::optional<int64_t> tripCount = inputs[0] ? constantScalar(inputs[0]) : std::nullopt;
  std::optional<int64_t> initialCondition = inputs[1] ? constantScalar(inputs[1]) : 1;
  // Without scan outputs, a trip count or condition known only at run time
  // makes a tessel.loop.
  if (scanCount == 0 && importLoopAtRunTime(node, index, label, inputs))
    return;
  // A trip count or condition known only at run time: the loop runs as
  // many times as a scan output's stated length says, checked at run time.
  std::optional<int64_t> statedIterations;
  if ((inputs[0] && !tripCount) || !initialCondition) {
    for (int64_t k = 0; k < scanCount && !statedIterations; ++k)
      if (RankedTensorType stated = declaredTypes.lookup(node.output(carriedCount + k));
          stated && stated.getRank() > 0)
        statedIterations = stated.getDimSize(0);
    if (!statedIterations)
      return refuse((inputs[0] && !tripCount ? "the trip count M must be a constant, or a scan "
                                               "output's shape stated (in the model, or with "
                                               "--value-shape)" +
                                                   freezeHint(inputs[0])
                                             : "the condition must be a constant, or a scan "
                                               "output's shape stated (in the model, or with "
                                               "--value-shape)" +
                                                   freezeHint(inputs[1])));
  }
  bool running = initialCondition.value_or(1) != 0;
  if (tripCount && running && !statedIterations &&
      importLoopAsScan(node, index, label, inputs, *tripCount, scanCount))
    return;

  Location loc = nodeLocation(node, index);
  std::optional<RunTimeLoopCheck> check;
  if (statedIterations)
    check.emplace(builder, loc, inputs[0], inputs[1]);
  SmallVector<Value> carried(inputs.begin() + 2, inputs.end());
  std::vector<SmallVector<Value>> slices(scanCount);
  for (int64_t iteration = 0;
       statedIterations ? iteration < *statedIterations
                        : running && (!tripCount || iteration < *tripCount);
       ++iteration) {
    if (iteration >= kMaxUnrolledSteps)
      return refuse("a Loop of more than " + std::to_string(kMaxUnrolledSteps) +
                    " iterations is longer than it unrolls");
    if (check)
      check->entering(iteration);
    SmallVector<Value> arguments{scalarConstant(builder, loc, builder.getI64Type(), iteration),
                                 scalarConstant(builder, loc, builder.getI1Type(), 1)};
    llvm::append_range(arguments, carried);
    std::optional<SmallVector<Value>> outputs = importBody(*body, arguments, index, label);
    if (!outputs)
      return poisonOutputs(node);
    for (int64_t k = -1; k < scanCount; ++k) {
      Value produced = (*outputs)[k < 0 ? 0 : 1 + carriedCount + k];
      if (!isa<RankedTensorType>(produced.getType()))
        return refuse("the body gives " + describeValue(produced) + " as " +
                      (k < 0 ? std::string("its condition") : "scan output " + std::to_string(k)) +
                      ", which must be a tensor");
    }
    Value bodyCondition = foldConstantInputs((*outputs)[0]);
    std::optional<int64_t> condition = constantScalar(bodyCondition);
    if (!condition && !statedIterations)
      return refuse("the body's condition is known only at run time; a Loop is supported "
                    "when its trip count and conditions are constants, or when a scan "
                    "output's shape is stated");
    running = condition.value_or(1) != 0;
    if (check)
      check->continuing(bodyCondition);
    for (int64_t i = 0; i < carriedCount; ++i)
      carried[i] = (*outputs)[1 + i];
    for (int64_t k = 0; k < scanCount; ++k)
      slices[k].push_back((*outputs)[1 + carriedCount + k]);
  }
  if (check)
    check->finish(*statedIterations, onnx_import::nodeLabel(node, index));

  SmallVector<Value> results = carried;
  for (int64_t k = 0; k < scanCount; ++k) {
    if (slices[k].empty())
      return refuse("a Loop that runs no iteration has no scan outputs to give");
    Value stacked = stack(builder, loc, slices[k], 0);
    if (!stacked)
      return refuse("the body gives scan output " + std::to_string(k) +
                    " slices of different types");
    results.push_back(stacked);
  }
  bindOutputs(node, results);
}

} // namespace tessel::onnx_import
