//===- BatchSizes.cpp - Following the batch size through shape arithmetic -===//
//
// Exporters build shapes from the batch size: `x.view(x.size(0), -1)` is
// Shape, Gather, Unsqueeze, Concat and a Reshape; attention multiplies the
// size by the number of heads; `expand(n, -1, -1)` replaces the -1 entries
// with Equal and Where. Imported for one sample these fold to constants
// holding 1 (or k for `size * k`) where the batch size goes, which is what
// one sample needs, as long as the size only ever becomes a dimension. Any
// other arithmetic on it is refused: its result for one sample would not be
// the result for the batch.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/BatchAxes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace tessel::onnx_import {

BatchAxes::Result BatchAxes::followBatchSize(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  if (op == "Mul")
    return scaledBatchSize(node);
  if (op == "Equal")
    return comparedBatchSize(node);
  if (op == "Where")
    return selectedBatchSize(node);
  // The shape of a shape vector is its length.
  if (op == "Shape")
    return std::nullopt;
  for (int i = 1; i < node.input_size(); ++i)
    if (holdsBatchSize(node.input(i)) && op != "Concat" && op != "Expand")
      return "input '" + node.input(i) + "' holds the batch size, which the op would compute "
             "with";
  if (op == "Concat" ? intAttribute(node, "axis", 0) != 0 : !holdsBatchSize(node.input(0)) &&
                                                               op != "Expand")
    return std::string("computes with the batch size (read from the shape of a batched "
                       "value)");
  std::optional<SmallVector<int64_t>> data = sizeEntriesOf(node.input(0));
  int64_t length = typeOf(node.input(0)).getRank() == 1 ? typeOf(node.input(0)).getDimSize(0) : 1;
  SmallVector<int64_t> entries;
  if (op == "Cast" || op == "Identity") {
    entries = *data;
  } else if (op == "Gather" || op == "Slice") {
    // Picking from a shape: the picked positions that held the size.
    std::optional<SmallVector<int64_t>> picks = constantInts(node.input(1));
    std::optional<SmallVector<int64_t>> ends =
        op == "Slice" ? constantInts(node.input(2)) : std::optional<SmallVector<int64_t>>();
    std::optional<SmallVector<int64_t>> steps = intsOf(node, "steps", 4);
    if (!picks || (op == "Slice" && (!ends || picks->size() != 1 || ends->size() != 1 ||
                                     (steps && (*steps)[0] != 1))))
      return std::string("picks from a shape holding the batch size with indices that are "
                         "not constants (or a step other than 1)");
    if (op == "Gather") {
      for (auto [i, index] : llvm::enumerate(*picks))
        if (llvm::is_contained(*data, normalized(index, length)))
          entries.push_back(i);
    } else {
      int64_t start = std::clamp<int64_t>(normalized((*picks)[0], length), 0, length);
      int64_t end = std::clamp<int64_t>(normalized((*ends)[0], length), 0, length);
      for (int64_t position : *data)
        if (position >= start && position < end)
          entries.push_back(position - start);
    }
  } else if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape") {
    // The batch size as a scalar or as a one-element vector, or a vector
    // reshaped to itself.
    RankedTensorType result = typeOf(node.output(0));
    bool sameVector = result && result.getRank() == 1 && result.getDimSize(0) == length &&
                      typeOf(node.input(0)).getRank() == 1;
    if (length != 1 && !sameVector)
      return std::string("reshapes a shape holding the batch size");
    entries = *data;
  } else if (op == "Concat") {
    int64_t offset = 0;
    for (const std::string &input : node.input()) {
      for (int64_t position : sizeEntriesOf(input).value_or(SmallVector<int64_t>{}))
        entries.push_back(offset + position);
      offset += typeOf(input).getDimSize(0);
    }
  } else if (op == "ConstantOfShape" || op == "Expand") {
    // A tensor created with the batch size as one of its dimensions.
    std::optional<SmallVector<int64_t>> shape = sizeEntriesOf(node.input(op == "Expand"));
    int64_t rank = typeOf(node.output(0)) ? typeOf(node.output(0)).getRank() : 0;
    if (!shape || shape->size() != 1 ||
        (op == "Expand" && (axisOf(node.input(0)) || holdsBatchSize(node.input(0)))))
      return std::string("creates a tensor whose shape holds the batch size more than once");
    int64_t shapeLength = typeOf(node.input(op == "Expand")).getDimSize(0);
    int64_t axis = (*shape)[0] + rank - shapeLength;
    // Its elements are all alike, so any layout is right: the one a
    // `size * k` entry gives.
    axes[node.output(0)] = BatchLayout{axis, 1, typeOf(node.output(0)).getDimSize(axis)};
    return std::nullopt;
  } else {
    return std::string("computes with the batch size (read from the shape of a batched "
                       "value)");
  }
  if (!entries.empty())
    sizeEntries[node.output(0)] = entries;
  return std::nullopt;
}

