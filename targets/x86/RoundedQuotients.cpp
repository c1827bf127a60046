//===- RoundedQuotients.cpp - Quotients to be rounded, by reciprocals -----===//
//
// Quantization divides by the scale and rounds the quotient to an integer
// (ONNX's QuantizeLinear: rint(x / scale)). VDIVPS issues once every several
// cycles where FMAs issue twice a cycle, so the division bounded the INT8
// kernels that requantize in float (a residual add, a float island's
// quantize).
//
// With r = RN(1 / c), q = RN(x * r) is within an ulp of x / c, its remainder
// e = x - q * c is exact by one FMA, and RN(q + e * r) is RN(x / c) wherever
// that is normal (Markstein's theorem, as IA-64 divides). Where it is
// subnormal both round to a zero of the same sign; where x * r overflows or
// x is infinite or NaN, the second FMA gives NaN and q itself is the
// quotient's rounding. So the rounded integer is the division's, bit for
// bit, for every x.
//
//===----------------------------------------------------------------------===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86ROUNDEDQUOTIENTSPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// The f32 divisor of `divide` (a scalar or splat constant) and its rounded
/// reciprocal, when both are normal.
std::optional<std::pair<APFloat, APFloat>> divisorAndReciprocal(arith::DivFOp divide) {
  APFloat divisor(0.0f);
  if (!getElementTypeOrSelf(divide.getType()).isF32() ||
      !matchPattern(divide.getRhs(), m_ConstantFloat(&divisor)) || !divisor.isNormal())
    return std::nullopt;
  APFloat reciprocal(1.0f);
  reciprocal.divide(divisor, APFloat::rmNearestTiesToEven);
  if (!reciprocal.isNormal())
    return std::nullopt;
  return std::pair{divisor, reciprocal};
}

/// x / c, every use of which rounds it to an integer (math.roundeven), as
/// RN(q + (x - q * c) * r) with q = RN(x * r), r = RN(1 / c).
struct QuotientByReciprocal : OpRewritePattern<arith::DivFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::DivFOp divide,
                                PatternRewriter &rewriter) const override {
    std::optional<std::pair<APFloat, APFloat>> constants = divisorAndReciprocal(divide);
    if (!constants || divide->use_empty() ||
        !llvm::all_of(divide->getUsers(), [](Operation *user) {
          return isa<math::RoundEvenOp>(user);
        }))
      return failure();
    Location loc = divide.getLoc();
    Type type = divide.getType();
    auto constant = [&](const APFloat &value) -> Value {
      auto scalar = rewriter.getF32FloatAttr(value.convertToFloat());
      if (auto vector = dyn_cast<VectorType>(type))
        return arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(vector, scalar));
      return arith::ConstantOp::create(rewriter, loc, scalar);
    };
    Value x = divide.getLhs();
    Value divisor = constant(constants->first), reciprocal = constant(constants->second);
    Value estimate = arith::MulFOp::create(rewriter, loc, x, reciprocal);
    Value remainder = math::FmaOp::create(
        rewriter, loc, arith::NegFOp::create(rewriter, loc, estimate), divisor, x);
    Value corrected = math::FmaOp::create(rewriter, loc, remainder, reciprocal, estimate);
    Value overflowed =
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UNO, corrected, corrected);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(divide, overflowed, estimate, corrected);
    return success();
  }
};

struct TesselX86RoundedQuotientsPass
    : impl::TesselX86RoundedQuotientsPassBase<TesselX86RoundedQuotientsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<QuotientByReciprocal>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel::x86
