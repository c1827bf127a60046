//===- Sequences.cpp - ONNX sequence and optional ops ---------------------===//
//
// The sequence ops (opset 11), SequenceMap (17) and the optional ops (15)
// on sequences whose length and optionals whose presence are known at
// import (compiler/onnx/Sequences.h): each builds the sequence it gives
// from the tensors of those it reads. Positions must be constants, except
// SequenceAt's over a sequence of one tensor type, which picks its element
// at run time from the elements stacked. ConcatFromSequence and
// SplitToSequence are a concat and slices of those tensors.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/Sequences.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The elements of sequence input `i`, or nullopt after recording what it
/// is instead.
std::optional<SmallVector<Value>> sequenceInput(NodeImporter &node, size_t i) {
  std::optional<SmallVector<Value>> elements = sequenceElements(node.input(i));
  if (!elements)
    (void)node.unsupported("input " + Twine(i) + " ('" + node.node().input(i) + "') must be a " +
                           "sequence, but it is " + describeValue(node.input(i)));
  return elements;
}

/// Tensor input `i`, or null after recording what it is instead.
Value tensorInput(NodeImporter &node, size_t i) {
  Value value = node.input(i);
  if (value && !isa<RankedTensorType>(value.getType())) {
    (void)node.unsupported("input " + Twine(i) + " ('" + node.node().input(i) + "') must be a " +
                           "tensor, but it is " + describeValue(value));
    return {};
  }
  return value;
}

/// The constant position input `i` gives in a sequence of `length`
/// elements, counted from the end when negative; `end` allows `length`
/// itself (an insertion at the back). `fallback` when the input is absent.
std::optional<int64_t> constantPosition(NodeImporter &node, size_t i, int64_t length, bool end,
                                        int64_t fallback) {
  if (!node.input(i))
    return fallback;
  std::optional<SmallVector<int64_t>> position = node.constantInts(i, "position");
  if (!position)
    return std::nullopt;
  if (position->size() != 1) {
    (void)node.unsupported("the position must hold one integer");
    return std::nullopt;
  }
  int64_t at = position->front() < 0 ? position->front() + length : position->front();
  if (at < 0 || at > length || (at == length && !end)) {
    (void)node.unsupported("position " + Twine(position->front()) +
                           " is out of range for a sequence of " + Twine(length) + " tensors");
    return std::nullopt;
  }
  return at;
}

LogicalResult importSequenceEmpty(NodeImporter &node) {
  // The element type matters only to a tensor taken from the sequence,
  // and an empty one has none to take.
  node.ignoreAttr("dtype");
  node.setOutput(0, makeSequence(node.builder(), node.loc(), {}));
  return success();
}

LogicalResult importSequenceConstruct(NodeImporter &node) {
  SmallVector<Value> elements;
  for (size_t i = 0; i < node.numInputs(); ++i)
    elements.push_back(node.input(i));
  node.setOutput(0, makeSequence(node.builder(), node.loc(), elements));
  return success();
}

LogicalResult importSequenceInsert(NodeImporter &node) {
  std::optional<SmallVector<Value>> elements = sequenceInput(node, 0);
  Value tensor = elements ? tensorInput(node, 1) : Value();
  if (!tensor)
    return failure();
  int64_t length = elements->size();
  std::optional<int64_t> at = constantPosition(node, 2, length, /*end=*/true, length);
  if (!at)
    return failure();
  elements->insert(elements->begin() + *at, tensor);
  node.setOutput(0, makeSequence(node.builder(), node.loc(), *elements));
  return success();
}

LogicalResult importSequenceErase(NodeImporter &node) {
  std::optional<SmallVector<Value>> elements = sequenceInput(node, 0);
  if (!elements)
    return failure();
  int64_t length = elements->size();
  if (length == 0)
    return node.unsupported("the sequence is empty: there is nothing to erase");
  std::optional<int64_t> at = constantPosition(node, 1, length, /*end=*/false, length - 1);
  if (!at)
    return failure();
  elements->erase(elements->begin() + *at);
  node.setOutput(0, makeSequence(node.builder(), node.loc(), *elements));
  return success();
}

/// SequenceAt: a constant position is the element itself; a run-time one
/// over elements of one type gathers from them stacked, its range checked
/// when the model runs.
LogicalResult importSequenceAt(NodeImporter &node) {
  std::optional<SmallVector<Value>> elements = sequenceInput(node, 0);
  if (!elements)
    return failure();
  int64_t length = elements->size();
  if (length == 0)
    return node.unsupported("the sequence is empty: there is no tensor to take");
  if (node.constantInput(1)) {
    std::optional<int64_t> at = constantPosition(node, 1, length, /*end=*/false, 0);
    if (!at)
      return failure();
    node.setOutput(0, (*elements)[*at]);
    return success();
  }
  Value stacked = stack(node.builder(), node.loc(), *elements, 0);
  if (!stacked)
    return node.unsupported("the position is known only at run time and the sequence's tensors "
                            "differ in type: the position must be a constant" +
                            freezeHint(node.input(1)));
  if (node.inputType(1).getNumElements() != 1)
    return node.unsupported("the position must hold one integer");
  if (failed(checkIndices(node, 1, {length})))
    return failure();
  OpBuilder &b = node.builder();
  Value position =
      ReshapeOp::create(b, node.loc(), node.inputType(1).clone(ArrayRef<int64_t>{}), node.input(1));
  Value element = node.createInferred<GatherOp>(stacked, position, b.getI64IntegerAttr(0));
  return node.setInferredOutput(0, element);
}

