//===- Recurrence.cpp - tessel.scan as a loop over its steps --------------===//
//
// A scan becomes one scf.for whose iteration arguments are the states and
// the stacked result: each iteration reads step t's slice of the scanned
// tensors, runs the body (lowered like any other tessel ops, in place) and
// writes the next states into result[t] and over the previous ones.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace tessel {
namespace {

/// The window of a tensor of `type` at index `position` of its leading
/// axes: one element along each of them, the whole of every other axis.
struct LeadingWindow {
  SmallVector<OpFoldResult> offsets, sizes, strides;

  LeadingWindow(OpBuilder &b, RankedTensorType type, ArrayRef<OpFoldResult> position)
      : offsets(position), sizes(position.size(), b.getIndexAttr(1)),
        strides(type.getRank(), b.getIndexAttr(1)) {
    offsets.resize(type.getRank(), b.getIndexAttr(0));
    for (int64_t extent : type.getShape().drop_front(position.size()))
      sizes.push_back(b.getIndexAttr(extent));
  }
};

/// `source`'s slice at index `position` of its leading axes, those axes
/// dropped: source[position..., :, ...].
Value leadingSlice(OpBuilder &b, Location loc, Value source, ArrayRef<OpFoldResult> position) {
  auto type = cast<RankedTensorType>(source.getType());
  LeadingWindow window(b, type, position);
  auto sliceType = RankedTensorType::get(type.getShape().drop_front(position.size()),
                                         type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, sliceType, source, window.offsets,
                                        window.sizes, window.strides);
}

/// `value` written into `dest` at index `position` of its leading axes.
Value insertLeading(OpBuilder &b, Location loc, Value value, Value dest,
                    ArrayRef<OpFoldResult> position) {
  LeadingWindow window(b, cast<RankedTensorType>(dest.getType()), position);
  return tensor::InsertSliceOp::create(b, loc, value, dest, window.offsets, window.sizes,
                                       window.strides);
}

struct ScanLowering : OpConversionPattern<ScanOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(ScanOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    // The body's arguments keep their types: only operands that lower to
    // the same type can stand in for them.
    for (auto [original, converted] : llvm::zip(op->getOperands(), adaptor.getOperands()))
      if (original.getType() != converted.getType())
        return rewriter.notifyMatchFailure(op, "operands change type when lowered");
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    int64_t steps = op.getSteps();

    SmallVector<Value> iterArgs(adaptor.getStates());
    iterArgs.push_back(emptyTensor(rewriter, loc, resultType));
    Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value upper = arith::ConstantIndexOp::create(rewriter, loc, steps);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop = scf::ForOp::create(rewriter, loc, lower, upper, one, iterArgs);

    Block *loopBody = loop.getBody();
    rewriter.setInsertionPointToStart(loopBody);
    Value t = loop.getInductionVar();
    if (op.getReverse()) {
      Value last = arith::ConstantIndexOp::create(rewriter, loc, steps - 1);
      t = arith::SubIOp::create(rewriter, loc, last, t);
    }
    SmallVector<Value> arguments(adaptor.getInvariants());
    ValueRange states = loop.getRegionIterArgs();
    llvm::append_range(arguments, states.drop_back());
    for (Value scanned : adaptor.getScanned())
      arguments.push_back(leadingSlice(rewriter, loc, scanned, {t}));

    Block &body = op.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    rewriter.inlineBlockBefore(&body, loopBody, loopBody->end(), arguments);

    rewriter.setInsertionPoint(yield);
    SmallVector<Value> next;
    Value stacked = states.back();
    for (auto [index, state] : llvm::enumerate(yield.getStates())) {
      stacked = insertLeading(rewriter, loc, state, stacked, {t, rewriter.getIndexAttr(index)});
      // Stored over the previous state once the step has read it: each
      // state is then one buffer for all steps.
      next.push_back(bufferization::MaterializeInDestinationOp::create(rewriter, loc, state,
                                                                       states[index])
                         .getResult());
    }
    next.push_back(stacked);
    scf::YieldOp::create(rewriter, loc, next);
    rewriter.eraseOp(yield);
    rewriter.replaceOp(op, loop.getResults().back());
    return success();
  }
};

} // namespace

void populateRecurrenceToLinalgPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  patterns.add<ScanLowering>(converter, patterns.getContext());
}

} // namespace tessel
