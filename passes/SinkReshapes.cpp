//===- SinkReshapes.cpp - Elementwise ops before leading-unit reshapes ----===//
//
// A MatMul of a [1, S, D] (or [S, 1, D]) activation is imported as the 2-D
// product of its [S, D] view, reshaped back: the bias add and activation
// that follow then read a reshape, and kernel formation, which keeps
// reshapes in the entry function as views, cannot give them to the MatMul's
// kernel. An elementwise op whose operand is such a reshape (one that only
// inserts or drops axes of extent 1) computes on the reshape's source
// instead, and the reshape moves after it, until it meets an op that is not
// elementwise.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_TESSELSINKRESHAPESPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

SmallVector<int64_t> withoutOnes(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> kept;
  for (int64_t extent : shape)
    if (extent != 1)
      kept.push_back(extent);
  return kept;
}

/// Axes at the end of both shapes with equal extents.
size_t commonSuffix(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t length = 0;
  while (length < a.size() && length < b.size() &&
         a[a.size() - 1 - length] == b[b.size() - 1 - length])
    ++length;
  return length;
}

/// elementwise(reshape(x), c...)  ==>  reshape(elementwise(x, c...)) when the
/// reshape only inserts unit axes and every other operand is full-size (and
/// viewed in x's shape) or broadcasts against trailing axes that x and the
/// reshape share.
struct SinkUnitAxisReshape : RewritePattern {
  SinkUnitAxisReshape(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!op->hasTrait<ElementwiseMap>() || isa<BatchNormOp>(op) || op->getNumResults() != 1 ||
        op->hasAttr("axis") || op->hasAttr("axes") || hasPerAxisQuantization(op))
      return failure();
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType || !resultType.hasStaticShape())
      return failure();
    ArrayRef<int64_t> shape = resultType.getShape();
    // The reshape's source shape that the op computes at instead.
    std::optional<ArrayRef<int64_t>> source;
    for (OpOperand &use : op->getOpOperands()) {
      Value operand = use.get();
      auto reshape = operand.getDefiningOp<ReshapeOp>();
      if (!reshape || !readsElementwise(op, use.getOperandNumber()) ||
          cast<RankedTensorType>(operand.getType()).getShape() != shape)
        continue;
      // Only reshapes that insert unit axes sink: those that drop them, made
      // below for full-size operands, would sink back.
      ArrayRef<int64_t> candidate = reshape.getInput().getType().getShape();
      if (candidate.size() < shape.size() && reshape.getInput().getType().hasStaticShape() &&
          withoutOnes(candidate) == withoutOnes(shape)) {
        source = candidate;
        break;
      }
    }
    if (!source)
      return failure();
    size_t shared = commonSuffix(*source, shape);
    SmallVector<Value> operands;
    for (OpOperand &use : op->getOpOperands()) {
      Value operand = use.get();
      if (!readsElementwise(op, use.getOperandNumber())) {
        operands.push_back(operand);
        continue;
      }
      auto type = cast<RankedTensorType>(operand.getType());
      auto reshape = operand.getDefiningOp<ReshapeOp>();
      if (reshape && type.getShape() == shape &&
          reshape.getInput().getType().getShape() == *source) {
        operands.push_back(reshape.getInput());
        continue;
      }
      // A full-size operand (the residual of a residual add) is viewed in
      // the source's shape.
      if (type.getShape() == shape) {
        operands.push_back(ReshapeOp::create(rewriter, op->getLoc(), type.clone(*source),
                                             operand));
        continue;
      }
      // An operand broadcast over the leading axes reads the same elements
      // against either shape when it varies along shared trailing axes only.
      ArrayRef<int64_t> operandShape = type.getShape();
      size_t varying = operandShape.size();
      while (varying > 0 && operandShape[operandShape.size() - varying] == 1)
        --varying;
      if (type.getRank() > static_cast<int64_t>(source->size()) || varying > shared)
        return rewriter.notifyMatchFailure(op, "an operand does not broadcast the same");
      operands.push_back(operand);
    }
    Operation *sunk = rewriter.clone(*op);
    sunk->setOperands(operands);
    sunk->getResult(0).setType(resultType.clone(*source));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, resultType, sunk->getResult(0));
    return success();
  }
};

struct TesselSinkReshapesPass
    : tessel::impl::TesselSinkReshapesPassBase<TesselSinkReshapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SinkUnitAxisReshape>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
