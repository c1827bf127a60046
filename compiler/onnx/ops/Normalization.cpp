//===- Normalization.cpp - LayerNorm, RMSNorm, Instance/Group/MVN/Lp, LRN -===//
//
// Each is its formula over tessel.reduce and broadcasting elementwise ops;
// kernel formation fuses the elementwise parts into their reductions.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

SmallVector<int64_t> axesFrom(int64_t first, int64_t rank) {
  SmallVector<int64_t> axes(rank - first);
  std::iota(axes.begin(), axes.end(), first);
  return axes;
}

/// The element type statistics are computed in: stash_type (f32 by
/// default) for LayerNormalization and friends.
Type statisticsType(NodeImporter &node, Type inputType) {
  int64_t stash = node.intAttr("stash_type", 1);
  OpBuilder &b = node.builder();
  if (stash == onnx::TensorProto::DOUBLE)
    return b.getF64Type();
  if (stash == onnx::TensorProto::FLOAT || isa<Float16Type, BFloat16Type>(inputType))
    return b.getF32Type();
  return inputType;
}

bool requireStaticFloat(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!isa<FloatType>(type.getElementType())) {
    (void)node.unsupported("only floating-point inputs are supported");
    return false;
  }
  if (!type.hasStaticShape()) {
    (void)node.unsupported("the input must have a static shape");
    return false;
  }
  return true;
}

/// The axes from the node's `axis` attribute (default -1) to the last.
std::optional<SmallVector<int64_t>> trailingAxes(NodeImporter &node) {
  int64_t rank = node.inputType(0).getRank();
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", -1), rank);
  if (!axis) {
    (void)node.unsupported("axis is out of range");
    return std::nullopt;
  }
  return axesFrom(*axis, rank);
}

/// Whether a LayerNormalization has the form tessel.layer_norm computes:
/// over the last axis of an f32 input, with f32 statistics and vector
/// parameters, only its normalized output used.
bool isSingleLayerNorm(NodeImporter &node, ArrayRef<int64_t> axes, Type computeType) {
  RankedTensorType type = node.inputType(0);
  if (axes.size() != 1 || !type.getElementType().isF32() || !computeType.isF32() ||
      node.outputUsed(1) || node.outputUsed(2))
    return false;
  int64_t features = type.getShape().back();
  for (size_t i = 1; i < std::min<size_t>(node.numInputs(), 3); ++i) {
    if (!node.input(i))
      continue;
    RankedTensorType parameter = node.inputType(i);
    if (parameter.getRank() != 1 || parameter.getDimSize(0) != features ||
        !parameter.getElementType().isF32())
      return false;
  }
  return true;
}

LogicalResult importLayerNormalization(NodeImporter &node) {
  if (!requireStaticFloat(node))
    return failure();
  RankedTensorType type = node.inputType(0);
  std::optional<SmallVector<int64_t>> axes = trailingAxes(node);
  if (!axes)
    return failure();
  float epsilon = node.floatAttr("epsilon", 1e-5f);
  Type computeType = statisticsType(node, type.getElementType());
  if (isSingleLayerNorm(node, *axes, computeType)) {
    OpBuilder &b = node.builder();
    node.setOutput(0, LayerNormOp::create(b, node.loc(), type, node.input(0), node.input(1),
                                          node.input(2), b.getF32FloatAttr(epsilon)));
    return success();
  }
  Formula f(node);
  Value x = f.convert(node.input(0), computeType);
  Value mean = f.meanKeep(x, *axes);
  Value centered = f.sub(x, mean);
  Value inverse = f.inverseDeviation(f.meanKeep(f.mul(centered, centered), *axes), epsilon);
  Value y = f.convert(f.mul(centered, inverse), type.getElementType());
  y = f.mul(y, node.input(1));
  if (node.input(2))
    y = f.add(y, node.input(2));
  if (!y)
    return failure();
  node.setOutput(0, y);
  if (node.outputUsed(1))
    node.setOutput(1, mean);
  if (node.outputUsed(2))
    node.setOutput(2, inverse);
  return success();
}

