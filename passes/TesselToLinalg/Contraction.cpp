//===- Contraction.cpp - MatMul and Gemm to linalg ------------------------===//
//
// Both become one contraction generic (iteration space: result axes, then
// the reduction axis), so that targets recognize every matrix product with
// linalg's contraction interface, whatever the transposes and broadcasts.
//
//===----------------------------------------------------------------------===//

#include "passes/TesselToLinalg/ContractionUtils.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

using namespace mlir;

namespace tessel {

Value buildContraction(OpBuilder &b, Location loc, BroadcastOperand lhs,
                       BroadcastOperand rhs, Value init,
                       ArrayRef<int64_t> iterationExtents, MultiplyAccumulateFn body) {
  int64_t numDims = iterationExtents.size();
  SmallVector<utils::IteratorType> iterators(numDims - 1,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  // The result is indexed by all but the reduction dimension.
  SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i < numDims - 1; ++i)
    outExprs.push_back(b.getAffineDimExpr(i));
  AffineMap outMap = AffineMap::get(numDims, 0, outExprs, b.getContext());
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{lhs.value, rhs.value}, init,
      ArrayRef<AffineMap>{lhs.map, rhs.map, outMap}, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                body(nested, nestedLoc, args[0], args[1], args[2]));
      });
  return generic.getResult(0);
}

MatMulIteration matmulIteration(OpBuilder &b, Location loc, Value lhs, Value rhs,
                                RankedTensorType resultType) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  bool lhsIsVector = lhsType.getRank() == 1;
  bool rhsIsVector = rhsType.getRank() == 1;
  int64_t resultRank = resultType.getRank();
  int64_t batchRank = resultRank - !lhsIsVector - !rhsIsVector;
  int64_t mDim = batchRank, nDim = batchRank + !lhsIsVector;
  int64_t kDim = resultRank;

  SmallVector<int64_t> extents(resultType.getShape());
  extents.push_back(lhsType.getShape().back());

  // Batch axes of an operand align with the trailing batch dimensions.
  auto batchDims = [&](int64_t operandBatchRank) {
    return llvm::to_vector(llvm::seq<int64_t>(batchRank - operandBatchRank, batchRank));
  };
  SmallVector<int64_t> lhsDims;
  if (!lhsIsVector) {
    lhsDims = batchDims(lhsType.getRank() - 2);
    lhsDims.push_back(mDim);
  }
  lhsDims.push_back(kDim);
  SmallVector<int64_t> rhsDims;
  if (!rhsIsVector)
    rhsDims = batchDims(rhsType.getRank() - 2);
  rhsDims.push_back(kDim);
  if (!rhsIsVector)
    rhsDims.push_back(nDim);
  return {indexOperand(b, loc, lhs, lhsDims, extents),
          indexOperand(b, loc, rhs, rhsDims, extents), extents};
}

namespace {

struct MatMulLowering : OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (isQuantized(op.getType()))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    MatMulIteration iteration =
        matmulIteration(rewriter, loc, adaptor.getLhs(), adaptor.getRhs(), resultType);
    RankedTensorType sumType = productSumType(resultType);
    ScalarBuilder scalar(rewriter, loc, sumType.getElementType(), false);
    Value init = filledTensor(rewriter, loc, sumType, scalar.constant(0.0));
    Value product = buildContraction(rewriter, loc, iteration.lhs, iteration.rhs, init,
                                     iteration.extents, floatMultiplyAccumulate);
    product = roundProductSum(rewriter, loc, product, resultType);
    rewriter.replaceOp(op, product);
    return success();
  }
};

