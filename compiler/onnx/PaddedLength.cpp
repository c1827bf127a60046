//===- PaddedLength.cpp - Positions along a padded length that meet -------===//
//
// --max-shape imports a model at the bound of its varying length, and a
// run pads its inputs to the bound. Most nodes keep positions along the
// length apart, and the general rules follow them as they follow a batch.
// Those that combine positions (a Softmax, a sum or a maximum over the
// length, a matrix product contracting it) compute at the bound what they
// compute at the length once the padding they read is filled with the value
// that leaves them unchanged: zeros for sums and matrix products, the lowest
// value for maxima and softmax, the highest for minima. The importer fills it (VaryingLength.cpp)
// where paddingFills says.
//
// Attention multiplies queries by keys that both vary along the length:
// its scores pair the positions, queries along one axis and keys along
// another. Such a pair is followed through elementwise ops (scaling,
// adding a mask), a Softmax over the keys and the product with the values,
// which contracts the keys and leaves the queries.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/BatchAxes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace tessel::onnx_import {

namespace {

bool isSoftmax(llvm::StringRef op) {
  return op == "Softmax" || op == "LogSoftmax" || op == "Hardmax";
}

/// Reductions whose padding a fill neutralizes; ReduceMean is a sum the
/// importer rescales from the bound to the length.
std::optional<PaddingFill::Fill> reductionFill(llvm::StringRef op) {
  if (op == "ReduceSum" || op == "ReduceMean")
    return PaddingFill::Zero;
  if (op == "ReduceMax")
    return PaddingFill::Lowest;
  if (op == "ReduceMin")
    return PaddingFill::Highest;
  return std::nullopt;
}

} // namespace

SmallVector<int64_t, 2> BatchAxes::paddedAxes(const std::string &name) const {
  if (auto pair = pairs.find(name); pair != pairs.end())
    return {pair->second.rows, pair->second.columns};
  std::optional<BatchLayout> layout = layoutOf(name);
  if (layout && layout->outer == 1 && layout->inner == 1)
    return {layout->axis};
  return {};
}

std::optional<SmallVector<int64_t>> BatchAxes::reducedAxes(const onnx::NodeProto &node,
                                                           int64_t rank) const {
  std::optional<SmallVector<int64_t>> given = intsOf(node, "axes", 1);
  bool namesAxes = findAttribute(node, "axes") || (node.input_size() > 1 && !node.input(1).empty());
  if (namesAxes && !given)
    return std::nullopt;
  SmallVector<int64_t> over;
  if (given && !given->empty()) {
    for (int64_t axis : *given)
      over.push_back(normalized(axis, rank));
  } else if (!intAttribute(node, "noop_with_empty_axes", 0)) {
    for (int64_t axis = 0; axis < rank; ++axis)
      over.push_back(axis);
  }
  return over;
}

bool BatchAxes::variesOtherwise(const std::string &name) const {
  return holdsBatchSize(name) || (axisOf(name) && paddedAxes(name).empty());
}

bool BatchAxes::holdsBound(const std::string &name, int64_t entry) const {
  std::optional<SmallVector<int64_t>> values = constantInts(name);
  return values && entry < int64_t(values->size()) && (*values)[entry] == paddedBound;
}

void BatchAxes::setPaddedAxes(const std::string &name, ArrayRef<int64_t> varying) {
  if (varying.size() == 1)
    axes[name] = BatchLayout{varying.front(), 1, 1};
  else if (varying.size() == 2)
    pairs[name] = PairedAxes{varying[0], varying[1]};
}

SmallVector<PaddingFill, 2> BatchAxes::paddingFills(const onnx::NodeProto &node) const {
  // A Softmax's weights past the length are already zeros when it read
  // lowest values there: attention's product with the values needs no fill
  // of them. (Its rows vary and are trimmed: at length 0, where the weights
  // are NaN, none is kept. A mean keeps its fill: the importer rescales what
  // it fills.)
  SmallVector<PaddingFill, 2> fills = combinedPadding(node);
  if (node.op_type() == "MatMul" && isPaired(node.input(0)))
    llvm::erase_if(fills, [&](const PaddingFill &fill) {
      auto zeros = zeroPadding.find(node.input(fill.input));
      return zeros != zeroPadding.end() && llvm::is_contained(zeros->second, fill.axis);
    });
  return fills;
}

