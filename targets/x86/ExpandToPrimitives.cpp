//===- ExpandToPrimitives.cpp - No support library in kernel code ---------===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

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

/// A copy whose innermost axis is contiguous on both sides (most are: the
/// copies of a slice into a padded or concatenated buffer) moves 64 bytes at
/// a time (a static row's last, shorter chunk unmasked, a dynamic one's
/// masked); the loops linalg.copy lowers to would move one element at a time.
struct CopyToVectorLoops : OpRewritePattern<memref::CopyOp> {
  CopyToVectorLoops(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/2) {}

  static bool innermostContiguous(MemRefType type) {
    SmallVector<int64_t> strides;
    int64_t offset;
    return succeeded(type.getStridesAndOffset(strides, offset)) && !strides.empty() &&
           strides.back() == 1;
  }

  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto source = dyn_cast<MemRefType>(op.getSource().getType());
    auto target = dyn_cast<MemRefType>(op.getTarget().getType());
    if (!source || !target || source.getRank() == 0 || !innermostContiguous(source) ||
        !innermostContiguous(target))
      return failure();
    Type elementType = source.getElementType();
    if (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() % 8 != 0)
      return failure();
    int64_t lanes = 64 / (elementType.getIntOrFloatBitWidth() / 8);
    if (lanes < 1)
      return failure();

    Location loc = op.getLoc();
    int64_t rank = source.getRank();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    SmallVector<Value> upperBounds, steps(rank, one);
    for (int64_t axis = 0; axis < rank; ++axis)
      upperBounds.push_back(memref::DimOp::create(rewriter, loc, op.getSource(), axis));
    Value padding = ub::PoisonOp::create(rewriter, loc, elementType);
    // Moves `size` elements (masked at the row's end unless `inBounds`)
    // from `column` on, for every `column` in [begin, end) by `size`.
    auto copyChunks = [&](Value begin, Value end, int64_t size, bool inBounds) {
      SmallVector<Value> lowerBounds(rank, zero), upper = upperBounds, step = steps;
      lowerBounds.back() = begin;
      upper.back() = end;
      step.back() = arith::ConstantIndexOp::create(rewriter, loc, size);
      auto vectorType = VectorType::get({size}, elementType);
      scf::buildLoopNest(rewriter, loc, lowerBounds, upper, step,
                         [&](OpBuilder &b, Location at, ValueRange ivs) {
                           Value chunk = vector::TransferReadOp::create(
                               b, at, vectorType, op.getSource(), ivs, padding,
                               ArrayRef<bool>{inBounds});
                           vector::TransferWriteOp::create(b, at, chunk, op.getTarget(), ivs,
                                                           ArrayRef<bool>{inBounds});
                         });
    };
    // A static row is whole chunks and one shorter chunk, none masked.
    int64_t rowLength = source.getShape().back();
    if (ShapedType::isDynamic(rowLength)) {
      copyChunks(zero, upperBounds.back(), lanes, /*inBounds=*/false);
    } else {
      int64_t whole = rowLength - rowLength % lanes;
      Value split = arith::ConstantIndexOp::create(rewriter, loc, whole);
      if (whole > 0)
        copyChunks(zero, split, lanes, /*inBounds=*/true);
      if (rowLength % lanes)
        copyChunks(split, upperBounds.back(), rowLength % lanes, /*inBounds=*/true);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// f32 -> bf16, rounded to nearest even in integer ops. Upstream's
/// expansion selects the NaN result after the rounding, and LLVM, once it
/// moves that select past the bitcast, legalizes the bf16 select on AVX2
/// through a compiler-rt call. Here a NaN input becomes the quiet NaN
/// before the rounding, which keeps it: 0x7fc00000 rounds to 0x7fc0.
struct TruncateToBf16 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Type resultType = op.getType();
    if (!getElementTypeOrSelf(resultType).isBF16() ||
        !getElementTypeOrSelf(op.getIn().getType()).isF32())
      return failure();
    Location loc = op.getLoc();
    auto like = [&](Type element) -> Type {
      if (auto vector = dyn_cast<VectorType>(resultType))
        return vector.clone(element);
      return element;
    };
    auto constant = [&](Type element, TypedAttr value) -> Value {
      Type type = like(element);
      if (auto vector = dyn_cast<VectorType>(type))
        return arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(vector, value));
      return arith::ConstantOp::create(rewriter, loc, value);
    };
    auto integer = [&](uint32_t value) {
      return constant(rewriter.getI32Type(), rewriter.getI32IntegerAttr(value));
    };
    Value input = op.getIn();
    Value isNan =
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UNO, input, input);
    Value quietNan = constant(rewriter.getF32Type(),
                              rewriter.getF32FloatAttr(std::numeric_limits<float>::quiet_NaN()));
    Value clean = arith::SelectOp::create(rewriter, loc, isNan, quietNan, input);
    Value bits = arith::BitcastOp::create(rewriter, loc, like(rewriter.getI32Type()), clean);
    Value sixteen = integer(16);
    Value lowestKept = arith::AndIOp::create(
        rewriter, loc, arith::ShRUIOp::create(rewriter, loc, bits, sixteen), integer(1));
    Value biased = arith::AddIOp::create(
        rewriter, loc, arith::AddIOp::create(rewriter, loc, bits, integer(0x7fff)), lowestKept);
    Value high = arith::TruncIOp::create(rewriter, loc, like(rewriter.getI16Type()),
                                         arith::ShRUIOp::create(rewriter, loc, biased, sixteen));
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, resultType, high);
    return success();
  }
};

struct TesselX86ExpandToPrimitivesPass
    : impl::TesselX86ExpandToPrimitivesPassBase<
          TesselX86ExpandToPrimitivesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<CopyToVectorLoops, CopyToLinalg>(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, MathPolynomialApproximationOptions{});
    // bf16 conversions would call compiler-rt (__truncsfbf2); integer ops
    // round to nearest even just the same. Truncations are ours, before
    // upstream's.
    patterns.add<TruncateToBf16>(&getContext(), /*benefit=*/2);
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel::x86