struct GemmLowering : OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (isQuantized(op.getType()))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    enum { m = 0, n = 1, k = 2 };
    int64_t kExtent = op.getA().getType().getDimSize(op.getTransA() ? 0 : 1);
    SmallVector<int64_t> extents{resultType.getDimSize(0),
                                 resultType.getDimSize(1), kExtent};
    SmallVector<int64_t> aDims = op.getTransA() ? SmallVector<int64_t>{k, m}
                                                : SmallVector<int64_t>{m, k};
    SmallVector<int64_t> bDims = op.getTransB() ? SmallVector<int64_t>{n, k}
                                                : SmallVector<int64_t>{k, n};
    BroadcastOperand a = indexOperand(rewriter, loc, adaptor.getA(), aDims, extents);
    BroadcastOperand b = indexOperand(rewriter, loc, adaptor.getB(), bDims, extents);

    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    Value c = adaptor.getC();
    bool hasBias = c && beta != 0.0;
    // Scaled and summed in the sum's type (f32 for f16), rounded once.
    RankedTensorType sumType = productSumType(resultType);
    Type sumElement = sumType.getElementType();
    auto widened = [&](OpBuilder &builder, Location at, Value x) -> Value {
      return x.getType() == sumElement ? x : arith::ExtFOp::create(builder, at, sumElement, x);
    };
    ScalarBuilder scalar(rewriter, loc, sumElement, false);

    // With alpha = 1 the (scaled) bias is the accumulator's initial value.
    Value init;
    if (hasBias && alpha == 1.0) {
      init = buildElementwise(
          rewriter, loc, sumType, {c},
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            Value bias = widened(nested, nestedLoc, args[0]);
            if (beta == 1.0)
              return bias;
            ScalarBuilder inner(nested, nestedLoc, sumElement, false);
            return inner.mul(bias, inner.constant(beta));
          });
    } else {
      init = filledTensor(rewriter, loc, sumType, scalar.constant(0.0));
    }
    Value result =
        buildContraction(rewriter, loc, a, b, init, extents, floatMultiplyAccumulate);
    if (alpha != 1.0) {
      SmallVector<Value> operands{result};
      if (hasBias)
        operands.push_back(c);
      result = buildElementwise(
          rewriter, loc, sumType, operands,
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            ScalarBuilder inner(nested, nestedLoc, sumElement, false);
            Value scaled = inner.mul(args[0], inner.constant(alpha));
            if (!hasBias)
              return scaled;
            Value bias = widened(nested, nestedLoc, args[1]);
            return inner.add(scaled, inner.mul(bias, inner.constant(beta)));
          });
    }
    result = roundProductSum(rewriter, loc, result, resultType);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Einsum: one generic with the output's letters as parallel loops and
/// the other letters as reductions; the body multiplies the operands' elements
/// and accumulates.
struct EinsumLowering : OpConversionPattern<EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    std::optional<EinsumEquation> equation = parseEinsumEquation(op.getEquation());
    if (!equation)
      return rewriter.notifyMatchFailure(op, "malformed equation");
    std::string letters = equation->output;
    for (const std::string &operand : equation->operands)
      for (char letter : operand)
        if (letters.find(letter) == std::string::npos)
          letters.push_back(letter);
    auto dimOf = [&](char letter) {
      return rewriter.getAffineDimExpr(letters.find(letter));
    };
    int64_t loops = letters.size();
    SmallVector<AffineMap> maps;
    for (const std::string &operand : equation->operands) {
      SmallVector<AffineExpr> exprs;
      for (char letter : operand)
        exprs.push_back(dimOf(letter));
      maps.push_back(AffineMap::get(loops, 0, exprs, getContext()));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(loops, getContext())
                       .getSliceMap(0, equation->output.size()));
    SmallVector<utils::IteratorType> iterators(equation->output.size(),
                                               utils::IteratorType::parallel);
    iterators.append(loops - equation->output.size(), utils::IteratorType::reduction);
    auto resultType = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    // f16 operands are widened, multiplied and summed in f32.
    RankedTensorType sumType = productSumType(resultType);
    Type elementType = sumType.getElementType();
    bool isUnsigned = hasUnsignedElements(op.getType());
    ScalarBuilder scalar(rewriter, loc, elementType, isUnsigned);
    Value init = filledTensor(rewriter, loc, sumType, scalar.constant(0.0));
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, sumType, adaptor.getInputs(), init, maps, iterators,
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              ScalarBuilder inner(b, nestedLoc, elementType, isUnsigned);
              auto widened = [&](Value x) -> Value {
                return x.getType() == elementType
                           ? x
                           : arith::ExtFOp::create(b, nestedLoc, elementType, x);
              };
              Value product = widened(args.front());
              for (Value factor : args.drop_front().drop_back())
                product = inner.mul(product, widened(factor));
              linalg::YieldOp::create(b, nestedLoc, inner.add(args.back(), product));
            })
            .getResult(0);
    rewriter.replaceOp(op, roundProductSum(rewriter, loc, result, resultType));
    return success();
  }
};

} // namespace

void populateContractionToLinalgPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns) {
  patterns.add<MatMulLowering, GemmLowering, EinsumLowering>(converter,
                                                            patterns.getContext());
}

} // namespace tessel