LogicalResult importSequenceLength(NodeImporter &node) {
  std::optional<SmallVector<Value>> elements = sequenceInput(node, 0);
  if (!elements)
    return failure();
  node.setOutput(0, node.int64Constant({static_cast<int64_t>(elements->size())}, {}));
  return success();
}

/// The tensor whose slices along axis 0, in order, `elements` are (as a
/// Loop that appends to a list as it runs gives them), if they are.
Value slicedFrom(ArrayRef<Value> elements) {
  Value source;
  for (auto [i, element] : llvm::enumerate(elements)) {
    auto reshape = element.getDefiningOp<ReshapeOp>();
    auto slice = reshape ? reshape.getInput().getDefiningOp<SliceOp>() : nullptr;
    if (!slice || (source && slice.getInput() != source))
      return {};
    source = slice.getInput();
    auto type = cast<RankedTensorType>(source.getType());
    SmallVector<int64_t> starts(type.getRank(), 0);
    starts[0] = i;
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = 1;
    if (slice.getStarts() != ArrayRef<int64_t>(starts) ||
        slice.getType().getShape() != ArrayRef<int64_t>(shape) ||
        llvm::any_of(slice.getSteps(), [](int64_t step) { return step != 1; }))
      return {};
  }
  if (!source || cast<RankedTensorType>(source.getType()).getDimSize(0) !=
                     static_cast<int64_t>(elements.size()))
    return {};
  return source;
}

/// ConcatFromSequence: the tensors concatenated along `axis`, or stacked
/// along a new axis `axis` with new_axis, without copying each one when
/// they are slices of one tensor (the list a Loop appended to).
LogicalResult importConcatFromSequence(NodeImporter &node) {
  std::optional<SmallVector<Value>> elements = sequenceInput(node, 0);
  if (!elements)
    return failure();
  std::optional<int64_t> axisAttr = node.intAttr("axis");
  if (!axisAttr)
    return node.unsupported("axis is required");
  bool newAxis = node.intAttr("new_axis", 0) != 0;
  if (elements->empty())
    return node.unsupported("the sequence is empty: there are no tensors to concatenate");
  int64_t rank = cast<RankedTensorType>(elements->front().getType()).getRank();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank, /*inclusive=*/newAxis);
  if (!axis)
    return node.unsupported("axis " + Twine(*axisAttr) + " is out of range for tensors of rank " +
                            Twine(rank));
  // Slices of one tensor along its axis 0, stacked again along `axis`:
  // that tensor with its axis 0 moved there; concatenated along `axis`:
  // the same, that axis then merged with the next.
  if (Value source = slicedFrom(*elements)) {
    SmallVector<int64_t> permutation;
    for (int64_t i = 1; i <= rank; ++i)
      permutation.push_back(i);
    permutation.insert(permutation.begin() + *axis, 0);
    Value moved = *axis == 0 ? source
                             : node.createInferred<TransposeOp>(
                                   source, node.builder().getDenseI64ArrayAttr(permutation));
    if (!newAxis && moved) {
      auto type = cast<RankedTensorType>(moved.getType());
      SmallVector<int64_t> merged(type.getShape());
      merged[*axis] *= merged[*axis + 1];
      merged.erase(merged.begin() + *axis + 1);
      moved = ReshapeOp::create(node.builder(), node.loc(), type.clone(merged), moved);
    }
    return node.setInferredOutput(0, moved);
  }
  if (newAxis) {
    Value stacked = stack(node.builder(), node.loc(), *elements, *axis);
    if (!stacked)
      return node.unsupported("with new_axis the sequence's tensors must have one shape");
    node.setOutput(0, stacked);
    return success();
  }
  if (elements->size() == 1) {
    node.setOutput(0, elements->front());
    return success();
  }
  return node.setInferredOutput(
      0, node.createInferred<ConcatOp>(*elements, node.builder().getI64IntegerAttr(*axis)));
}

