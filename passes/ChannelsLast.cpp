//===- ChannelsLast.cpp - 2-D convolutions and pooling channels last ------===//
//
// ONNX computes convolutions in NCHW. A CPU vectorizes a convolution best
// along its channels: they are 16 to 2048 wide in every layer of a CNN,
// while rows shrink to 14 or 7 elements, which fill a 16-lane vector at
// most half. This pass gives every 2-D convolution (regular or depthwise)
// and pooling an NHWC input and result between two transposes, then sinks
// each NHWC -> NCHW transpose through the elementwise ops, concatenations
// and reductions after it until it meets the NCHW -> NHWC transpose of the
// next convolution, where the two cancel. What is left are transposes at
// the graph's edges (the input image, the pooled features) and in front of
// ops that must see NCHW.
//
// Constant weights and broadcast operands are transposed too; those
// transposes fold at compile time.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_TESSELCHANNELSLASTPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Transpose permutations (result axis i is input axis perm[i]).
constexpr int64_t kToChannelsLast[] = {0, 2, 3, 1};  // NCHW -> NHWC
constexpr int64_t kToChannelsFirst[] = {0, 3, 1, 2}; // NHWC -> NCHW
constexpr int64_t kWeightToChannelsLast[] = {2, 3, 1, 0}; // FCHW -> HWCF

Value transpose(PatternRewriter &rewriter, Location loc, Value value,
                ArrayRef<int64_t> perm) {
  return TransposeOp::create(rewriter, loc, value, rewriter.getDenseI64ArrayAttr(perm));
}

SmallVector<int64_t> permuted(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> result;
  for (int64_t axis : perm)
    result.push_back(shape[axis]);
  return result;
}

bool isStatic4D(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() == 4 && type.hasStaticShape();
}

/// What gets the channels-last form: static 4-D activations of the element
/// types targets block, f32 and 8-bit quantized per tensor.
bool isBlockedActivation(Value value) {
  if (!isStatic4D(value))
    return false;
  Type element = cast<RankedTensorType>(value.getType()).getElementType();
  if (quant::QuantizedType quantized = getQuantizedType(element))
    return quantized.getStorageTypeIntegralWidth() == 8 && !quantizedAxis(quantized);
  return element.isF32();
}

/// The NHWC value that `value` is the NCHW transpose of.
Value channelsLastSource(Value value) {
  auto transposed = value.getDefiningOp<TransposeOp>();
  if (!transposed || !llvm::equal(transposed.getPerm(), kToChannelsFirst))
    return {};
  return transposed.getInput();
}

//===----------------------------------------------------------------------===//
// Ops computed channels last
//===----------------------------------------------------------------------===//

/// conv(x, w)  ==>  transpose(conv_cl(transpose(x), transpose(w))), for
/// regular and depthwise 2-D convolutions (the ones targets block along
/// the channels; other groupings stay NCHW).
struct ConvChannelsLast : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp op, PatternRewriter &rewriter) const override {
    if (op.getChannelsLast() || !isBlockedActivation(op.getInput()) ||
        !isStatic4D(op.getWeight()))
      return failure();
    int64_t channels = op.getInput().getType().getDimSize(1);
    int64_t filters = op.getWeight().getType().getDimSize(0);
    int64_t group = op.getGroup();
    bool depthwise = group == channels && filters == channels;
    if (group != 1 && !depthwise)
      return failure();
    Location loc = op.getLoc();
    Value input = transpose(rewriter, loc, op.getInput(), kToChannelsLast);
    Value weight = transpose(rewriter, loc, op.getWeight(), kWeightToChannelsLast);
    RankedTensorType type = op.getType();
    // A per-channel accumulator's channels move with the axis.
    Type element = transposeQuantizedType(type.getElementType(), kToChannelsLast);
    auto conv = ConvOp::create(rewriter, loc,
                               RankedTensorType::get(permuted(type.getShape(), kToChannelsLast),
                                                     element),
                               input, weight, op.getBias(),
                               op.getStridesAttr(), op.getPadsAttr(),
                               op.getDilationsAttr(), op.getGroupAttr(),
                               rewriter.getUnitAttr());
    // What earlier stages decided for the op (tessel.precision) stays.
    conv->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, transpose(rewriter, loc, conv, kToChannelsFirst));
    return success();
  }
};

