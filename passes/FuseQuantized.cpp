//===- FuseQuantized.cpp - Quantized ops from dequantize/quantize pairs ---===//
//
// A quantized ONNX model (QDQ form, or Tessel's own quantization) computes
// in float between DequantizeLinear and QuantizeLinear nodes. This pass
// turns each such island into the quantized op it stands for, so that it
// runs in integers:
//
//   quantize(conv(dequantize(x), dequantize(w), dequantize(b)))   -> conv (quantized)
//   quantize(relu(matmul(dequantize(a), dequantize(b))))          -> relu(matmul)
//   quantize(add(dequantize(a), dequantize(b)))                   -> add (quantized)
//   max_pool(dequantize(x)), reshape(dequantize(x), ...)           -> dequantize(max_pool), ...
//   quantize(reshape(y)), quantize(max_pool(y)), ...               -> reshape(quantize(y)), ...
//   quantize(concat(dequantize(x), dequantize(y)))                -> concat, requantize
//   quantize(f(dequantize(x))), f elementwise, x 8-bit            -> lookup(x, table of f)
//   quantize(dequantize(x)) of other parameters                   -> requantize(x)
//   conv(dequantize(x), dequantize(w)) read as float               -> dequantize(conv: i32)
//
// Islands are fused in program order, so that a table of an inner
// activation is composed into the table of the chain around it (SiLU's
// sigmoid into x * sigmoid(x)). What stays float is left as it is. Then
// constant weights are stored signed with zero point 0 where they fit (the
// form whose zero-point terms leave a kernel's inner loop), and dequantized
// constants that float ops still read become float constants.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/EvaluateElementwise.h"
#include "passes/Passes.h"
#include "passes/QuantizedGraph.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