SmallVector<PaddingFill, 2> BatchAxes::combinedPadding(const onnx::NodeProto &node) const {
  const std::string &op = node.op_type();
  SmallVector<PaddingFill, 2> fills;
  if (!paddedBound || node.input_size() == 0 || !typeOf(node.input(0)) ||
      variesOtherwise(node.input(0)))
    return fills;
  RankedTensorType type = typeOf(node.input(0));
  int64_t rank = type.getRank();
  SmallVector<int64_t, 2> varying = paddedAxes(node.input(0));
  // A maximum's or minimum's fill is an infinity, which integers lack.
  bool floats = isa<FloatType>(type.getElementType());
  if (isSoftmax(op) && floats) {
    // Before opset 13 these flatten the axes from `axis` on into one.
    bool legacy = opset < 13;
    int64_t axis = normalized(intAttribute(node, "axis", legacy ? 1 : -1), rank);
    for (int64_t along : varying)
      if (legacy ? along >= axis : along == axis)
        fills.push_back({0, along, PaddingFill::Lowest});
  } else if (std::optional<PaddingFill::Fill> fill = reductionFill(op)) {
    // Integers lack infinities, and their mean would round twice.
    if ((*fill != PaddingFill::Zero || op == "ReduceMean") && !floats)
      return fills;
    std::optional<SmallVector<int64_t>> over = reducedAxes(node, rank);
    if (!over)
      return fills;
    for (int64_t along : varying)
      if (llvm::is_contained(*over, along))
        fills.push_back({0, along, *fill});
  } else if (op == "MatMul" && node.input_size() == 2 && typeOf(node.input(1))) {
    // Contracting the length: both operands must vary along it, or the
    // other would span the bound where the model spans the length.
    int64_t rankB = typeOf(node.input(1)).getRank();
    if (rank >= 2 && rankB >= 2 && !variesOtherwise(node.input(1)) &&
        llvm::is_contained(varying, rank - 1) &&
        llvm::is_contained(paddedAxes(node.input(1)), rankB - 2))
      fills = {{0, rank - 1, PaddingFill::Zero}, {1, rankB - 2, PaddingFill::Zero}};
  }
  return fills;
}

std::optional<BatchAxes::Result> BatchAxes::followPadded(const onnx::NodeProto &node) {
  if (std::optional<Result> sliced = upToLength(node))
    return sliced;
  bool readsPair =
      llvm::any_of(node.input(), [&](const std::string &input) { return isPaired(input); });
  SmallVector<PaddingFill, 2> fills = combinedPadding(node);
  if (!fills.empty())
    return followCombining(node, fills);
  if (readsPair)
    return followPairs(node);
  if (makesPair(node)) {
    int64_t rank = std::max(typeOf(node.input(0)).getRank(), typeOf(node.input(1)).getRank());
    setPaddedAxes(node.output(0), {rank - 2, rank - 1});
    return Result();
  }
  return std::nullopt;
}

bool BatchAxes::makesPair(const onnx::NodeProto &node) const {
  // Queries (rows of A) against keys (columns of B).
  if (node.op_type() != "MatMul" || node.input_size() != 2 || !typeOf(node.input(0)) ||
      !typeOf(node.input(1)))
    return false;
  int64_t rankA = typeOf(node.input(0)).getRank(), rankB = typeOf(node.input(1)).getRank();
  return rankA >= 2 && rankB >= 2 &&
         paddedAxes(node.input(0)) == SmallVector<int64_t, 2>{rankA - 2} &&
         paddedAxes(node.input(1)) == SmallVector<int64_t, 2>{rankB - 1};
}

