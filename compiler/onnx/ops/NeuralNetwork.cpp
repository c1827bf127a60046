//===- NeuralNetwork.cpp - Convolution, pooling, GEMM, Einsum -------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <map>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The explicit window geometry of a Conv or pooling node, with auto_pad
/// resolved against the (static) input extents.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

FailureOr<Window> readWindow(NodeImporter &node, ArrayRef<int64_t> spatial,
                             std::optional<ArrayRef<int64_t>> weightKernel,
                             bool supportsDilations) {
  size_t rank = spatial.size();
  Window window;
  std::optional<std::vector<int64_t>> kernel = node.intsAttr("kernel_shape");
  if (kernel)
    window.kernel.assign(kernel->begin(), kernel->end());
  else if (weightKernel)
    window.kernel.assign(weightKernel->begin(), weightKernel->end());
  else
    return node.unsupported("kernel_shape is required");
  if (window.kernel.size() != rank)
    return node.unsupported("kernel_shape has " + Twine(window.kernel.size()) +
                            " entries for " + Twine(rank) + " spatial axes");
  auto listOr = [&](llvm::StringRef name, int64_t fill) {
    std::optional<std::vector<int64_t>> values = node.intsAttr(name);
    return values ? SmallVector<int64_t>(values->begin(), values->end())
                  : SmallVector<int64_t>(rank, fill);
  };
  window.strides = listOr("strides", 1);
  window.dilations = supportsDilations ? listOr("dilations", 1)
                                       : SmallVector<int64_t>(rank, 1);
  if (window.strides.size() != rank || window.dilations.size() != rank)
    return node.unsupported("strides and dilations need one entry per spatial axis");

  std::string autoPad = node.stringAttr("auto_pad").value_or("NOTSET");
  std::optional<std::vector<int64_t>> pads = node.intsAttr("pads");
  if (autoPad == "NOTSET") {
    window.pads = pads ? SmallVector<int64_t>(pads->begin(), pads->end())
                       : SmallVector<int64_t>(2 * rank, 0);
    if (window.pads.size() != 2 * rank)
      return node.unsupported("pads has " + Twine(window.pads.size()) +
                              " entries, expected " + Twine(2 * rank));
  } else if (autoPad == "VALID") {
    window.pads.assign(2 * rank, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // The output keeps ceil(input / stride) positions; the padding that
    // needs is split evenly, the odd one going last (UPPER) or first.
    window.pads.assign(2 * rank, 0);
    for (size_t i = 0; i < rank; ++i) {
      int64_t output = llvm::divideCeil(spatial[i], window.strides[i]);
      int64_t span = (window.kernel[i] - 1) * window.dilations[i] + 1;
      int64_t total = std::max<int64_t>(
          0, (output - 1) * window.strides[i] + span - spatial[i]);
      int64_t small = total / 2, large = total - small;
      window.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      window.pads[rank + i] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else {
    return node.unsupported("auto_pad '" + autoPad + "' is not supported");
  }
  return window;
}

/// A 1-D window as the 2-D one over [1, W] that Tessel computes it with.
Window liftTo2D(const Window &window) {
  Window lifted;
  lifted.kernel = {1, window.kernel[0]};
  lifted.strides = {1, window.strides[0]};
  lifted.dilations = {1, window.dilations[0]};
  lifted.pads = {0, window.pads[0], 0, window.pads[1]};
  return lifted;
}

/// `value` ([N, C, W] or a weight [M, C, K]) with a unit axis before the last.
Value insertUnitAxis(NodeImporter &node, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.end() - 1, 1);
  return ReshapeOp::create(node.builder(), node.loc(), type.clone(shape), value);
}

/// `conv`, a convolution just created with its inferred element type, with
/// the element type `resultElement` when one is given (a quantized
/// product's result type cannot be inferred from its operands).
Value withResultElement(Value conv, Type resultElement) {
  if (conv && resultElement)
    conv.setType(cast<RankedTensorType>(conv.getType()).clone(resultElement));
  return conv;
}

/// A 3-D convolution as one 2-D convolution whose channels are the input's
/// channels times the kernel's depth taps: for each output depth od (folded
/// into the batch), channel c * KD + kd holds input depth kd * dilation +
/// od * stride of channel c, which is the order of the weight reshaped from
/// [M, C/G, KD, KH, KW] to [M, C/G * KD, KH, KW], group by group. One
/// product keeps a quantized convolution's sum in its integer accumulator.
Value convolve3D(NodeImporter &node, Value input, Value weight, Value bias,
                 const Window &window, int64_t group, Type resultElement) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (!inputType.hasStaticShape() || !weightType.hasStaticShape()) {
    (void)node.unsupported("3-D convolution needs static shapes");
    return {};
  }
  // The depth is padded here; the 2-D convolution pads height and width.
  if (window.pads[0] != 0 || window.pads[3] != 0) {
    SmallVector<int64_t> pads(10, 0);
    pads[2] = window.pads[0];
    pads[7] = window.pads[3];
    input = node.createInferred<PadOp>(input,
                                       node.splatConstant(inputType.getElementType(), 0.0),
                                       b.getDenseI64ArrayAttr(pads), b.getStringAttr("constant"));
    if (!input)
      return {};
    inputType = cast<RankedTensorType>(input.getType());
  }
  int64_t batch = inputType.getDimSize(0), channels = inputType.getDimSize(1);
  int64_t height = inputType.getDimSize(3), width = inputType.getDimSize(4);
  int64_t kernelDepth = window.kernel[0], stride = window.strides[0];
  int64_t dilation = window.dilations[0];
  int64_t outDepth = (inputType.getDimSize(2) - dilation * (kernelDepth - 1) - 1) / stride + 1;
  if (outDepth <= 0) {
    (void)node.unsupported("the kernel is deeper than the padded input");
    return {};
  }
  SmallVector<int64_t> depthFirst{0, 2, 1, 3, 4};
  SmallVector<Value> taps;
  for (int64_t kd = 0; kd < kernelDepth; ++kd) {
    // [N, C, OD, H, W] -> [N, OD, C, H, W] -> [N * OD, C, 1, H * W]
    Value tap = SliceOp::create(
        b, loc, inputType.clone({batch, channels, outDepth, height, width}), input,
        b.getDenseI64ArrayAttr({0, 0, kd * dilation, 0, 0}),
        b.getDenseI64ArrayAttr({1, 1, stride, 1, 1}));
    tap = node.createInferred<TransposeOp>(tap, b.getDenseI64ArrayAttr(depthFirst));
    if (!tap)
      return {};
    taps.push_back(ReshapeOp::create(
        b, loc, inputType.clone({batch * outDepth, channels, 1, height * width}), tap));
  }
  Value stacked = taps.front();
  if (taps.size() > 1)
    stacked = node.createInferred<ConcatOp>(taps, b.getI64IntegerAttr(2));
  if (!stacked)
    return {};
  stacked = ReshapeOp::create(
      b, loc, inputType.clone({batch * outDepth, channels * kernelDepth, height, width}),
      stacked);
  ArrayRef<int64_t> weightShape = weightType.getShape();
  Value planeWeight = ReshapeOp::create(
      b, loc,
      weightType.clone({weightShape[0], weightShape[1] * kernelDepth, weightShape[3],
                        weightShape[4]}),
      weight);
  SmallVector<int64_t> planeStrides(window.strides.begin() + 1, window.strides.end());
  SmallVector<int64_t> planeDilations(window.dilations.begin() + 1, window.dilations.end());
  SmallVector<int64_t> planePads{window.pads[1], window.pads[2], window.pads[4], window.pads[5]};
  Value plane = withResultElement(
      node.createInferred<ConvOp>(stacked, planeWeight, bias,
                                  b.getDenseI64ArrayAttr(planeStrides),
                                  b.getDenseI64ArrayAttr(planePads),
                                  b.getDenseI64ArrayAttr(planeDilations),
                                  b.getI64IntegerAttr(group)),
      resultElement);
  if (!plane)
    return {};
  // [N * OD, M, OH, OW] -> [N, OD, M, OH, OW] -> [N, M, OD, OH, OW]
  auto planeType = cast<RankedTensorType>(plane.getType());
  plane = ReshapeOp::create(b, loc,
                            planeType.clone({batch, outDepth, planeType.getDimSize(1),
                                             planeType.getDimSize(2), planeType.getDimSize(3)}),
                            plane);
  return node.createInferred<TransposeOp>(plane, b.getDenseI64ArrayAttr(depthFirst));
}

/// A 2-D convolution; 1-D ones are lifted to [1, W] and dropped back, 3-D
/// ones fold the kernel's depth into the channels.
Value convolve(NodeImporter &node, Value input, Value weight, Value bias,
               const Window &window, int64_t group, Type resultElement) {
  if (window.kernel.size() == 3)
    return convolve3D(node, input, weight, bias, window, group, resultElement);
  OpBuilder &b = node.builder();
  bool oneDimensional = window.kernel.size() == 1;
  Window window2D = oneDimensional ? liftTo2D(window) : window;
  if (oneDimensional) {
    input = insertUnitAxis(node, input);
    weight = insertUnitAxis(node, weight);
  }
  Value result = withResultElement(
      node.createInferred<ConvOp>(
          input, weight, bias, b.getDenseI64ArrayAttr(window2D.strides),
          b.getDenseI64ArrayAttr(window2D.pads), b.getDenseI64ArrayAttr(window2D.dilations),
          b.getI64IntegerAttr(group)),
      resultElement);
  if (!result || !oneDimensional)
    return result;
  auto type = cast<RankedTensorType>(result.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.end() - 2);
  return ReshapeOp::create(b, node.loc(), type.clone(shape), result);
}

bool checkConvRank(NodeImporter &node, RankedTensorType inputType,
                   RankedTensorType weightType) {
  if (inputType.getRank() != weightType.getRank() || inputType.getRank() < 3) {
    (void)node.unsupported("input and weight must have the same rank, at least 3");
    return false;
  }
  if (inputType.getRank() > 5) {
    (void)node.unsupported(Twine(inputType.getRank() - 2) +
                           "-D convolution is not supported (1-D to 3-D only)");
    return false;
  }
  return true;
}

} // namespace

