//===- ExpandQuantized.cpp - Quantized ops as float formulas --------------===//
//
// Some quantized ops mean a float formula: a quantized add is
// quantize(dequantize(a) + dequantize(b)), a quantized average is the
// average of the dequantized window, quantized. Those always expand into
// their formula before the shared lowering, which then only lowers
// quantize, dequantize, lookups and the integer products.
//
// With `all`, every quantized op becomes float arithmetic on the storage
// integers, computing what ONNX's reference computes (exactly while the
// integer sums stay below 2^24): an oracle for the integer kernels and the
// form for targets that have none.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_TESSELEXPANDQUANTIZEDOPSPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

RankedTensorType tensorType(Value value) { return cast<RankedTensorType>(value.getType()); }

/// Builds the float formulas of one op.
class Formulas {
public:
  Formulas(PatternRewriter &rewriter, Location loc) : b(rewriter), loc(loc) {}

  Value dequantize(Value quantized) {
    RankedTensorType type = tensorType(quantized);
    return DequantizeOp::create(b, loc, type.clone(expressedType(type)), quantized);
  }

  Value quantize(Value real, Type quantizedType) {
    return QuantizeOp::create(b, loc, quantizedType, real);
  }

  /// One value per channel of `type`, shaped to broadcast along its axis in
  /// a tensor of rank `rank` (a scalar per tensor), as `elementType`.
  Value perChannel(quant::QuantizedType type, int64_t rank, Type elementType,
                   function_ref<double(QuantParams)> value, int64_t axis = -1) {
    std::optional<int32_t> typeAxis = quantizedAxis(type);
    int64_t channels = quantChannelCount(type);
    SmallVector<int64_t> shape;
    if (typeAxis || axis >= 0) {
      shape.assign(rank, 1);
      shape[axis >= 0 ? axis : *typeAxis] = channels;
    }
    SmallVector<Attribute> values;
    for (int64_t channel = 0; channel < channels; ++channel) {
      double number = value(quantParams(type, channel));
      values.push_back(isa<FloatType>(elementType)
                           ? Attribute(b.getFloatAttr(elementType, number))
                           : Attribute(b.getIntegerAttr(elementType, int64_t(number))));
    }
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get(shape, elementType), values));
  }

  /// The storage integers of `quantized` as `real` numbers, zero point
  /// subtracted: (q - zero point), exact in f32.
  Value centered(Value quantized, Type real) {
    RankedTensorType type = tensorType(quantized);
    quant::QuantizedType quantizedType = getQuantizedType(type);
    Value storage = BitCastOp::create(b, loc, storageType(type), quantized);
    Value value = CastOp::create(b, loc, type.clone(real), storage);
    Value zero = perChannel(quantizedType, type.getRank(), real,
                            [](QuantParams p) { return double(p.zeroPoint); });
    return SubOp::create(b, loc, value, zero);
  }

  /// (q - zero point) * scale, ONNX's DequantizeLinear.
  Value dequantizeFormula(Value quantized) {
    RankedTensorType type = tensorType(quantized);
    Type real = expressedType(type);
    Value scale = perChannel(getQuantizedType(type), type.getRank(), real,
                             [](QuantParams p) { return p.scale; });
    return MulOp::create(b, loc, centered(quantized, real), scale);
  }

  /// saturate(round(x) + zero point) as the quantized type `type`, where x
  /// is already in units of the scale.
  Value roundAndSaturate(Value scaled, RankedTensorType type) {
    quant::QuantizedType quantizedType = getQuantizedType(type);
    RankedTensorType realType = tensorType(scaled);
    Type real = realType.getElementType();
    Value rounded = RoundOp::create(b, loc, realType, scaled);
    Value zero = perChannel(quantizedType, realType.getRank(), real,
                            [](QuantParams p) { return double(p.zeroPoint); },
                            channelAxis(type));
    Value shifted = AddOp::create(b, loc, rounded, zero);
    auto bound = [&](int64_t value) {
      return ConstantOp::create(
          b, loc, DenseElementsAttr::get(RankedTensorType::get({}, real),
                                         b.getFloatAttr(real, double(value))));
    };
    Value clipped = ClipOp::create(b, loc, realType, shifted,
                                   bound(quantizedType.getStorageTypeMin()),
                                   bound(quantizedType.getStorageTypeMax()));
    Value storage = CastOp::create(b, loc, cast<RankedTensorType>(storageType(type)), clipped);
    return BitCastOp::create(b, loc, type, storage);
  }

  /// saturate(round(x / scale) + zero point), ONNX's QuantizeLinear.
  Value quantizeFormula(Value real, RankedTensorType type) {
    RankedTensorType realType = tensorType(real);
    Value scale = perChannel(getQuantizedType(type), realType.getRank(),
                             realType.getElementType(), [](QuantParams p) { return p.scale; });
    return roundAndSaturate(DivOp::create(b, loc, real, scale), type);
  }

  /// The axis of `type`'s per-axis quantization, -1 per tensor.
  static int64_t channelAxis(RankedTensorType type) {
    std::optional<int32_t> axis = quantizedAxis(getQuantizedType(type));
    return axis ? *axis : -1;
  }

  PatternRewriter &b;
  Location loc;
};

