//===- ExpandToPrimitives.cpp - No support library in kernel code ---------===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86EXPANDTOPRIMITIVESPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// memref.copy lowers to a call into MLIR's runner library unless both
/// sides are contiguous; linalg.copy lowers to loops that need nothing.
struct CopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }
};

struct TesselX86ExpandToPrimitivesPass
    : impl::TesselX86ExpandToPrimitivesPassBase<
          TesselX86ExpandToPrimitivesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<CopyToLinalg>(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, MathPolynomialApproximationOptions{});
    // bf16 conversions would call compiler-rt (__truncsfbf2); integer ops
    // round to nearest even just the same.
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel::x86
