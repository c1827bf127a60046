//===- QuantizedProducts.cpp - Integer matmuls and convolutions to linalg -===//
//
// A quantized matmul, gemm or convolution accumulates in i32 and, for an
// 8-bit result, is requantized by an elementwise generic after it (which a
// target applies to the accumulators in registers).
//
// With a constant weight stored signed with zero point 0 (what
// tessel-fuse-quantized-ops makes of every weight that fits), the input's
// zero point leaves the inner loop: sum((x - x_zp) * w) = sum(x * w) -
// x_zp * sum(w), the second term a constant per output channel that joins
// the bias. Padding holds x_zp, so that it contributes nothing. The
// contraction is then a plain product of 8-bit storage integers, which
// targets map onto dot-product instructions. Otherwise, each operand with a
// zero point is centred into i16 first.
//
// The requantization computes ONNX's reference step by step: the i32
// accumulator times the multiplier input_scale * weight_scale /
// result_scale (rounded to the expressed type at each step) in f64, which
// holds the product exactly for accumulators below 2^29, plus the zero
// point, rounded half to even, saturated.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/TesselToLinalg/ContractionUtils.h"
#include "passes/TesselToLinalg/QuantizationUtils.h"
#include "passes/TesselToLinalg/TesselToLinalg.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace tessel {
namespace {

/// A lowered (signless) operand of an integer product and how to widen it.
struct IntegerOperand {
  Value value;
  bool isUnsigned;
};

/// What an integer product's contraction reads and starts from.
struct IntegerProduct {
  IntegerOperand input, weight;
  /// What padding of the input holds: the input's zero point, or 0 once the
  /// input is centred.
  int64_t padding;
  /// The accumulator's initial value (bias and folded zero-point terms).
  Value init;
  /// A bound on the accumulator's magnitude, where the weights and bias are
  /// known.
  std::optional<int64_t> accumulatorBound;
};

/// The storage values of a constant quantized tensor, widened by their
/// signedness.
std::optional<SmallVector<int64_t>> constantValues(const KernelConstants &constants,
                                                   Value value) {
  auto attr = dyn_cast_if_present<DenseElementsAttr>(constants.lookup(value));
  if (!attr)
    return std::nullopt;
  quant::QuantizedType type = getQuantizedType(value.getType());
  bool isSigned = type ? type.isSigned() : !getElementTypeOrSelf(attr).isUnsignedInteger();
  SmallVector<int64_t> values;
  values.reserve(attr.getNumElements());
  for (const APInt &element : attr.getValues<APInt>())
    values.push_back(isSigned ? element.getSExtValue() : element.getZExtValue());
  return values;
}

/// `value` - zero point (per channel along `axis`) as i16: exact for 8-bit
/// storage.
Value centre(OpBuilder &b, Location loc, Value value, quant::QuantizedType type, int64_t axis) {
  auto valueType = cast<RankedTensorType>(value.getType());
  auto resultType = valueType.clone(b.getI16Type());
  SmallVector<double> zeroPoints;
  for (int64_t channel = 0; channel < quantChannelCount(type); ++channel)
    zeroPoints.push_back(quantParams(type, channel).zeroPoint);
  SmallVector<Value> operands{value};
  bool perChannel = !hasUniformParams(type);
  if (perChannel)
    operands.push_back(
        channelConstant(b, loc, b.getI32Type(), zeroPoints, axis, valueType.getRank()));
  return buildElementwise(b, loc, resultType, operands,
                          [&](OpBuilder &nested, Location at, ValueRange args) -> Value {
                            Value wide = extendToI32(nested, at, args[0], !type.isSigned());
                            Value zero = perChannel ? args[1]
                                                    : arith::ConstantOp::create(
                                                          nested, at,
                                                          nested.getI32IntegerAttr(
                                                              int64_t(zeroPoints.front())));
                            Value centred = arith::SubIOp::create(nested, at, wide, zero);
                            return arith::TruncIOp::create(nested, at, nested.getI16Type(),
                                                           centred);
                          });
}

/// An i32 tensor of `type` holding `values` (one per channel) along `axis`,
/// or zeros.
Value accumulatorInit(OpBuilder &b, Location loc, RankedTensorType type,
                      ArrayRef<int64_t> values, int64_t axis) {
  if (llvm::all_of(values, [](int64_t value) { return value == 0; }))
    return filledTensor(b, loc, type,
                        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0)));
  SmallVector<int32_t> elements(values.begin(), values.end());
  Value vector = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({int64_t(values.size())}, b.getI32Type()),
                             ArrayRef<int32_t>(elements)));
  return broadcastAlongAxis(b, loc, vector, type, axis);
}