//===----------------------------------------------------------------------===//
// Ops whose quantized meaning is a float formula (always expanded)
//===----------------------------------------------------------------------===//

/// a op b on quantized tensors: quantize(dequantize(a) op dequantize(b)).
template <typename OpTy>
struct ExpandQuantizedArithmetic : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    if (!isQuantized(op.getType()))
      return failure();
    Formulas f(rewriter, op.getLoc());
    Value real = OpTy::create(rewriter, op.getLoc(), f.dequantize(op.getLhs()),
                              f.dequantize(op.getRhs()));
    rewriter.replaceOp(op, f.quantize(real, op.getType()));
    return success();
  }
};

/// An average of a quantized tensor: the float average of the dequantized
/// input, quantized.
template <typename OpTy>
struct ExpandQuantizedAverage : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    if (!isQuantized(op.getType()))
      return failure();
    Formulas f(rewriter, op.getLoc());
    RankedTensorType type = op.getType();
    Value real = OpTy::create(rewriter, op.getLoc(), TypeRange{type.clone(expressedType(type))},
                              ValueRange{f.dequantize(op.getInput())}, op->getAttrs())
                     ->getResult(0);
    rewriter.replaceOp(op, f.quantize(real, type));
    return success();
  }
};

struct ExpandRequantize : OpRewritePattern<RequantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RequantizeOp op, PatternRewriter &rewriter) const override {
    Formulas f(rewriter, op.getLoc());
    rewriter.replaceOp(op, f.quantize(f.dequantize(op.getInput()), op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Everything else (the oracle)
//===----------------------------------------------------------------------===//

struct ExpandQuantize : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(QuantizeOp op, PatternRewriter &rewriter) const override {
    Formulas f(rewriter, op.getLoc());
    rewriter.replaceOp(op, f.quantizeFormula(op.getInput(), op.getType()));
    return success();
  }
};

struct ExpandDequantize : OpRewritePattern<DequantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DequantizeOp op, PatternRewriter &rewriter) const override {
    Formulas f(rewriter, op.getLoc());
    rewriter.replaceOp(op, f.dequantizeFormula(op.getInput()));
    return success();
  }
};

/// relu and clip compare storage integers: quantization is monotone.
template <typename OpTy>
struct ExpandQuantizedClamp : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    quant::QuantizedType quantized = getQuantizedType(type);
    if (!quantized)
      return failure();
    Location loc = op.getLoc();
    auto storage = [&](Value value) {
      return BitCastOp::create(rewriter, loc, storageType(value.getType()), value);
    };
    Value result;
    if constexpr (std::is_same_v<OpTy, ReluOp>) {
      Type element = storageElementType(quantized);
      auto zero = ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(RankedTensorType::get({}, element),
                                 rewriter.getIntegerAttr(element, quantParams(quantized).zeroPoint)));
      result = MaxOp::create(rewriter, loc, storage(op.getInput()), zero);
    } else {
      result = ClipOp::create(rewriter, loc, storageType(type), storage(op.getInput()),
                              op.getMin() ? storage(op.getMin()) : Value(),
                              op.getMax() ? storage(op.getMax()) : Value());
    }
    rewriter.replaceOpWithNewOp<BitCastOp>(op, type, result);
    return success();
  }
};