/// A pooling op on NCHW  ==>  the same op channels last between transposes.
template <typename PoolOp>
struct PoolChannelsLast : OpRewritePattern<PoolOp> {
  using OpRewritePattern<PoolOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(PoolOp op, PatternRewriter &rewriter) const override {
    if (op.getChannelsLast() || !isBlockedActivation(op.getInput()))
      return failure();
    Location loc = op.getLoc();
    Value input = transpose(rewriter, loc, op.getInput(), kToChannelsLast);
    auto pooled = cast<PoolOp>(rewriter.clone(*op));
    pooled->setOperand(0, input);
    pooled.setChannelsLast(true);
    auto type = cast<RankedTensorType>(op.getType());
    pooled.getResult().setType(type.clone(permuted(type.getShape(), kToChannelsLast)));
    rewriter.replaceOp(op, transpose(rewriter, loc, pooled.getResult(), kToChannelsFirst));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Sinking NHWC -> NCHW transposes
//===----------------------------------------------------------------------===//

/// Whether transposing `type` by `perm` only moves axes of extent 1, so that
/// it is a reshape.
bool movesOnlyUnitAxes(RankedTensorType type, ArrayRef<int64_t> perm) {
  int64_t previous = -1;
  for (int64_t axis : perm) {
    if (type.getDimSize(axis) == 1)
      continue;
    if (axis < previous)
      return false;
    previous = axis;
  }
  return true;
}

/// The NHWC form of `operand`, an operand of a rank-4 elementwise op whose
/// result is NCHW: the transpose's source, the operand itself when it holds
/// one element, or the operand broadcast to rank 4 and transposed, when that
/// folds (a constant) or is a reshape. Null when it would take a copy.
Value channelsLastOperand(PatternRewriter &rewriter, Location loc, Value operand) {
  if (Value source = channelsLastSource(operand); source && isStatic4D(operand))
    return source;
  auto type = dyn_cast<RankedTensorType>(operand.getType());
  if (!type || !type.hasStaticShape() || type.getRank() > 4)
    return {};
  if (type.getNumElements() == 1)
    return operand;
  // Numpy broadcasting aligns the trailing axes.
  SmallVector<int64_t> shape(4 - type.getRank(), 1);
  llvm::append_range(shape, type.getShape());
  auto fullType = type.clone(shape);
  bool constant = matchPattern(operand, m_Constant());
  if (!constant && !movesOnlyUnitAxes(fullType, kToChannelsLast))
    return {};
  Value full = operand;
  if (type.getRank() < 4)
    full = ReshapeOp::create(rewriter, loc, fullType, operand);
  if (constant)
    return transpose(rewriter, loc, full, kToChannelsLast);
  return ReshapeOp::create(rewriter, loc,
                           type.clone(permuted(shape, kToChannelsLast)), full);
}

/// elementwise(transpose(a), b...)  ==>  transpose(elementwise(a, b'...)).
struct SinkThroughElementwise : RewritePattern {
  SinkThroughElementwise(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    // Batch normalization broadcasts its parameters along axis 1, and ops
    // with an axis attribute or per-axis quantization name NCHW axes.
    if (!op->hasTrait<ElementwiseMap>() || isa<BatchNormOp>(op) ||
        op->getNumResults() != 1 || !isStatic4D(op->getResult(0)) ||
        op->hasAttr("axis") || op->hasAttr("axes") || hasPerAxisQuantization(op) ||
        llvm::none_of(op->getOperands(), [](Value v) { return bool(channelsLastSource(v)); }))
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (OpOperand &use : op->getOpOperands()) {
      Value operand = use.get();
      if (!readsElementwise(op, use.getOperandNumber())) {
        operands.push_back(operand);
        continue;
      }
      Value channelsLast = channelsLastOperand(rewriter, loc, operand);
      if (!channelsLast)
        return rewriter.notifyMatchFailure(op, "an operand would need a copy");
      operands.push_back(channelsLast);
    }
    Operation *sunk = rewriter.clone(*op);
    sunk->setOperands(operands);
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    sunk->getResult(0).setType(type.clone(permuted(type.getShape(), kToChannelsLast)));
    rewriter.replaceOp(op, transpose(rewriter, loc, sunk->getResult(0), kToChannelsFirst));
    return success();
  }
};

/// concat(transpose(a), transpose(b), axis)  ==>  transpose(concat(a, b, axis')).
struct SinkThroughConcat : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp op, PatternRewriter &rewriter) const override {
    if (!isStatic4D(op.getResult()))
      return failure();
    SmallVector<Value> inputs;
    for (Value input : op.getInputs()) {
      Value source = channelsLastSource(input);
      if (!source)
        return failure();
      inputs.push_back(source);
    }
    Location loc = op.getLoc();
    auto concat = ConcatOp::create(rewriter, loc, inputs,
                                   rewriter.getI64IntegerAttr(kToChannelsFirst[op.getAxis()]));
    rewriter.replaceOp(op, transpose(rewriter, loc, concat, kToChannelsFirst));
    return success();
  }
};

