//===- Elementwise.cpp - Elementwise tessel ops to linalg.generic ---------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/Minifloat.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace tessel {
namespace {

/// Lowers a broadcasting binary op to a generic applying `Body` to elements:
/// `Body(builder, loc, lhs, rhs, isUnsigned, op)`, so that it may read the
/// op's attributes.
template <typename OpTy,
          Value (*Body)(OpBuilder &, Location, Value, Value, bool isUnsigned, OpTy)>
struct BinaryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Quantized arithmetic is expanded into its float formula beforehand.
    if (isQuantized(op.getType()))
      return failure();
    auto resultType = this->getTypeConverter()
                          ->template convertType<RankedTensorType>(op.getType());
    bool isUnsigned = hasUnsignedElements(op.getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, {adaptor.getLhs(), adaptor.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return Body(b, loc, args[0], args[1], isUnsigned, op);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The body of an op that is one ScalarBuilder operation.
template <typename OpTy, Value (ScalarBuilder::*Fn)(Value, Value)>
Value scalarBuilderBody(OpBuilder &b, Location loc, Value lhs, Value rhs, bool isUnsigned,
                        OpTy) {
  ScalarBuilder scalar(b, loc, lhs.getType(), isUnsigned);
  return (scalar.*Fn)(lhs, rhs);
}

template <typename OpTy, Value (ScalarBuilder::*Fn)(Value, Value)>
using ScalarBinaryLowering = BinaryLowering<OpTy, scalarBuilderBody<OpTy, Fn>>;

struct ClipLowering : OpConversionPattern<ClipOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ClipOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    bool isUnsigned = hasUnsignedElements(op.getType());
    // Constant bounds become scalars in the body; others are read from
    // their one-element tensors.
    SmallVector<Value> operands{adaptor.getInput()};
    struct Bound {
      Value tensor;
      TypedAttr constant;
      int operand = -1;
    } bounds[2] = {{adaptor.getMin(), {}, -1}, {adaptor.getMax(), {}, -1}};
    for (Bound &bound : bounds) {
      if (!bound.tensor)
        continue;
      DenseElementsAttr value;
      if (matchPattern(bound.tensor, m_Constant(&value))) {
        bound.constant = cast<TypedAttr>(*value.getValues<Attribute>().begin());
        continue;
      }
      auto boundType = cast<RankedTensorType>(bound.tensor.getType());
      bound.operand = operands.size();
      operands.push_back(reshapeTensor(
          rewriter, loc, bound.tensor,
          RankedTensorType::get({}, boundType.getElementType())));
    }
    Value result = buildElementwise(
        rewriter, loc, resultType, operands,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          ScalarBuilder scalar(b, nestedLoc, elementType, isUnsigned);
          auto boundValue = [&](const Bound &bound) -> Value {
            if (bound.constant)
              return arith::ConstantOp::create(b, nestedLoc, bound.constant);
            return args[bound.operand];
          };
          Value value = args[0];
          if (bounds[0].tensor)
            value = scalar.max(value, boundValue(bounds[0]));
          if (bounds[1].tensor)
            value = scalar.min(value, boundValue(bounds[1]));
          return value;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Batch norms with runtime parameters (constant ones were folded):
/// (x - mean) * scale / sqrt(variance + epsilon) + bias, per channel.
struct BatchNormLowering : OpConversionPattern<BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    Location loc = op.getLoc();
    // Parameters [C] are read at axis 1: reshape them to [C, 1, ..., 1].
    SmallVector<int64_t> paramShape(type.getRank() - 1, 1);
    paramShape[0] = type.getDimSize(1);
    auto paramType = RankedTensorType::get(paramShape, type.getElementType());
    SmallVector<Value> operands{adaptor.getInput()};
    for (Value param : {adaptor.getScale(), adaptor.getBias(),
                        adaptor.getMean(), adaptor.getVariance()})
      operands.push_back(reshapeTensor(rewriter, loc, param, paramType));
    APFloat epsilon = op.getEpsilon();
    Value result = buildElementwise(
        rewriter, loc, type, operands,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          ScalarBuilder scalar(b, nestedLoc, type.getElementType(), false);
          Value x = args[0], scale = args[1], bias = args[2], mean = args[3],
                variance = args[4];
          Value denominator = math::SqrtOp::create(
              b, nestedLoc,
              scalar.add(variance, scalar.constant(epsilon.convertToDouble())));
          Value normalized = scalar.div(scalar.sub(x, mean), denominator);
          return scalar.add(scalar.mul(normalized, scale), bias);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// One element of tessel.cast: `from` and `to` are the tessel element
/// types (their signedness picks the arith op), `x` is signless.
Value castScalar(OpBuilder &b, Location loc, Value x, Type from, Type to,
                 Type signlessTo, bool saturate) {
  if (from == to)
    return x;
  // 8- and 4-bit floats convert through f32, where the usual rules apply.
  if (isMinifloat(from))
    return castScalar(b, loc, minifloatToF32(b, loc, x), b.getF32Type(), to, signlessTo,
                      saturate);
  if (isMinifloat(to)) {
    Value wide = castScalar(b, loc, x, from, b.getF32Type(), b.getF32Type(), saturate);
    return f32ToMinifloat(b, loc, wide, cast<FloatType>(to), saturate);
  }
  bool fromUnsigned = hasUnsignedElements(from);
  if (isa<FloatType>(from)) {
    if (to.isInteger(1)) {
      Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(from, 0.0));
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
    }
    if (to.getIntOrFloatBitWidth() < 8) { // 4- and 2-bit integers keep the low bits
      Value wide = arith::FPToSIOp::create(b, loc, b.getI32Type(), x);
      return arith::TruncIOp::create(b, loc, signlessTo, wide);
    }
    if (isa<FloatType>(to)) {
      unsigned fromWidth = from.getIntOrFloatBitWidth();
      unsigned toWidth = to.getIntOrFloatBitWidth();
      if (fromWidth < toWidth)
        return arith::ExtFOp::create(b, loc, signlessTo, x);
      if (fromWidth > toWidth)
        return arith::TruncFOp::create(b, loc, signlessTo, x);
      // f16 <-> bf16: through f32.
      Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
      return arith::TruncFOp::create(b, loc, signlessTo, wide);
    }
    if (to.isUnsignedInteger())
      return arith::FPToUIOp::create(b, loc, signlessTo, x);
    return arith::FPToSIOp::create(b, loc, signlessTo, x);
  }
  if (isa<FloatType>(to)) {
    if (fromUnsigned)
      return arith::UIToFPOp::create(b, loc, signlessTo, x);
    return arith::SIToFPOp::create(b, loc, signlessTo, x);
  }
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (toWidth == 1) {
    Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(x.getType(), 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (fromWidth < toWidth)
    return fromUnsigned ? arith::ExtUIOp::create(b, loc, signlessTo, x).getResult()
                        : arith::ExtSIOp::create(b, loc, signlessTo, x).getResult();
  if (fromWidth > toWidth)
    return arith::TruncIOp::create(b, loc, signlessTo, x);
  return x;
}

struct CastLowering : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Type from = op.getInput().getType().getElementType();
    Type to = op.getType().getElementType();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, {adaptor.getInput()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return castScalar(b, loc, args[0], from, to,
                            resultType.getElementType(), op.getSaturate());
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

Value compareScalars(OpBuilder &b, Location loc, StringRef predicate,
                     Value lhs, Value rhs, bool isUnsigned) {
  if (isa<FloatType>(lhs.getType())) {
    auto kind = llvm::StringSwitch<arith::CmpFPredicate>(predicate)
                    .Case("eq", arith::CmpFPredicate::OEQ)
                    .Case("lt", arith::CmpFPredicate::OLT)
                    .Case("le", arith::CmpFPredicate::OLE)
                    .Case("gt", arith::CmpFPredicate::OGT)
                    .Default(arith::CmpFPredicate::OGE);
    return arith::CmpFOp::create(b, loc, kind, lhs, rhs);
  }
  using P = arith::CmpIPredicate;
  auto kind = llvm::StringSwitch<P>(predicate)
                  .Case("eq", P::eq)
                  .Case("lt", isUnsigned ? P::ult : P::slt)
                  .Case("le", isUnsigned ? P::ule : P::sle)
                  .Case("gt", isUnsigned ? P::ugt : P::sgt)
                  .Default(isUnsigned ? P::uge : P::sge);
  return arith::CmpIOp::create(b, loc, kind, lhs, rhs);
}

struct CompareLowering : OpConversionPattern<CompareOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CompareOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type elementType = op.getLhs().getType().getElementType();
    bool isUnsigned = hasUnsignedElements(elementType);
    Value result = buildElementwise(
        rewriter, op.getLoc(), op.getType(), {adaptor.getLhs(), adaptor.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return compareScalars(b, loc, op.getPredicate(), args[0], args[1],
                                isUnsigned);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct WhereLowering : OpConversionPattern<WhereOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WhereOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType,
        {adaptor.getCondition(), adaptor.getOnTrue(), adaptor.getOnFalse()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return arith::SelectOp::create(b, loc, args[0], args[1], args[2])
              .getResult();
        });
    if (op.getFillsPastLength())
      result.getDefiningOp()->setAttr(kFillsPastLengthAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    auto value = cast<ElementsAttr>(op.getValue());
    if (type != value.getType()) {
      // Same bits, signless element type.
      auto dense = dyn_cast<DenseElementsAttr>(value);
      if (!dense)
        return rewriter.notifyMatchFailure(op, "cannot retype this constant");
      value = dense.bitcast(type.getElementType());
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, cast<TypedAttr>(value));
    return success();
  }
};


/// fmod: the remainder of truncated division (sign of the dividend).
/// Otherwise a non-zero remainder whose sign differs from the divisor's is
/// moved by one divisor (floored division, Python's %).
Value remainder(OpBuilder &b, Location loc, Value lhs, Value rhs, bool isUnsigned,
                ModOp op) {
  if (isa<FloatType>(lhs.getType()))
    return arith::RemFOp::create(b, loc, lhs, rhs);
  if (isUnsigned)
    return arith::RemUIOp::create(b, loc, lhs, rhs);
  Value truncated = arith::RemSIOp::create(b, loc, lhs, rhs);
  if (op.getFmod())
    return truncated;
  Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(lhs.getType(), 0));
  Value nonZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, truncated, zero);
  Value remainderNegative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, truncated, zero);
  Value divisorNegative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rhs, zero);
  Value signsDiffer = arith::XOrIOp::create(b, loc, remainderNegative, divisorNegative);
  Value adjust = arith::AndIOp::create(b, loc, nonZero, signsDiffer);
  Value moved = arith::AddIOp::create(b, loc, truncated, rhs);
  return arith::SelectOp::create(b, loc, adjust, moved, truncated);
}

/// arith's shifts are poison from the bit width on; ONNX's give 0.
Value bitShift(OpBuilder &b, Location loc, Value lhs, Value rhs, bool, BitShiftOp op) {
  Value shifted = op.getLeft() ? arith::ShLIOp::create(b, loc, lhs, rhs).getResult()
                               : arith::ShRUIOp::create(b, loc, lhs, rhs).getResult();
  unsigned width = lhs.getType().getIntOrFloatBitWidth();
  Value limit = arith::ConstantOp::create(b, loc, b.getIntegerAttr(lhs.getType(), width));
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rhs, limit);
  Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(lhs.getType(), 0));
  return arith::SelectOp::create(b, loc, inRange, shifted, zero);
}

/// BitCast: arith.bitcast between types of one width; booleans go through
/// their byte (0 or 1).
struct BitCastLowering : OpConversionPattern<BitCastOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(BitCastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    // A quantized tensor and its storage are the same integers once lowered.
    if (adaptor.getInput().getType() == resultType) {
      rewriter.replaceOp(op, adaptor.getInput());
      return success();
    }
    Type to = resultType.getElementType();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getInput(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value x = args[0];
          if (x.getType().isInteger(1))
            x = arith::ExtUIOp::create(b, loc, b.getI8Type(), x);
          if (to.isInteger(1)) {
            Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(x.getType(), 0));
            return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
          }
          if (x.getType() == to)
            return x;
          return arith::BitcastOp::create(b, loc, to, x);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateElementwiseToLinalgPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<ScalarBinaryLowering<AddOp, &ScalarBuilder::add>,
               ScalarBinaryLowering<SubOp, &ScalarBuilder::sub>,
               ScalarBinaryLowering<MulOp, &ScalarBuilder::mul>,
               ScalarBinaryLowering<DivOp, &ScalarBuilder::div>,
               ScalarBinaryLowering<MinOp, &ScalarBuilder::min>,
               ScalarBinaryLowering<MaxOp, &ScalarBuilder::max>,
               ScalarBinaryLowering<PowOp, &ScalarBuilder::pow>, CastLowering,
               ScalarBinaryLowering<AndOp, &ScalarBuilder::bitAnd>,
               ScalarBinaryLowering<OrOp, &ScalarBuilder::bitOr>,
               ScalarBinaryLowering<XorOp, &ScalarBuilder::bitXor>,
               BinaryLowering<ModOp, remainder>, BitCastLowering,
               BinaryLowering<BitShiftOp, bitShift>,
               CompareLowering, WhereLowering,
               ClipLowering,
               BatchNormLowering, ConstantLowering>(converter, context);
}

} // namespace tessel
