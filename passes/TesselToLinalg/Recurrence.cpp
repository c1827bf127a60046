//===- Recurrence.cpp - tessel.scan and tessel.loop as loops -------------===//
//
// A scan becomes one scf.for whose iteration arguments are the states and
// the stacked result: each iteration reads step t's slice of the scanned
// tensors, runs the body (lowered like any other tessel ops, in place) and
// writes the next states into result[t] and over the previous ones. A scan
// with a length stops there (a reverse one starts there), and a second loop
// writes the states as they stand into the rows of the steps it skipped.
// A tessel.loop is one scf.for up to its run-time trip count, its final
// states stacked after it.
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

/// Which of a body's yielded next states are other previous states passed
/// on as they are (a Scan body that swaps its states, or scans one out).
SmallVector<bool> passedOnStates(ValueRange nextStates, ValueRange previousStates) {
  SmallVector<bool> passedOn;
  for (auto [index, state] : llvm::enumerate(nextStates)) {
    auto found = llvm::find(previousStates, state);
    passedOn.push_back(found != previousStates.end() &&
                       std::distance(previousStates.begin(), found) != int64_t(index));
  }
  return passedOn;
}

/// The yielded next states ready to be stored over the previous ones: one
/// passed on from another state is copied first, since that state's
/// buffer may be stored over before it is read.
SmallVector<Value> nextStatesOf(OpBuilder &b, Location loc, ValueRange yielded,
                                ArrayRef<bool> passedOn) {
  SmallVector<Value> nextStates(yielded);
  for (auto [state, copied] : llvm::zip(nextStates, passedOn))
    if (copied)
      state = bufferization::AllocTensorOp::create(b, loc, cast<RankedTensorType>(state.getType()),
                                                   ValueRange(), state);
  return nextStates;
}

/// `next` stored over `previous`, once the iteration has read it: each
/// state is then one buffer for all iterations.
Value storeOver(OpBuilder &b, Location loc, Value next, Value previous) {
  return bufferization::MaterializeInDestinationOp::create(b, loc, next, previous).getResult();
}

/// The loop's trip count from a 0-d i64 tensor, at least 0 and at most
/// `bound` when given.
Value tripCountOf(OpBuilder &b, Location loc, Value count, Value bound = {}) {
  Value given = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                           tensor::ExtractOp::create(b, loc, count));
  Value none = arith::ConstantIndexOp::create(b, loc, 0);
  Value counted = arith::MaxSIOp::create(b, loc, given, none);
  return bound ? arith::MinSIOp::create(b, loc, counted, bound) : counted;
}

/// Whether `op`'s operands keep their types when lowered (`converted`):
/// its body's arguments keep theirs, so only such operands can stand in for
/// them.
bool keepTypes(Operation *op, ValueRange converted) {
  return TypeRange(op->getOperandTypes()) == TypeRange(converted.getTypes());
}

