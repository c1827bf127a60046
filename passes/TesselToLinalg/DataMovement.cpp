//===- DataMovement.cpp - Reshapes, transposes, concat and softmax --------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace tessel {
namespace {

/// Reshape and flatten become views (collapse/expand_shape).
template <typename OpTy>
struct ReshapeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = this->getTypeConverter()
                          ->template convertType<RankedTensorType>(op.getType());
    if (!resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic reshapes are not lowered");
    rewriter.replaceOp(op, reshapeTensor(rewriter, op.getLoc(),
                                         adaptor.getInput(), resultType));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Value init = emptyTensor(rewriter, op.getLoc(), resultType);
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       adaptor.getInput(), init,
                                                       op.getPerm())
                               .getResult());
    return success();
  }
};

/// Concat inserts every input into its slice of one destination.
struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        getTypeConverter()->convertType<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis(), rank = resultType.getRank();
    Value result = emptyTensor(rewriter, loc, resultType);
    int64_t offset = 0;
    for (Value input : adaptor.getInputs()) {
      auto type = cast<RankedTensorType>(input.getType());
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      offsets[axis] = offset;
      MLIRContext *context = rewriter.getContext();
      result = tensor::InsertSliceOp::create(
          rewriter, loc, input, result, getAsIndexOpFoldResult(context, offsets),
          getAsIndexOpFoldResult(context, type.getShape()),
          getAsIndexOpFoldResult(context, strides));
      offset += type.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// softmax(x) = exp(x - max) / sum(exp(x - max)) along the axis: a max
/// reduction, a sum reduction and a normalizing map, all generics that a
/// target tiles together along the other axes.
struct SoftmaxLowering : OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elementType = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    Value input = adaptor.getInput();

    SmallVector<int64_t> reducedShape(type.getShape());
    reducedShape.erase(reducedShape.begin() + axis);
    auto reducedType = RankedTensorType::get(reducedShape, elementType);
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap reducedMap = identity.dropResult(axis);
    SmallVector<utils::IteratorType> reduction(rank,
                                               utils::IteratorType::parallel);
    reduction[axis] = utils::IteratorType::reduction;
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    ScalarBuilder scalar(rewriter, loc, elementType, false);
    // f16 exponentials and their sum are computed in f32 and each quotient
    // rounded once: a sum of many f16 terms rounded at every step loses
    // their low bits.
    Type sumElement = elementType.isF16() ? rewriter.getF32Type() : elementType;
    auto widen = [&](OpBuilder &b, Location nestedLoc, Value value) -> Value {
      if (value.getType() == sumElement)
        return value;
      return arith::ExtFOp::create(b, nestedLoc, sumElement, value);
    };
    auto shiftedExp = [&](OpBuilder &b, Location nestedLoc, Value x,
                          Value max) -> Value {
      ScalarBuilder inner(b, nestedLoc, sumElement, false);
      return math::ExpOp::create(
          b, nestedLoc, inner.sub(widen(b, nestedLoc, x), widen(b, nestedLoc, max)));
    };

    Value maxInit = filledTensor(rewriter, loc, reducedType, scalar.lowest());
    Value max = linalg::GenericOp::create(
                    rewriter, loc, reducedType, input, maxInit,
                    ArrayRef<AffineMap>{identity, reducedMap}, reduction,
                    [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
                      ScalarBuilder inner(b, nestedLoc, elementType, false);
                      linalg::YieldOp::create(b, nestedLoc,
                                              inner.max(args[1], args[0]));
                    })
                    .getResult(0);
    auto sumType = reducedType.clone(sumElement);
    Value sumInit = filledTensor(rewriter, loc, sumType,
                                 ScalarBuilder(rewriter, loc, sumElement, false).constant(0.0));
    Value sum =
        linalg::GenericOp::create(
            rewriter, loc, sumType, ValueRange{input, max}, sumInit,
            ArrayRef<AffineMap>{identity, reducedMap, reducedMap}, reduction,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              ScalarBuilder inner(b, nestedLoc, sumElement, false);
              Value exp = shiftedExp(b, nestedLoc, args[0], args[1]);
              linalg::YieldOp::create(b, nestedLoc, inner.add(args[2], exp));
            })
            .getResult(0);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, type, ValueRange{input, max, sum},
            emptyTensor(rewriter, loc, type),
            ArrayRef<AffineMap>{identity, reducedMap, reducedMap, identity},
            parallel,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              ScalarBuilder inner(b, nestedLoc, sumElement, false);
              Value exp = shiftedExp(b, nestedLoc, args[0], args[1]);
              Value quotient = inner.div(exp, args[2]);
              if (sumElement != elementType)
                quotient = arith::TruncFOp::create(b, nestedLoc, elementType, quotient);
              linalg::YieldOp::create(b, nestedLoc, quotient);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateDataMovementToLinalgPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering<ReshapeOp>, ReshapeLowering<FlattenOp>,
               TransposeLowering, ConcatLowering, SoftmaxLowering>(
      converter, patterns.getContext());
}

} // namespace tessel
