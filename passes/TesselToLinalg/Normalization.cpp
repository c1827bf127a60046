//===- Normalization.cpp - LayerNorm to linalg ----------------------------===//
//
// A layer normalization is two row reductions and three maps, generics that
// share the rows of the input: a target tiles the last map by rows and
// fuses the others into each tile, so that the whole normalization is one
// pass over rows that stay in cache.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace tessel {
namespace {

/// mean = sum(x) / D; inverse = 1 / sqrt(sum((x - mean)^2) / D + epsilon);
/// y = (x - mean) * inverse * scale + bias, over the last axis.
struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elementType = type.getElementType();
    int64_t rank = type.getRank();
    auto rowsType = RankedTensorType::get(type.getShape().drop_back(), elementType);
    MLIRContext *context = rewriter.getContext();
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap rowMap = identity.dropResult(rank - 1);
    AffineMap featureMap = AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, context));
    AffineMap rowsIdentity = rewriter.getMultiDimIdentityMap(rank - 1);
    SmallVector<utils::IteratorType> reduction(rank, utils::IteratorType::parallel);
    reduction.back() = utils::IteratorType::reduction;
    SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
    SmallVector<utils::IteratorType> rowsParallel(rank - 1, utils::IteratorType::parallel);
    double features = static_cast<double>(type.getShape().back());
    Value x = adaptor.getInput();

    auto zeros = [&] {
      ScalarBuilder scalar(rewriter, loc, elementType, false);
      return filledTensor(rewriter, loc, rowsType, scalar.constant(0.0));
    };
    // A row map of the rows: f(args) per row.
    auto perRow = [&](ValueRange inputs, auto body) {
      SmallVector<AffineMap> maps(inputs.size() + 1, rowsIdentity);
      return linalg::GenericOp::create(
                 rewriter, loc, rowsType, inputs, emptyTensor(rewriter, loc, rowsType), maps,
                 rowsParallel,
                 [&](OpBuilder &b, Location nested, ValueRange args) {
                   ScalarBuilder inner(b, nested, elementType, false);
                   linalg::YieldOp::create(b, nested, body(inner, b, nested, args));
                 })
          .getResult(0);
    };

    Value sum = linalg::GenericOp::create(
                    rewriter, loc, rowsType, x, zeros(),
                    ArrayRef<AffineMap>{identity, rowMap}, reduction,
                    [&](OpBuilder &b, Location nested, ValueRange args) {
                      ScalarBuilder inner(b, nested, elementType, false);
                      linalg::YieldOp::create(b, nested, inner.add(args[1], args[0]));
                    })
                    .getResult(0);
    Value mean = perRow(ValueRange{sum}, [&](ScalarBuilder &inner, OpBuilder &, Location,
                                             ValueRange args) {
      return inner.mul(args[0], inner.constant(1.0 / features));
    });
    Value squares = linalg::GenericOp::create(
                        rewriter, loc, rowsType, ValueRange{x, mean}, zeros(),
                        ArrayRef<AffineMap>{identity, rowMap, rowMap}, reduction,
                        [&](OpBuilder &b, Location nested, ValueRange args) {
                          ScalarBuilder inner(b, nested, elementType, false);
                          Value centered = inner.sub(args[0], args[1]);
                          linalg::YieldOp::create(
                              b, nested, inner.add(args[2], inner.mul(centered, centered)));
                        })
                        .getResult(0);
    double epsilon = op.getEpsilon().convertToDouble();
    Value inverse = perRow(ValueRange{squares}, [&](ScalarBuilder &inner, OpBuilder &b,
                                                    Location nested, ValueRange args) {
      Value variance = inner.mul(args[0], inner.constant(1.0 / features));
      return math::RsqrtOp::create(b, nested, inner.add(variance, inner.constant(epsilon)))
          .getResult();
    });

    SmallVector<Value> inputs{x, mean, inverse, adaptor.getScale()};
    SmallVector<AffineMap> maps{identity, rowMap, rowMap, featureMap};
    if (adaptor.getBias()) {
      inputs.push_back(adaptor.getBias());
      maps.push_back(featureMap);
    }
    maps.push_back(identity);
    bool hasBias = static_cast<bool>(adaptor.getBias());
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, type, inputs, emptyTensor(rewriter, loc, type), maps, parallel,
            [&](OpBuilder &b, Location nested, ValueRange args) {
              ScalarBuilder inner(b, nested, elementType, false);
              Value normalized = inner.mul(inner.sub(args[0], args[1]), args[2]);
              Value scaled = inner.mul(normalized, args[3]);
              linalg::YieldOp::create(b, nested, hasBias ? inner.add(scaled, args[4]) : scaled);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateNormalizationToLinalgPatterns(const TypeConverter &converter,
                                           RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering>(converter, patterns.getContext());
}

} // namespace tessel