struct ScanLowering : OpConversionPattern<ScanOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(ScanOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!keepTypes(op, adaptor.getOperands()))
      return rewriter.notifyMatchFailure(op, "operands change type when lowered");
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    Value stacked = emptyTensor(rewriter, loc, resultType);
    Value all = arith::ConstantIndexOp::create(rewriter, loc, op.getSteps());
    Value run = adaptor.getLength() ? tripCountOf(rewriter, loc, adaptor.getLength(), all) : all;
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
    SmallVector<bool> passedOn =
        passedOnStates(yield.getStates(), body.getArguments().slice(adaptor.getInvariants().size(),
                                                                    adaptor.getStates().size()));
    rewriter.inlineBlockBefore(&body, loopBody, loopBody->end(), arguments);

    rewriter.setInsertionPoint(yield);
    SmallVector<Value> next;
    Value written = states.back();
    for (auto [index, state] :
         llvm::enumerate(nextStatesOf(rewriter, loc, yield.getStates(), passedOn))) {
      written = insertLeading(rewriter, loc, state, written, {t, rewriter.getIndexAttr(index)});
      next.push_back(storeOver(rewriter, loc, state, states[index]));
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

/// A tessel.loop: one scf.for up to its trip count, read when the kernel
/// runs, whose iteration arguments are the states, or for a conditional
/// one an scf.while that also carries the iteration number and the
/// condition; the final states are then stacked.
struct LoopLowering : OpConversionPattern<LoopOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult matchAndRewrite(LoopOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (!keepTypes(op, adaptor.getOperands()))
      return rewriter.notifyMatchFailure(op, "operands change type when lowered");
    Location loc = op.getLoc();
    Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value count = tripCountOf(rewriter, loc, adaptor.getTripCount());
    ValueRange finalStates = op.getConditional()
                                 ? whileLoop(rewriter, op, adaptor, count, lower, one)
                                 : forLoop(rewriter, op, adaptor, count, lower, one);
    Value stacked = emptyTensor(rewriter, loc, op.getType());
    for (auto [index, state] : llvm::enumerate(finalStates))
      stacked = insertLeading(rewriter, loc, state, stacked, {rewriter.getIndexAttr(index)});
    rewriter.replaceOp(op, stacked);
    return success();
  }

private:
  /// The body inlined at the end of `block`, from iteration number
  /// `iteration` (an index) and `states`, its yield erased: what it yields,
  /// the next states stored over `states`.
  SmallVector<Value> inlineBody(ConversionPatternRewriter &rewriter, LoopOp op, OpAdaptor adaptor,
                                Block *block, Value iteration, ValueRange states) const {
    Location loc = op.getLoc();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(block);
    Value number = arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), iteration);
    SmallVector<Value> arguments = {tensor::FromElementsOp::create(
        rewriter, loc, RankedTensorType::get({}, rewriter.getI64Type()), number)};
    llvm::append_range(arguments, adaptor.getInvariants());
    llvm::append_range(arguments, states);

    Block &body = op.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    ValueRange yielded = yield.getStates();
    ValueRange nextStates = yielded.take_back(states.size());
    SmallVector<bool> passedOn =
        passedOnStates(nextStates, body.getArguments().take_back(states.size()));
    rewriter.inlineBlockBefore(&body, block, block->end(), arguments);
    rewriter.setInsertionPoint(yield);
    SmallVector<Value> results(yielded.drop_back(states.size()));
    for (auto [index, state] : llvm::enumerate(nextStatesOf(rewriter, loc, nextStates, passedOn)))
      results.push_back(storeOver(rewriter, loc, state, states[index]));
    rewriter.eraseOp(yield);
    return results;
  }

  ValueRange forLoop(ConversionPatternRewriter &rewriter, LoopOp op, OpAdaptor adaptor, Value count,
                     Value lower, Value one) const {
    Location loc = op.getLoc();
    auto loop = scf::ForOp::create(rewriter, loc, lower, count, one, adaptor.getStates());
    Block *block = loop.getBody();
    SmallVector<Value> next =
        inlineBody(rewriter, op, adaptor, block, loop.getInductionVar(), loop.getRegionIterArgs());
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(block);
    scf::YieldOp::create(rewriter, loc, next);
    return loop.getResults();
  }

  /// Carries (states..., iteration, condition): it goes on while the
  /// iteration is below the trip count and the last iteration's condition
  /// held. The states come first so that they keep their positions when
  /// canonicalization drops the condition from what the before region
  /// passes on (bufferization pairs the two regions' arguments by position).
  ValueRange whileLoop(ConversionPatternRewriter &rewriter, LoopOp op, OpAdaptor adaptor,
                       Value count, Value lower, Value one) const {
    Location loc = op.getLoc();
    size_t stateCount = adaptor.getStates().size();
    SmallVector<Value> initial(adaptor.getStates());
    initial.push_back(lower);
    initial.push_back(arith::ConstantIntOp::create(rewriter, loc, rewriter.getI1Type(), 1));
    SmallVector<Type> types(ValueRange(initial).getTypes());
    SmallVector<Location> locations(initial.size(), loc);
    auto loop = scf::WhileOp::create(rewriter, loc, types, initial);
    OpBuilder::InsertionGuard guard(rewriter);

    Block *before = rewriter.createBlock(&loop.getBefore(), {}, types, locations);
    Value within = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt,
                                         before->getArgument(stateCount), count);
    Value going = arith::AndIOp::create(rewriter, loc, within, before->getArgument(stateCount + 1));
    scf::ConditionOp::create(rewriter, loc, going, before->getArguments());

    Block *after = rewriter.createBlock(&loop.getAfter(), {}, types, locations);
    Value iteration = after->getArgument(stateCount);
    SmallVector<Value> yielded = inlineBody(rewriter, op, adaptor, after, iteration,
                                            after->getArguments().take_front(stateCount));
    rewriter.setInsertionPointToEnd(after);
    SmallVector<Value> next(ArrayRef(yielded).drop_front());
    next.push_back(arith::AddIOp::create(rewriter, loc, iteration, one));
    next.push_back(tensor::ExtractOp::create(rewriter, loc, yielded.front()));
    scf::YieldOp::create(rewriter, loc, next);
    rewriter.setInsertionPointAfter(loop);
    return loop.getResults().take_front(stateCount);
  }
};

} // namespace

void populateRecurrenceToLinalgPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  patterns.add<ScanLowering, LoopLowering>(converter, patterns.getContext());
}

} // namespace tessel
