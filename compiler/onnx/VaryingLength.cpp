//===- VaryingLength.cpp - A symbolic dimension bounded by --max-shape ----===//
//
// A model whose inputs have a symbolic length (a sequence, say) compiles
// once for every length up to a bound: it is imported at the bound, and a
// run pads its inputs to the bound and trims its results back to the
// length. That computes what the model computes at the length only where no
// node lets positions along the length meet, which BatchAxes checks as it
// does for the samples of a batch. A node that combines positions along the
// length (a Softmax over it, a sum, attention's products) reads its inputs
// with the padding filled by a value that leaves the combination as it is
// at the length (PaddedLength.cpp); a mean is rescaled from the bound to
// the length. A recurrence (LSTM, GRU, RNN) over the
// length is the exception: it reads the length, a hidden last argument of
// @main, as its sequence_lens, so its steps past the length hold its states
// and its final states are those at the length. A Gather of one position
// along the length (y[-1]) picks it counting from the length, checked to
// lie within it at run time.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/GraphImporter.h"
#include "compiler/onnx/ModelValidation.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/IR/Matchers.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {

namespace {

/// ONNX's input index of a recurrence's sequence_lens.
constexpr int kSequenceLensInput = 4;

/// The varying length's symbol as messages name it.
std::string describedSymbol(const std::string &symbol) {
  return symbol.empty() ? "(unnamed)" : "'" + symbol + "'";
}

bool isRecurrence(const onnx::NodeProto &node) {
  return node.op_type() == "LSTM" || node.op_type() == "GRU" || node.op_type() == "RNN";
}

} // namespace

llvm::Error GraphImporter::addVaryingInput(const std::string &name, int64_t axis,
                                           const std::string &symbol) {
  for (const auto &[input, varying] : varyingInputs)
    if (input == name)
      return importError("graph input '" + name + "' has two symbolic dimensions (" +
                         std::to_string(varying) + " and " + std::to_string(axis) +
                         ") bounded by --max-shape; one dimension of an input may vary, and "
                         "--max-shape cannot fix the others yet (export them static)");
  if (!varyingInputs.empty() && (symbol.empty() || lengthSymbol.empty() || symbol != lengthSymbol))
    return importError("--max-shape bounds dimensions of graph inputs '" +
                       varyingInputs.front().first + "' and '" + name +
                       "' that are not named as one symbol ('" + lengthSymbol + "' and '" + symbol +
                       "'); one length may vary");
  lengthSymbol = symbol;
  varyingInputs.emplace_back(name, axis);
  return llvm::Error::success();
}

void GraphImporter::startFollowingLength(func::FuncOp function) {
  unsigned position = function.getNumArguments();
  auto lengthType = RankedTensorType::get({1}, builder.getI64Type());
  Location loc = function.getLoc();
  (void)function.insertArgument(position, lengthType, {}, loc);
  function.setArgAttr(position, kValueNameAttr, builder.getStringAttr("tessel.length"));
  function.setArgAttr(position, kLengthAttr, builder.getUnitAttr());
  lengthArgument = function.getArgument(position);

  lengthAxes =
      std::make_unique<BatchAxes>(opset, [&](const std::string &name) { return lookup(name); });
  int64_t bound = 0;
  for (unsigned i = 0; i < position; ++i)
    for (const auto &[input, axis] : varyingInputs)
      if (input == function.getArgAttrOfType<StringAttr>(i, kValueNameAttr).str())
        bound = cast<RankedTensorType>(function.getArgument(i).getType()).getDimSize(axis);
  lengthAxes->followPaddedLength(bound);
  for (unsigned i = 0; i < position; ++i) {
    std::string name = function.getArgAttrOfType<StringAttr>(i, kValueNameAttr).str();
    for (const auto &[input, axis] : varyingInputs)
      if (input == name) {
        function.setArgAttr(i, kVaryingAttr, builder.getI64IntegerAttr(axis));
        lengthAxes->setLayout(name, BatchLayout{axis, 1, 1});
      }
  }
}