/// Prepares the contraction of `input` (tessel value, lowered `loweredInput`)
/// and `weight` (likewise) with an optional `bias`: the weight's channels lie
/// along `weightAxis`, the result's along `resultAxis` of `accumulatorType`.
/// With `foldable`, a constant weight's zero-point terms may be folded (see
/// the file comment).
IntegerProduct prepareProduct(OpBuilder &b, Location loc, const KernelConstants &constants,
                              Value input, Value loweredInput,
                              Value weight, Value loweredWeight, Value bias, Value loweredBias,
                              RankedTensorType accumulatorType, int64_t weightAxis,
                              int64_t resultAxis, bool foldable) {
  quant::QuantizedType inputType = getQuantizedType(input.getType());
  quant::QuantizedType weightType = getQuantizedType(weight.getType());
  int64_t inputZero = quantParams(inputType).zeroPoint;
  int64_t channels = accumulatorType.getDimSize(resultAxis);
  auto weightTensor = cast<RankedTensorType>(weight.getType());
  auto weightZero = [&](int64_t channel) {
    return quantParams(weightType, quantChannelCount(weightType) == 1 ? 0 : channel).zeroPoint;
  };

  std::optional<SmallVector<int64_t>> biasValues =
      bias ? constantValues(constants, bias) : SmallVector<int64_t>(channels, 0);
  std::optional<SmallVector<int64_t>> weightValues =
      foldable ? constantValues(constants, weight) : std::nullopt;
  bool weightCentred = weightType.isSigned();
  for (int64_t channel = 0; channel < quantChannelCount(weightType); ++channel)
    weightCentred &= weightZero(channel) == 0;
  if (weightValues && biasValues && weightCentred) {
    ArrayRef<int64_t> shape = weightTensor.getShape();
    SmallVector<int64_t> sums(shape[weightAxis], 0), magnitudes(shape[weightAxis], 0);
    for (auto [linear, value] : llvm::enumerate(*weightValues)) {
      int64_t channel = indexAlong(linear, shape, weightAxis);
      sums[channel] += value;
      magnitudes[channel] += std::abs(value);
    }
    int64_t largestInput =
        std::max(std::abs(inputType.getStorageTypeMin()), std::abs(inputType.getStorageTypeMax()));
    SmallVector<int64_t> init(*biasValues);
    int64_t bound = 0;
    for (int64_t channel = 0; channel < channels; ++channel) {
      int64_t weightChannel = sums.size() == 1 ? 0 : channel;
      init[channel] -= inputZero * sums[weightChannel];
      bound = std::max(bound, std::abs(init[channel]) + largestInput * magnitudes[weightChannel]);
    }
    return {{loweredInput, !inputType.isSigned()},
            {loweredWeight, false},
            inputZero,
            accumulatorInit(b, loc, accumulatorType, init, resultAxis),
            bound};
  }

  IntegerProduct product{{loweredInput, !inputType.isSigned()},
                         {loweredWeight, !weightType.isSigned()},
                         0,
                         {},
                         std::nullopt};
  if (inputZero != 0)
    product.input = {centre(b, loc, loweredInput, inputType, 0), false};
  bool weightHasZeroPoint = false;
  for (int64_t channel = 0; channel < quantChannelCount(weightType); ++channel)
    weightHasZeroPoint |= weightZero(channel) != 0;
  if (weightHasZeroPoint)
    product.weight = {centre(b, loc, loweredWeight, weightType, weightAxis), false};
  product.init = bias ? broadcastAlongAxis(b, loc, loweredBias, accumulatorType, resultAxis)
                      : accumulatorInit(b, loc, accumulatorType, {0}, resultAxis);
  return product;
}

/// sum + x * w in i32, each operand widened by its signedness.
auto integerMultiplyAccumulate(const IntegerProduct &product) {
  bool inputUnsigned = product.input.isUnsigned, weightUnsigned = product.weight.isUnsigned;
  return [=](OpBuilder &b, Location loc, Value x, Value w, Value sum) -> Value {
    Value product = arith::MulIOp::create(b, loc, extendToI32(b, loc, x, inputUnsigned),
                                          extendToI32(b, loc, w, weightUnsigned));
    return arith::AddIOp::create(b, loc, sum, product);
  };
}