namespace tessel {
#define GEN_PASS_DEF_TESSELFUSEQUANTIZEDOPSPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

RankedTensorType tensorType(Value value) { return cast<RankedTensorType>(value.getType()); }

/// The per-tensor 8-bit quantized type of `type`, or null: what quantized
/// ops compute on.
quant::QuantizedType eightBitPerTensor(Type type) {
  quant::QuantizedType quantized = getQuantizedType(type);
  if (!quantized || quantizedAxis(quantized) || quantized.getStorageTypeIntegralWidth() != 8)
    return {};
  return quantized;
}

/// The quantized tensor that `value` dequantizes, or null.
Value dequantizedSource(Value value) {
  if (auto dequantize = value.getDefiningOp<DequantizeOp>())
    return dequantize.getInput();
  return {};
}

/// The value of a constant with one float element.
std::optional<double> scalarConstant(Value value) {
  DenseElementsAttr attr;
  if (!value || !matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1 ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}

//===----------------------------------------------------------------------===//
// Matrix products and convolutions
//===----------------------------------------------------------------------===//

/// The quantized operands of a float product whose operands are
/// dequantized: input per tensor, weight per tensor or per output channel,
/// the bias as an i32 tensor of scale input x weight.
struct ProductOperands {
  Value input, weight, bias;
  int64_t resultAxis;
};

/// The quantized operands of `product` (conv, matmul, gemm), or nullopt.
std::optional<ProductOperands> productOperands(OpBuilder &b, Operation *product) {
  Value input, weight, bias;
  if (auto conv = dyn_cast<ConvOp>(product)) {
    input = conv.getInput(), weight = conv.getWeight(), bias = conv.getBias();
  } else if (auto gemm = dyn_cast<GemmOp>(product)) {
    if (gemm.getAlpha().convertToDouble() != 1.0 ||
        (gemm.getC() && gemm.getBeta().convertToDouble() != 1.0))
      return std::nullopt;
    input = gemm.getA(), weight = gemm.getB(), bias = gemm.getC();
  } else if (auto matmul = dyn_cast<MatMulOp>(product)) {
    input = matmul.getLhs(), weight = matmul.getRhs();
  } else {
    return std::nullopt;
  }
  auto [weightAxis, resultAxis] = channelAxes(product);
  Value x = dequantizedSource(input), w = dequantizedSource(weight);
  if (!x || !w || !eightBitPerTensor(x.getType()))
    return std::nullopt;
  quant::QuantizedType weightType = getQuantizedType(w.getType());
  std::optional<int32_t> axis = quantizedAxis(weightType);
  if (weightType.getStorageTypeIntegralWidth() != 8 || (axis && *axis != weightAxis) ||
      weightType.getExpressedType() != getQuantizedType(x.getType()).getExpressedType())
    return std::nullopt;
  ProductOperands operands{x, w, Value(), resultAxis};
  if (bias) {
    operands.bias = quantizedBias(b, product->getLoc(), bias,
                                  accumulatorType(getQuantizedType(x.getType()), weightType, 0));
    if (!operands.bias)
      return std::nullopt;
  }
  return operands;
}

/// `product` computed on quantized operands with result element `element`.
Value quantizedProduct(OpBuilder &b, Operation *product, const ProductOperands &operands,
                       Type element) {
  Location loc = product->getLoc();
  auto type = cast<RankedTensorType>(product->getResult(0).getType()).clone(element);
  if (auto conv = dyn_cast<ConvOp>(product))
    return ConvOp::create(b, loc, type, operands.input, operands.weight, operands.bias,
                          conv.getStrides(), conv.getPads(), conv.getDilations(),
                          conv.getGroup(), conv.getChannelsLast());
  if (auto gemm = dyn_cast<GemmOp>(product))
    return GemmOp::create(b, loc, type, operands.input, operands.weight, operands.bias,
                          gemm.getAlpha(), gemm.getBeta(), gemm.getTransA(), gemm.getTransB());
  return MatMulOp::create(b, loc, type, operands.input, operands.weight);
}

/// The relu and clip ops (with constant bounds) that `value` comes through,
/// each read only by the next, outermost first; `value` becomes what the
/// innermost reads.
SmallVector<Operation *> peelActivations(Value &value) {
  SmallVector<Operation *> activations;
  while (Operation *op = value.getDefiningOp()) {
    if (!op->hasOneUse())
      break;
    if (auto clip = dyn_cast<ClipOp>(op)) {
      if ((clip.getMin() && !scalarConstant(clip.getMin())) ||
          (clip.getMax() && !scalarConstant(clip.getMax())))
        break;
    } else if (!isa<ReluOp>(op)) {
      break;
    }
    activations.push_back(op);
    value = op->getOperand(0);
  }
  return activations;
}

/// quantize(activations(product(dequantize...))) -> activations(product),
/// the product quantized to the result's type and each relu or clip
/// applied to it (exact: quantization is monotone, so clamping commutes
/// with it).
LogicalResult fuseProduct(RewriterBase &rewriter, QuantizeOp quantize) {
  quant::QuantizedType result = eightBitPerTensor(quantize.getType());
  if (!result)
    return failure();
  Value value = quantize.getInput();
  SmallVector<Operation *> activations = peelActivations(value);
  Operation *product = value.getDefiningOp();
  if (!isProduct(product) || !product->hasOneUse())
    return failure();
  rewriter.setInsertionPoint(quantize);
  std::optional<ProductOperands> operands = productOperands(rewriter, product);
  if (!operands)
    return failure();
  Value fused = quantizedProduct(rewriter, product, *operands, result);
  Location loc = quantize.getLoc();
  auto bound = [&](Value real) -> Value {
    if (!real)
      return {};
    return quantizedConstant(rewriter, loc, {}, result,
                             quantizeScalar(*scalarConstant(real), result));
  };
  for (Operation *activation : llvm::reverse(activations)) {
    if (auto clip = dyn_cast<ClipOp>(activation))
      fused = ClipOp::create(rewriter, loc, fused.getType(), fused, bound(clip.getMin()),
                             bound(clip.getMax()));
    else
      fused = ReluOp::create(rewriter, loc, fused);
  }
  rewriter.replaceOp(quantize, fused);
  return success();
}

/// Whether `product`'s result is quantized after it (perhaps through
/// activations), which fuseProduct handles.
bool isQuantizedAfter(Operation *product) {
  if (!product->hasOneUse())
    return false;
  Operation *user = *product->user_begin();
  while (isa<ReluOp, ClipOp>(user)) {
    if (!user->hasOneUse())
      return false;
    user = *user->user_begin();
  }
  return isa<QuantizeOp>(user);
}

/// product(dequantize(x), dequantize(w)) read as float -> dequantize of the
/// product's i32 accumulator: exact integer accumulation where the float
/// product would round.
LogicalResult fuseProductToAccumulator(RewriterBase &rewriter, Operation *product) {
  if (isQuantizedAfter(product))
    return failure();
  rewriter.setInsertionPoint(product);
  std::optional<ProductOperands> operands = productOperands(rewriter, product);
  if (!operands)
    return failure();
  quant::QuantizedType accumulator =
      accumulatorType(getQuantizedType(operands->input.getType()),
                      getQuantizedType(operands->weight.getType()), operands->resultAxis);
  Value sums = quantizedProduct(rewriter, product, *operands, accumulator);
  rewriter.replaceOpWithNewOp<DequantizeOp>(product, product->getResult(0).getType(), sums);
  return success();
}

//===----------------------------------------------------------------------===//
// Arithmetic, pooling and data movement
//===----------------------------------------------------------------------===//

/// `value` (quantized) requantized to `type` unless it has it.
Value requantizeTo(OpBuilder &b, Location loc, Value value, quant::QuantizedType type) {
  auto tensor = tensorType(value);
  if (tensor.getElementType() == type)
    return value;
  return RequantizeOp::create(b, loc, tensor.clone(type), value);
}

/// quantize(add | sub | mul(dequantize(a), dequantize(b))) -> the op on a, b.
LogicalResult fuseArithmetic(RewriterBase &rewriter, QuantizeOp quantize) {
  quant::QuantizedType result = eightBitPerTensor(quantize.getType());
  Operation *op = quantize.getInput().getDefiningOp();
  if (!result || !isa_and_present<AddOp, SubOp, MulOp>(op) || !op->hasOneUse())
    return failure();
  Value lhs = dequantizedSource(op->getOperand(0)), rhs = dequantizedSource(op->getOperand(1));
  if (!lhs || !rhs || !eightBitPerTensor(lhs.getType()) || !eightBitPerTensor(rhs.getType()))
    return failure();
  rewriter.setInsertionPoint(quantize);
  Operation *fused = rewriter.clone(*op);
  fused->setOperands({lhs, rhs});
  fused->getResult(0).setType(quantize.getType());
  rewriter.replaceOp(quantize, fused->getResults());
  return success();
}

/// quantize(average(dequantize(x))) -> average(x), requantized.
LogicalResult fuseAveragePool(RewriterBase &rewriter, QuantizeOp quantize) {
  quant::QuantizedType result = eightBitPerTensor(quantize.getType());
  Operation *op = quantize.getInput().getDefiningOp();
  if (!result || !isa_and_present<AveragePoolOp, GlobalAveragePoolOp>(op) || !op->hasOneUse())
    return failure();
  Value input = dequantizedSource(op->getOperand(0));
  if (!input || !eightBitPerTensor(input.getType()))
    return failure();
  rewriter.setInsertionPoint(quantize);
  Operation *fused = rewriter.clone(*op);
  fused->setOperand(0, input);
  fused->getResult(0).setType(quantize.getType());
  rewriter.replaceOp(quantize, fused->getResults());
  return success();
}

/// Ops that pick input elements by position alone (max pooling by
/// comparing them, which a dequantization's positive scale preserves):
/// they give the same elements before dequantization as after.
bool commutesWithDequantize(Operation *op) {
  return isa<MaxPoolOp, ReshapeOp, FlattenOp, TransposeOp, SliceOp, ExpandOp, GatherOp>(op);
}

/// op(dequantize(x)) -> dequantize(op(x)) for an op that commutes with
/// dequantization and an 8-bit x, so that a chain of them (a pool, then a
/// flatten; a weight's transpose) reaches the next quantize or product
/// with the integers.
LogicalResult sinkDequantize(RewriterBase &rewriter, Operation *op) {
  auto dequantize = op->getOperand(0).getDefiningOp<DequantizeOp>();
  if (!dequantize || !eightBitPerTensor(dequantize.getInput().getType()))
    return failure();
  rewriter.setInsertionPoint(op);
  Operation *moved = rewriter.clone(*op);
  moved->setOperand(0, dequantize.getInput());
  Type resultType = op->getResult(0).getType();
  moved->getResult(0).setType(cast<RankedTensorType>(resultType)
                                  .clone(getElementTypeOrSelf(dequantize.getInput().getType())));
  rewriter.replaceOp(
      op, DequantizeOp::create(rewriter, op->getLoc(), resultType, moved->getResult(0)));
  return success();
}

/// quantize(op(y)) -> op(quantize(y)) for an op that commutes with
/// quantization (elementwise and never decreasing, it maps 0 to the zero
/// point, so relu(y) quantizes to max(q(y), zero point)) and that only the
/// quantize reads, so that the quantize reaches what computes y (an
/// average pool before a flatten, a residual add before its relu). The
/// hoisted quantize, or null.
QuantizeOp hoistQuantize(RewriterBase &rewriter, QuantizeOp quantize) {
  Operation *op = quantize.getInput().getDefiningOp();
  if (!op || !(commutesWithDequantize(op) || isa<ReluOp>(op)) || !op->hasOneUse())
    return {};
  Value input = op->getOperand(0);
  auto inputType = cast<RankedTensorType>(input.getType());
  rewriter.setInsertionPoint(op);
  auto hoisted = QuantizeOp::create(rewriter, quantize.getLoc(),
                                    inputType.clone(quantize.getType().getElementType()), input);
  Operation *moved = rewriter.clone(*op);
  moved->setOperand(0, hoisted);
  moved->getResult(0).setType(quantize.getType());
  rewriter.replaceOp(quantize, moved->getResults());
  rewriter.eraseOp(op);
  return hoisted;
}

/// quantize(pad(dequantize(x))) and quantize(concat(dequantize(x)...)) ->
/// the op on x..., requantized. A concatenation requantizes each input
/// straight to the result's quantization, so that every element is rounded
/// once, as ONNX rounds it (through the first input's quantization, the
/// others were rounded twice and differed by a step). A pad keeps its
/// input's quantization, in which its value must be exact, and the padded
/// tensor is requantized once.
LogicalResult fuseMovement(RewriterBase &rewriter, QuantizeOp quantize) {
  quant::QuantizedType result = eightBitPerTensor(quantize.getType());
  Operation *op = quantize.getInput().getDefiningOp();
  if (!result || !isa_and_present<PadOp, ConcatOp>(op) || !op->hasOneUse())
    return failure();
  // The operands that carry data: all of a concatenation's, a pad's first
  // (its value stays).
  unsigned dataOperands = isa<ConcatOp>(op) ? op->getNumOperands() : 1;
  SmallVector<Value> sources;
  for (unsigned i = 0; i < dataOperands; ++i) {
    Value source = dequantizedSource(op->getOperand(i));
    if (!source || !eightBitPerTensor(source.getType()))
      return failure();
    sources.push_back(source);
  }
  quant::QuantizedType type =
      isa<ConcatOp>(op) ? result : getQuantizedType(sources.front().getType());
  rewriter.setInsertionPoint(quantize);
  Location loc = quantize.getLoc();
  Value padValue;
  if (auto pad = dyn_cast<PadOp>(op)) {
    std::optional<double> value = scalarConstant(pad.getValue());
    if (!value)
      return failure();
    int64_t stored = quantizeScalar(*value, type);
    QuantParams params = quantParams(type);
    if ((stored - params.zeroPoint) * params.scale != *value)
      return failure();
    padValue = quantizedConstant(rewriter, loc, tensorType(pad.getValue()).getShape(), type,
                                 stored);
  }
  // Requantized before the clone, which reads them.
  SmallVector<Value> operands;
  for (Value source : sources)
    operands.push_back(requantizeTo(rewriter, loc, source, type));
  Operation *fused = rewriter.clone(*op);
  for (auto [i, operand] : llvm::enumerate(operands))
    fused->setOperand(i, operand);
  if (padValue)
    fused->setOperand(1, padValue);
  fused->getResult(0).setType(quantize.getType().clone(type));
  rewriter.replaceOp(quantize, requantizeTo(rewriter, loc, fused->getResult(0), result));
  return success();
}

/// quantize(dequantize(x)) -> x, or requantize(x) for other parameters.
LogicalResult fuseRequantize(RewriterBase &rewriter, QuantizeOp quantize) {
  Value source = dequantizedSource(quantize.getInput());
  if (!source)
    return failure();
  rewriter.setInsertionPoint(quantize);
  rewriter.replaceOp(quantize, requantizeTo(rewriter, quantize.getLoc(), source,
                                            getQuantizedType(quantize.getType())));
  return success();
}

/// quantize(relu(dequantize(x))) -> relu(x), requantized: exact, since
/// dequantize(max(x, x_zp)) = max(dequantize(x), 0).
LogicalResult fuseRelu(RewriterBase &rewriter, QuantizeOp quantize) {
  quant::QuantizedType result = eightBitPerTensor(quantize.getType());
  auto relu = quantize.getInput().getDefiningOp<ReluOp>();
  if (!result || !relu || !relu->hasOneUse())
    return failure();
  Value source = dequantizedSource(relu.getInput());
  if (!source || !eightBitPerTensor(source.getType()))
    return failure();
  rewriter.setInsertionPoint(quantize);
  Value fused = ReluOp::create(rewriter, relu.getLoc(), source);
  rewriter.replaceOp(quantize, requantizeTo(rewriter, quantize.getLoc(), fused, result));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise functions of one tensor as tables
//===----------------------------------------------------------------------===//

/// A chain of elementwise ops computing a function of one 8-bit quantized
/// tensor, ending in a quantization: every value in it has the input's
/// shape, and every operand is in the chain, the input, or a constant of
/// one element.
struct ElementwiseChain {
  Value input;
  SmallVector<Operation *> ops; // in program order, the quantize last
};

bool isEvaluable(Operation *op) {
  return op->hasTrait<ElementwiseMap>() && op->getNumResults() == 1;
}

std::optional<ElementwiseChain> elementwiseChain(QuantizeOp root) {
  constexpr size_t kMaxOps = 64;
  ArrayRef<int64_t> shape = root.getType().getShape();
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<Value> leaves;
  SmallVector<Operation *> worklist{root};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    // An op that two others read (the x of x * sigmoid(x)) is visited once.
    if (!ops.insert(op))
      continue;
    if (ops.size() > kMaxOps || !isEvaluable(op) ||
        tensorType(op->getResult(0)).getShape() != shape)
      return std::nullopt;
    for (OpOperand &use : op->getOpOperands()) {
      Value operand = use.get();
      // A lookup's table is data, not an elementwise operand.
      if (!readsElementwise(op, use.getOperandNumber()) ||
          (matchPattern(operand, m_Constant()) && tensorType(operand).getNumElements() == 1))
        continue;
      // The input is what a dequantization reads; lookups compose.
      if (isa<DequantizeOp>(op) && !operand.getDefiningOp<LookupOp>()) {
        leaves.insert(operand);
        continue;
      }
      if (isa<LookupOp>(op) && !operand.getDefiningOp<LookupOp>()) {
        leaves.insert(operand);
        continue;
      }
      Operation *producer = operand.getDefiningOp();
      if (!producer)
        return std::nullopt;
      worklist.push_back(producer);
    }
  }
  if (leaves.size() != 1 || !eightBitPerTensor(leaves.front().getType()) || ops.size() < 2)
    return std::nullopt;
  SmallVector<Operation *> ordered(ops.begin(), ops.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ElementwiseChain{leaves.front(), ordered};
}

/// The value of `chain` at every storage value of its input, or nullopt if
/// an op cannot be evaluated.
std::optional<SmallVector<int64_t>> tabulate(const ElementwiseChain &chain) {
  quant::QuantizedType input = getQuantizedType(chain.input.getType());
  SmallVector<int64_t> table;
  for (int64_t stored = input.getStorageTypeMin(); stored <= input.getStorageTypeMax();
       ++stored) {
    DenseMap<Value, float> values;
    values[chain.input] = static_cast<float>(stored);
    for (Operation *op : chain.ops) {
      SmallVector<float> operands;
      for (Value operand : op->getOperands()) {
        if (auto it = values.find(operand); it != values.end()) {
          operands.push_back(it->second);
        } else if (std::optional<double> constant = scalarConstant(operand)) {
          operands.push_back(static_cast<float>(*constant));
        } else {
          operands.push_back(0.0f); // a lookup's table, read below
        }
      }
      std::optional<float> result;
      if (auto lookup = dyn_cast<LookupOp>(op)) {
        DenseElementsAttr entries;
        if (!matchPattern(lookup.getTable(), m_Constant(&entries)))
          return std::nullopt;
        quant::QuantizedType from = getQuantizedType(lookup.getInput().getType());
        APInt entry = entries.getValues<APInt>()[static_cast<int64_t>(operands[0]) -
                                                 from.getStorageTypeMin()];
        result = getQuantizedType(lookup.getType()).isSigned() ? entry.getSExtValue()
                                                                : entry.getZExtValue();
      } else {
        result = evaluateElementwise(op, operands);
      }
      if (!result)
        return std::nullopt;
      values[op->getResult(0)] = *result;
    }
    table.push_back(static_cast<int64_t>(values[chain.ops.back()->getResult(0)]));
  }
  return table;
}

/// quantize(f(dequantize(x))), f a chain of elementwise ops of x alone ->
/// lookup(x, table of f).
LogicalResult fuseTable(RewriterBase &rewriter, QuantizeOp quantize) {
  quant::QuantizedType result = eightBitPerTensor(quantize.getType());
  if (!result)
    return failure();
  std::optional<ElementwiseChain> chain = elementwiseChain(quantize);
  if (!chain)
    return failure();
  std::optional<SmallVector<int64_t>> table = tabulate(*chain);
  if (!table)
    return failure();
  rewriter.setInsertionPoint(quantize);
  Value entries = quantizedConstant(rewriter, quantize.getLoc(),
                                    {static_cast<int64_t>(table->size())}, result, *table);
  rewriter.replaceOpWithNewOp<LookupOp>(quantize, quantize.getType(), chain->input, entries);
  return success();
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// A constant weight of a quantized product stored signed with zero point
/// 0: the same real values, w - w_zp, when they fit in i8.
template <typename OpTy>
struct CentreConstantWeight : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    if (!isQuantized(op.getType()))
      return failure();
    OpOperand &weight = op->getOpOperand(1);
    quant::QuantizedType type = getQuantizedType(weight.get().getType());
    DenseElementsAttr attr;
    if (!matchPattern(weight.get(), m_Constant(&attr)))
      return failure();
    bool centred = type.isSigned();
    for (int64_t channel = 0; channel < quantChannelCount(type); ++channel)
      centred &= quantParams(type, channel).zeroPoint == 0;
    if (centred)
      return failure();
    RankedTensorType tensor = tensorType(weight.get());
    std::optional<int32_t> axis = quantizedAxis(type);
    SmallVector<int64_t> values;
    int64_t stride = 1;
    if (axis)
      for (int64_t i = tensor.getRank() - 1; i > *axis; --i)
        stride *= tensor.getDimSize(i);
    for (auto [linear, value] : llvm::enumerate(attr.getValues<APInt>())) {
      int64_t channel = axis ? (linear / stride) % tensor.getDimSize(*axis) : 0;
      int64_t real = (type.isSigned() ? value.getSExtValue() : int64_t(value.getZExtValue())) -
                     quantParams(type, channel).zeroPoint;
      if (real < -128 || real > 127)
        return failure();
      values.push_back(real);
    }
    SmallVector<double> scales;
    for (int64_t channel = 0; channel < quantChannelCount(type); ++channel)
      scales.push_back(quantParams(type, channel).scale);
    quant::QuantizedType centredType =
        axis ? quant::QuantizedType(perAxisType(type.getExpressedType(), true, 8, scales,
                                                SmallVector<int64_t>(scales.size(), 0), *axis))
             : quant::QuantizedType(
                   perTensorType(type.getExpressedType(), true, 8, scales.front(), 0));
    Value centredWeight =
        quantizedConstant(rewriter, op.getLoc(), tensor.getShape(), centredType, values);
    rewriter.modifyOpInPlace(op, [&] { weight.set(centredWeight); });
    return success();
  }
};

/// dequantize(constant) that a float op reads -> a float constant.
struct DequantizeConstant : OpRewritePattern<DequantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DequantizeOp op, PatternRewriter &rewriter) const override {
    DenseElementsAttr attr;
    if (!matchPattern(op.getInput(), m_Constant(&attr)) || !op.getType().hasStaticShape())
      return failure();
    quant::QuantizedType type = getQuantizedType(op.getInput().getType());
    RankedTensorType tensor = op.getInput().getType();
    auto real = cast<FloatType>(op.getType().getElementType());
    std::optional<int32_t> axis = quantizedAxis(type);
    int64_t stride = 1;
    if (axis)
      for (int64_t i = tensor.getRank() - 1; i > *axis; --i)
        stride *= tensor.getDimSize(i);
    SmallVector<APFloat> values;
    for (auto [linear, value] : llvm::enumerate(attr.getValues<APInt>())) {
      int64_t channel = axis ? (linear / stride) % tensor.getDimSize(*axis) : 0;
      QuantParams params = quantParams(type, channel);
      int64_t stored = type.isSigned() ? value.getSExtValue() : int64_t(value.getZExtValue());
      // (q - zero point) * scale in f32, as DequantizeLinear computes.
      float result = static_cast<float>(stored - params.zeroPoint) *
                     static_cast<float>(params.scale);
      APFloat element(result);
      bool losesInfo;
      element.convert(real.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
      values.push_back(element);
    }
    rewriter.replaceOpWithNewOp<ConstantOp>(op, DenseElementsAttr::get(op.getType(), values));
    return success();
  }
};

/// Fuses the island that `quantize` ends into an integer op, the cheapest
/// form first (a table is the most general).
bool fuseIsland(RewriterBase &rewriter, QuantizeOp quantize) {
  return succeeded(fuseProduct(rewriter, quantize)) ||
         succeeded(fuseRequantize(rewriter, quantize)) ||
         succeeded(fuseRelu(rewriter, quantize)) || succeeded(fuseTable(rewriter, quantize)) ||
         succeeded(fuseArithmetic(rewriter, quantize)) ||
         succeeded(fuseAveragePool(rewriter, quantize)) ||
         succeeded(fuseMovement(rewriter, quantize));
}

struct TesselFuseQuantizedOpsPass
    : impl::TesselFuseQuantizedOpsPassBase<TesselFuseQuantizedOpsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Islands in program order: an inner activation's table exists when
    // the chain around it is tabulated.
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<QuantizeOp>(op) || isProduct(op) || commutesWithDequantize(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (isProduct(op)) {
        (void)fuseProductToAccumulator(rewriter, op);
        continue;
      }
      if (commutesWithDequantize(op)) {
        (void)sinkDequantize(rewriter, op);
        continue;
      }
      // When nothing fuses, the quantize rises through an op that
      // commutes with it and fusion is tried again.
      auto quantize = cast<QuantizeOp>(op);
      while (quantize && !fuseIsland(rewriter, quantize))
        quantize = hoistQuantize(rewriter, quantize);
    }

    RewritePatternSet patterns(&getContext());
    patterns.add<CentreConstantWeight<ConvOp>, CentreConstantWeight<MatMulOp>,
                 CentreConstantWeight<GemmOp>, DequantizeConstant>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel
