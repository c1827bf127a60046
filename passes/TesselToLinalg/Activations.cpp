//===- Activations.cpp - Unary math, logic and activations to linalg ------===//
//
// Each op becomes a generic whose body computes the function from arith and
// math ops. Functions without a math op of their own are written with the
// ones that targets approximate well (exp, log, sqrt, atan2, erf, tanh), so
// that no target needs a math library for them.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <functional>

using namespace mlir;

namespace tessel {
namespace {

/// Lowers a unary op with `body(x, op)` applied to each element.
template <typename OpTy>
struct UnaryLowering : OpConversionPattern<OpTy> {
  using BodyFn = std::function<Value(ScalarBuilder &, OpBuilder &, Location,
                                     Value, OpTy)>;
  UnaryLowering(const TypeConverter &converter, MLIRContext *context,
                BodyFn body)
      : OpConversionPattern<OpTy>(converter, context), body(std::move(body)) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // A quantized relu compares storage values (Quantization.cpp).
    if (isQuantized(op.getType()))
      return failure();
    // Unsigned integers (tessel.not) become signless.
    auto resultType =
        this->getTypeConverter()->template convertType<RankedTensorType>(op.getType());
    bool isUnsigned = hasUnsignedElements(op.getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, {adaptor.getInput()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          ScalarBuilder scalar(b, loc, args[0].getType(), isUnsigned);
          return body(scalar, b, loc, args[0], op);
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  BodyFn body;
};

template <typename OpTy>
void addUnary(RewritePatternSet &patterns, const TypeConverter &converter,
              typename UnaryLowering<OpTy>::BodyFn body) {
  patterns.add<UnaryLowering<OpTy>>(converter, patterns.getContext(),
                                    std::move(body));
}

/// A unary op that is one math-dialect op.
template <typename OpTy, typename MathOpTy>
void addMath(RewritePatternSet &patterns, const TypeConverter &converter) {
  addUnary<OpTy>(patterns, converter,
                 [](ScalarBuilder &, OpBuilder &b, Location loc, Value x, OpTy) {
                   return MathOpTy::create(b, loc, x).getResult();
                 });
}

Value exp(OpBuilder &b, Location loc, Value x) {
  return math::ExpOp::create(b, loc, x);
}
Value log(OpBuilder &b, Location loc, Value x) {
  return math::LogOp::create(b, loc, x);
}
Value sqrt(OpBuilder &b, Location loc, Value x) {
  return math::SqrtOp::create(b, loc, x);
}
Value neg(OpBuilder &b, Location loc, Value x) {
  return arith::NegFOp::create(b, loc, x);
}
Value select(OpBuilder &b, Location loc, arith::CmpFPredicate predicate,
             Value lhs, Value rhs, Value ifTrue, Value ifFalse) {
  Value condition = arith::CmpFOp::create(b, loc, predicate, lhs, rhs);
  return arith::SelectOp::create(b, loc, condition, ifTrue, ifFalse);
}
Value constant(ScalarBuilder &s, const APFloat &value) {
  return s.constant(value.convertToDouble());
}

/// log(1 + e^x) as max(x, 0) + log1p(e^-|x|), which cannot overflow.
Value softplus(ScalarBuilder &s, OpBuilder &b, Location loc, Value x) {
  Value negAbs = neg(b, loc, math::AbsFOp::create(b, loc, x));
  Value tail = math::Log1pOp::create(b, loc, exp(b, loc, negAbs));
  return s.add(s.max(x, s.constant(0.0)), tail);
}

/// alpha * (e^x - 1) for x < 0, else x.
Value elu(ScalarBuilder &s, OpBuilder &b, Location loc, Value x, Value alpha) {
  Value negative = s.mul(alpha, math::ExpM1Op::create(b, loc, x));
  return select(b, loc, arith::CmpFPredicate::OLT, x, s.constant(0.0),
                negative, x);
}

void populateMath(RewritePatternSet &patterns, const TypeConverter &converter) {
  addMath<AbsOp, math::AbsFOp>(patterns, converter);
  addMath<ExpOp, math::ExpOp>(patterns, converter);
  addMath<LogOp, math::LogOp>(patterns, converter);
  addMath<SqrtOp, math::SqrtOp>(patterns, converter);
  addMath<FloorOp, math::FloorOp>(patterns, converter);
  addMath<CeilOp, math::CeilOp>(patterns, converter);
  addMath<RoundOp, math::RoundEvenOp>(patterns, converter);
  addMath<ErfOp, math::ErfOp>(patterns, converter);
  addMath<SinOp, math::SinOp>(patterns, converter);
  addMath<CosOp, math::CosOp>(patterns, converter);
  addMath<AtanOp, math::AtanOp>(patterns, converter);
  addMath<TanhOp, math::TanhOp>(patterns, converter);
  addUnary<NegOp>(patterns, converter,
                  [](ScalarBuilder &, OpBuilder &b, Location loc, Value x,
                     NegOp) { return neg(b, loc, x); });
  addUnary<NotOp>(patterns, converter, [](ScalarBuilder &, OpBuilder &b,
                                          Location loc, Value x, NotOp) {
    // All ones: true for booleans, ~x for integers.
    Value ones = arith::ConstantOp::create(b, loc, b.getIntegerAttr(x.getType(), -1));
    return arith::XOrIOp::create(b, loc, x, ones).getResult();
  });
  addUnary<ReciprocalOp>(patterns, converter,
                         [](ScalarBuilder &s, OpBuilder &, Location, Value x,
                            ReciprocalOp) { return s.div(s.constant(1.0), x); });
  addUnary<SignOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                           Location loc, Value x, SignOp) {
    Value zero = s.constant(0.0);
    Value positive = select(b, loc, arith::CmpFPredicate::OGT, x, zero,
                            s.constant(1.0), zero);
    return select(b, loc, arith::CmpFPredicate::OLT, x, zero,
                  s.constant(-1.0), positive);
  });
  addUnary<TanOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                          Location loc, Value x, TanOp) {
    return s.div(math::SinOp::create(b, loc, x), math::CosOp::create(b, loc, x));
  });
  // asin x = atan2(x, sqrt(1 - x^2)), acos x = atan2(sqrt(1 - x^2), x).
  auto cosine = [](ScalarBuilder &s, OpBuilder &b, Location loc, Value x) {
    return sqrt(b, loc, s.sub(s.constant(1.0), s.mul(x, x)));
  };
  addUnary<AsinOp>(patterns, converter, [cosine](ScalarBuilder &s, OpBuilder &b,
                                                 Location loc, Value x, AsinOp) {
    return math::Atan2Op::create(b, loc, x, cosine(s, b, loc, x)).getResult();
  });
  addUnary<AcosOp>(patterns, converter, [cosine](ScalarBuilder &s, OpBuilder &b,
                                                 Location loc, Value x, AcosOp) {
    return math::Atan2Op::create(b, loc, cosine(s, b, loc, x), x).getResult();
  });
  addUnary<SinhOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                           Location loc, Value x, SinhOp) {
    return s.mul(s.constant(0.5), s.sub(exp(b, loc, x), exp(b, loc, neg(b, loc, x))));
  });
  addUnary<CoshOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                           Location loc, Value x, CoshOp) {
    return s.mul(s.constant(0.5), s.add(exp(b, loc, x), exp(b, loc, neg(b, loc, x))));
  });
  addUnary<AsinhOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                            Location loc, Value x, AsinhOp) {
    // sign(x) * log(|x| + sqrt(x^2 + 1)): exact for negative x too.
    Value magnitude = math::AbsFOp::create(b, loc, x);
    Value root = sqrt(b, loc, s.add(s.mul(x, x), s.constant(1.0)));
    Value result = log(b, loc, s.add(magnitude, root));
    return math::CopySignOp::create(b, loc, result, x).getResult();
  });
  addUnary<AcoshOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                            Location loc, Value x, AcoshOp) {
    Value root = sqrt(b, loc, s.sub(s.mul(x, x), s.constant(1.0)));
    return log(b, loc, s.add(x, root));
  });
  addUnary<AtanhOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                            Location loc, Value x, AtanhOp) {
    Value one = s.constant(1.0);
    return s.mul(s.constant(0.5), log(b, loc, s.div(s.add(one, x), s.sub(one, x))));
  });
}

void populateActivations(RewritePatternSet &patterns,
                         const TypeConverter &converter) {
  addUnary<ReluOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &,
                                           Location, Value x, ReluOp) {
    return s.max(x, s.constant(0.0));
  });
  addUnary<SigmoidOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                              Location loc, Value x, SigmoidOp) {
    // 1 / (1 + e^-x): e^-x overflows to +inf for very negative x, giving 0.
    Value one = s.constant(1.0);
    return s.div(one, s.add(one, exp(b, loc, neg(b, loc, x))));
  });
  addUnary<SoftplusOp>(patterns, converter,
                       [](ScalarBuilder &s, OpBuilder &b, Location loc, Value x,
                          SoftplusOp) { return softplus(s, b, loc, x); });
  addUnary<SoftsignOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                               Location loc, Value x, SoftsignOp) {
    return s.div(x, s.add(s.constant(1.0), math::AbsFOp::create(b, loc, x)));
  });
  addUnary<HardSwishOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &,
                                                Location, Value x, HardSwishOp) {
    Value gate = s.add(s.mul(x, s.constant(1.0 / 6.0)), s.constant(0.5));
    gate = s.min(s.max(gate, s.constant(0.0)), s.constant(1.0));
    return s.mul(x, gate);
  });
  addUnary<MishOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                           Location loc, Value x, MishOp) {
    return s.mul(x, math::TanhOp::create(b, loc, softplus(s, b, loc, x)));
  });
  addUnary<LeakyReluOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                                Location loc, Value x,
                                                LeakyReluOp op) {
    Value scaled = s.mul(x, constant(s, op.getAlpha()));
    return select(b, loc, arith::CmpFPredicate::OLT, x, s.constant(0.0), scaled, x);
  });
  addUnary<EluOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                          Location loc, Value x, EluOp op) {
    return elu(s, b, loc, x, constant(s, op.getAlpha()));
  });
  addUnary<SeluOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                           Location loc, Value x, SeluOp op) {
    // ONNX: gamma * x for x > 0; elu's x < 0 test gives the same at x = 0.
    return s.mul(constant(s, op.getGamma()),
                 elu(s, b, loc, x, constant(s, op.getAlpha())));
  });
  addUnary<CeluOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                           Location loc, Value x, CeluOp op) {
    Value alpha = constant(s, op.getAlpha());
    Value negative =
        s.mul(alpha, math::ExpM1Op::create(b, loc, s.div(x, alpha)));
    Value zero = s.constant(0.0);
    return s.add(s.max(x, zero), s.min(negative, zero));
  });
  addUnary<HardSigmoidOp>(patterns, converter,
                          [](ScalarBuilder &s, OpBuilder &, Location, Value x,
                             HardSigmoidOp op) {
    Value linear = s.add(s.mul(x, constant(s, op.getAlpha())),
                         constant(s, op.getBeta()));
    return s.min(s.max(linear, s.constant(0.0)), s.constant(1.0));
  });
  addUnary<ThresholdedReluOp>(patterns, converter,
                              [](ScalarBuilder &s, OpBuilder &b, Location loc,
                                 Value x, ThresholdedReluOp op) {
    return select(b, loc, arith::CmpFPredicate::OGT, x,
                  constant(s, op.getAlpha()), x, s.constant(0.0));
  });
  addUnary<GeluOp>(patterns, converter, [](ScalarBuilder &s, OpBuilder &b,
                                           Location loc, Value x, GeluOp op) {
    Value half = s.constant(0.5), one = s.constant(1.0);
    Value phi;
    if (op.getTanh()) {
      Value cube = s.mul(s.mul(x, x), x);
      Value inner = s.mul(s.constant(0.7978845608028654),
                          s.add(x, s.mul(s.constant(0.044715), cube)));
      phi = s.mul(half, s.add(one, math::TanhOp::create(b, loc, inner)));
    } else {
      Value scaled = s.mul(x, s.constant(0.7071067811865476));
      phi = s.mul(half, s.add(one, math::ErfOp::create(b, loc, scaled)));
    }
    return s.mul(x, phi);
  });
}

} // namespace

void populateActivationsToLinalgPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns) {
  populateMath(patterns, converter);
  populateActivations(patterns, converter);
}

} // namespace tessel