Value convolutionFromAttributes(NodeImporter &node, Value input, Value weight,
                                Value bias, Type resultElement) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (!checkConvRank(node, inputType, weightType))
    return {};
  FailureOr<Window> window =
      readWindow(node, inputType.getShape().drop_front(2),
                 weightType.getShape().drop_front(2), /*supportsDilations=*/true);
  if (failed(window))
    return {};
  if (!llvm::equal(window->kernel, weightType.getShape().drop_front(2))) {
    (void)node.unsupported("kernel_shape disagrees with the weight's shape");
    return {};
  }
  return convolve(node, input, weight, bias, *window, node.intAttr("group", 1),
                  resultElement);
}

Value matrixProduct(NodeImporter &node, Value lhs, Value rhs) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  if (lhsType.getRank() <= 2 || rhsType.getRank() != 2 || !lhsType.hasStaticShape() ||
      !rhsType.hasStaticShape() || lhsType.getShape().back() != rhsType.getDimSize(0))
    return node.createInferred<MatMulOp>(lhs, rhs);
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  int64_t columns = lhsType.getShape().back();
  Value rows = ReshapeOp::create(
      b, loc, lhsType.clone({lhsType.getNumElements() / columns, columns}), lhs);
  Value product = node.createInferred<MatMulOp>(rows, rhs);
  if (!product)
    return {};
  SmallVector<int64_t> shape(lhsType.getShape());
  shape.back() = rhsType.getDimSize(1);
  return ReshapeOp::create(b, loc, lhsType.clone(shape), product);
}