BatchAxes::Result BatchAxes::followCombining(const onnx::NodeProto &node,
                                             ArrayRef<PaddingFill> fills) {
  const std::string &op = node.op_type();
  int64_t rank = typeOf(node.input(0)).getRank();
  SmallVector<int64_t, 2> varying = paddedAxes(node.input(0));
  auto filled = [&](int input, int64_t axis) {
    return llvm::any_of(
        fills, [&](const PaddingFill &fill) { return fill.input == input && fill.axis == axis; });
  };
  int firstParameter = op == "MatMul" ? 2 : 1;
  for (int i = firstParameter; i < node.input_size(); ++i)
    if (!paddedAxes(node.input(i)).empty() || variesOtherwise(node.input(i)))
      return "input '" + node.input(i) + "' gives a parameter that depends on the length";
  SmallVector<int64_t, 2> out;
  if (isSoftmax(op)) {
    out = varying;
    // exp(-inf) and Hardmax's zeros: weights past the length are zeros.
    if (op != "LogSoftmax")
      for (const PaddingFill &fill : fills)
        zeroPadding[node.output(0)].push_back(fill.axis);
  } else if (op == "MatMul") {
    // The operands' axes other than the contracted one: A's rows become the
    // result's rows, B's columns its columns.
    int64_t rankB = typeOf(node.input(1)).getRank();
    int64_t resultRank = std::max(rank, rankB);
    for (int64_t axis : varying)
      if (!filled(0, axis)) {
        if (axis != rank - 2)
          return std::string("its first operand varies with the length in a stacking axis "
                             "as well as the contracted one");
        out.push_back(resultRank - 2);
      }
    for (int64_t axis : paddedAxes(node.input(1)))
      if (!filled(1, axis)) {
        if (axis != rankB - 1)
          return std::string("its second operand varies with the length in a stacking axis "
                             "as well as the contracted one");
        out.push_back(resultRank - 1);
      }
  } else {
    // A reduction: the axes it keeps move down past those it drops.
    SmallVector<int64_t> over = *reducedAxes(node, rank);
    bool keep = intAttribute(node, "keepdims", 1) != 0;
    for (int64_t axis : varying)
      if (!filled(0, axis))
        out.push_back(keep ? axis : axis - llvm::count_if(over, [&](int64_t reduced) {
                                      return reduced < axis;
                                    }));
  }
  for (const std::string &output : node.output())
    if (!output.empty())
      setPaddedAxes(output, out);
  return std::nullopt;
}

BatchAxes::Result BatchAxes::followPairs(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  const char *notFollowed = "reads positions paired along the length (attention's scores), "
                            "which the op is not known to keep apart";
  int64_t rank = 0;
  for (const std::string &input : node.input()) {
    if (input.empty())
      continue;
    if (variesOtherwise(input))
      return "input '" + input + "' depends on the length otherwise than along an axis";
    RankedTensorType type = typeOf(input);
    if (!type)
      return "input '" + input + "' has no known type to follow the length through";
    rank = std::max(rank, type.getRank());
  }
  SmallVector<int64_t, 2> out;
  if (elementwiseUnaryOps().contains(op)) {
    for (int i = 1; i < node.input_size(); ++i)
      if (!paddedAxes(node.input(i)).empty())
        return "input " + std::to_string(i) + " ('" + node.input(i) + "') depends on the length";
    out = paddedAxes(node.input(0));
  } else if (broadcastingOps().contains(op)) {
    // Inputs varying along the length line up with the pair's axes; shared
    // ones broadcast along both.
    for (const std::string &input : node.input())
      if (isPaired(input)) {
        int64_t shift = rank - typeOf(input).getRank();
        SmallVector<int64_t, 2> aligned;
        for (int64_t axis : paddedAxes(input))
          aligned.push_back(axis + shift);
        if (!out.empty() && out != aligned)
          return std::string("its inputs pair positions along the length in different axes");
        out = aligned;
      }
    for (const std::string &input : node.input()) {
      RankedTensorType type = typeOf(input);
      if (!type)
        continue;
      int64_t shift = rank - type.getRank();
      SmallVector<int64_t, 2> varying = paddedAxes(input);
      for (int64_t axis : varying)
        if (!llvm::is_contained(out, axis + shift))
          return "input '" + input + "' varies with the length in an axis the pair does not";
      for (int64_t axis : out)
        if (axis - shift >= 0 && !llvm::is_contained(varying, axis - shift) &&
            type.getDimSize(axis - shift) != 1)
          return "input '" + input + "' does not vary with the length but spans it";
    }
  } else if (op == "Transpose") {
    SmallVector<int64_t> permutation;
    for (const onnx::AttributeProto &attribute : node.attribute())
      if (attribute.name() == "perm")
        permutation.assign(attribute.ints().begin(), attribute.ints().end());
    if (permutation.empty())
      for (int64_t axis = rank - 1; axis >= 0; --axis)
        permutation.push_back(axis);
    for (int64_t axis : paddedAxes(node.input(0))) {
      auto found = llvm::find(permutation, axis);
      if (found == permutation.end())
        return std::string(notFollowed);
      out.push_back(found - permutation.begin());
    }
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    // The kept axes keep their order around those inserted or removed.
    std::optional<SmallVector<int64_t>> listed = intsOf(node, "axes", 1);
    RankedTensorType result = typeOf(node.output(0));
    if (!listed || !result)
      return std::string(notFollowed);
    bool inserting = op == "Unsqueeze";
    int64_t listedRank = inserting ? result.getRank() : rank;
    SmallVector<bool> listedAxis(listedRank, false);
    for (int64_t axis : *listed) {
      axis = normalized(axis, listedRank);
      if (axis < 0 || axis >= listedRank)
        return std::string(notFollowed);
      listedAxis[axis] = true;
    }
    SmallVector<int64_t> kept;
    for (int64_t axis = 0; axis < listedRank; ++axis)
      if (!listedAxis[axis])
        kept.push_back(axis);
    for (int64_t axis : paddedAxes(node.input(0))) {
      if (inserting) {
        if (axis >= int64_t(kept.size()))
          return std::string(notFollowed);
        out.push_back(kept[axis]);
        continue;
      }
      if (listedAxis[axis])
        return std::string(notFollowed);
      out.push_back(llvm::find(kept, axis) - kept.begin());
    }
  } else {
    return std::string(notFollowed);
  }
  for (const std::string &output : node.output())
    if (!output.empty())
      setPaddedAxes(output, out);
  return std::nullopt;
}