/// SplitToSequence: the input split along `axis` by the sizes given (one
/// size: chunks of it, the last one shorter), or into slices of one that
/// drop the axis unless keepdims.
LogicalResult importSplitToSequence(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  if (type.isDynamicDim(*axis))
    return node.unsupported("the split axis must have a static size");
  int64_t size = type.getDimSize(*axis);
  bool keepDims = node.intAttr("keepdims", 1) != 0;
  SmallVector<int64_t> sizes;
  bool dropAxis = false;
  if (!node.input(1)) {
    sizes.assign(size, 1);
    dropAxis = !keepDims;
  } else {
    std::optional<SmallVector<int64_t>> split = node.constantInts(1, "split");
    if (!split)
      return failure();
    if (llvm::any_of(*split, [](int64_t part) { return part < 0; }) ||
        (node.inputType(1).getRank() == 0 && split->front() <= 0))
      return node.unsupported("a split size is not positive");
    if (node.inputType(1).getRank() == 0) {
      for (int64_t offset = 0; offset < size; offset += split->front())
        sizes.push_back(std::min(split->front(), size - offset));
    } else {
      sizes = *split;
      if (std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != size)
        return node.unsupported("the split sizes do not add up to the axis size " + Twine(size));
    }
  }
  if (failed(checkComputeBudget(node, sizes.size(), "sequence tensors", kMaxUnrolledSteps)))
    return failure();
  SmallVector<Value> elements;
  int64_t offset = 0;
  for (int64_t part : sizes) {
    Value element = sliceAlong(node, node.input(0), *axis, offset, part);
    offset += part;
    if (dropAxis) {
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + *axis);
      element = ReshapeOp::create(node.builder(), node.loc(), type.clone(shape), element);
    }
    elements.push_back(element);
  }
  node.setOutput(0, makeSequence(node.builder(), node.loc(), elements));
  return success();
}

/// SequenceMap: the body imported once per position, given that
/// position's tensor of each sequence input and every tensor input whole.
LogicalResult importSequenceMap(NodeImporter &node) {
  if (!sequenceInput(node, 0))
    return failure();
  std::optional<int64_t> length;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    std::optional<SmallVector<Value>> elements = sequenceElements(node.input(i));
    if (!elements)
      continue;
    if (length && *length != static_cast<int64_t>(elements->size()))
      return node.unsupported("the sequences have different lengths (" + Twine(*length) + " and " +
                              Twine(elements->size()) + ")");
    length = elements->size();
  }
  std::vector<SmallVector<Value>> outputs(node.numOutputs());
  for (int64_t position = 0; position < *length; ++position) {
    SmallVector<Value> arguments;
    for (size_t i = 0; i < node.numInputs(); ++i) {
      std::optional<SmallVector<Value>> elements = sequenceElements(node.input(i));
      arguments.push_back(elements ? (*elements)[position] : tensorInput(node, i));
      if (!arguments.back())
        return failure();
    }
    std::optional<SmallVector<Value>> results = node.callGraphAttr("body", arguments);
    if (!results)
      return failure();
    if (results->size() != node.numOutputs())
      return node.unsupported("the body gives " + Twine(results->size()) + " outputs for " +
                              Twine(node.numOutputs()) + " sequences");
    for (auto [output, result] : llvm::zip(outputs, *results)) {
      if (!isa<RankedTensorType>(result.getType()))
        return node.unsupported("the body must give tensors");
      output.push_back(result);
    }
  }
  for (auto [i, output] : llvm::enumerate(outputs))
    node.setOutput(i, makeSequence(node.builder(), node.loc(), output));
  return success();
}

LogicalResult importOptional(NodeImporter &node) {
  // The type matters only to an element taken out, and an empty optional
  // has none to take.
  node.ignoreAttr("type");
  node.setOutput(0, node.input(0) ? node.input(0) : makeEmptyOptional(node.builder(), node.loc()));
  return success();
}

LogicalResult importOptionalHasElement(NodeImporter &node) {
  OpBuilder &b = node.builder();
  bool present = node.input(0) && !isEmptyOptional(node.input(0));
  auto type = RankedTensorType::get({}, b.getI1Type());
  node.setOutput(0, ConstantOp::create(b, node.loc(), DenseElementsAttr::get(type, present)));
  return success();
}

LogicalResult importOptionalGetElement(NodeImporter &node) {
  if (!node.input(0) || isEmptyOptional(node.input(0)))
    return node.unsupported("the optional holds no element");
  node.setOutput(0, node.input(0));
  return success();
}

} // namespace

void registerSequenceHandlers(OpRegistry &registry) {
  registry.on("SequenceEmpty", 11, importSequenceEmpty);
  registry.on("SequenceConstruct", 11, importSequenceConstruct);
  registry.on("SequenceInsert", 11, importSequenceInsert);
  registry.on("SequenceErase", 11, importSequenceErase);
  registry.on("SequenceAt", 11, importSequenceAt);
  registry.on("SequenceLength", 11, importSequenceLength);
  registry.on("ConcatFromSequence", 11, importConcatFromSequence);
  registry.on("SplitToSequence", 11, importSplitToSequence);
  registry.on("SequenceMap", 17, importSequenceMap);
  registry.on("Optional", 15, importOptional);
  registry.on("OptionalHasElement", 15, importOptionalHasElement);
  registry.on("OptionalGetElement", 15, importOptionalGetElement);
}

} // namespace tessel::onnx_import