namespace {

LogicalResult importConv(NodeImporter &node) {
  return node.setInferredOutput(
      0, convolutionFromAttributes(node, node.input(0), node.input(1), node.input(2)));
}

/// CausalConvWithState (opset 27, the token mixer of Mamba and Gated
/// DeltaNet): the past state (zeros without one) joined before the input
/// along the length, a depthwise convolution of its k taps without padding
/// over that (one output per input position), and the optional SiLU; the
/// present state is the last k - 1 positions of the joined input.
LogicalResult importCausalConvWithState(NodeImporter &node) {
  RankedTensorType inputType = node.inputType(0);
  RankedTensorType weightType = node.inputType(1);
  if (inputType.getRank() != 3 || weightType.getRank() != 3 || !inputType.hasStaticShape() ||
      !weightType.hasStaticShape() || !isa<FloatType>(inputType.getElementType()))
    return node.unsupported("input [batch, channels, length] and weight [channels, 1, k] must "
                            "be floating-point tensors of static shapes");
  int64_t batch = inputType.getDimSize(0), channels = inputType.getDimSize(1);
  int64_t length = inputType.getDimSize(2), taps = weightType.getDimSize(2);
  if (weightType.getDimSize(0) != channels || weightType.getDimSize(1) != 1 || taps < 1)
    return node.unsupported("weight must be [channels, 1, k] with k >= 1 for an input of " +
                            Twine(channels) + " channels");
  std::string activation = node.stringAttr("activation").value_or("none");
  if (!llvm::is_contained({"none", "silu", "swish"}, activation))
    return node.unsupported("activation '" + activation + "' is not 'none', 'silu' or 'swish'");
  Type element = inputType.getElementType();
  auto stateType = RankedTensorType::get({batch, channels, taps - 1}, element);
  Value past = node.input(3);
  if (past && node.inputType(3) != stateType)
    return node.unsupported("past_state must be [" + Twine(batch) + ", " + Twine(channels) +
                            ", " + Twine(taps - 1) + "] of the input's type");
  OpBuilder &b = node.builder();
  Value joined = node.input(0);
  if (taps > 1) {
    if (!past)
      past = node.splatConstant(element, 0.0, stateType.getShape());
    joined = node.createInferred<ConcatOp>(SmallVector<Value>{past, joined},
                                           b.getI64IntegerAttr(2));
  }
  // A narrower float is convolved and activated in f32, each result
  // rounded once to the input's type, as ONNX's reference computes them.
  auto convert = [&](Value value, Type to) { return convertElements(node, value, to); };
  Type f32 = b.getF32Type();
  Window window{{taps}, {1}, {0, 0}, {1}};
  Value bias = node.input(2) ? convert(node.input(2), f32) : Value();
  Value output = convolve(node, convert(joined, f32), convert(node.input(1), f32), bias,
                          window, channels, {});
  if (!output)
    return failure();
  output = convert(output, element);
  if (activation != "none")
    output = convert(swish(node, convert(output, f32), 1.0f), element);
  if (failed(node.setInferredOutput(0, output)))
    return failure();
  node.setOutput(1, SliceOp::create(b, node.loc(), stateType, joined,
                                    b.getDenseI64ArrayAttr({0, 0, length}),
                                    b.getDenseI64ArrayAttr({1, 1, 1})));
  return success();
}

/// ConvTranspose as a convolution: the input with stride - 1 zeros between
/// elements, padded by dilation * (kernel - 1) less the given pads, convolved
/// at stride 1 with the spatially flipped weight whose in and out channels
/// swap within each group.
LogicalResult importConvTranspose(NodeImporter &node) {
  RankedTensorType inputType = node.inputType(0);
  RankedTensorType weightType = node.inputType(1);
  if (!checkConvRank(node, inputType, weightType))
    return failure();
  if (!inputType.hasStaticShape() || !weightType.hasStaticShape())
    return node.unsupported("input and weight must have static shapes");
  int64_t rank = inputType.getRank() - 2;
  int64_t group = node.intAttr("group", 1);
  ArrayRef<int64_t> spatial = inputType.getShape().drop_front(2);
  ArrayRef<int64_t> kernel = weightType.getShape().drop_front(2);
  if (std::optional<std::vector<int64_t>> given = node.intsAttr("kernel_shape"))
    if (!llvm::equal(*given, kernel))
      return node.unsupported("kernel_shape disagrees with the weight's shape");
  auto listOr = [&](StringRef name, int64_t fill) {
    std::optional<std::vector<int64_t>> values = node.intsAttr(name);
    return values ? SmallVector<int64_t>(values->begin(), values->end())
                  : SmallVector<int64_t>(rank, fill);
  };
  SmallVector<int64_t> strides = listOr("strides", 1), dilations = listOr("dilations", 1);
  SmallVector<int64_t> outputPadding = listOr("output_padding", 0);
  if (static_cast<int64_t>(strides.size()) != rank ||
      static_cast<int64_t>(dilations.size()) != rank ||
      static_cast<int64_t>(outputPadding.size()) != rank)
    return node.unsupported("strides, dilations and output_padding need one entry "
                            "per spatial axis");
  std::string autoPad = node.stringAttr("auto_pad").value_or("NOTSET");
  std::optional<std::vector<int64_t>> outputShape = node.intsAttr("output_shape");
  SmallVector<int64_t> pads(2 * rank, 0);
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    std::vector<int64_t> wanted;
    if (outputShape)
      wanted.assign(outputShape->end() - rank, outputShape->end());
    for (int64_t i = 0; i < rank; ++i) {
      int64_t out = outputShape ? wanted[i] : spatial[i] * strides[i];
      int64_t total = strides[i] * (spatial[i] - 1) + outputPadding[i] +
                      (kernel[i] - 1) * dilations[i] + 1 - out;
      bool upper = autoPad != "SAME_LOWER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[rank + i] = total - pads[i];
    }
  } else if (autoPad == "NOTSET") {
    if (std::optional<std::vector<int64_t>> given = node.intsAttr("pads"))
      pads.assign(given->begin(), given->end());
  } else if (autoPad != "VALID") {
    return node.unsupported("auto_pad '" + autoPad + "' is not supported");
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return node.unsupported("pads needs two entries per spatial axis");

  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = inputType.getElementType();
  // Spread: [N, C, H, 1, W, 1] padded to [N, C, H, s, W, s], merged.
  SmallVector<int64_t> interleaved(inputType.getShape().take_front(2));
  SmallVector<int64_t> spreadPads(2 * (2 + 2 * rank), 0);
  SmallVector<int64_t> merged(inputType.getShape().take_front(2));
  for (int64_t i = 0; i < rank; ++i) {
    interleaved.append({spatial[i], 1});
    spreadPads[(2 + 2 * rank) + 2 + 2 * i + 1] = strides[i] - 1;
    merged.push_back(spatial[i] * strides[i]);
  }
  Value x = ReshapeOp::create(b, loc, inputType.clone(interleaved), node.input(0));
  Value zero = node.splatConstant(elementType, 0.0);
  x = node.createInferred<PadOp>(x, zero, b.getDenseI64ArrayAttr(spreadPads),
                                 b.getStringAttr("constant"));
  if (!x)
    return failure();
  x = ReshapeOp::create(b, loc, inputType.clone(merged), x);
  // Border: the full kernel overhang less the pads; the spread's trailing
  // stride - 1 zeros come off the end, output_padding goes on.
  SmallVector<int64_t> border(2 * (2 + rank), 0);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t overhang = dilations[i] * (kernel[i] - 1);
    border[2 + i] = overhang - pads[i];
    border[(2 + rank) + 2 + i] =
        overhang - pads[rank + i] + outputPadding[i] - (strides[i] - 1);
  }
  x = node.createInferred<PadOp>(x, zero, b.getDenseI64ArrayAttr(border),
                                 b.getStringAttr("constant"));
  if (!x)
    return failure();