/// The i32 `accumulator` of a product of `input` and `weight` requantized to
/// the 8-bit `result` type (lowered `loweredType`), the weight's channels
/// along axis `axis` of the result. With a bound on the accumulator that
/// keeps every rounded value within i32, it saturates in integers.
Value requantize(OpBuilder &b, Location loc, Value accumulator,
                 std::optional<int64_t> accumulatorBound, quant::QuantizedType input,
                 quant::QuantizedType weight, quant::QuantizedType result,
                 RankedTensorType loweredType, int64_t axis) {
  Type f64 = b.getF64Type();
  Type expressed = result.getExpressedType();
  double inputScale = quantParams(input).scale, resultScale = quantParams(result).scale;
  SmallVector<double> multipliers;
  for (int64_t channel = 0; channel < quantChannelCount(weight); ++channel)
    multipliers.push_back(requantizationMultiplier(
        expressed, inputScale, quantParams(weight, channel).scale, resultScale));
  bool perChannel = !llvm::all_equal(multipliers);
  SmallVector<Value> operands{accumulator};
  if (perChannel)
    operands.push_back(channelConstant(b, loc, f64, multipliers, axis, loweredType.getRank()));
  double zeroPoint = quantParams(result).zeroPoint;
  double largestMultiplier = 0.0;
  for (double multiplier : multipliers)
    largestMultiplier = std::max(largestMultiplier, std::abs(multiplier));
  bool fitsI32 = accumulatorBound &&
                 double(*accumulatorBound) * largestMultiplier + std::abs(zeroPoint) + 1.0 <
                     double(std::numeric_limits<int32_t>::max());
  return buildElementwise(
      b, loc, loweredType, operands, [&](OpBuilder &nested, Location at, ValueRange args) {
        Value multiplier =
            perChannel ? args[1]
                       : arith::ConstantOp::create(nested, at,
                                                   nested.getF64FloatAttr(multipliers.front()));
        Value scaled = arith::MulFOp::create(
            nested, at, arith::SIToFPOp::create(nested, at, f64, args[0]), multiplier);
        Value shifted = arith::AddFOp::create(
            nested, at, scaled,
            arith::ConstantOp::create(nested, at, nested.getF64FloatAttr(zeroPoint)));
        Value rounded = math::RoundEvenOp::create(nested, at, shifted);
        return fitsI32 ? saturateI32ToStorage(nested, at, rounded, result)
                       : saturateToStorage(nested, at, rounded, result);
      });
}

/// Replaces `op` by `accumulator`, requantized unless the result is the i32
/// accumulator itself.
void finish(ConversionPatternRewriter &rewriter, Operation *op, const TypeConverter &converter,
            Value accumulator, std::optional<int64_t> accumulatorBound, Value input, Value weight,
            int64_t resultAxis) {
  Type resultType = op->getResult(0).getType();
  quant::QuantizedType result = getQuantizedType(resultType);
  if (result.getStorageTypeIntegralWidth() == 32) {
    rewriter.replaceOp(op, accumulator);
    return;
  }
  rewriter.replaceOp(
      op, requantize(rewriter, op->getLoc(), accumulator, accumulatorBound,
                     getQuantizedType(input.getType()), getQuantizedType(weight.getType()), result,
                     converter.convertType<RankedTensorType>(resultType), resultAxis));
}

RankedTensorType accumulatorType(OpBuilder &b, Type resultType) {
  return cast<RankedTensorType>(resultType).clone(b.getI32Type());
}

struct QuantizedMatMulLowering : OpConversionPattern<MatMulOp> {
  QuantizedMatMulLowering(const TypeConverter &converter, MLIRContext *context,
                          const KernelConstants &constants)
      : OpConversionPattern(converter, context), constants(constants) {}

  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isQuantized(op.getType()))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType accumulator = accumulatorType(rewriter, op.getType());
    int64_t weightRank = op.getRhs().getType().getRank();
    int64_t resultAxis = accumulator.getRank() - 1;
    IntegerProduct product = prepareProduct(
        rewriter, loc, constants, op.getLhs(), adaptor.getLhs(), op.getRhs(), adaptor.getRhs(), Value(),
        Value(), accumulator, weightRank - 1, resultAxis, /*foldable=*/weightRank == 2);
    MatMulIteration iteration = matmulIteration(rewriter, loc, product.input.value,
                                                product.weight.value, accumulator);
    Value sums = buildContraction(rewriter, loc, iteration.lhs, iteration.rhs, product.init,
                                  iteration.extents, integerMultiplyAccumulate(product));
    finish(rewriter, op, *getTypeConverter(), sums, product.accumulatorBound, op.getLhs(),
           op.getRhs(), resultAxis);
    return success();
  }

  const KernelConstants &constants;
};