std::optional<int64_t> GraphImporter::positionPicked(const onnx::NodeProto &node) {
  if (node.op_type() != "Gather" || node.input_size() != 2)
    return std::nullopt;
  std::optional<BatchLayout> layout = lengthAxes->layoutOf(node.input(0));
  Value data = lookup(node.input(0)), indices = lookup(node.input(1));
  DenseIntElementsAttr constant;
  if (!layout || layout->outer != 1 || layout->inner != 1 || !data || !indices ||
      !matchPattern(indices, m_Constant(&constant)) ||
      cast<RankedTensorType>(indices.getType()).getRank() != 0)
    return std::nullopt;
  int64_t axis = BatchAxes::normalized(BatchAxes::intAttribute(node, "axis", 0),
                                       cast<RankedTensorType>(data.getType()).getRank());
  if (axis != layout->axis)
    return std::nullopt;
  return (*constant.begin()).getSExtValue();
}

bool GraphImporter::positionWithinBound(const onnx::NodeProto &node, int index, int64_t position) {
  int64_t bound = cast<RankedTensorType>(lookup(node.input(0)).getType())
                      .getDimSize(lengthAxes->layoutOf(node.input(0))->axis);
  if (position >= -bound && position < bound)
    return true;
  refuse(node, onnx_import::nodeContext(node, index, opsetOf(node)),
         "--max-shape: Gather picks position " + std::to_string(position) +
             " along the varying length, which no length up to the bound " + std::to_string(bound) +
             " has");
  return false;
}

void GraphImporter::importPositionAtLength(const onnx::NodeProto &node, int index,
                                           int64_t position) {
  if (!positionWithinBound(node, index, position))
    return;
  // Each such node gets an index and a check of its own, which names it.
  std::string label = onnx_import::nodeLabel(node, index);
  std::string picked = "tessel.length.position." + label;
  {
    Location loc = NameLoc::get(builder.getStringAttr(picked));
    Type i64 = builder.getI64Type();
    auto vector = RankedTensorType::get({1}, i64), scalar = RankedTensorType::get({}, i64);
    auto constant = [&](int64_t value) {
      return ConstantOp::create(builder, loc, DenseElementsAttr::get(vector, value));
    };
    // A negative position counts from the length, not from the bound.
    Value at = position < 0
                   ? Value(AddOp::create(builder, loc, vector, lengthArgument, constant(position)))
                   : Value(constant(position));
    auto flagType = vector.clone(builder.getI1Type());
    Value outside = OrOp::create(
        builder, loc, flagType,
        CompareOp::create(builder, loc, flagType, builder.getStringAttr("lt"), at, constant(0)),
        CompareOp::create(builder, loc, flagType, builder.getStringAttr("ge"), at, lengthArgument));
    CheckZeroOp::create(
        builder, loc,
        ReshapeOp::create(builder, loc, scalar, CastOp::create(builder, loc, vector, outside)),
        builder.getStringAttr(label),
        builder.getStringAttr("Gather picks position " + std::to_string(position) +
                              " along the varying length, which is outside it"));
    values[picked] = ReshapeOp::create(builder, loc, scalar, at);
  }
  onnx::NodeProto reading = node;
  reading.set_input(1, picked);
  importNode(reading, index);
}

void GraphImporter::importFollowingLength(const onnx::NodeProto &node, int index) {
  std::string label = onnx_import::nodeContext(node, index, opsetOf(node));
  std::string symbol = describedSymbol(lengthSymbol);
  // y[-1] after a recurrence: the last position within the length.
  if (std::optional<int64_t> position = positionPicked(node))
    return importPositionAtLength(node, index, *position);
  if ((node.op_type() == "Div" || node.op_type() == "Mod") && node.input_size() == 2 &&
      (lengthAxes->layoutOf(node.input(1)) || lengthAxes->isPaired(node.input(1)))) {
    Value divisor = lookup(node.input(1));
    if (divisor && getElementTypeOrSelf(divisor.getType()).isInteger())
      return refuse(node, label,
                    "--max-shape: the integer divisor varies with the length " + symbol +
                        ", and its padding past the length holds zeros");
  }
  if (!isRecurrence(node) || node.input_size() == 0 || !lengthAxes->layoutOf(node.input(0))) {
    size_t problemsBefore = problems.size();
    importFilled(node, index);
    if (problems.size() > problemsBefore)
      return;
    if (std::optional<std::string> why = lengthAxes->follow(node)) {
      problems.push_back(label + "--max-shape pads the varying dimension " + symbol +
                         " to its bound, so positions along it must stay apart; followed as "
                         "the batch axis, it meets this node, which " +
                         *why);
      ++failingOpCounts[node.op_type()];
    }
    return;
  }

  // A recurrence over the length: X's sequence dimension must be it.
  // ONNX's layout 0 puts the sequence in dimension 0 of X and Y, 1 in 1.
  int64_t layout = BatchAxes::intAttribute(node, "layout", 0);
  int64_t sequenceAxis = layout == 0 ? 0 : 1;
  if (lengthAxes->layoutOf(node.input(0)) != BatchLayout{sequenceAxis, 1, 1})
    return refuse(node, label,
                  "--max-shape: X varies with the length " + symbol + " in dimension " +
                      std::to_string(*lengthAxes->axisOf(node.input(0))) +
                      " (or merged with others), not in its sequence dimension " +
                      std::to_string(sequenceAxis));
  for (int i = 1; i < node.input_size(); ++i) {
    const std::string &input = node.input(i);
    if (input.empty())
      continue;
    if (i == kSequenceLensInput)
      return refuse(node, label,
                    "--max-shape: the node has its own sequence_lens, and the varying length " +
                        symbol + " would set them too");
    if (lengthAxes->axisOf(input) || lengthAxes->holdsBatchSize(input) ||
        lengthAxes->isPaired(input))
      return refuse(node, label,
                    "--max-shape: input '" + input + "' depends on the varying length " + symbol);
  }
  Value x = lookup(node.input(0));
  if (!x)
    return importNode(node, index);
  int64_t batch = cast<RankedTensorType>(x.getType()).getDimSize(layout == 0 ? 1 : 0);

  // The length once per batch entry, as the int32 sequence_lens ONNX takes.
  std::string &lengths = lengthsPerBatch[batch];
  if (lengths.empty()) {
    lengths = "tessel.length.batch" + std::to_string(batch);
    Location loc = NameLoc::get(builder.getStringAttr(lengths));
    Value expanded = ExpandOp::create(
        builder, loc, RankedTensorType::get({batch}, builder.getI64Type()), lengthArgument);
    values[lengths] = CastOp::create(
        builder, loc, RankedTensorType::get({batch}, builder.getI32Type()), expanded);
  }
  onnx::NodeProto reading = node;
  while (reading.input_size() <= kSequenceLensInput)
    reading.add_input("");
  reading.set_input(kSequenceLensInput, lengths);
  importNode(reading, index);
  // Y varies along its sequence dimension; the final states do not.
  if (node.output_size() > 0 && !node.output(0).empty() && !poisoned.contains(node.output(0)))
    lengthAxes->setLayout(node.output(0), BatchLayout{sequenceAxis, 1, 1});
}

Value GraphImporter::filledPastLength(Value value, const PaddingFill &fill, Location loc) {
  auto type = cast<RankedTensorType>(value.getType());
  Type i64 = builder.getI64Type();
  int64_t bound = type.getDimSize(fill.axis);
  SmallVector<int64_t> shape(type.getRank(), 1);
  shape[fill.axis] = bound;
  auto positionsType = RankedTensorType::get(shape, i64);
  SmallVector<int64_t> positions(bound);
  std::iota(positions.begin(), positions.end(), 0);
  Value length = ReshapeOp::create(
      builder, loc, RankedTensorType::get(SmallVector<int64_t>(type.getRank(), 1), i64),
      lengthArgument);
  Value inside = CompareOp::create(
      builder, loc, positionsType.clone(builder.getI1Type()), builder.getStringAttr("lt"),
      ConstantOp::create(builder, loc, DenseElementsAttr::get(positionsType, ArrayRef(positions))),
      length);
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Attribute filler;
  if (auto floatType = dyn_cast<FloatType>(type.getElementType()))
    filler = builder.getFloatAttr(
        floatType, fill.fill == PaddingFill::Zero
                       ? APFloat::getZero(floatType.getFloatSemantics())
                       : APFloat::getInf(floatType.getFloatSemantics(),
                                         /*Negative=*/fill.fill == PaddingFill::Lowest));
  else
    filler = builder.getIntegerAttr(type.getElementType(), 0);
  Value padding = ConstantOp::create(builder, loc, DenseElementsAttr::get(scalar, filler));
  auto filled = WhereOp::create(builder, loc, type, inside, value, padding);
  filled.setFillsPastLength(true);
  return filled;
}