  // Weight [C, M/g, k...] -> flipped, [g, C/g, M/g, k...] -> [g, M/g, C/g, k...]
  // -> [M, C/g, k...].
  int64_t inChannels = weightType.getDimSize(0), outPerGroup = weightType.getDimSize(1);
  if (inChannels % group != 0)
    return node.unsupported("group does not divide the input channels");
  SmallVector<int64_t> starts(2 + rank, 0), steps(2 + rank, 1);
  for (int64_t i = 0; i < rank; ++i) {
    starts[2 + i] = kernel[i] - 1;
    steps[2 + i] = -1;
  }
  Value w = SliceOp::create(b, loc, weightType, node.input(1),
                            b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(steps));
  SmallVector<int64_t> grouped{group, inChannels / group, outPerGroup};
  llvm::append_range(grouped, kernel);
  w = ReshapeOp::create(b, loc, weightType.clone(grouped), w);
  SmallVector<int64_t> perm{0, 2, 1};
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(3 + i);
  w = node.createInferred<TransposeOp>(w, b.getDenseI64ArrayAttr(perm));
  SmallVector<int64_t> converted{group * outPerGroup, inChannels / group};
  llvm::append_range(converted, kernel);
  w = ReshapeOp::create(b, loc, weightType.clone(converted), w);

