//===- BatchAxes.cpp - Where the batch lies, and whether samples meet ------===//
//
// Every rule reads the node as ONNX defines it, with the one-sample shapes
// of the import (the batch axis has size 1 there). A node none of the rules
// knows is refused when it reads a batched value: it might mix samples, and
// a silent wrong answer is worse than a compile error.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/BatchAxes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {

const onnx::AttributeProto *BatchAxes::findAttribute(const onnx::NodeProto &node,
                                                     llvm::StringRef name) {
  for (const onnx::AttributeProto &attribute : node.attribute())
    if (attribute.name() == name)
      return &attribute;
  return nullptr;
}

int64_t BatchAxes::intAttribute(const onnx::NodeProto &node, llvm::StringRef name,
                                int64_t otherwise) {
  const onnx::AttributeProto *attribute = findAttribute(node, name);
  return attribute ? attribute->i() : otherwise;
}

namespace {

int64_t product(ArrayRef<int64_t> sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t(1), std::multiplies<int64_t>());
}

} // namespace

/// Ops whose output element i depends on input element i alone; their
/// other inputs (CastLike's type source, Clip's bounds) must not depend on
/// the batch.
const llvm::StringSet<> &elementwiseUnaryOps() {
  static const llvm::StringSet<> ops = {
      "Abs",     "Acos",       "Acosh",      "Asin",     "Asinh",    "Atan",       "Atanh",
      "BitwiseNot", "Cast",    "CastLike",   "Ceil",     "Celu",     "Clip",       "Cos",
      "Cosh",    "Dropout",    "Elu",        "Erf",      "Exp",      "Floor",      "Gelu",
      "HardSigmoid", "HardSwish", "Identity", "IsInf",   "IsNaN",    "LeakyRelu",  "Log",
      "Mish",    "Neg",        "Not",        "Reciprocal", "Relu",   "Round",      "Selu",
      "Shrink",  "Sigmoid",    "Sign",       "Sin",      "Sinh",     "Softplus",   "Softsign",
      "Sqrt",    "Tan",        "Tanh",       "ThresholdedRelu"};
  return ops;
}

/// Ops that broadcast their inputs against each other (multidirectionally,
/// or PRelu's slope unidirectionally, which aligns the same way).
const llvm::StringSet<> &broadcastingOps() {
  static const llvm::StringSet<> ops = {
      "Add",     "And",        "BitShift",   "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Div",
      "Equal",   "Greater",    "GreaterOrEqual", "Less", "LessOrEqual", "Max",       "Mean",
      "Min",     "Mod",        "Mul",        "Or",       "Pow",      "PRelu",      "Sub",
      "Sum",     "Where",      "Xor"};
  return ops;
}

namespace {

/// Ops on [N, C, ...] images that compute each image (index of dimension
/// 0) from that image alone: dimension 0 of their image inputs is the
/// batch, and their other inputs (weights, scales) are shared.
const llvm::StringMap<llvm::SmallVector<int, 2>> &perSampleImageOps() {
  static const llvm::StringMap<llvm::SmallVector<int, 2>> ops = {
      {"AveragePool", {0}},        {"BatchNormalization", {0}}, {"Col2Im", {0}},
      {"Conv", {0}},               {"ConvInteger", {0}},        {"ConvTranspose", {0}},
      {"DepthToSpace", {0}},       {"GlobalAveragePool", {0}},  {"GlobalLpPool", {0}},
      {"GlobalMaxPool", {0}},      {"GridSample", {0, 1}},      {"GroupNormalization", {0}},
      {"InstanceNormalization", {0}}, {"LpPool", {0}},          {"LRN", {0}},
      {"MaxPool", {0}},            {"QLinearConv", {0}},        {"Resize", {0}},
      {"SpaceToDepth", {0}},       {"Upsample", {0}}};
  return ops;
}

/// Ops that compute along one axis and keep the others apart.
const llvm::StringSet<> &alongAxisOps() {
  static const llvm::StringSet<> ops = {
      "ArgMax", "ArgMin",     "Concat",        "CumSum",  "GatherElements", "Hardmax",
      "LayerNormalization",   "LogSoftmax",    "LpNormalization", "MeanVarianceNormalization",
      "OneHot", "Softmax",    "Split",         "TopK",    "Trilu"};
  return ops;
}

const llvm::StringSet<> &reductionOps() {
  static const llvm::StringSet<> ops = {
      "ReduceL1",  "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd",  "ReduceSum",       "ReduceSumSquare"};
  return ops;
}

const llvm::StringSet<> &reshapingOps() {
  static const llvm::StringSet<> ops = {"Expand",  "Flatten",   "Pad",  "Reshape", "Slice",
                                        "Squeeze", "Tile",      "Transpose", "Unsqueeze"};
  return ops;
}

std::string axisText(int64_t axis) { return "axis " + std::to_string(axis); }

} // namespace

