//===- Registry.cpp - Every ONNX op handler Tessel has --------------------===//

#include "compiler/onnx/ops/Handlers.h"

namespace tessel::onnx_import {

const OpRegistry &onnxOpRegistry() {
  static const OpRegistry registry = [] {
    OpRegistry result;
    registerAttentionHandlers(result);
    registerDeformConvHandlers(result);
    registerDeterminantHandlers(result);
    registerElementwiseHandlers(result);
    registerGatherScatterHandlers(result);
    registerGridSampleHandlers(result);
    registerLinearAttentionHandlers(result);
    registerLinearMapHandlers(result);
    registerLossHandlers(result);
    registerMachineLearningHandlers(result);
    registerMelWeightMatrixHandlers(result);
    registerNeuralNetworkHandlers(result);
    registerNonMaxSuppressionHandlers(result);
    registerNormalizationHandlers(result);
    registerQuantizationHandlers(result);
    registerRecurrentHandlers(result);
    registerReductionHandlers(result);
    registerResizeHandlers(result);
    registerRoiAlignHandlers(result);
    registerSequenceHandlers(result);
    registerShapeHandlers(result);
    registerSlicingHandlers(result);
    registerTensorHandlers(result);
    registerTfIdfVectorizerHandlers(result);
    registerTrainingOptimizerHandlers(result);
    registerTreeEnsembleHandlers(result);
    registerUniqueHandlers(result);
    return result;
  }();
  return registry;
}

mlir::LogicalResult checkComputeBudget(NodeImporter &node, double count, const llvm::Twine &what,
                                       int64_t limit) {
  if (count <= double(limit)) // NaN fails too
    return mlir::success();
  std::string shown = count < 1e18 ? std::to_string(int64_t(count)) : "over 10^18";
  return node.unsupported("it would compute " + shown + " " + what +
                          " at compile time; the limit is " + std::to_string(limit));
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                     bool inclusive) {
  // Negative axes count from the back in both forms: -1 is rank - 1.
  int64_t limit = inclusive ? rank + 1 : rank;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= limit)
    return std::nullopt;
  return axis;
}

bool normalizeAxes(NodeImporter &node, llvm::SmallVectorImpl<int64_t> &axes,
                   int64_t rank) {
  for (int64_t &axis : axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized) {
      (void)node.unsupported("axis " + llvm::Twine(axis) + " is out of range for rank " +
                             llvm::Twine(rank));
      return false;
    }
    axis = *normalized;
  }
  return true;
}

} // namespace tessel::onnx_import
