//===- Pipelines.cpp - Target-independent pass pipelines ------------------===//

#include "passes/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace tessel {

void buildGraphPreparationPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createTesselFoldBatchNormPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildGraphPipeline(OpPassManager &pm, const GraphPipelineOptions &options) {
  if (options.optLevel > 0) {
    buildGraphPreparationPipeline(pm);
    pm.addNestedPass<func::FuncOp>(createTesselFuseQuantizedOpsPass());
    pm.addPass(createCanonicalizerPass());
    if (options.channelsLast) {
      pm.addNestedPass<func::FuncOp>(createTesselChannelsLastPass());
      pm.addPass(createCanonicalizerPass());
    }
    // On the canonical graph, where transposes of unit axes are reshapes.
    pm.addNestedPass<func::FuncOp>(createTesselSinkReshapesPass());
    pm.addPass(createCanonicalizerPass());
  }
  // After the layout passes, which know only f32 and quantized
  // activations, and at every level: a precision is not an optimization.
  pm.addNestedPass<func::FuncOp>(createTesselBf16ProductsPass({options.bf16Products}));
  TesselFormKernelsPassOptions formKernels;
  formKernels.fuseAttention = options.optLevel > 0 && options.fuseAttention;
  formKernels.separateDequantize = options.separateDequantize;
  pm.addPass(createTesselFormKernelsPass(formKernels));
}

void buildLinalgPipeline(OpPassManager &pm) {
  pm.addPass(createConvertTesselToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createTesselLengthAxesPass());
}

void registerPipelines() {
  PassPipelineRegistration<GraphPipelineOptions>(
      "tessel-graph-pipeline",
      "Graph-level optimization and kernel formation on the tessel dialect",
      buildGraphPipeline);
  PassPipelineRegistration<>("tessel-linalg-pipeline",
                             "Lower tessel kernels to linalg on tensors",
                             buildLinalgPipeline);
}

} // namespace tessel