void GraphImporter::importFilled(const onnx::NodeProto &node, int index) {
  SmallVector<PaddingFill, 2> fills = lengthAxes->paddingFills(node);
  if (fills.empty())
    return importNode(node, index);
  std::string label = onnx_import::nodeLabel(node, index);
  onnx::NodeProto reading = node;
  SmallVector<int64_t, 2> bounds;
  for (auto [i, fill] : llvm::enumerate(fills)) {
    Value input = lookup(node.input(fill.input));
    if (!input)
      return refuse(node, onnx_import::nodeContext(node, index, opsetOf(node)),
                    "--max-shape: input '" + node.input(fill.input) +
                        "' has no value to fill past the length");
    std::string filled = "tessel.length.filled." + label + "." + std::to_string(i);
    values[filled] = filledPastLength(input, fill, NameLoc::get(builder.getStringAttr(filled)));
    reading.set_input(fill.input, filled);
    bounds.push_back(cast<RankedTensorType>(input.getType()).getDimSize(fill.axis));
  }
  size_t problemsBefore = problems.size();
  importNode(reading, index);
  if (node.op_type() != "ReduceMean" || problems.size() > problemsBefore)
    return;
  // The mean divided the sum by the bound; the length divides it.
  Value mean = lookup(node.output(0));
  if (!mean)
    return;
  auto type = cast<RankedTensorType>(mean.getType());
  Location loc = NameLoc::get(builder.getStringAttr("tessel.length.mean." + label));
  // The scale has the mean's rank (all ones), so that it broadcasts to it.
  auto vector =
      RankedTensorType::get(SmallVector<int64_t>(type.getRank(), 1), type.getElementType());
  Value length = CastOp::create(
      builder, loc, vector,
      ReshapeOp::create(builder, loc, vector.clone(builder.getI64Type()), lengthArgument));
  for (int64_t bound : bounds) {
    Value scale = DivOp::create(
        builder, loc, vector,
        ConstantOp::create(
            builder, loc,
            DenseElementsAttr::get(vector, builder.getFloatAttr(type.getElementType(), bound))),
        length);
    mean = MulOp::create(builder, loc, type, mean, scale);
  }
  values[node.output(0)] = mean;
}

void GraphImporter::markVaryingResults(func::FuncOp function) {
  std::string symbol = describedSymbol(lengthSymbol);
  for (auto [i, output] : llvm::enumerate(model.graph().output())) {
    const std::string &name = output.name();
    if (lengthAxes->isPaired(name))
      problems.push_back("graph output '" + name + "' pairs positions along the varying length " +
                         symbol +
                         " in two dimensions (attention's scores, say); a run trims "
                         "one dimension to the length");
    if (lengthAxes->holdsBatchSize(name))
      problems.push_back("graph output '" + name + "' holds the varying length " + symbol +
                         " (read from a shape), which a run at the bound would give as the "
                         "bound");
    std::optional<BatchLayout> layout = lengthAxes->layoutOf(name);
    if (!layout)
      continue;
    if (layout->outer != 1 || layout->inner != 1) {
      problems.push_back("graph output '" + name + "' merges the varying length " + symbol +
                         " with other dimensions in dimension " + std::to_string(layout->axis) +
                         "; a run could not trim it to the length");
      continue;
    }
    function.setResultAttr(i, kVaryingAttr, builder.getI64IntegerAttr(layout->axis));
  }
}

} // namespace tessel::onnx_import
