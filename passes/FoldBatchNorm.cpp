//===- FoldBatchNorm.cpp - Fold inference batch norms away ----------------===//
//
// Inference batch normalization is a per-channel affine map
//   y = x * s + t,  s = scale / sqrt(variance + epsilon),  t = bias - mean * s.
// With constant parameters, s and t are computed here once, and either
// merged into the convolution that produces x or emitted as a mul and add.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_TESSELFOLDBATCHNORMPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// The per-channel coefficients of a batch norm, computed in double.
struct AffineCoefficients {
  SmallVector<double> scale, shift;
};

static std::optional<SmallVector<double>> constantValues(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  SmallVector<double> values;
  for (const APFloat &element : attr.getValues<APFloat>())
    values.push_back(element.convertToDouble());
  return values;
}

static std::optional<AffineCoefficients> foldedCoefficients(BatchNormOp op) {
  auto scale = constantValues(op.getScale());
  auto bias = constantValues(op.getBias());
  auto mean = constantValues(op.getMean());
  auto variance = constantValues(op.getVariance());
  if (!scale || !bias || !mean || !variance)
    return std::nullopt;
  AffineCoefficients result;
  double epsilon = op.getEpsilon().convertToDouble();
  for (size_t c = 0; c < scale->size(); ++c) {
    double s = (*scale)[c] / std::sqrt((*variance)[c] + epsilon);
    result.scale.push_back(s);
    result.shift.push_back((*bias)[c] - (*mean)[c] * s);
  }
  return result;
}

/// Builds a constant of `type` (float elements) from doubles.
static Value makeConstant(PatternRewriter &rewriter, Location loc,
                          RankedTensorType type, ArrayRef<double> values) {
  auto floatType = cast<FloatType>(type.getElementType());
  SmallVector<APFloat> elements;
  for (double value : values) {
    APFloat element(value);
    bool losesInfo;
    element.convert(floatType.getFloatSemantics(),
                    APFloat::rmNearestTiesToEven, &losesInfo);
    elements.push_back(element);
  }
  return ConstantOp::create(rewriter, loc,
                            DenseElementsAttr::get(type, elements));
}

/// conv -> batch_norm  ==>  conv with scaled weights and shifted bias.
struct FoldIntoConvolution : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    auto conv = op.getInput().getDefiningOp<ConvOp>();
    if (!conv || !conv->hasOneUse() || conv.getChannelsLast())
      return rewriter.notifyMatchFailure(op, "input is not a single-use NCHW conv");
    std::optional<AffineCoefficients> affine = foldedCoefficients(op);
    std::optional<SmallVector<double>> weight =
        constantValues(conv.getWeight());
    if (!affine || !weight)
      return rewriter.notifyMatchFailure(op, "parameters are not constant");
    SmallVector<double> bias(affine->scale.size(), 0.0);
    if (Value convBias = conv.getBias()) {
      std::optional<SmallVector<double>> values = constantValues(convBias);
      if (!values)
        return rewriter.notifyMatchFailure(op, "conv bias is not constant");
      bias = *values;
    }

    size_t filters = affine->scale.size();
    size_t perFilter = weight->size() / filters;
    for (size_t f = 0; f < filters; ++f) {
      for (size_t i = 0; i < perFilter; ++i)
        (*weight)[f * perFilter + i] *= affine->scale[f];
      bias[f] = bias[f] * affine->scale[f] + affine->shift[f];
    }
    Location loc = rewriter.getFusedLoc({conv.getLoc(), op.getLoc()});
    Value newWeight =
        makeConstant(rewriter, loc, conv.getWeight().getType(), *weight);
    Value newBias = makeConstant(rewriter, loc, op.getScale().getType(), bias);
    auto folded = ConvOp::create(
        rewriter, loc, conv.getInput(), newWeight, newBias,
        conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
        conv.getGroupAttr(), /*channels_last=*/nullptr);
    rewriter.replaceOp(op, folded.getResult());
    rewriter.eraseOp(conv);
    return success();
  }
};

/// batch_norm with constant parameters  ==>  x * s + t per channel.
struct DecomposeToMulAdd : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<AffineCoefficients> affine = foldedCoefficients(op);
    if (!affine)
      return rewriter.notifyMatchFailure(op, "parameters are not constant");
    // Shape [C, 1, ..., 1] broadcasts along axis 1 of the input.
    RankedTensorType inputType = op.getInput().getType();
    SmallVector<int64_t> shape(inputType.getRank() - 1, 1);
    shape[0] = inputType.getDimSize(1);
    auto paramType = RankedTensorType::get(shape, inputType.getElementType());
    Location loc = op.getLoc();
    Value scale = makeConstant(rewriter, loc, paramType, affine->scale);
    Value shift = makeConstant(rewriter, loc, paramType, affine->shift);
    Value scaled = MulOp::create(rewriter, loc, op.getInput(), scale);
    rewriter.replaceOpWithNewOp<AddOp>(op, scaled, shift);
    return success();
  }
};

struct TesselFoldBatchNormPass
    : tessel::impl::TesselFoldBatchNormPassBase<TesselFoldBatchNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldIntoConvolution>(&getContext(), /*benefit=*/2);
    patterns.add<DecomposeToMulAdd>(&getContext(), /*benefit=*/1);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
