//===- Recurrence.cpp - tessel.scan as a loop over its steps --------------===//
//
// A scan becomes one scf.for whose iteration arguments are the states and
// the stacked result: each iteration reads step t's slice of the scanned
// tensors, runs the body (lowered like any other tessel ops, in place) and
// writes the next states into result[t] and over the previous ones. A scan
// with a length stops there (a reverse one starts there), and a second loop
// writes the states as they stand into the rows of the steps it skipped.
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

/// `states` written into rows [from, to) of `stacked`, each row holding
/// them all: the rows of the steps a scan with a length skips.
Value repeatStates(OpBuilder &b, Location loc, ValueRange states, Value stacked, Value from,
                   Value to) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto rows = scf::ForOp::create(b, loc, from, to, one, ValueRange{stacked});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rows.getBody());
  Value t = rows.getInductionVar();
  Value filled = rows.getRegionIterArgs().front();
  for (auto [index, state] : llvm::enumerate(states))
    filled = insertLeading(b, loc, state, filled, {t, b.getIndexAttr(index)});
  scf::YieldOp::create(b, loc, filled);
  return rows.getResult(0);
}

/// The steps a scan runs: its length clamped to [0, all], or all of them.
Value stepsRun(OpBuilder &b, Location loc, Value length, Value all) {
  if (!length)
    return all;
  Value given = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                           tensor::ExtractOp::create(b, loc, length));
  Value none = arith::ConstantIndexOp::create(b, loc, 0);
  return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, given, none), all);
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
    Value stacked = emptyTensor(rewriter, loc, resultType);
    Value all = arith::ConstantIndexOp::create(rewriter, loc, op.getSteps());
    Value run = stepsRun(rewriter, loc, adaptor.getLength(), all);
    // In reverse, the steps skipped come first: their rows hold the
    // initial states.
    if (adaptor.getLength() && op.getReverse())
      stacked = repeatStates(rewriter, loc, adaptor.getStates(), stacked, run, all);
    SmallVector<Value> iterArgs(adaptor.getStates());
    iterArgs.push_back(stacked);
    Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value last = op.getReverse() ? arith::SubIOp::create(rewriter, loc, run, one) : Value();
    auto loop = scf::ForOp::create(rewriter, loc, lower, run, one, iterArgs);

    OpBuilder::InsertionGuard guard(rewriter);
    Block *loopBody = loop.getBody();
    rewriter.setInsertionPointToStart(loopBody);
    Value t = loop.getInductionVar();
    if (op.getReverse())
      t = arith::SubIOp::create(rewriter, loc, last, t);
    SmallVector<Value> arguments(adaptor.getInvariants());
    ValueRange states = loop.getRegionIterArgs();
    llvm::append_range(arguments, states.drop_back());
    for (Value scanned : adaptor.getScanned())
      arguments.push_back(leadingSlice(rewriter, loc, scanned, {t}));

    Block &body = op.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    // Which next states are other previous states passed on as they are
    // (a Scan body that swaps its states, or scans one out).
    ValueRange previousStates =
        body.getArguments().slice(adaptor.getInvariants().size(), adaptor.getStates().size());
    SmallVector<bool> passedOn;
    for (auto [index, state] : llvm::enumerate(yield.getStates())) {
      auto found = llvm::find(previousStates, state);
      passedOn.push_back(found != previousStates.end() &&
                         std::distance(previousStates.begin(), found) != int64_t(index));
    }
    rewriter.inlineBlockBefore(&body, loopBody, loopBody->end(), arguments);

    rewriter.setInsertionPoint(yield);
    // Each next state is stored over its previous one once the step has
    // read it: each state is then one buffer for all steps. One passed on
    // from another state is copied first, since that state's buffer may be
    // stored over before it is read.
    SmallVector<Value> nextStates(yield.getStates());
    for (auto [state, copied] : llvm::zip(nextStates, passedOn))
      if (copied)
        state = bufferization::AllocTensorOp::create(
            rewriter, loc, cast<RankedTensorType>(state.getType()), ValueRange(), state);
    SmallVector<Value> next;
    Value written = states.back();
    for (auto [index, state] : llvm::enumerate(nextStates)) {
      written = insertLeading(rewriter, loc, state, written, {t, rewriter.getIndexAttr(index)});
      next.push_back(bufferization::MaterializeInDestinationOp::create(rewriter, loc, state,
                                                                       states[index])
                         .getResult());
    }
    next.push_back(written);
    scf::YieldOp::create(rewriter, loc, next);
    rewriter.eraseOp(yield);

    rewriter.setInsertionPointAfter(loop);
    Value result = loop.getResults().back();
    // Forwards, the steps skipped come last: their rows hold the final
    // states.
    if (adaptor.getLength() && !op.getReverse())
      result = repeatStates(rewriter, loc, loop.getResults().drop_back(), result, run, all);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateRecurrenceToLinalgPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  patterns.add<ScanLowering>(converter, patterns.getContext());
}

} // namespace tessel
