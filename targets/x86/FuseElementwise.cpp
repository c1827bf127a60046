//===- FuseElementwise.cpp - One generic per chain of elementwise ops -----===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86FUSEELEMENTWISEPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

bool isElementwiseGeneric(Operation *op) {
  auto generic = dyn_cast_if_present<linalg::GenericOp>(op);
  return generic && generic.getNumParallelLoops() == generic.getNumLoops();
}

bool producesBooleans(Operation *op) {
  return llvm::all_of(op->getResultTypes(),
                      [](Type type) { return getElementTypeOrSelf(type).isInteger(1); });
}

struct TesselX86FuseElementwisePass
    : impl::TesselX86FuseElementwisePassBase<TesselX86FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    // Only a producer read by nothing else is merged (no computation is
    // duplicated), and only into elementwise consumers; except a producer
    // of booleans (a comparison), which every consumer recomputes: a
    // tensor of booleans between them would keep both scalar (Vectorize).
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return isElementwiseGeneric(producer) && isElementwiseGeneric(operand->getOwner()) &&
             (producer->hasOneUse() || producesBooleans(producer));
    });
    // A merged generic reads x twice for x * sigmoid(x): once is enough.
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel::x86