  Window window;
  window.kernel.assign(kernel.begin(), kernel.end());
  window.strides.assign(rank, 1);
  window.dilations = dilations;
  window.pads.assign(2 * rank, 0);
  return node.setInferredOutput(0, convolve(node, x, w, node.input(2), window, group, Type()));
}

LogicalResult importMaxPool(NodeImporter &node) {
  bool columnMajor = node.intAttr("storage_order", 0) != 0; // of the Indices output
  RankedTensorType inputType = node.inputType(0);
  if (inputType.getRank() < 3)
    return node.unsupported("input must have rank 3 or more");
  FailureOr<Window> window =
      readWindow(node, inputType.getShape().drop_front(2), std::nullopt,
                 /*supportsDilations=*/node.opset() >= 10);
  if (failed(window))
    return failure();
  bool ceilMode = node.opset() >= 10 && node.intAttr("ceil_mode", 0) != 0;
  OpBuilder &b = node.builder();
  Value result = node.createInferred<MaxPoolOp>(
      node.input(0), b.getDenseI64ArrayAttr(window->kernel),
      b.getDenseI64ArrayAttr(window->strides), b.getDenseI64ArrayAttr(window->pads),
      b.getDenseI64ArrayAttr(window->dilations), b.getBoolAttr(ceilMode));
  if (!result)
    return failure();
  node.setOutput(0, result);
  if (!node.outputUsed(1))
    return success();
  return node.setInferredOutput(
      1, node.createInferred<MaxPoolIndicesOp>(
             node.input(0), b.getDenseI64ArrayAttr(window->kernel),
             b.getDenseI64ArrayAttr(window->strides), b.getDenseI64ArrayAttr(window->pads),
             b.getDenseI64ArrayAttr(window->dilations), b.getBoolAttr(ceilMode),
             b.getBoolAttr(columnMajor)));
}

