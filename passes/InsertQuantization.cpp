//===- InsertQuantization.cpp - Quantize a calibrated float graph ---------===//
//
// Post-training quantization writes its decisions as the QDQ form that
// quantized ONNX models import to, so that one fusion pass
// (tessel-fuse-quantized-ops) turns both into integer ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/QuantizedTypes.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"
#include "passes/QuantizedGraph.h"
#include "passes/WeightQuantization.h"

#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tessel {
#define GEN_PASS_DEF_TESSELINSERTQUANTIZATIONPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace tessel;

namespace {

/// The 8-bit type that represents [lo, hi]: u8 over the range widened to
/// hold 0 (so that zero, and padding, is exact), or s8 symmetric. Scales
/// are f32 values, as ONNX stores them.
quant::QuantizedType activationType(MLIRContext *context, double lo, double hi,
                                    bool isSigned) {
  Type f32 = Float32Type::get(context);
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (isSigned) {
    double scale = roundToExpressed(f32, std::max(-lo, hi) / 127.0);
    return perTensorType(f32, true, 8, scale > 0.0 ? scale : 1.0, 0);
  }
  double scale = roundToExpressed(f32, (hi - lo) / 255.0);
  if (!(scale > 0.0))
    return perTensorType(f32, false, 8, 1.0, 0);
  int64_t zeroPoint = std::clamp<int64_t>(std::llround(-lo / scale), 0, 255);
  return perTensorType(f32, false, 8, scale, zeroPoint);
}

/// Bias correction: subtracts from the f32 constant bias of `product` the
/// mean error its quantized weight adds to each output channel, sum over
/// the reduction of (quantized - float weight) * the input channel's mean
/// (`means`, from calibration). Quantizing a weight shifts each output by
/// that much on average; the bias takes the shift back.
void correctBias(OpBuilder &b, Operation *product, ArrayRef<float> weights, ArrayRef<int64_t> shape,
                 const SymmetricWeights &levels, const WeightAxes &axes, ArrayRef<double> means) {
  OpOperand *bias = biasOperand(product);
  DenseElementsAttr biasValues;
  int64_t channels = shape[axes.channel];
  if (!bias || !matchPattern(bias->get(), m_Constant(&biasValues)) ||
      !biasValues.getElementType().isF32() || biasValues.getNumElements() != channels ||
      biasValues.getType().getShape().back() != channels)
    return;
  // A grouped convolution's channel f reads the input channels of its group.
  int64_t groups = 1;
  if (auto conv = dyn_cast<ConvOp>(product))
    groups = conv.getGroup();
  int64_t perGroup = channels / groups, groupWidth = shape[axes.reduction];
  if (static_cast<int64_t>(means.size()) != groups * groupWidth)
    return;
  SmallVector<double> shift(channels, 0.0);
  for (auto [linear, weight] : llvm::enumerate(weights)) {
    int64_t channel = indexAlong(linear, shape, axes.channel);
    int64_t input = channel / perGroup * groupWidth + indexAlong(linear, shape, axes.reduction);
    double quantized = static_cast<double>(levels.levels[linear]) * levels.scales[channel];
    shift[channel] += (quantized - static_cast<double>(weight)) * means[input];
  }
  SmallVector<float> corrected;
  for (auto [value, channelShift] : llvm::zip_equal(biasValues.getValues<float>(), shift))
    corrected.push_back(static_cast<float>(static_cast<double>(value) - channelShift));
  auto type = cast<RankedTensorType>(bias->get().getType());
  bias->set(ConstantOp::create(b, bias->get().getLoc(), type,
                               DenseElementsAttr::get(type, ArrayRef(corrected))));
}

/// The f32 constant weight of `product` as symmetric s8 per output channel
/// (with pairs that fit VPMADDUBSW if `fitPairs`), dequantized back to f32
/// for the product to read. With its input's channel means (calibration's),
/// the bias is corrected for the weight's quantization.
Value quantizeWeight(OpBuilder &b, Operation *product, DenseElementsAttr weight,
                     bool fitPairs) {
  auto type = cast<RankedTensorType>(weight.getType());
  SmallVector<float> values(weight.getValues<float>());
  WeightAxes axes{channelAxes(product).first, reductionAxis(product)};
  Type f32 = b.getF32Type();
  SymmetricWeights levels =
      quantizeSymmetric(values, type.getShape(), axes, fitPairs,
                        [&](double scale) { return roundToExpressed(f32, scale); });
  quant::QuantizedType quantized =
      perAxisType(f32, true, 8, levels.scales,
                  SmallVector<int64_t>(levels.scales.size(), 0), axes.channel);
  if (auto means = product->getAttrOfType<DenseF64ArrayAttr>(kInputChannelMeansAttr))
    correctBias(b, product, values, type.getShape(), levels, axes, means.asArrayRef());
  Location loc = product->getLoc();
  Value constant = quantizedConstant(b, loc, type.getShape(), quantized, levels.levels);
  return DequantizeOp::create(b, loc, type, constant);
}

/// Multiply-adds of `product` with its constant `weight`: each output
/// element sums the weight's elements of one output channel (0 when a shape
/// is dynamic).
int64_t multiplyAdds(Operation *product, RankedTensorType weight) {
  auto result = dyn_cast<RankedTensorType>(product->getResult(0).getType());
  if (!result || !result.hasStaticShape() || !weight.hasStaticShape())
    return 0;
  int64_t channels = weight.getDimSize(channelAxes(product).first);
  return result.getNumElements() * (weight.getNumElements() / std::max<int64_t>(channels, 1));
}

/// Whether `use` reads its value in float on purpose: an operand of a
/// product kept in float.
bool readsFloat(OpOperand &use) {
  Operation *user = use.getOwner();
  return isProduct(user) && user->hasAttr(kPrecisionAttr);
}

/// Quantizes `value` to `type` and gives its readers the dequantized value.
void quantizeValue(OpBuilder &b, Value value, quant::QuantizedType type) {
  Location loc = value.getLoc();
  auto tensor = cast<RankedTensorType>(value.getType());
  b.setInsertionPointAfterValue(value);
  Value quantized = QuantizeOp::create(b, loc, tensor.clone(type), value);
  Value dequantized = DequantizeOp::create(b, loc, tensor, quantized);
  value.replaceUsesWithIf(dequantized, [&](OpOperand &use) {
    return use.getOwner() != quantized.getDefiningOp() && !readsFloat(use);
  });
}

struct TesselInsertQuantizationPass
    : tessel::impl::TesselInsertQuantizationPassBase<TesselInsertQuantizationPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    OpBuilder b(&getContext());
    // The points are found before the weights change: a product whose
    // weight is already dequantized is no longer a float product.
    SmallVector<Value> points = quantizationPoints(function);
    SmallVector<Operation *> products;
    function.walk([&](Operation *op) {
      if (isQuantizableProduct(op) && calibratedRange(op->getOperand(0)))
        products.push_back(op);
    });
    struct WeightedProduct {
      Operation *product;
      DenseElementsAttr weight;
      int64_t work; // multiply-adds
    };
    SmallVector<WeightedProduct> weighted;
    int64_t totalWork = 0;
    for (Operation *product : products) {
      DenseElementsAttr weight;
      if (!matchPattern(product->getOperand(1), m_Constant(&weight)))
        continue;
      int64_t work = multiplyAdds(product, cast<RankedTensorType>(weight.getType()));
      weighted.push_back({product, weight, work});
      totalWork += work;
    }
    for (auto [product, weight, work] : weighted) {
      // A product with an unknown count does a share that may be large.
      bool fit =
          fitWeightPairs && (work == 0 || static_cast<double>(work) >= fitMinWorkShare * totalWork);
      b.setInsertionPoint(product);
      product->setOperand(1, quantizeWeight(b, product, weight, fit));
    }
    for (Value point : points) {
      std::optional<std::pair<double, double>> range = calibratedRange(point);
      if (!range)
        continue;
      quantizeValue(b, point,
                    activationType(&getContext(), range->first, range->second,
                                   signedActivations));
    }
    function.walk([](Operation *op) {
      op->removeAttr(kCalibratedRangeAttr);
      op->removeAttr(kInputChannelMeansAttr);
    });
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      function.removeArgAttr(i, kCalibratedRangeAttr);
  }
};

} // namespace