std::optional<BatchAxes::Result> BatchAxes::upToLength(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  if (op == "Range" && node.input_size() == 3 && holdsBatchSize(node.input(1))) {
    // torch.arange(length): the positions, imported up to the bound.
    std::optional<SmallVector<int64_t>> start = constantInts(node.input(0));
    std::optional<SmallVector<int64_t>> delta = constantInts(node.input(2));
    if (!start || !delta || start->size() != 1 || delta->size() != 1 || (*start)[0] != 0 ||
        (*delta)[0] != 1 || !holdsBound(node.input(1), 0))
      return Result("counts up to the length from a start other than a constant 0, by a "
                    "step other than 1, or up to a multiple of the length");
    setPaddedAxes(node.output(0), {0});
    return Result();
  }
  // Data that varies along one axis already may be sliced along another:
  // mask[:length][:, :length] pairs the positions.
  SmallVector<int64_t, 2> varying = paddedAxes(node.input(0));
  if (op != "Slice" || node.input_size() < 3 || !holdsBatchSize(node.input(2)) ||
      holdsBatchSize(node.input(0)) || isPaired(node.input(0)) ||
      (axisOf(node.input(0)) && varying.empty()) || !typeOf(node.input(0)))
    return std::nullopt;
  // Imported at the bound, the slice keeps the first `bound` positions,
  // which at each position below the length are the model's.
  std::optional<SmallVector<int64_t>> starts = constantInts(node.input(1));
  int64_t rank = typeOf(node.input(0)).getRank();
  SmallVector<int64_t> along;
  for (int64_t i = 0; i < int64_t(starts ? starts->size() : 0); ++i)
    along.push_back(i);
  if (node.input_size() > 3 && !node.input(3).empty()) {
    std::optional<SmallVector<int64_t>> given = constantInts(node.input(3));
    if (!given)
      return Result("slices up to the length along axes that are not constants");
    along = *given;
  }
  std::optional<SmallVector<int64_t>> steps = intsOf(node, "steps", 4);
  if (!steps && node.input_size() > 4 && !node.input(4).empty())
    return Result("slices up to the length with steps that are not constants");
  SmallVector<int64_t> sized = *sizeEntriesOf(node.input(2));
  for (auto [entry, axis] : llvm::enumerate(along))
    if (!llvm::is_contained(sized, int64_t(entry)) &&
        llvm::is_contained(varying, normalized(axis, rank)))
      return Result("slices the varying length by other bounds than the length");
  for (int64_t entry : sized) {
    if (!starts || entry >= int64_t(starts->size()) || entry >= int64_t(along.size()) ||
        (*starts)[entry] != 0 ||
        (steps && (entry >= int64_t(steps->size()) || (*steps)[entry] != 1)) ||
        !holdsBound(node.input(2), entry))
      return Result("slices up to the length from a start other than a constant 0, with a "
                    "step other than 1, or up to a multiple of the length");
    int64_t axis = normalized(along[entry], rank);
    if (!llvm::is_contained(varying, axis))
      varying.push_back(axis);
  }
  for (int i = 1; i < node.input_size(); ++i)
    if (i != 2 && (holdsBatchSize(node.input(i)) || axisOf(node.input(i))))
      return Result("input '" + node.input(i) + "' depends on the length");
  if (varying.size() > 2)
    return Result("slices more than two axes up to the length");
  llvm::sort(varying);
  setPaddedAxes(node.output(0), varying);
  return Result();
}

} // namespace tessel::onnx_import