LogicalResult importAveragePool(NodeImporter &node) {
  RankedTensorType inputType = node.inputType(0);
  if (inputType.getRank() < 3)
    return node.unsupported("input must have rank 3 or more");
  FailureOr<Window> window =
      readWindow(node, inputType.getShape().drop_front(2), std::nullopt,
                 /*supportsDilations=*/node.opset() >= 19);
  if (failed(window))
    return failure();
  bool ceilMode = node.opset() >= 10 && node.intAttr("ceil_mode", 0) != 0;
  bool includePad = node.opset() >= 7 && node.intAttr("count_include_pad", 0) != 0;
  OpBuilder &b = node.builder();
  Value result = node.createInferred<AveragePoolOp>(
      node.input(0), b.getDenseI64ArrayAttr(window->kernel),
      b.getDenseI64ArrayAttr(window->strides), b.getDenseI64ArrayAttr(window->pads),
      b.getDenseI64ArrayAttr(window->dilations), b.getBoolAttr(ceilMode),
      b.getBoolAttr(includePad));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

/// LpPool: (sum over the window of |x|^p)^(1/p), the sum being an average
/// pool that counts the (zero) padding, times the window size.
LogicalResult importLpPool(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() < 3 || !isa<FloatType>(type.getElementType()))
    return node.unsupported("input must be floating-point with rank 3 or more");
  FailureOr<Window> window =
      readWindow(node, type.getShape().drop_front(2), std::nullopt,
                 /*supportsDilations=*/node.opset() >= 18);
  if (failed(window))
    return failure();
  bool ceilMode = node.opset() >= 18 && node.intAttr("ceil_mode", 0) != 0;
  double p = node.intAttr("p", 2);
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = type.getElementType();
  Value magnitude = AbsOp::create(b, loc, type, node.input(0));
  Value powered = node.createInferred<PowOp>(magnitude, node.splatConstant(elementType, p));
  Value average = node.createInferred<AveragePoolOp>(
      powered, b.getDenseI64ArrayAttr(window->kernel), b.getDenseI64ArrayAttr(window->strides),
      b.getDenseI64ArrayAttr(window->pads), b.getDenseI64ArrayAttr(window->dilations),
      b.getBoolAttr(ceilMode), b.getBoolAttr(true));
  if (!average)
    return failure();
  int64_t size = 1;
  for (int64_t k : window->kernel)
    size *= k;
  Value sum = node.createInferred<MulOp>(average, node.splatConstant(elementType, double(size)));
  return node.setInferredOutput(
      0, node.createInferred<PowOp>(sum, node.splatConstant(elementType, 1.0 / p)));
}

/// GlobalMaxPool: the maximum over the spatial axes, kept as size 1.
LogicalResult importGlobalMaxPool(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() < 3)
    return node.unsupported("input must have rank 3 or more");
  SmallVector<int64_t> axes, kept(type.getShape());
  for (int64_t i = 2; i < type.getRank(); ++i) {
    axes.push_back(i);
    kept[i] = 1;
  }
  OpBuilder &b = node.builder();
  Value max = node.createInferred<ReduceOp>(b.getStringAttr("max"), node.input(0),
                                            b.getDenseI64ArrayAttr(axes));
  if (!max)
    return failure();
  node.setOutput(0, ReshapeOp::create(b, node.loc(), type.clone(kept), max));
  return success();
}

