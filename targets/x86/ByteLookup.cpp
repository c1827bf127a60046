//===- ByteLookup.cpp - 256-byte table lookups by byte permutes -----------===//

#include "targets/x86/ByteLookup.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <numeric>

using namespace mlir;

namespace tessel::x86 {

namespace {

constexpr int64_t kTableBytes = 256;
/// Bytes of one VPERMI2B (a zmm register).
constexpr int64_t kPermuteBytes = 64;

/// The bytes whose zero extension indexes `indices`, if that is what it is.
Value indexBytes(Value indices) {
  Value wide = indices;
  if (auto cast = wide.getDefiningOp<arith::IndexCastOp>())
    wide = cast.getIn();
  else if (auto cast = wide.getDefiningOp<arith::IndexCastUIOp>())
    wide = cast.getIn();
  auto extend = wide.getDefiningOp<arith::ExtUIOp>();
  if (!extend || !getElementTypeOrSelf(extend.getIn()).isInteger(8))
    return Value();
  return extend.getIn();
}

struct GatherFromByteTable : OpRewritePattern<vector::GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::GatherOp gather,
                                PatternRewriter &rewriter) const override {
    auto table = dyn_cast<MemRefType>(gather.getBase().getType());
    if (!table || table.getRank() != 1 || table.getDimSize(0) != kTableBytes ||
        !table.getElementType().isInteger(8) || !table.getLayout().isIdentity())
      return rewriter.notifyMatchFailure(gather, "not a 256-byte table");
    if (!llvm::all_of(gather.getOffsets(), [](Value v) { return isConstantIntValue(v, 0); }) ||
        !matchPattern(gather.getMask(), m_One()))
      return rewriter.notifyMatchFailure(gather, "offset or masked lanes");
    Value bytes = indexBytes(gather.getIndices());
    if (!bytes)
      return rewriter.notifyMatchFailure(gather, "indices are not bytes");

    Location loc = gather.getLoc();
    VectorType resultType = gather.getVectorType();
    int64_t count = resultType.getNumElements();
    Type i8 = rewriter.getI8Type();
    auto flatType = VectorType::get({count}, i8);
    auto permuteType = VectorType::get({kPermuteBytes}, i8);
    Value indices = vector::ShapeCastOp::create(rewriter, loc, flatType, bytes);
    // The table as four 64-byte vectors: [0, 128) is the first pair's, the
    // second pair's is [128, 256).
    SmallVector<Value> quarters;
    for (int64_t quarter = 0; quarter < kTableBytes / kPermuteBytes; ++quarter)
      quarters.push_back(vector::LoadOp::create(
          rewriter, loc, permuteType, gather.getBase(),
          ValueRange{arith::ConstantIndexOp::create(rewriter, loc, quarter * kPermuteBytes)}));
    auto permute = [&](Value low, Value selectors, Value high) {
      return LLVM::CallIntrinsicOp::create(rewriter, loc, permuteType,
                                           rewriter.getStringAttr("llvm.x86.avx512.vpermi2var.qi.512"),
                                           ValueRange{low, selectors, high})
          .getResult(0);
    };
    Value zero = arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(
                                                              permuteType, rewriter.getI8IntegerAttr(0)));
    Value result = ub::PoisonOp::create(rewriter, loc, flatType);
    for (int64_t start = 0; start < count; start += kPermuteBytes) {
      int64_t length = std::min(kPermuteBytes, count - start);
      Value part = vector::ExtractStridedSliceOp::create(rewriter, loc, indices, {start},
                                                         {length}, {1});
      if (length < kPermuteBytes) {
        // Lanes past the end repeat lane 0; their lookups are dropped.
        SmallVector<int64_t> lanes(kPermuteBytes, 0);
        std::iota(lanes.begin(), lanes.begin() + length, 0);
        part = vector::ShuffleOp::create(rewriter, loc, part, part, lanes);
      }
      Value lowHalf = permute(quarters[0], part, quarters[1]);
      Value highHalf = permute(quarters[2], part, quarters[3]);
      // Bit 7 set: the index is 128 or more, a negative i8.
      Value upper = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, part, zero);
      Value looked = arith::SelectOp::create(rewriter, loc, upper, highHalf, lowHalf);
      if (length < kPermuteBytes)
        looked = vector::ExtractStridedSliceOp::create(rewriter, loc, looked, {0}, {length}, {1});
      result = vector::InsertStridedSliceOp::create(rewriter, loc, looked, result, {start}, {1});
    }
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(gather, resultType, result);
    return success();
  }
};

} // namespace

void populateByteLookupPatterns(RewritePatternSet &patterns) {
  patterns.add<GatherFromByteTable>(patterns.getContext());
}

} // namespace tessel::x86
