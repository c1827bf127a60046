//===- Layers.cpp - The kernels the NPU runs, recognized ------------------===//

#include "targets/npu/Layers.h"

#include "dialects/tessel/TesselDialect.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace tessel::npu {

namespace {

/// The largest value of a 4-bit window field of the ISA.
constexpr int64_t kMaxWindowField = 15;

using Reason = std::string;

/// The 8-bit per-tensor quantization of `type`'s elements, or why not.
std::variant<Activation, Reason> activationOf(Type type, const char *role) {
  quant::QuantizedType quantized = getQuantizedType(type);
  auto uniform = dyn_cast_or_null<quant::UniformQuantizedType>(quantized);
  if (!uniform || uniform.getStorageTypeIntegralWidth() != 8)
    return Reason(llvm::formatv("its {0} is not an 8-bit per-tensor quantized tensor", role));
  if (!uniform.getExpressedType().isF32())
    return Reason(llvm::formatv("its {0}'s scale is not f32", role));
  return Activation{uniform.getScale(), uniform.getZeroPoint(), !uniform.isSigned()};
}

/// A tile's input rows are those its windows reach inside the image: a
/// window that reaches only padding rows has none to load.
std::optional<Reason> rowsOnlyPadding(int64_t kh, int64_t dh, int64_t padTop, int64_t padBottom) {
  int64_t extent = (kh - 1) * dh + 1;
  if (padTop >= extent || padBottom >= extent)
    return Reason("its padding is as tall as its dilated window: some output rows see only "
                  "padding");
  return std::nullopt;
}

/// The value of `value`: a constant in the kernel, or the constant the
/// host passes for it.
ElementsAttr constantValue(Value value, const ConstantOf &constantOf) {
  if (auto constant = value.getDefiningOp<ConstantOp>())
    return constant.getValue();
  if (isa<BlockArgument>(value))
    return constantOf(value);
  return {};
}

/// Reads the 8-bit weights of a product (scales per filter along
/// `filterAxis`) into `layer` minus their zero points, or says why not.
/// The array multiplies raw bytes: a zero point is subtracted here, at
/// compile time, which is exact.
std::optional<Reason> readWeights(Value weight, int64_t filterAxis, const ConstantOf &constantOf,
                                  ProductLayer &layer) {
  quant::QuantizedType type = getQuantizedType(weight.getType());
  if (!type || type.getStorageTypeIntegralWidth() != 8)
    return Reason("its weights are not 8-bit quantized");
  std::optional<int32_t> axis = quantizedAxis(type);
  if (axis && *axis != filterAxis)
    return Reason("its weights are quantized along another axis than the filters");
  ElementsAttr values = constantValue(weight, constantOf);
  if (!values)
    return Reason("its weights are not constant");
  // The filter axis is the last of both layouts (HWCF, K x N).
  layer.weights.clear();
  int64_t index = 0;
  for (APInt value : values.getValues<APInt>()) {
    int64_t filter = index++ % layer.F;
    int64_t stored = type.isSigned() ? value.getSExtValue() : int64_t(value.getZExtValue());
    layer.weights.push_back(int16_t(stored - quantParams(type, axis ? filter : 0).zeroPoint));
  }
  layer.weightScales.assign(layer.F, quantParams(type, 0).scale);
  if (axis)
    for (int64_t f = 0; f < layer.F; ++f)
      layer.weightScales[f] = quantParams(type, f).scale;
  return std::nullopt;
}

std::optional<Reason> readBias(Value bias, const ConstantOf &constantOf, ProductLayer &layer) {
  layer.bias.assign(layer.F, 0);
  if (!bias)
    return std::nullopt;
  ElementsAttr values = constantValue(bias, constantOf);
  if (!values || values.getNumElements() != layer.F)
    return Reason("its bias is not a constant of one value per filter");
  int64_t f = 0;
  for (APInt value : values.getValues<APInt>())
    layer.bias[f++] = int32_t(value.getSExtValue());
  return std::nullopt;
}

/// The activations, weights (along `filterAxis`) and bias of a product
/// layer whose shape `layer` holds.
std::optional<Reason> readProduct(Type input, const char *inputRole, RankedTensorType result,
                                  Value weight, int64_t filterAxis, Value bias,
                                  const ConstantOf &constantOf, ProductLayer &layer) {
  auto inputActivation = activationOf(input, inputRole);
  if (auto *reason = std::get_if<Reason>(&inputActivation))
    return *reason;
  layer.input = std::get<Activation>(inputActivation);
  auto outputActivation = activationOf(result, "result");
  if (auto *reason = std::get_if<Reason>(&outputActivation))
    return *reason;
  layer.output = std::get<Activation>(outputActivation);
  layer.expressed = getQuantizedType(result).getExpressedType();
  if (std::optional<Reason> reason = readWeights(weight, filterAxis, constantOf, layer))
    return *reason;
  return readBias(bias, constantOf, layer);
}

std::variant<Layer, Reason> recognizeConv(ConvOp conv, const ConstantOf &constantOf) {
  auto input = cast<RankedTensorType>(conv.getInput().getType());
  auto weight = cast<RankedTensorType>(conv.getWeight().getType());
  auto result = cast<RankedTensorType>(conv.getType());
  if (!conv.getChannelsLast() || input.getRank() != 4)
    return Reason("it is not a 2-D convolution in channels-last layout");
  ProductLayer layer;
  layer.batch = input.getDimSize(0);
  layer.H = input.getDimSize(1), layer.W = input.getDimSize(2), layer.C = input.getDimSize(3);
  layer.kh = weight.getDimSize(0), layer.kw = weight.getDimSize(1), layer.F = weight.getDimSize(3);
  layer.isDepthwise =
      conv.getGroup() > 1 && int64_t(conv.getGroup()) == layer.C && layer.F == layer.C;
  if (conv.getGroup() != 1 && !layer.isDepthwise)
    return Reason("it is a grouped convolution, or a depthwise one of several filters per "
                  "channel, which the NPU target does not lower");
  layer.Ho = result.getDimSize(1), layer.Wo = result.getDimSize(2);
  ArrayRef<int64_t> strides = conv.getStrides(), dilations = conv.getDilations(),
                    pads = conv.getPads();
  layer.sh = strides[0], layer.sw = strides[1], layer.dh = dilations[0], layer.dw = dilations[1];
  layer.padTop = pads[0], layer.padLeft = pads[1], layer.padBottom = pads[2],
  layer.padRight = pads[3];
  for (int64_t field : {layer.kh, layer.kw, layer.sh, layer.sw, layer.dh, layer.dw,
                        layer.padTop, layer.padLeft})
    if (field > kMaxWindowField)
      return Reason("its kernel, strides, dilations or padding exceed the NPU's 4-bit fields");
  for (int64_t extent : {layer.H, layer.W, layer.C, layer.Wo})
    if (extent > 4095)
      return Reason("its extents exceed the NPU's 12-bit tile fields");
  if (std::optional<Reason> reason = rowsOnlyPadding(layer.kh, layer.dh, layer.padTop,
                                                     layer.padBottom))
    return *reason;
  if (std::optional<Reason> reason = readProduct(input, "input", result, conv.getWeight(), 3,
                                                 conv.getBias(), constantOf, layer))
    return *reason;
  return Layer(std::move(layer));
}

/// A[M, K] x B[K, N] (+ bias) with a constant B: the product layer of a
/// 1 x M image of K channels and a 1 x 1 kernel. A[b, M, K] x B[K, N] is
/// the product of A's b * M rows; A[b, M, K] x B[b, K, N] a batch of b
/// products, each with its own weights.
std::variant<Layer, Reason> recognizeMatrixProduct(Operation *op, Value lhs, Value rhs,
                                                   Value bias, const ConstantOf &constantOf) {
  auto a = cast<RankedTensorType>(lhs.getType());
  auto b = cast<RankedTensorType>(rhs.getType());
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  bool rowsOfA = b.getRank() == 2 && (a.getRank() == 2 || a.getRank() == 3);
  bool batched = a.getRank() == 3 && b.getRank() == 3 && a.getDimSize(0) == b.getDimSize(0);
  if (!rowsOfA && !batched)
    return Reason("it is not a product of matrices, or a batch of them with a weight matrix "
                  "each");
  ProductLayer layer;
  layer.isMatrixProduct = true;
  layer.batch = batched ? a.getDimSize(0) : 1;
  layer.weightsPerProduct = batched;
  layer.W = layer.Wo = a.getNumElements() / a.getShape().back() / layer.batch;
  layer.C = a.getShape().back();
  layer.F = b.getShape().back();
  if (std::optional<Reason> reason = readProduct(a, "left operand", result, rhs, b.getRank() - 1,
                                                 bias, constantOf, layer))
    return *reason;
  return Layer(std::move(layer));
}

std::variant<Layer, Reason> recognizeMaxPool(MaxPoolOp pool) {
  auto input = cast<RankedTensorType>(pool.getInput().getType());
  auto result = cast<RankedTensorType>(pool.getType());
  if (!pool.getChannelsLast() || input.getRank() != 4)
    return Reason("it is not a 2-D channels-last pooling");
  quant::QuantizedType quantized = getQuantizedType(input);
  if (!quantized || quantized.getStorageTypeIntegralWidth() != 8)
    return Reason("it pools no 8-bit quantized tensor");
  PoolLayer layer;
  layer.batch = input.getDimSize(0);
  layer.H = input.getDimSize(1), layer.W = input.getDimSize(2), layer.C = input.getDimSize(3);
  layer.Ho = result.getDimSize(1), layer.Wo = result.getDimSize(2);
  ArrayRef<int64_t> kernel = pool.getKernelShape(), strides = pool.getStrides(),
                    dilations = pool.getDilations(), pads = pool.getPads();
  layer.kh = kernel[0], layer.kw = kernel[1], layer.sh = strides[0], layer.sw = strides[1];
  layer.dh = dilations[0], layer.dw = dilations[1], layer.padTop = pads[0],
  layer.padLeft = pads[1];
  for (int64_t field : {layer.kh, layer.kw, layer.sh, layer.sw, layer.dh, layer.dw,
                        layer.padTop, layer.padLeft})
    if (field > kMaxWindowField)
      return Reason("its window exceeds the NPU's 4-bit fields");
  for (int64_t extent : {layer.H, layer.W, layer.C, layer.Ho, layer.Wo})
    if (extent > 4095)
      return Reason("its extents exceed the NPU's 12-bit tile fields");
  if (std::optional<Reason> reason = rowsOnlyPadding(layer.kh, layer.dh, layer.padTop, pads[2]))
    return *reason;
  layer.isUnsigned = !quantized.isSigned();
  return Layer(layer);
}

std::variant<Layer, Reason> recognizeAdd(AddOp add) {
  auto type = cast<RankedTensorType>(add.getType());
  // The operands' quantizations may differ: ADD rescales each of them.
  for (Value operand : {add.getLhs(), add.getRhs()})
    if (cast<RankedTensorType>(operand.getType()).getShape() != type.getShape())
      return Reason("it broadcasts an operand to the result's shape");
  AddLayer layer;
  layer.count = type.getNumElements();
  auto a = activationOf(add.getLhs().getType(), "first operand");
  auto b = activationOf(add.getRhs().getType(), "second operand");
  auto output = activationOf(type, "result");
  for (auto *activation : {&a, &b, &output})
    if (auto *reason = std::get_if<Reason>(activation))
      return *reason;
  layer.a = std::get<Activation>(a), layer.b = std::get<Activation>(b);
  layer.output = std::get<Activation>(output);
  if (layer.count >= (int64_t(1) << 24))
    return Reason("it adds more elements than one ADD instruction counts");
  return Layer(layer);
}

/// The stored value of a Clip's bound: a constant quantized scalar.
std::optional<int64_t> storedBound(Value bound, const ConstantOf &constantOf) {
  ElementsAttr value = constantValue(bound, constantOf);
  quant::QuantizedType type = getQuantizedType(bound.getType());
  if (!value || !type || value.getNumElements() != 1)
    return std::nullopt;
  APInt stored = *value.getValues<APInt>().begin();
  return type.isSigned() ? stored.getSExtValue() : int64_t(stored.getZExtValue());
}

/// The bounds `op` (a ReLU or Clip of the layer's quantized result) puts on
/// the stored result. A quantized Clip compares stored values with its
/// bounds', of the same type, so POST's clamp computes it exactly.
std::variant<Epilogue, Reason> epilogueOf(Operation *op, const ConstantOf &constantOf) {
  Epilogue epilogue;
  auto output = activationOf(op->getResult(0).getType(), "result");
  if (auto *reason = std::get_if<Reason>(&output))
    return *reason;
  if (isa<ReluOp>(op)) {
    epilogue.lowest = std::get<Activation>(output).zeroPoint;
    return epilogue;
  }
  auto clip = dyn_cast<ClipOp>(op);
  if (!clip)
    return Reason("'" + op->getName().getStringRef().str() +
                  "' after a layer has no NPU instruction");
  for (auto [bound, stored] : {std::pair{clip.getMin(), &epilogue.lowest},
                               std::pair{clip.getMax(), &epilogue.highest}}) {
    if (!bound)
      continue;
    *stored = storedBound(bound, constantOf);
    if (!*stored)
      return Reason("its clip's bounds are not constant");
  }
  if (epilogue.lowest && epilogue.highest && *epilogue.lowest > *epilogue.highest)
    return Reason("its clip's lower bound is above its upper bound");
  return epilogue;
}

} // namespace