LogicalResult importGlobalAveragePool(NodeImporter &node) {
  if (node.inputType(0).getRank() < 3)
    return node.unsupported("input must have rank 3 or more");
  Value result = node.createInferred<GlobalAveragePoolOp>(node.input(0));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

/// BatchNormalization with training_mode = 1 (opset 14 on): the input is
/// normalized with its own mean and variance (biased, as the reference's)
/// over every axis but the channels, and the running statistics, outputs 1
/// and 2, move toward them: input_mean * momentum + mean * (1 - momentum).
LogicalResult importTrainingBatchNormalization(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() < 2 || !type.hasStaticShape())
    return node.unsupported("training mode needs an input of static shape with channels");
  Formula f(node);
  SmallVector<int64_t> axes{0};
  for (int64_t axis = 2; axis < type.getRank(); ++axis)
    axes.push_back(axis);
  Value x = node.input(0);
  Value mean = f.meanKeep(x, axes);
  Value centered = f.sub(x, mean);
  Value variance = f.meanKeep(f.mul(centered, centered), axes);
  int64_t channels = type.getDimSize(1);
  auto statistic = [&](Value value, int64_t input) {
    return f.convert(f.reshape(value, {channels}), node.inputType(input).getElementType());
  };
  Value batchMean = statistic(mean, 3), batchVariance = statistic(variance, 4);
  if (!batchMean || !batchVariance)
    return failure();
  node.setOutput(
      0, BatchNormOp::create(node.builder(), node.loc(), type, x, node.input(1), node.input(2),
                             batchMean, batchVariance,
                             node.builder().getF32FloatAttr(node.floatAttr("epsilon", 1e-5f))));
  double momentum = node.floatAttr("momentum", 0.9f);
  auto running = [&](Value previous, Value current) {
    return f.add(f.mul(previous, f.scalar(previous, momentum)),
                 f.mul(current, f.scalar(current, 1.0 - momentum)));
  };
  for (auto [output, input, current] : {std::tuple{1, 3, batchMean}, {2, 4, batchVariance}})
    if (node.outputUsed(output)) {
      Value updated = running(node.input(input), current);
      if (!updated)
        return failure();
      node.setOutput(output, updated);
    }
  return success();
}

LogicalResult importBatchNormalization(NodeImporter &node) {
  if (node.opset() >= 14 && node.intAttr("training_mode", 0) != 0)
    return importTrainingBatchNormalization(node);
  for (size_t i = 1; i < node.numOutputs(); ++i)
    if (node.outputUsed(i))
      return node.unsupported("running mean and variance outputs need training_mode = 1 "
                              "(opset 14 on)");
  if (node.opset() < 9 && node.intAttr("spatial", 1) != 1)
    return node.unsupported("spatial = 0 is not supported");
  node.ignoreAttr("momentum"); // updates running statistics when training
  node.ignoreAttr("is_test");
  float epsilon = node.floatAttr("epsilon", 1e-5f);
  Value result = BatchNormOp::create(
      node.builder(), node.loc(), node.input(0).getType(), node.input(0),
      node.input(1), node.input(2), node.input(3), node.input(4),
      node.builder().getF32FloatAttr(epsilon));
  node.setOutput(0, result);
  return success();
}