/// The float formula of a quantized product: the product of the centred
/// operands (f32, exact while sums stay below 2^24) plus the bias, then an
/// i32 result or the requantized one.
template <typename OpTy>
struct ExpandQuantizedProduct : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    quant::QuantizedType result = getQuantizedType(type);
    if (!result)
      return failure();
    Location loc = op.getLoc();
    Formulas f(rewriter, loc);
    Type f32 = rewriter.getF32Type();
    auto [input, weight, bias, channelAxis] = operands(op);
    RankedTensorType realType = type.clone(f32);
    Value product = build(rewriter, op, realType, f.centered(input, f32),
                          f.centered(weight, f32));
    if (bias) {
      // [C] along the result's channel axis.
      SmallVector<int64_t> shape(type.getRank(), 1);
      shape[channelAxis] = tensorType(bias).getDimSize(0);
      Value real = f.centered(bias, f32);
      product = AddOp::create(rewriter, loc, product,
                              ReshapeOp::create(rewriter, loc, tensorType(real).clone(shape), real));
    }
    if (result.getStorageTypeIntegralWidth() == 32) {
      Value storage = CastOp::create(rewriter, loc, storageType(type), product);
      rewriter.replaceOpWithNewOp<BitCastOp>(op, type, storage);
      return success();
    }
    quant::QuantizedType inputType = getQuantizedType(input.getType());
    quant::QuantizedType weightType = getQuantizedType(weight.getType());
    double resultScale = quantParams(result).scale;
    double inputScale = quantParams(inputType).scale;
    Value multiplier = f.perChannel(
        weightType, type.getRank(), f32,
        [&](QuantParams w) {
          return requantizationMultiplier(result.getExpressedType(), inputScale, w.scale,
                                          resultScale);
        },
        quantizedAxis(weightType) ? channelAxis : -1);
    Value scaled = MulOp::create(rewriter, loc, product, multiplier);
    rewriter.replaceOp(op, f.roundAndSaturate(scaled, type));
    return success();
  }

  struct Operands {
    Value input, weight, bias;
    int64_t channelAxis;
  };

  static Operands operands(OpTy op) {
    int64_t rank = op.getType().getRank();
    if constexpr (std::is_same_v<OpTy, ConvOp>)
      return {op.getInput(), op.getWeight(), op.getBias(), op.getChannelsLast() ? rank - 1 : 1};
    else if constexpr (std::is_same_v<OpTy, GemmOp>)
      return {op.getA(), op.getB(), op.getC(), 1};
    else
      return {op.getLhs(), op.getRhs(), Value(), rank - 1};
  }

  /// The float op of `op`'s kind, without a bias.
  static Value build(PatternRewriter &b, OpTy op, RankedTensorType type, Value input,
                     Value weight) {
    if constexpr (std::is_same_v<OpTy, ConvOp>)
      return ConvOp::create(b, op.getLoc(), type, input, weight, Value(), op.getStrides(),
                            op.getPads(), op.getDilations(), op.getGroup(),
                            op.getChannelsLast());
    else if constexpr (std::is_same_v<OpTy, GemmOp>)
      return GemmOp::create(b, op.getLoc(), type, input, weight, Value(), op.getAlpha(),
                            op.getBeta(), op.getTransA(), op.getTransB());
    else
      return MatMulOp::create(b, op.getLoc(), type, input, weight);
  }
};

struct TesselExpandQuantizedOpsPass
    : impl::TesselExpandQuantizedOpsPassBase<TesselExpandQuantizedOpsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateExpandQuantizedOpsPatterns(patterns, all);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void populateExpandQuantizedOpsPatterns(RewritePatternSet &patterns, bool all) {
  MLIRContext *context = patterns.getContext();
  patterns.add<ExpandQuantizedArithmetic<AddOp>, ExpandQuantizedArithmetic<SubOp>,
               ExpandQuantizedArithmetic<MulOp>, ExpandQuantizedAverage<AveragePoolOp>,
               ExpandQuantizedAverage<GlobalAveragePoolOp>, ExpandRequantize>(context);
  if (all)
    patterns.add<ExpandQuantize, ExpandDequantize, ExpandQuantizedClamp<ReluOp>,
                 ExpandQuantizedClamp<ClipOp>, ExpandQuantizedProduct<ConvOp>,
                 ExpandQuantizedProduct<MatMulOp>, ExpandQuantizedProduct<GemmOp>>(context);
}

} // namespace tessel