std::variant<Layer, std::string> recognizeLayer(func::FuncOp kernel,
                                                const ConstantOf &constantOf) {
  SmallVector<Operation *> ops;
  for (Operation &op : kernel.front().without_terminator())
    if (!isa<ConstantOp>(op))
      ops.push_back(&op);
  if (ops.empty())
    return Reason("it computes nothing");
  // One layer, then optionally a ReLU or Clip of its result.
  std::optional<Epilogue> epilogue;
  if (ops.size() == 2 && ops[1]->getOperand(0) == ops[0]->getResult(0)) {
    std::variant<Epilogue, Reason> bounds = epilogueOf(ops[1], constantOf);
    if (auto *reason = std::get_if<Reason>(&bounds))
      return *reason;
    epilogue = std::get<Epilogue>(bounds);
    ops.pop_back();
  }
  if (ops.size() != 1) {
    std::string names;
    for (Operation *op : ops)
      names += (names.empty() ? "" : ", ") + op->getName().stripDialect().str();
    return Reason("the NPU runs one layer per kernel (with a ReLU or Clip after it); this "
                  "kernel computes " + names);
  }
  Operation *root = ops.front();
  std::variant<Layer, Reason> layer = Reason();
  if (auto conv = dyn_cast<ConvOp>(root))
    layer = recognizeConv(conv, constantOf);
  else if (auto gemm = dyn_cast<GemmOp>(root)) {
    if (gemm.getTransA() || gemm.getTransB() || gemm.getAlpha().convertToFloat() != 1.0f ||
        gemm.getBeta().convertToFloat() != 1.0f)
      return Reason("its gemm transposes or scales an operand");
    layer = recognizeMatrixProduct(gemm, gemm.getA(), gemm.getB(), gemm.getC(), constantOf);
  } else if (auto matmul = dyn_cast<MatMulOp>(root))
    layer = recognizeMatrixProduct(matmul, matmul.getLhs(), matmul.getRhs(), {}, constantOf);
  else if (auto pool = dyn_cast<MaxPoolOp>(root))
    layer = recognizeMaxPool(pool);
  else if (auto add = dyn_cast<AddOp>(root))
    layer = recognizeAdd(add);
  else
    return Reason("'" + root->getName().getStringRef().str() + "' has no NPU instruction");
  if (auto *reason = std::get_if<Reason>(&layer))
    return *reason;
  Layer recognized = std::get<Layer>(layer);
  if (epilogue) {
    if (auto *product = std::get_if<ProductLayer>(&recognized))
      product->epilogue = *epilogue;
    else if (auto *sum = std::get_if<AddLayer>(&recognized))
      sum->epilogue = *epilogue;
    else
      return Reason("a ReLU or Clip after a pooling has no NPU instruction");
  }
  return recognized;
}

SmallVector<BlockArgument> layerInputs(func::FuncOp kernel) {
  SmallVector<Value> inputs;
  for (Operation &op : kernel.front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (auto conv = dyn_cast<ConvOp>(op))
      inputs = {conv.getInput()};
    else if (auto gemm = dyn_cast<GemmOp>(op))
      inputs = {gemm.getA()};
    else if (auto matmul = dyn_cast<MatMulOp>(op))
      inputs = {matmul.getLhs()};
    else if (auto pool = dyn_cast<MaxPoolOp>(op))
      inputs = {pool.getInput()};
    else if (auto add = dyn_cast<AddOp>(op))
      inputs = {add.getLhs(), add.getRhs()};
    break;
  }
  SmallVector<BlockArgument> arguments;
  for (Value input : inputs) {
    auto argument = dyn_cast<BlockArgument>(input);
    if (!argument)
      return {};
    arguments.push_back(argument);
  }
  return arguments;
}

} // namespace tessel::npu