BatchAxes::Result BatchAxes::scaledBatchSize(const onnx::NodeProto &node) {
  // size * k is the batch size of k rows per sample (`batch * heads`); per
  // sample it folds to k, which is what a one-sample reshape needs.
  int sized = holdsBatchSize(node.input(0)) ? 0 : 1;
  const std::string &size = node.input(sized), &factor = node.input(1 - sized);
  RankedTensorType sizeType = typeOf(size), factorType = typeOf(factor);
  if (holdsBatchSize(factor) || axisOf(factor))
    return std::string("multiplies the batch size by a value that depends on the batch");
  if (factorType.getNumElements() != 1 && factorType != sizeType)
    return std::string("broadcasts the batch size against a larger value");
  if (typeOf(node.output(0)) != sizeType)
    return std::string("broadcasts the batch size into a larger value");
  sizeEntries[node.output(0)] = *sizeEntriesOf(size);
  return std::nullopt;
}

BatchAxes::Result BatchAxes::comparedBatchSize(const onnx::NodeProto &node) {
  // n * k with k >= 0 compares with c <= 0 as k does, whatever n >= 1 is:
  // equal only where both are 0. Such a mask (an exporter finding its -1
  // entries) is the same for one sample as for the batch.
  int sized = holdsBatchSize(node.input(0)) ? 0 : 1;
  const std::string &other = node.input(1 - sized);
  std::optional<SmallVector<int64_t>> compared = constantInts(other);
  if (holdsBatchSize(other) || axisOf(other) || !compared)
    return std::string("compares the batch size with a value that is not a constant");
  // Held here: a range over the returned optional itself would outlive it.
  std::optional<SmallVector<int64_t>> positions = sizeEntriesOf(node.input(sized));
  for (int64_t position : *positions) {
    int64_t value = compared->size() == 1 ? (*compared)[0]
                    : position < static_cast<int64_t>(compared->size()) ? (*compared)[position]
                                                                         : 1;
    if (value > 0)
      return "compares the batch size with " + std::to_string(value) +
             ", which some batch sizes equal";
  }
  return std::nullopt;
}

BatchAxes::Result BatchAxes::selectedBatchSize(const onnx::NodeProto &node) {
  // Where(mask, a, b) with a constant mask: the positions that take their
  // element from a vector holding the batch size still hold it.
  const std::string &mask = node.input(0);
  std::optional<SmallVector<int64_t>> picks = constantInts(mask);
  if (holdsBatchSize(mask) || axisOf(mask) || !picks)
    return std::string("selects with a condition that is not a constant");
  RankedTensorType result = typeOf(node.output(0));
  if (!result || result.getRank() != 1)
    return std::string("selects from the batch size into more than a vector");
  SmallVector<int64_t> entries;
  for (int taken : {1, 2}) {
    const std::string &source = node.input(taken);
    if (axisOf(source))
      return std::string("selects between the batch size and a batched value");
    if (!holdsBatchSize(source))
      continue;
    if (typeOf(source) != result ||
        (picks->size() != 1 && static_cast<int64_t>(picks->size()) != result.getDimSize(0)))
      return std::string("broadcasts the batch size in a selection");
    std::optional<SmallVector<int64_t>> positions = sizeEntriesOf(source);
    for (int64_t position : *positions) {
      bool condition = (*picks)[picks->size() == 1 ? 0 : position] != 0;
      if (condition == (taken == 1))
        entries.push_back(position);
    }
  }
  if (!entries.empty())
    sizeEntries[node.output(0)] = entries;
  return std::nullopt;
}

} // namespace tessel::onnx_import
