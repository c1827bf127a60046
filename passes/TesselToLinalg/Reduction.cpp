//===- Reduction.cpp - Reductions over axes and arg-reductions ------------===//
//
// Both become one linalg.generic whose reduced axes are reduction loops;
// the result drops those axes, so a target tiles the parallel ones freely.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

using namespace mlir;

namespace tessel {
namespace {

/// The identity map of `rank` loops, the map that drops `axes` from it, and
/// the iterator types that make `axes` reductions.
struct ReductionMaps {
  AffineMap input, result;
  SmallVector<utils::IteratorType> iterators;
};

ReductionMaps reductionMaps(OpBuilder &b, int64_t rank, ArrayRef<int64_t> axes) {
  ReductionMaps maps;
  maps.input = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineExpr> kept;
  maps.iterators.assign(rank, utils::IteratorType::parallel);
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(axes, i))
      maps.iterators[i] = utils::IteratorType::reduction;
    else
      kept.push_back(b.getAffineDimExpr(i));
  }
  maps.result = AffineMap::get(rank, 0, kept, b.getContext());
  return maps;
}

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (op.getAxes().empty()) {
      rewriter.replaceOp(op, adaptor.getInput());
      return success();
    }
    auto resultType = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    bool isUnsigned = hasUnsignedElements(op.getType());
    StringRef kind = op.getKind();
    ScalarBuilder scalar(rewriter, loc, elementType, isUnsigned);
    Value identity = kind == "sum"    ? scalar.constant(0.0)
                     : kind == "prod" ? scalar.constant(1.0)
                     : kind == "max"  ? scalar.lowest()
                                      : scalar.highest();
    ReductionMaps maps =
        reductionMaps(rewriter, op.getInput().getType().getRank(), op.getAxes());
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, resultType, adaptor.getInput(),
            filledTensor(rewriter, loc, resultType, identity),
            ArrayRef<AffineMap>{maps.input, maps.result}, maps.iterators,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              ScalarBuilder inner(b, nestedLoc, elementType, isUnsigned);
              Value element = args[0], accumulator = args[1];
              Value combined = kind == "sum"    ? inner.add(accumulator, element)
                               : kind == "prod" ? inner.mul(accumulator, element)
                               : kind == "max"  ? inner.max(accumulator, element)
                                                : inner.min(accumulator, element);
              linalg::YieldOp::create(b, nestedLoc, combined);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A running (best value, its index) pair along the axis; an element
/// replaces the best one when strictly better, or also when equal with
/// select_last, which gives ONNX's tie rule as indices ascend.
struct ArgReduceLowering : OpConversionPattern<ArgReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ArgReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType indexType = op.getType();
    Type elementType = getTypeConverter()
                           ->convertType<RankedTensorType>(op.getInput().getType())
                           .getElementType();
    bool isUnsigned = hasUnsignedElements(op.getInput().getType());
    bool isMax = op.getKind() == "max";
    bool selectLast = op.getSelectLast();
    int64_t axis = op.getAxis();
    auto bestType = indexType.clone(elementType);
    ScalarBuilder scalar(rewriter, loc, elementType, isUnsigned);
    Value bestInit = filledTensor(rewriter, loc, bestType,
                                  isMax ? scalar.lowest() : scalar.highest());
    Value indexInit = filledTensor(
        rewriter, loc, indexType,
        arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(0)));
    ReductionMaps maps =
        reductionMaps(rewriter, op.getInput().getType().getRank(), {axis});
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{bestType, indexType}, adaptor.getInput(),
        ValueRange{bestInit, indexInit},
        ArrayRef<AffineMap>{maps.input, maps.result, maps.result}, maps.iterators,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value element = args[0], best = args[1], bestIndex = args[2];
          Value index = arith::IndexCastOp::create(
              b, nestedLoc, b.getI64Type(), linalg::IndexOp::create(b, nestedLoc, axis));
          Value better;
          if (isa<FloatType>(elementType)) {
            auto predicate = isMax ? (selectLast ? arith::CmpFPredicate::OGE
                                                 : arith::CmpFPredicate::OGT)
                                   : (selectLast ? arith::CmpFPredicate::OLE
                                                 : arith::CmpFPredicate::OLT);
            better = arith::CmpFOp::create(b, nestedLoc, predicate, element, best);
          } else {
            using P = arith::CmpIPredicate;
            P predicate = isMax ? (selectLast ? (isUnsigned ? P::uge : P::sge)
                                              : (isUnsigned ? P::ugt : P::sgt))
                                : (selectLast ? (isUnsigned ? P::ule : P::sle)
                                              : (isUnsigned ? P::ult : P::slt));
            better = arith::CmpIOp::create(b, nestedLoc, predicate, element, best);
          }
          // The first element always counts, so that an all -inf (or all
          // minimum) row still names index 0 rather than the initial value.
          Value first = arith::CmpIOp::create(
              b, nestedLoc, arith::CmpIPredicate::eq, index,
              arith::ConstantOp::create(b, nestedLoc, b.getI64IntegerAttr(0)));
          better = arith::OrIOp::create(b, nestedLoc, better, first);
          linalg::YieldOp::create(
              b, nestedLoc,
              ValueRange{arith::SelectOp::create(b, nestedLoc, better, element, best),
                         arith::SelectOp::create(b, nestedLoc, better, index,
                                                 bestIndex)});
        });
    rewriter.replaceOp(op, generic.getResult(1));
    return success();
  }
};

} // namespace

void populateReductionToLinalgPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<ReduceLowering, ArgReduceLowering>(converter, patterns.getContext());
}

} // namespace tessel