LogicalResult importRMSNormalization(NodeImporter &node) {
  if (!requireStaticFloat(node))
    return failure();
  RankedTensorType type = node.inputType(0);
  std::optional<SmallVector<int64_t>> axes = trailingAxes(node);
  if (!axes)
    return failure();
  float epsilon = node.floatAttr("epsilon", 1e-5f);
  Formula f(node);
  Value x = f.convert(node.input(0), statisticsType(node, type.getElementType()));
  Value inverse = f.inverseDeviation(f.meanKeep(f.mul(x, x), *axes), epsilon);
  Value y = f.mul(f.convert(f.mul(x, inverse), type.getElementType()), node.input(1));
  return node.setInferredOutput(0, y);
}

/// A per-channel parameter [C] shaped to broadcast over [N, C, spatial...].
Value perChannel(Formula &f, Value parameter, int64_t rank) {
  auto type = cast<RankedTensorType>(parameter.getType());
  SmallVector<int64_t> shape(rank - 1, 1);
  shape[0] = type.getNumElements();
  return f.reshape(parameter, shape);
}

LogicalResult importInstanceNormalization(NodeImporter &node) {
  if (!requireStaticFloat(node))
    return failure();
  RankedTensorType type = node.inputType(0);
  if (type.getRank() < 3)
    return node.unsupported("the input must have rank 3 or more");
  float epsilon = node.floatAttr("epsilon", 1e-5f);
  Formula f(node);
  SmallVector<int64_t> axes = axesFrom(2, type.getRank());
  Value x = node.input(0);
  Value centered = f.sub(x, f.meanKeep(x, axes));
  Value inverse = f.inverseDeviation(f.meanKeep(f.mul(centered, centered), axes), epsilon);
  Value y = f.mul(f.mul(centered, inverse), perChannel(f, node.input(1), type.getRank()));
  return node.setInferredOutput(0, f.add(y, perChannel(f, node.input(2), type.getRank())));
}

/// GroupNormalization normalizes [N, G, C/G * spatial]; opset 18 scales
/// per group, opset 21 per channel.
LogicalResult importGroupNormalization(NodeImporter &node) {
  if (!requireStaticFloat(node))
    return failure();
  RankedTensorType type = node.inputType(0);
  int64_t groups = node.intAttr("num_groups").value_or(0);
  int64_t channels = type.getRank() >= 2 ? type.getDimSize(1) : 0;
  if (groups <= 0 || channels % groups != 0)
    return node.unsupported("num_groups must divide the channels");
  float epsilon = node.floatAttr("epsilon", 1e-5f);
  Formula f(node);
  Value x = f.convert(node.input(0), statisticsType(node, type.getElementType()));
  int64_t batch = type.getDimSize(0);
  Value grouped = f.reshape(x, {batch, groups, type.getNumElements() / (batch * groups)});
  Value centered = f.sub(grouped, f.meanKeep(grouped, {2}));
  Value inverse = f.inverseDeviation(f.meanKeep(f.mul(centered, centered), {2}), epsilon);
  Value normalized = f.convert(f.mul(centered, inverse), type.getElementType());
  Value y;
  if (node.opset() < 21) {
    Value scale = f.reshape(node.input(1), {groups, 1});
    Value bias = f.reshape(node.input(2), {groups, 1});
    y = f.reshape(f.add(f.mul(normalized, scale), bias), type.getShape());
  } else {
    y = f.reshape(normalized, type.getShape());
    y = f.add(f.mul(y, perChannel(f, node.input(1), type.getRank())),
              perChannel(f, node.input(2), type.getRank()));
  }
  return node.setInferredOutput(0, y);
}

/// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
LogicalResult importMeanVarianceNormalization(NodeImporter &node) {
  if (!requireStaticFloat(node))
    return failure();
  RankedTensorType type = node.inputType(0);
  SmallVector<int64_t> axes{0, 2, 3};
  if (std::optional<std::vector<int64_t>> given = node.intsAttr("axes"))
    axes.assign(given->begin(), given->end());
  if (!normalizeAxes(node, axes, type.getRank()))
    return failure();
  llvm::sort(axes);
  Formula f(node);
  Value x = node.input(0);
  Value mean = f.meanKeep(x, axes);
  Value variance = f.sub(f.meanKeep(f.mul(x, x), axes), f.mul(mean, mean));
  Value deviation = f.add(f.sqrt(variance), f.scalar(x, 1e-9));
  return node.setInferredOutput(0, f.div(f.sub(x, mean), deviation));
}

LogicalResult importLpNormalization(NodeImporter &node) {
  if (!requireStaticFloat(node))
    return failure();
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", -1), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  int64_t p = node.intAttr("p", 2);
  if (p != 1 && p != 2)
    return node.unsupported("p must be 1 or 2");
  Formula f(node);
  Value x = node.input(0);
  Value norm = p == 1 ? f.sumKeep(f.abs(x), {*axis}) : f.sqrt(f.sumKeep(f.mul(x, x), {*axis}));
  // A zero vector stays zero (as in onnxruntime) rather than 0 / 0.
  OpBuilder &b = node.builder();
  Value isZero = node.createInferred<CompareOp>(b.getStringAttr("eq"), norm, f.scalar(x, 0.0));
  Value divisor = node.createInferred<WhereOp>(isZero, f.scalar(x, 1.0), norm);
  return node.setInferredOutput(0, f.div(x, divisor));
}

/// LRN: x / (bias + alpha / size * (the sum of squares over a window of
/// `size` channels around each))^beta. The window sums are one product of
/// a constant band matrix [C, C] with the squares as [N, C, rest].
LogicalResult importLRN(NodeImporter &node) {
  if (!requireStaticFloat(node))
    return failure();
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> size = node.intAttr("size");
  if (type.getRank() < 3)
    return node.unsupported("the input must be [N, C, D1, ...]");
  if (!size || *size <= 0)
    return node.unsupported("size must be a positive integer");
  int64_t channels = type.getDimSize(1), batch = type.getDimSize(0);
  int64_t rest = type.getNumElements() / std::max<int64_t>(1, channels * batch);
  if (failed(checkComputeBudget(node, double(channels) * channels * rest * batch,
                                "window sums")))
    return failure();
  // Channel c sums channels [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)].
  int64_t before = (*size - 1) / 2, after = *size - 1 - before;
  OpBuilder &b = node.builder();
  Type element = type.getElementType();
  SmallVector<Attribute> band;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < channels; ++i)
      band.push_back(b.getFloatAttr(element, double(i >= c - before && i <= c + after)));
  Value window = ConstantOp::create(
      b, node.loc(),
      DenseElementsAttr::get(RankedTensorType::get({channels, channels}, element), band));
  Formula f(node);
  Value x = node.input(0);
  Value squares = f.reshape(f.mul(x, x), {batch, channels, rest});
  Value sums = node.createInferred<MatMulOp>(window, squares);
  if (!sums)
    return failure();
  double alpha = node.floatAttr("alpha", 1e-4f), beta = node.floatAttr("beta", 0.75f),
         bias = node.floatAttr("bias", 1.0f);
  Value base = f.add(f.scalar(x, bias), f.mul(f.scalar(x, alpha / double(*size)),
                                              f.reshape(sums, type.getShape())));
  Value scale = node.createInferred<PowOp>(base, f.scalar(x, beta));
  return node.setInferredOutput(0, scale ? f.div(x, scale) : Value());
}

} // namespace

void registerNormalizationHandlers(OpRegistry &registry) {
  registry.on("LayerNormalization", 17, importLayerNormalization);
  registry.on("RMSNormalization", 23, importRMSNormalization);
  registry.on("InstanceNormalization", 6, importInstanceNormalization);
  registry.on("GroupNormalization", 18, importGroupNormalization);
  registry.on("MeanVarianceNormalization", 9, importMeanVarianceNormalization);
  registry.on("LpNormalization", 1, importLpNormalization);
  registry.on("LRN", 1, importLRN);
}

} // namespace tessel::onnx_import