LogicalResult importGemm(NodeImporter &node) {
  OpBuilder &b = node.builder();
  Value result = node.createInferred<GemmOp>(
      node.input(0), node.input(1), node.input(2),
      b.getF32FloatAttr(node.floatAttr("alpha", 1.0f)),
      b.getF32FloatAttr(node.floatAttr("beta", 1.0f)),
      b.getBoolAttr(node.intAttr("transA", 0) != 0),
      b.getBoolAttr(node.intAttr("transB", 0) != 0));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

LogicalResult importMatMul(NodeImporter &node) {
  return node.setInferredOutput(0, matrixProduct(node, node.input(0), node.input(1)));
}

/// Opset 13: softmax along one axis.
LogicalResult importSoftmax13(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis =
      normalizeAxis(node.intAttr("axis", -1), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  node.setOutput(0, SoftmaxOp::create(node.builder(), node.loc(), type,
                                      node.input(0),
                                      node.builder().getI64IntegerAttr(*axis)));
  return success();
}

/// Opsets 1-12: the input is flattened to 2-D at `axis` and normalized
/// along the second axis, i.e. over all axes from `axis` on.
LogicalResult importSoftmax1(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis =
      normalizeAxis(node.intAttr("axis", 1), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  if (*axis == type.getRank() - 1) {
    node.setOutput(0, SoftmaxOp::create(b, loc, type, node.input(0),
                                        b.getI64IntegerAttr(*axis)));
    return success();
  }
  Value flat = node.createInferred<FlattenOp>(node.input(0), b.getI64IntegerAttr(*axis));
  if (!flat)
    return failure();
  Value normalized = SoftmaxOp::create(b, loc, flat.getType(), flat, b.getI64IntegerAttr(1));
  node.setOutput(0, ReshapeOp::create(b, loc, type, normalized));
  return success();
}

/// Einsum: "..." becomes explicit letters and an implicit output (no "->")
/// the letters used once, in alphabetical order, after the ellipsis axes.
LogicalResult importEinsum(NodeImporter &node) {
  std::string equation;
  for (char c : node.stringAttr("equation").value_or(""))
    if (c != ' ')
      equation += c;
  StringRef text(equation);
  auto [left, right] = text.split("->");
  bool explicitOutput = text.contains("->");
  SmallVector<StringRef> terms;
  left.split(terms, ',');
  if (terms.size() != node.numInputs())
    return node.unsupported("the equation names " + Twine(terms.size()) +
                            " operands for " + Twine(node.numInputs()) + " inputs");
  // Letters for the ellipsis axes: upper case ones the equation does not use.
  std::string spare;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (!text.contains(c))
      spare.push_back(c);
  int64_t ellipsisRank = 0;
  SmallVector<std::string> operands;
  for (auto [i, term] : llvm::enumerate(terms)) {
    int64_t rank = node.inputType(i).getRank();
    size_t dots = term.find("...");
    std::string letters = term.str();
    if (dots != StringRef::npos) {
      int64_t covered = rank - int64_t(term.size() - 3);
      if (covered < 0 || covered > int64_t(spare.size()))
        return node.unsupported("the ellipsis does not fit operand " + Twine(i));
      ellipsisRank = std::max(ellipsisRank, covered);
      letters = term.substr(0, dots).str() + spare.substr(spare.size() - covered) +
                term.substr(dots + 3).str();
    }
    if (int64_t(letters.size()) != rank)
      return node.unsupported("operand " + Twine(i) + " has rank " + Twine(rank) +
                              " but '" + term + "' names " + Twine(letters.size()) + " axes");
    operands.push_back(letters);
  }
  std::string ellipsisLetters = spare.substr(spare.size() - ellipsisRank);
  std::string output;
  if (explicitOutput) {
    size_t dots = right.find("...");
    output = dots == StringRef::npos ? right.str()
                                     : right.substr(0, dots).str() + ellipsisLetters +
                                           right.substr(dots + 3).str();
  } else {
    std::map<char, int> uses;
    for (const std::string &letters : operands)
      for (char c : letters)
        if (!llvm::is_contained(ellipsisLetters, c))
          ++uses[c];
    output = ellipsisLetters;
    for (auto [letter, count] : uses)
      if (count == 1)
        output.push_back(letter);
  }
  // The result's extents come from the operands.
  std::map<char, int64_t> extents;
  for (auto [i, letters] : llvm::enumerate(operands))
    for (auto [letter, size] : llvm::zip(letters, node.inputType(i).getShape()))
      extents[letter] = std::max(extents[letter], size);
  SmallVector<int64_t> shape;
  for (char letter : output) {
    if (!extents.count(letter))
      return node.unsupported("output axis '" + Twine(letter) + "' is not an operand's");
    shape.push_back(extents[letter]);
  }
  std::string normalized = llvm::join(operands, ",") + "->" + output;
  SmallVector<Value> inputs;
  for (size_t i = 0; i < node.numInputs(); ++i)
    inputs.push_back(node.input(i));
  OpBuilder &b = node.builder();
  node.setOutput(0, EinsumOp::create(b, node.loc(), node.inputType(0).clone(shape), inputs,
                                     b.getStringAttr(normalized)));
  return success();
}

} // namespace

void registerNeuralNetworkHandlers(OpRegistry &registry) {
  registry.on("Conv", 1, importConv);
  registry.on("ConvTranspose", 1, importConvTranspose);
  registry.on("MaxPool", 1, importMaxPool);
  registry.on("AveragePool", 1, importAveragePool);
  registry.on("GlobalAveragePool", 1, importGlobalAveragePool);
  registry.on("GlobalMaxPool", 1, importGlobalMaxPool);
  registry.on("LpPool", 2, importLpPool);
  registry.on("BatchNormalization", 6, importBatchNormalization);
  registry.on("Gemm", 7, importGemm);
  registry.on("MatMul", 1, importMatMul);
  registry.on("Softmax", 1, importSoftmax1);
  registry.on("Softmax", 13, importSoftmax13);
  registry.on("Einsum", 12, importEinsum);
  registry.on("CausalConvWithState", 27, importCausalConvWithState);
}

} // namespace tessel::onnx_import