struct QuantizedGemmLowering : OpConversionPattern<GemmOp> {
  QuantizedGemmLowering(const TypeConverter &converter, MLIRContext *context,
                        const KernelConstants &constants)
      : OpConversionPattern(converter, context), constants(constants) {}

  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isQuantized(op.getType()))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType accumulator = accumulatorType(rewriter, op.getType());
    IntegerProduct product =
        prepareProduct(rewriter, loc, constants, op.getA(), adaptor.getA(), op.getB(), adaptor.getB(),
                       op.getC(), adaptor.getC(), accumulator, op.getTransB() ? 0 : 1, 1,
                       /*foldable=*/true);
    enum { m = 0, n = 1, k = 2 };
    int64_t kExtent = op.getA().getType().getDimSize(op.getTransA() ? 0 : 1);
    SmallVector<int64_t> extents{accumulator.getDimSize(0), accumulator.getDimSize(1),
                                 kExtent};
    BroadcastOperand a = indexOperand(
        rewriter, loc, product.input.value,
        op.getTransA() ? SmallVector<int64_t>{k, m} : SmallVector<int64_t>{m, k}, extents);
    BroadcastOperand b = indexOperand(
        rewriter, loc, product.weight.value,
        op.getTransB() ? SmallVector<int64_t>{n, k} : SmallVector<int64_t>{k, n}, extents);
    Value sums = buildContraction(rewriter, loc, a, b, product.init, extents,
                                  integerMultiplyAccumulate(product));
    finish(rewriter, op, *getTypeConverter(), sums, product.accumulatorBound, op.getA(), op.getB(),
           1);
    return success();
  }

  const KernelConstants &constants;
};

struct QuantizedConvLowering : OpConversionPattern<ConvOp> {
  QuantizedConvLowering(const TypeConverter &converter, MLIRContext *context,
                        const KernelConstants &constants)
      : OpConversionPattern(converter, context), constants(constants) {}

  LogicalResult
  matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isQuantized(op.getType()))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType accumulator = accumulatorType(rewriter, op.getType());
    int64_t rank = accumulator.getRank(), spatialRank = rank - 2;
    bool channelsLast = op.getChannelsLast();
    int64_t resultAxis = channelsLast ? rank - 1 : 1;
    int64_t weightAxis = channelsLast ? rank - 1 : 0;
    IntegerProduct product = prepareProduct(
        rewriter, loc, constants, op.getInput(), adaptor.getInput(), op.getWeight(), adaptor.getWeight(),
        op.getBias(), adaptor.getBias(), accumulator, weightAxis, resultAxis,
        /*foldable=*/true);

    quant::QuantizedType inputType = getQuantizedType(op.getInput().getType());
    Value paddingValue =
        product.input.value == adaptor.getInput()
            ? storageConstant(rewriter, loc, inputType, product.padding)
            : arith::ConstantOp::create(rewriter, loc, rewriter.getI16IntegerAttr(0));
    ArrayRef<int64_t> pads = op.getPads();
    Value input = padSpatial(rewriter, loc, product.input.value, pads.take_front(spatialRank),
                             pads.drop_front(spatialRank), paddingValue, channelsLast);
    auto body = integerMultiplyAccumulate(product);
    Value sums;
    if (!channelsLast) {
      sums = buildGroupedConvolution(rewriter, loc, input, product.weight.value, product.init,
                                     op.getStrides(), op.getDilations(), op.getGroup(), body);
    } else if (op.getGroup() == 1) {
      sums = buildChannelsLastConvolution(rewriter, loc, input, product.weight.value,
                                          product.init, op.getStrides(), op.getDilations(),
                                          /*depthwise=*/false, body);
    } else {
      // [KH, KW, 1, C] -> [KH, KW, C]
      Value weight = product.weight.value;
      auto weightType = cast<RankedTensorType>(weight.getType());
      auto depthwiseType = RankedTensorType::get(
          {weightType.getDimSize(0), weightType.getDimSize(1), weightType.getDimSize(3)},
          weightType.getElementType());
      Value depthwiseWeight = tensor::CollapseShapeOp::create(
          rewriter, loc, depthwiseType, weight,
          ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
      sums = buildChannelsLastConvolution(rewriter, loc, input, depthwiseWeight, product.init,
                                          op.getStrides(), op.getDilations(),
                                          /*depthwise=*/true, body);
    }
    finish(rewriter, op, *getTypeConverter(), sums, product.accumulatorBound, op.getInput(),
           op.getWeight(), resultAxis);
    return success();
  }

  const KernelConstants &constants;
};

} // namespace

void populateQuantizedProductsToLinalgPatterns(const TypeConverter &converter,
                                               const KernelConstants &constants,
                                               RewritePatternSet &patterns) {
  patterns.add<QuantizedMatMulLowering, QuantizedGemmLowering, QuantizedConvLowering>(
      converter, patterns.getContext(), constants);
}

} // namespace tessel