/// reduce(transpose(x), axes)  ==>  reduce(x, axes') when the axes left keep
/// their order (a global average over H and W leaves [N, C] either way).
struct SinkThroughReduce : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    Value source = channelsLastSource(op.getInput());
    if (!source || !isStatic4D(op.getInput()))
      return failure();
    SmallVector<int64_t> axes;
    for (int64_t axis : op.getAxes())
      axes.push_back(kToChannelsFirst[axis]);
    int64_t previous = -1;
    for (int64_t axis = 0; axis < 4; ++axis) {
      if (llvm::is_contained(op.getAxes(), axis))
        continue;
      if (kToChannelsFirst[axis] < previous)
        return failure();
      previous = kToChannelsFirst[axis];
    }
    llvm::sort(axes);
    rewriter.replaceOpWithNewOp<ReduceOp>(op, op.getKindAttr(), source,
                                          rewriter.getDenseI64ArrayAttr(axes));
    return success();
  }
};

/// Results marked kAnyLayoutAttr without their transpose back to NCHW.
void returnAnyLayoutAsComputed(func::FuncOp function) {
  SmallVector<Value> results(function.front().getTerminator()->getOperands());
  SmallVector<Operation *> unread;
  for (auto [i, result] : llvm::enumerate(results)) {
    auto transpose = result.getDefiningOp<TransposeOp>();
    if (!function.getResultAttr(i, kAnyLayoutAttr) || !transpose ||
        !llvm::equal(transpose.getPerm(), kToChannelsFirst))
      continue;
    result = transpose.getInput();
    unread.push_back(transpose);
  }
  setReturnedValues(function, results);
  for (Operation *transpose : unread)
    if (transpose->use_empty())
      transpose->erase();
}

struct TesselChannelsLastPass
    : tessel::impl::TesselChannelsLastPassBase<TesselChannelsLastPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<ConvChannelsLast, PoolChannelsLast<MaxPoolOp>,
                 PoolChannelsLast<AveragePoolOp>, PoolChannelsLast<GlobalAveragePoolOp>,
                 SinkThroughElementwise, SinkThroughConcat, SinkThroughReduce>(context);
    // Transposes left that only move unit axes become reshapes in the
    // canonicalization after this pass: not before, a reshape stops sinking.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    returnAnyLayoutAsComputed(getOperation());
  }
};

} // namespace
