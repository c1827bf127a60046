//===- Pipelines.h - Target-independent pass pipelines ----------*- C++ -*-===//

#ifndef TESSEL_PASSES_PIPELINES_H
#define TESSEL_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace tessel {

struct GraphPipelineOptions
    : public mlir::PassPipelineOptions<GraphPipelineOptions> {
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("Optimization level 0-3"),
                       llvm::cl::init(3)};
  Option<bool> channelsLast{
      *this, "channels-last",
      llvm::cl::desc("Compute 2-D convolutions and pooling in NHWC (the "
                     "target vectorizes them along the channels)"),
      llvm::cl::init(false)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Form one kernel of MatMul, Softmax and MatMul (the "
                     "target computes attention a tile of queries at a time)"),
      llvm::cl::init(false)};
  Option<bool> bf16Products{
      *this, "bf16-products",
      llvm::cl::desc("Compute every f32 product with a constant weight on bf16 "
                     "operands (--precision bf16); those marked bf16 always"),
      llvm::cl::init(false)};
  Option<bool> separateDequantize{
      *this, "separate-dequantize",
      llvm::cl::desc("Start a kernel at each dequantize (a target computing "
                     "in integers alone can take the product before it)"),
      llvm::cl::init(false)};
};

/// Graph-level optimization on the tessel dialect: canonicalization and
/// constant folding, batch-norm folding and kernel formation. At -O0 only
/// kernel formation runs (each op its own kernel).
/// The float graph as post-training quantization calibrates it: canonical,
/// batch norms folded into the convolutions before them, common
/// subexpressions shared. The graph pipeline begins with it.
void buildGraphPreparationPipeline(mlir::OpPassManager &pm);

void buildGraphPipeline(mlir::OpPassManager &pm,
                        const GraphPipelineOptions &options);

/// The shared lowering of tessel kernels to linalg on tensors.
void buildLinalgPipeline(mlir::OpPassManager &pm);

/// Registers the pipelines above with tessel-opt.
void registerPipelines();

} // namespace tessel

#endif // TESSEL_PASSES_PIPELINES_H