RankedTensorType BatchAxes::typeOf(const std::string &name) const {
  Value value = name.empty() ? Value() : valueOf(name);
  return value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
}

std::optional<SmallVector<int64_t>> BatchAxes::constantInts(const std::string &name) const {
  Value value = name.empty() ? Value() : valueOf(name);
  DenseIntElementsAttr constant;
  if (!value || !matchPattern(value, m_Constant(&constant)))
    return std::nullopt;
  SmallVector<int64_t> ints;
  for (const APInt &element : constant.getValues<APInt>())
    ints.push_back(element.getSExtValue());
  return ints;
}

std::optional<SmallVector<int64_t>> BatchAxes::intsOf(const onnx::NodeProto &node,
                                                      const char *attribute, int input) const {
  if (const onnx::AttributeProto *given = findAttribute(node, attribute))
    return SmallVector<int64_t>(given->ints().begin(), given->ints().end());
  if (input >= 0 && input < node.input_size() && !node.input(input).empty())
    return constantInts(node.input(input));
  return std::nullopt;
}

std::optional<BatchLayout> BatchAxes::layoutOf(const std::string &name) const {
  auto found = axes.find(name);
  if (found == axes.end())
    return std::nullopt;
  return found->second;
}

std::optional<int64_t> BatchAxes::axisOf(const std::string &name) const {
  if (std::optional<BatchLayout> layout = layoutOf(name))
    return layout->axis;
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> BatchAxes::sizeEntriesOf(const std::string &name) const {
  auto found = sizeEntries.find(name);
  if (found == sizeEntries.end())
    return std::nullopt;
  return found->second;
}

bool BatchAxes::readsBatched(const onnx::NodeProto &node) const {
  for (const std::string &input : node.input())
    if (axisOf(input) || holdsBatchSize(input) || isPaired(input))
      return true;
  // A subgraph may read an outer value without naming it as an input.
  for (const onnx::AttributeProto &attribute : node.attribute()) {
    auto graphReads = [&](const onnx::GraphProto &graph) {
      return llvm::any_of(graph.node(), [&](const onnx::NodeProto &inner) {
        return readsBatched(inner);
      });
    };
    if ((attribute.has_g() && graphReads(attribute.g())) ||
        llvm::any_of(attribute.graphs(), graphReads))
      return true;
  }
  return false;
}

std::optional<std::string> BatchAxes::follow(const onnx::NodeProto &node) {
  if (!readsBatched(node))
    return std::nullopt;
  if (paddedBound && node.op_type() != "If" && node.op_type() != "Loop" && node.op_type() != "Scan")
    if (std::optional<Result> padded = followPadded(node))
      return *padded;
  SmallVector<std::string> batchedInputs;
  std::optional<BatchLayout> first;
  for (const std::string &input : node.input())
    if (std::optional<BatchLayout> layout = layoutOf(input)) {
      batchedInputs.push_back(input);
      first = first ? first : layout;
    }
  bool readsDirectly = llvm::any_of(node.input(), [&](const std::string &input) {
    return axisOf(input) || holdsBatchSize(input);
  });
  if (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan" ||
      !readsDirectly)
    return std::string("runs a subgraph that reads the batch, and control flow is not "
                       "followed through the batch");
  // The rules read their inputs' one-sample types.
  for (const std::string &input : node.input())
    if (!input.empty() && !typeOf(input))
      return "input '" + input + "' has no known type to follow the batch through";
  // A Reshape or Expand may take its shape from the batch size; any other
  // use of the size is arithmetic on it.
  bool sizedShape = (node.op_type() == "Reshape" || node.op_type() == "Expand") &&
                    axisOf(node.input(0)) && !holdsBatchSize(node.input(0));
  if (!sizedShape && llvm::any_of(node.input(), [&](const std::string &input) {
        return holdsBatchSize(input);
      }))
    return followBatchSize(node);

  const std::string &op = node.op_type();
  // Most ops keep the batch's layout and may move its axis.
  BatchLayout layout = *first;
  int64_t out = layout.axis;
  int64_t batch = layout.axis;
  Result refusal;
  if (elementwiseUnaryOps().contains(op)) {
    if (!axisOf(node.input(0)))
      refusal = "reads the batch only through an input that gives a type or bound";
    for (int i = 1; i < node.input_size() && !refusal; ++i)
      if (axisOf(node.input(i)))
        refusal = "input " + std::to_string(i) + " ('" + node.input(i) +
                  "') depends on the batch";
  } else if (broadcastingOps().contains(op)) {
    refusal = broadcasting(node, out);
  } else if (perSampleImageOps().count(op)) {
    refusal = perSampleImage(node, out);
  } else if (alongAxisOps().contains(op)) {
    refusal = alongAxis(node, batch, out);
  } else if (reductionOps().contains(op)) {
    refusal = reduction(node, batch, out);
  } else if (reshapingOps().contains(op)) {
    refusal = reshaping(node, layout);
    out = layout.axis;
  } else if (op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul" || op == "Gemm") {
    refusal = matrixProduct(node, out);
  } else if (op == "Gather") {
    refusal = gather(node, out);
  } else if (op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear") {
    int64_t rank = typeOf(node.input(0)).getRank();
    if (op == "DynamicQuantizeLinear")
      refusal = "computes one scale over all samples";
    else if (batchedInputs.size() != 1 || node.input(0) != batchedInputs.front())
      refusal = "its scale or zero point depends on the batch";
    else if (typeOf(node.input(1)).getRank() >= 1 &&
             normalized(intAttribute(node, "axis", 1), rank) == out)
      refusal = "is quantized per index along the batch axis";
  } else if (op == "Shape") {
    int64_t rank = typeOf(node.input(0)).getRank();
    int64_t start = std::clamp<int64_t>(normalized(intAttribute(node, "start", 0), rank), 0, rank);
    int64_t end = std::clamp<int64_t>(normalized(intAttribute(node, "end", rank), rank), 0, rank);
    // Only what the size goes on to compute decides whether samples meet.
    if (out >= start && out < end)
      sizeEntries[node.output(0)] = {out - start};
    return std::nullopt;
  } else {
    refusal = "is not known to keep the samples of a batch apart";
  }
  if (refusal)
    return refusal;
  layout.axis = out;
  for (const std::string &output : node.output())
    if (!output.empty())
      axes[output] = layout;
  return std::nullopt;
}

BatchAxes::Result BatchAxes::broadcasting(const onnx::NodeProto &node, int64_t &out) {
  int64_t rank = 0;
  for (const std::string &input : node.input())
    if (RankedTensorType type = typeOf(input))
      rank = std::max(rank, type.getRank());
  out = -1;
  std::optional<BatchLayout> seen;
  for (const std::string &input : node.input())
    if (std::optional<BatchLayout> layout = layoutOf(input)) {
      int64_t aligned = layout->axis + rank - typeOf(input).getRank();
      if (out >= 0 && (aligned != out || layout->outer != seen->outer ||
                       layout->inner != seen->inner))
        return std::string("its inputs hold the batch in different axes or layouts");
      out = aligned;
      seen = layout;
    }
  // A shared input broadcast along the batch axis is the same for every
  // sample; one that spans it would give each sample a different slice.
  for (const std::string &input : node.input()) {
    RankedTensorType type = typeOf(input);
    if (!type || axisOf(input))
      continue;
    int64_t position = out - (rank - type.getRank());
    if (position >= 0 && type.getDimSize(position) != 1)
      return "input '" + input + "' does not depend on the batch but spans the batch axis";
  }
  return std::nullopt;
}

BatchAxes::Result BatchAxes::perSampleImage(const onnx::NodeProto &node, int64_t &out) {
  const llvm::SmallVector<int, 2> &images = perSampleImageOps().find(node.op_type())->second;
  for (int i = 0; i < node.input_size(); ++i) {
    std::optional<int64_t> axis = axisOf(node.input(i));
    bool image = llvm::is_contained(images, i);
    if (axis && (!image || *axis != 0))
      return "input '" + node.input(i) + "' holds the batch in " + axisText(*axis) +
             ", where the op does not keep samples apart";
    if (!axis && image)
      return "input '" + node.input(i) + "' does not depend on the batch, but the op reads "
             "its dimension 0 as the batch";
  }
  // Training-mode statistics and MaxPool's flat indices span the batch.
  if ((node.op_type() == "BatchNormalization" || node.op_type() == "MaxPool") &&
      node.output_size() > 1 && !node.output(1).empty())
    return std::string("its second output spans the whole batch");
  if ((node.op_type() == "Resize" || node.op_type() == "Upsample") && batchScale(node) != 1.0)
    return std::string("its scale along the batch axis is not a constant 1 (or sizes give "
                       "the batch a fixed size)");
  out = 0;
  return std::nullopt;
}

std::optional<double> BatchAxes::batchScale(const onnx::NodeProto &node) const {
  if (const onnx::AttributeProto *scales = findAttribute(node, "scales"))
    return scales->floats_size() > 0 ? std::optional<double>(scales->floats(0)) : std::nullopt;
  // Upsample and Resize-10 take [X, scales]; later Resizes [X, roi, scales,
  // sizes].
  bool twoInputs = node.op_type() == "Upsample" || opset < 11;
  int scalesInput = twoInputs ? 1 : 2;
  if (!twoInputs && node.input_size() > 3 && !node.input(3).empty())
    return std::nullopt;
  Value scales = scalesInput < node.input_size() && !node.input(scalesInput).empty()
                     ? valueOf(node.input(scalesInput))
                     : Value();
  DenseFPElementsAttr constant;
  if (!scales || !matchPattern(scales, m_Constant(&constant)) || constant.empty())
    return std::nullopt;
  return (*constant.getValues<APFloat>().begin()).convertToDouble();
}

BatchAxes::Result BatchAxes::alongAxis(const onnx::NodeProto &node, int64_t batch,
                                       int64_t &out) {
  const std::string &op = node.op_type();
  int64_t rank = typeOf(node.input(0)).getRank();
  out = batch;
  // Concat and GatherElements take several tensors of one layout; the
  // others one tensor and parameters (K, depth, scale) shared by all.
  bool sameData = op == "Concat" || op == "GatherElements";
  std::optional<BatchLayout> data = layoutOf(node.input(0));
  for (int i = 0; i < node.input_size(); ++i) {
    std::optional<int64_t> axis = axisOf(node.input(i));
    if (sameData && !node.input(i).empty() && (!data || layoutOf(node.input(i)) != *data))
      return "its inputs do not all hold the batch in " + axisText(batch) + " alike";
    if (!sameData && i > 0 && axis)
      return "input '" + node.input(i) + "' gives a parameter that depends on the batch";
  }
  if (!sameData && !axisOf(node.input(0)))
    return std::string("reads the batch only through a parameter");
  if (op == "Trilu") {
    if (batch >= rank - 2)
      return std::string("the batch is one of the matrix axes");
    return std::nullopt;
  }
  if (op == "MeanVarianceNormalization") {
    SmallVector<int64_t> over =
        intsOf(node, "axes", /*input=*/-1).value_or(SmallVector<int64_t>{0, 2, 3});
    for (int64_t axis : over)
      if (normalized(axis, rank) == batch)
        return std::string("normalizes over the batch axis");
    return std::nullopt;
  }
  int64_t axis;
  if (op == "CumSum") {
    std::optional<SmallVector<int64_t>> given = constantInts(node.input(1));
    if (!given || given->size() != 1)
      return std::string("its axis is not a constant");
    axis = normalized((*given)[0], rank);
  } else {
    bool legacySoftmax = (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13;
    int64_t otherwise = legacySoftmax ? 1
                        : (op == "ArgMax" || op == "ArgMin" || op == "Split" ||
                           op == "GatherElements")
                            ? 0
                            : -1;
    int64_t outputRank = op == "OneHot" ? rank + 1 : rank;
    axis = normalized(intAttribute(node, "axis", otherwise), outputRank);
    // Before opset 13 these ops flatten to [outer, inner] at the axis: the
    // batch must be outer.
    if (legacySoftmax) {
      if (batch >= axis)
        return "computes over " + axisText(axis) + " onwards, which includes the batch";
      return std::nullopt;
    }
    if (op == "LayerNormalization") {
      if (batch >= axis)
        return "normalizes over " + axisText(axis) + " onwards, which includes the batch";
      return std::nullopt;
    }
    if (op == "OneHot") {
      out = batch < axis ? batch : batch + 1;
      return std::nullopt;
    }
  }
  if (axis == batch)
    return "computes along the batch axis (" + axisText(axis) + ")";
  if ((op == "ArgMax" || op == "ArgMin") && intAttribute(node, "keepdims", 1) == 0 && axis < batch)
    out = batch - 1;
  return std::nullopt;
}

BatchAxes::Result BatchAxes::reduction(const onnx::NodeProto &node, int64_t batch,
                                       int64_t &out) {
  if (node.input_size() > 1 && axisOf(node.input(1)))
    return std::string("its axes depend on the batch");
  int64_t rank = typeOf(node.input(0)).getRank();
  std::optional<SmallVector<int64_t>> over = intsOf(node, "axes", 1);
  bool namesAxes = findAttribute(node, "axes") || (node.input_size() > 1 && !node.input(1).empty());
  if (namesAxes && !over)
    return std::string("its axes are not constants");
  out = batch;
  if (!over || over->empty()) {
    if (intAttribute(node, "noop_with_empty_axes", 0))
      return std::nullopt;
    return std::string("reduces over every axis, the batch included");
  }
  bool keep = intAttribute(node, "keepdims", 1) != 0;
  for (int64_t axis : *over) {
    axis = normalized(axis, rank);
    if (axis == batch)
      return std::string("reduces over the batch axis");
    if (!keep && axis < batch)
      --out;
  }
  return std::nullopt;
}

std::optional<BatchLayout> BatchAxes::reshapedLayout(ArrayRef<int64_t> in, BatchLayout layout,
                                                     ArrayRef<int64_t> result,
                                                     int64_t axis) const {
  // A reshape keeps the row-major order of the elements: the batch stays
  // between the same elements of each sample, `before` of them ahead of it
  // and `after` behind. It lands on `axis` if that axis's outer part holds
  // the elements ahead of it that earlier axes do not, and its inner part
  // those behind it that later axes do not.
  int64_t before = product(in.take_front(layout.axis)) * layout.outer;
  int64_t after = layout.inner * product(in.drop_front(layout.axis + 1));
  int64_t ahead = product(result.take_front(axis)), behind = product(result.drop_front(axis + 1));
  if (ahead == 0 || behind == 0 || before % ahead != 0 || after % behind != 0)
    return std::nullopt;
  return BatchLayout{axis, before / ahead, after / behind};
}

BatchAxes::Result BatchAxes::reshaping(const onnx::NodeProto &node, BatchLayout &layout) {
  const std::string &op = node.op_type();
  int64_t batch = layout.axis;
  int64_t &out = layout.axis;
  for (int i = 1; i < node.input_size(); ++i)
    if (axisOf(node.input(i)))
      return "input '" + node.input(i) + "' gives a shape or amount that depends on the batch";
  if (!axisOf(node.input(0)))
    return std::string("reads the batch only through a shape or amount");
  ArrayRef<int64_t> in = typeOf(node.input(0)).getShape();
  int64_t rank = in.size();
  RankedTensorType resultType = typeOf(node.output(0));
  if (!resultType)
    return std::string("its result is not typed");
  ArrayRef<int64_t> result = resultType.getShape();
  out = batch;

  if (op == "Transpose") {
    SmallVector<int64_t> perm;
    if (const onnx::AttributeProto *given = findAttribute(node, "perm"))
      perm.assign(given->ints().begin(), given->ints().end());
    else
      for (int64_t axis = rank - 1; axis >= 0; --axis)
        perm.push_back(axis);
    out = llvm::find(perm, batch) - perm.begin();
    return std::nullopt;
  }
  if (op == "Flatten") {
    int64_t axis = normalized(intAttribute(node, "axis", 1), rank);
    std::optional<BatchLayout> flattened =
        reshapedLayout(in, layout, result, batch < axis ? 0 : 1);
    if (!flattened)
      return std::string("its result does not keep the samples apart");
    layout = *flattened;
    return std::nullopt;
  }
  if (op == "Reshape") {
    std::optional<SmallVector<int64_t>> shape = constantInts(node.input(1));
    if (!shape)
      return std::string("its shape is not a constant");
    bool allowZero = intAttribute(node, "allowzero", 0) != 0;
    // The batch lands where the shape lets its size through: an entry
    // computed from the batch size, or 0 copying the input's batch axis;
    // failing those, the -1 that takes what is left.
    SmallVector<int64_t> sized = sizeEntriesOf(node.input(1)).value_or(SmallVector<int64_t>{});
    if (sized.size() > 1)
      return std::string("its shape holds the batch size in more than one entry");
    std::optional<int64_t> landing;
    for (int64_t j = 0; j < static_cast<int64_t>(shape->size()) && !landing; ++j)
      if (llvm::is_contained(sized, j) || ((*shape)[j] == 0 && !allowZero && j == batch))
        landing = j;
    for (int64_t j = 0; j < static_cast<int64_t>(shape->size()) && !landing; ++j)
      if ((*shape)[j] == -1)
        landing = j;
    if (!landing)
      return std::string("its shape fixes the size of the batch axis (give it as -1, 0 to "
                         "copy it, or compute it from the batch size)");
    std::optional<BatchLayout> reshaped = reshapedLayout(in, layout, result, *landing);
    if (!reshaped)
      return "its result does not keep the samples apart (the batch cannot land on " +
             axisText(*landing) + ")";
    layout = *reshaped;
    return std::nullopt;
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    std::optional<SmallVector<int64_t>> listed = intsOf(node, "axes", 1);
    if (!listed)
      return std::string("its axes are not given as constants");
    int64_t outputRank = op == "Squeeze" ? rank : rank + listed->size();
    SmallVector<int64_t> axesList;
    for (int64_t axis : *listed)
      axesList.push_back(normalized(axis, outputRank));
    if (op == "Squeeze") {
      if (llvm::is_contained(axesList, batch))
        return std::string("squeezes the batch axis");
      out = batch - llvm::count_if(axesList, [&](int64_t axis) { return axis < batch; });
      return std::nullopt;
    }
    // The input's axes fill the result's positions that are not new.
    for (int64_t position = 0, seen = 0; position < outputRank; ++position) {
      if (llvm::is_contained(axesList, position))
        continue;
      if (seen++ == batch) {
        out = position;
        return std::nullopt;
      }
    }
    return std::string("its axes do not fit its input");
  }
  if (op == "Expand" || op == "Tile") {
    std::optional<SmallVector<int64_t>> amounts = constantInts(node.input(1));
    if (!amounts)
      return std::string("its shape or repeats are not constants");
    int64_t outputRank = std::max<int64_t>(rank, amounts->size());
    out = batch + outputRank - rank;
    int64_t entry = op == "Tile" ? batch : out - (outputRank - amounts->size());
    SmallVector<int64_t> sized = sizeEntriesOf(node.input(1)).value_or(SmallVector<int64_t>{});
    // Broadcast to the batch size along another axis, each sample would
    // be copied as many times as there are samples.
    if (llvm::any_of(sized, [&](int64_t position) { return position != entry; }))
      return std::string("broadcasts to the batch size along an axis other than the batch's");
    if (entry >= 0 && (*amounts)[entry] != 1 && sized.empty())
      return "repeats or broadcasts the batch axis (" + std::to_string((*amounts)[entry]) +
             " times)";
    return std::nullopt;
  }
  if (op == "Pad") {
    std::optional<SmallVector<int64_t>> pads = intsOf(node, "pads", 1);
    if (!pads)
      return std::string("its pads are not constants");
    SmallVector<int64_t> padded;
    if (std::optional<SmallVector<int64_t>> listed = intsOf(node, "axes", 3))
      padded = *listed;
    else
      for (int64_t axis = 0; axis < rank; ++axis)
        padded.push_back(axis);
    int64_t count = padded.size();
    for (int64_t i = 0; i < count && 2 * count <= static_cast<int64_t>(pads->size()); ++i)
      if (normalized(padded[i], rank) == batch && ((*pads)[i] != 0 || (*pads)[i + count] != 0))
        return std::string("pads the batch axis");
    return std::nullopt;
  }
  // Slice: the batch axis may only be taken whole.
  // Before opset 10 these are attributes; since, inputs.
  std::optional<SmallVector<int64_t>> starts = intsOf(node, "starts", 1);
  std::optional<SmallVector<int64_t>> ends = intsOf(node, "ends", 2);
  if (!starts || !ends)
    return std::string("its starts or ends are not constants");
  SmallVector<int64_t> sliced;
  if (std::optional<SmallVector<int64_t>> listed = intsOf(node, "axes", 3))
    sliced = *listed;
  else
    for (int64_t axis = 0; axis < static_cast<int64_t>(starts->size()); ++axis)
      sliced.push_back(axis);
  std::optional<SmallVector<int64_t>> steps = intsOf(node, "steps", 4);
  constexpr int64_t kWholeAxisEnd = INT32_MAX;
  for (size_t i = 0; i < sliced.size() && i < starts->size() && i < ends->size(); ++i) {
    if (normalized(sliced[i], rank) != batch)
      continue;
    int64_t step = steps && i < steps->size() ? (*steps)[i] : 1;
    if ((*starts)[i] != 0 || (*ends)[i] < kWholeAxisEnd || step != 1)
      return std::string("takes part of the batch axis");
  }
  return std::nullopt;
}

BatchAxes::Result BatchAxes::matrixProduct(const onnx::NodeProto &node, int64_t &out) {
  const std::string &op = node.op_type();
  int left = 0, right = op == "QLinearMatMul" ? 3 : 1;
  for (int i = 0; i < node.input_size(); ++i)
    if (i != left && i != right && axisOf(node.input(i)))
      return "input '" + node.input(i) + "' depends on the batch";
  std::optional<int64_t> a = axisOf(node.input(left)), b = axisOf(node.input(right));
  int64_t rankA = typeOf(node.input(left)).getRank();
  int64_t rankB = typeOf(node.input(right)).getRank();
  if (op == "Gemm") {
    // A is [M, K] (or [K, M] transposed): the batch must be M.
    int64_t rows = intAttribute(node, "transA", 0) ? 1 : 0;
    if (b || !a || *a != rows)
      return std::string("the batch is not the rows of A");
    if (node.input_size() > 2 && !node.input(2).empty()) {
      RankedTensorType bias = typeOf(node.input(2));
      if (bias && bias.getRank() == 2 && bias.getDimSize(0) != 1)
        return std::string("its C spans the batch axis");
    }
    out = 0;
    return std::nullopt;
  }
  if (rankA < 2 || rankB < 2)
    return std::string("a vector operand is not followed through the batch");
  int64_t rank = std::max(rankA, rankB);
  if (a && b) {
    // Both batched: the batch must be the same stacking axis of both.
    if (*a >= rankA - 2 || *b >= rankB - 2 || *a + rank - rankA != *b + rank - rankB ||
        layoutOf(node.input(left))->outer != layoutOf(node.input(right))->outer ||
        layoutOf(node.input(left))->inner != layoutOf(node.input(right))->inner)
      return std::string("its operands hold the batch in different or matrix axes");
    out = *a + rank - rankA;
    return std::nullopt;
  }
  // One operand batched: not along the axis the product contracts, and
  // where the batch is a stacking axis the other operand broadcasts along it.
  auto oneBatched = [&](int64_t axis, int64_t ownRank, int64_t contracted,
                        const std::string &other, int64_t otherRank,
                        llvm::StringRef otherName) -> Result {
    if (axis == contracted)
      return std::string("the batch is the contracted axis");
    out = axis + rank - ownRank;
    int64_t position = out - (rank - otherRank);
    if (axis < ownRank - 2 && position >= 0 && typeOf(other).getDimSize(position) != 1)
      return ("the " + otherName + " operand spans the batch axis").str();
    return std::nullopt;
  };
  if (a)
    return oneBatched(*a, rankA, rankA - 1, node.input(right), rankB, "second");
  return oneBatched(*b, rankB, rankB - 2, node.input(left), rankA, "first");
}

BatchAxes::Result BatchAxes::gather(const onnx::NodeProto &node, int64_t &out) {
  std::optional<int64_t> data = axisOf(node.input(0)), indices = axisOf(node.input(1));
  int64_t rank = typeOf(node.input(0)).getRank();
  int64_t axis = normalized(intAttribute(node, "axis", 0), rank);
  int64_t indexRank = typeOf(node.input(1)).getRank();
  if (data && indices)
    return std::string("both its data and its indices depend on the batch");
  if (indices) {
    // Each index picks a slice of shared data (an embedding lookup).
    out = axis + *indices;
    return std::nullopt;
  }
  if (*data == axis)
    return std::string("gathers along the batch axis");
  out = *data < axis ? *data : *data + indexRank - 1;
  return std::nullopt;
}

} // namespace tessel::onnx_import
