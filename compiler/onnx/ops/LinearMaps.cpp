//===- LinearMaps.cpp - Col2Im, DFT, STFT: products with constant matrices -===//
//
// Both ops are linear maps of their input whose matrix depends only on
// shapes and attributes: computed here at compile time, each becomes one
// tessel.matmul (which runs wherever products run fastest).
//
//  - Col2Im sums the columns of sliding blocks back into an image: a 0/1
//    matrix from (kernel position, block) to image pixel.
//  - DFT transforms along one axis with the cosine and sine matrices of its
//    length; complex values are a trailing axis of 2 (real, imaginary).
//    STFT is a DFT of each (windowed) frame, the frames one gather.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include <cmath>
#include <functional>
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

Value matrixConstant(OpBuilder &b, Location loc, Type element, int64_t rows, int64_t columns,
                     ArrayRef<double> values) {
  SmallVector<Attribute> attributes;
  for (double value : values)
    attributes.push_back(b.getFloatAttr(element, value));
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(RankedTensorType::get({rows, columns}, element), attributes));
}

/// The block shape a Col2Im of `input` [N, C * K, L] into the stated
/// [N, C, image...] must have: the only one whose K and number of blocks
/// L fit; nothing when none or several do.
std::optional<ImpliedInts>
impliedBlock(RankedTensorType input, RankedTensorType stated, ArrayRef<int64_t> image,
             llvm::function_ref<int64_t(size_t, int64_t, int64_t)> gridSize) {
  int64_t channels = stated.getDimSize(1);
  if (channels <= 0 || input.getDimSize(1) % channels != 0)
    return std::nullopt;
  int64_t kernel = input.getDimSize(1) / channels, blocks = input.getDimSize(2);
  std::optional<SmallVector<int64_t>> found;
  SmallVector<int64_t> block;
  bool ambiguous = false;
  // Every factorization of the kernel size into one extent per axis.
  std::function<void(int64_t)> search = [&](int64_t left) {
    if (block.size() == image.size()) {
      int64_t count = 1;
      for (auto [i, extent] : llvm::enumerate(block))
        count *= std::max<int64_t>(gridSize(i, image[i], extent), 0);
      if (left == 1 && count == blocks) {
        ambiguous |= found.has_value();
        found = block;
      }
      return;
    }
    for (int64_t extent = 1; extent <= left && extent <= image[block.size()] + 64; ++extent) {
      if (left % extent)
        continue;
      block.push_back(extent);
      search(left / extent);
      block.pop_back();
    }
  };
  if (kernel > 0 && kernel <= kMaxComputedElements)
    search(kernel);
  if (!found || ambiguous)
    return std::nullopt;
  return exactly(*found);
}

/// Col2Im(input [N, C * K, L], image_shape, block_shape): [N, C, image...],
/// where K is the block's size and L the number of blocks.
LogicalResult importCol2Im(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!node.inputType(1).hasStaticShape() || node.inputType(1).getRank() != 1)
    return node.unsupported("image_shape must be a static list");
  size_t d = node.inputType(1).getNumElements();
  SmallVector<int64_t> dilations(d, 1), strides(d, 1), pads(2 * d, 0);
  if (auto given = node.intsAttr("dilations"))
    dilations.assign(given->begin(), given->end());
  if (auto given = node.intsAttr("strides"))
    strides.assign(given->begin(), given->end());
  if (auto given = node.intsAttr("pads"))
    pads.assign(given->begin(), given->end());
  if (dilations.size() != d || strides.size() != d || pads.size() != 2 * d)
    return node.unsupported("dilations, strides and pads must match image_shape");
  // The number of blocks along axis i of an image of `extent`.
  auto gridSize = [&](size_t i, int64_t extent, int64_t block) {
    return (extent + pads[i] + pads[i + d] - dilations[i] * (block - 1) - 1) / strides[i] + 1;
  };
  RankedTensorType stated = node.declaredOutputType(0);
  bool statesImage = stated && stated.getRank() == static_cast<int64_t>(d) + 2;
  std::optional<SmallVector<int64_t>> image =
      shapeGivingInts(node, 1, "image_shape", [&]() -> std::optional<ImpliedInts> {
        if (!statesImage)
          return std::nullopt;
        return exactly(stated.getShape().drop_front(2));
      });
  std::optional<SmallVector<int64_t>> block =
      image ? shapeGivingInts(node, 2, "block_shape",
                              [&]() -> std::optional<ImpliedInts> {
                                if (!statesImage || !type.hasStaticShape() ||
                                    type.getRank() != 3)
                                  return std::nullopt;
                                return impliedBlock(type, stated, *image, gridSize);
                              })
            : std::nullopt;
  if (!image || !block)
    return failure();
  if (!type.hasStaticShape() || type.getRank() != 3 || block->size() != d || d == 0 ||
      !isa<FloatType>(type.getElementType()))
    return node.unsupported("input must be a static [N, C * prod(block_shape), L] of floats, "
                            "with image_shape and block_shape of equal length");
  int64_t kernel = 1, pixels = 1, blocks = 1;
  SmallVector<int64_t> grid(d);
  for (size_t i = 0; i < d; ++i) {
    if ((*block)[i] <= 0 || (*image)[i] <= 0 || dilations[i] <= 0 || strides[i] <= 0)
      return node.unsupported("block_shape, image_shape, dilations and strides must be positive");
    grid[i] = ((*image)[i] + pads[i] + pads[i + d] - dilations[i] * ((*block)[i] - 1) - 1) /
                  strides[i] + 1;
    if (grid[i] <= 0)
      return node.unsupported("the blocks do not fit the padded image");
    kernel *= (*block)[i], pixels *= (*image)[i], blocks *= grid[i];
  }
  int64_t batch = type.getDimSize(0);
  if (type.getDimSize(1) % kernel != 0 || type.getDimSize(2) != blocks)
    return node.unsupported("input must be [N, C * " + Twine(kernel) + ", " + Twine(blocks) +
                            "] for these shapes");
  if (failed(checkComputeBudget(node, double(kernel) * blocks * pixels, "matrix entries")))
    return failure();
  int64_t channels = type.getDimSize(1) / kernel;

  // Row (k, l) of the matrix: kernel position k of block l, adding into
  // the pixel it covers (none when it falls in the padding).
  std::vector<double> matrix(size_t(kernel * blocks * pixels), 0.0);
  for (int64_t k = 0; k < kernel; ++k)
    for (int64_t l = 0; l < blocks; ++l) {
      int64_t pixel = 0;
      bool inside = true;
      for (size_t i = 0, kRest = k, lRest = l; i < d; ++i) {
        int64_t kStride = 1, lStride = 1;
        for (size_t j = i + 1; j < d; ++j)
          kStride *= (*block)[j], lStride *= grid[j];
        int64_t kIndex = kRest / kStride, lIndex = lRest / lStride;
        kRest %= kStride, lRest %= lStride;
        int64_t position = lIndex * strides[i] - pads[i] + kIndex * dilations[i];
        inside &= position >= 0 && position < (*image)[i];
        pixel = pixel * (*image)[i] + position;
      }
      if (inside)
        matrix[size_t((k * blocks + l) * pixels + pixel)] = 1.0;
    }
  OpBuilder &b = node.builder();
  Type element = type.getElementType();
  Value columns = ReshapeOp::create(b, node.loc(), type.clone({batch, channels, kernel * blocks}),
                                    node.input(0));
  Value summed = node.createInferred<MatMulOp>(
      columns, matrixConstant(b, node.loc(), element, kernel * blocks, pixels, matrix));
  SmallVector<int64_t> shape{batch, channels};
  shape.append(image->begin(), image->end());
  return node.setInferredOutput(
      0, summed ? ReshapeOp::create(b, node.loc(), type.clone(shape), summed) : Value());
}

/// The matrices of a DFT of `length` along an axis whose input has
/// `inputLength` entries (truncated or padded with zeros to `length`):
/// out[k] = sum over t of in[t] times the matrices' [t][k], as real
/// products of the real and imaginary parts.
struct DftMatrices {
  int64_t rows, columns;
  std::vector<double> realToReal, imaginaryToReal, realToImaginary, imaginaryToImaginary;
};

DftMatrices dftMatrices(int64_t inputLength, int64_t length, bool inverse, bool onesided) {
  // Forward: X[k] = sum x[t] e^(-2 pi i k t / n), the first n / 2 + 1 when
  // one-sided. Inverse: x[t] = 1 / n sum X[k] e^(2 pi i k t / n); one-sided
  // (irfft), the input holds X[0 .. n / 2] of a Hermitian spectrum, so each
  // other frequency counts twice and the result is real.
  bool halfSpectrumIn = inverse && onesided;
  int64_t used = halfSpectrumIn ? length / 2 + 1 : length;
  int64_t columns = !inverse && onesided ? length / 2 + 1 : length;
  DftMatrices m{inputLength, columns, {}, {}, {}, {}};
  for (auto *matrix : {&m.realToReal, &m.imaginaryToReal, &m.realToImaginary,
                       &m.imaginaryToImaginary})
    matrix->assign(size_t(inputLength * columns), 0.0);
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / double(length) : 1.0;
  for (int64_t t = 0; t < std::min(inputLength, used); ++t)
    for (int64_t k = 0; k < columns; ++k) {
      // Inverse transforms sum over the input's frequencies t into samples k.
      double angle = 2 * llvm::numbers::pi * double(t) * double(k) / double(length);
      double weight = scale;
      if (halfSpectrumIn && t != 0 && 2 * t != length)
        weight *= 2;
      double c = std::cos(angle) * weight, s = sign * std::sin(angle) * weight;
      size_t at = size_t(t * columns + k);
      // (a + ib)(c + is) = (ac - bs) + i(as + bc)
      m.realToReal[at] = c, m.imaginaryToReal[at] = -s;
      m.realToImaginary[at] = s, m.imaginaryToImaginary[at] = c;
    }
  return m;
}

/// `signal` [..., n, ..., 1 or 2] transformed along `axis` (not the last)
/// to `length` frequencies (or samples, inverse), complex as a trailing
/// [2] (one-sided inverse: real, a trailing [1]); null, with the reason
/// recorded, when it cannot be built.
Value transformAlongAxis(NodeImporter &node, Value signal, int64_t axis, int64_t length,
                         bool inverse, bool onesided) {
  auto type = cast<RankedTensorType>(signal.getType());
  int64_t rank = type.getRank();
  int64_t inputLength = type.getDimSize(axis);
  DftMatrices m = dftMatrices(inputLength, length, inverse, onesided);
  if (failed(checkComputeBudget(node, double(type.getNumElements()) * m.columns * 2,
                                "multiply-adds")))
    return Value();

  OpBuilder &b = node.builder();
  Location loc = node.loc();
  // In f64, as numpy's FFT that ONNX's reference uses: a frequency that
  // should vanish then comes out within ONNX's tolerance of 0 (in f32, the
  // cancelling products leave errors of about 1e-6 of the signal).
  Type element = b.getF64Type();
  Value input = CastOp::create(b, loc, type.clone(element), signal);
  // The signal's axes with `axis` last, for a product along it.
  SmallVector<int64_t> perm, inversePerm(rank - 1);
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis)
      perm.push_back(i);
  perm.push_back(axis);
  for (int64_t i = 0; i < rank - 1; ++i)
    inversePerm[perm[i]] = i;
  auto part = [&](int64_t index) {
    Value value = node.createInferred<GatherOp>(input, node.int64Constant({index}, {}),
                                                b.getI64IntegerAttr(rank - 1));
    return node.createInferred<TransposeOp>(value, b.getDenseI64ArrayAttr(perm));
  };
  bool complexIn = type.getDimSize(rank - 1) == 2;
  Value real = part(0), imaginary = complexIn ? part(1) : Value();
  auto transform = [&](const std::vector<double> &fromReal, const std::vector<double> &fromImaginary) {
    Value sum = node.createInferred<MatMulOp>(
        real, matrixConstant(b, loc, element, m.rows, m.columns, fromReal));
    if (imaginary)
      sum = node.createInferred<AddOp>(
          sum, node.createInferred<MatMulOp>(
                   imaginary, matrixConstant(b, loc, element, m.rows, m.columns, fromImaginary)));
    if (!sum)
      return Value();
    auto shape = llvm::to_vector(cast<RankedTensorType>(sum.getType()).getShape());
    shape.push_back(1);
    return Value(ReshapeOp::create(b, loc, type.clone(shape).clone(element), sum));
  };
  Value out = transform(m.realToReal, m.imaginaryToReal);
  if (!(inverse && onesided))
    out = node.createInferred<ConcatOp>(
        ValueRange{out, transform(m.realToImaginary, m.imaginaryToImaginary)},
        b.getI64IntegerAttr(rank - 1));
  SmallVector<int64_t> back(inversePerm);
  back.push_back(rank - 1);
  Value transposed = node.createInferred<TransposeOp>(out, b.getDenseI64ArrayAttr(back));
  if (!transposed)
    return Value();
  auto result = cast<RankedTensorType>(transposed.getType());
  return CastOp::create(b, loc, result.clone(type.getElementType()), transposed);
}

/// A DFT whose axis input is known only at run time, given the result
/// shape the model states: the transform along each signal axis that gives
/// that shape, the one the axis names selected at run time, after a check
/// that it names one of them.
LogicalResult transformAlongRunTimeAxis(NodeImporter &node,
                                        llvm::function_ref<Value(int64_t)> transform) {
  RankedTensorType type = node.inputType(0), stated = node.declaredOutputType(0);
  int64_t rank = type.getRank();
  SmallVector<std::pair<int64_t, Value>> candidates;
  if (stated && node.inputType(2).getNumElements() == 1)
    for (int64_t axis = 0; axis < rank - 1; ++axis)
      if (Value result = transform(axis))
        if (cast<RankedTensorType>(result.getType()).getShape() == stated.getShape())
          candidates.push_back({axis, result});
  if (candidates.empty())
    return refuseRunTimeShapeInput(node, 2, "axis");
  OpBuilder &b = node.builder();
  Value named;
  Value result = selectAlongRunTimeAxis(node, 2, rank, candidates, &named);
  Value unnamed = CastOp::create(b, node.loc(), RankedTensorType::get({}, b.getI64Type()),
                                 node.createInferred<NotOp>(named));
  stopUnlessZero(node, unnamed,
                 "DFT axis naming none of the axes that give the result shape " +
                     formatShape(stated.getShape()) + " the model states");
  return node.setInferredOutput(0, result);
}

/// DFT(input [..., n, ..., 1 or 2] (real, or real and imaginary), dft_length,
/// axis): the transform along `axis`, complex as a trailing [2] (one-sided
/// inverse: real, a trailing [1]).
LogicalResult importDft(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  int64_t rank = type.getRank();
  if (!type.hasStaticShape() || rank < 2 || !isa<FloatType>(type.getElementType()) ||
      (type.getDimSize(rank - 1) != 1 && type.getDimSize(rank - 1) != 2))
    return node.unsupported("input must be a static float tensor whose last axis is 1 (real) "
                            "or 2 (complex)");
  bool inverse = node.intAttr("inverse", 0) != 0, onesided = node.intAttr("onesided", 0) != 0;
  std::optional<int64_t> givenLength;
  if (node.input(1)) {
    std::optional<SmallVector<int64_t>> given = node.constantInts(1, "dft_length");
    if (!given || given->size() != 1)
      return failure();
    givenLength = given->front();
  }
  // Null, with nothing recorded, along an axis the transform has no length.
  auto transform = [&](int64_t axis) -> Value {
    int64_t inputLength = type.getDimSize(axis);
    int64_t length =
        givenLength.value_or(inverse && onesided ? 2 * (inputLength - 1) : inputLength);
    if (length <= 0)
      return {};
    return transformAlongAxis(node, node.input(0), axis, length, inverse, onesided);
  };
  if (node.opset() >= 20 && node.input(2) && !node.constantInput(2))
    return transformAlongRunTimeAxis(node, transform);
  int64_t axis = node.opset() >= 20 ? -2 : node.intAttr("axis", 1);
  if (node.opset() >= 20 && node.input(2)) {
    std::optional<SmallVector<int64_t>> given = node.constantInts(2, "axis");
    if (!given || given->size() != 1)
      return failure();
    axis = given->front();
  }
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return node.unsupported("axis must be one of the signal's axes");
  if (Value result = transform(axis))
    return node.setInferredOutput(0, result);
  return node.unsupported("dft_length must be positive");
}

/// The frame length and step that give an STFT of a `length`-sample signal
/// the [batch, frames, bins, 2] result the model states, when exactly one
/// pair does (the constant ones, or the window's length, fixed).
std::optional<std::pair<int64_t, int64_t>> statedFraming(NodeImporter &node, int64_t length,
                                                         bool onesided) {
  RankedTensorType stated = node.declaredOutputType(0);
  if (!stated || stated.getRank() != 4 || length > kMaxComputedElements)
    return std::nullopt;
  int64_t frames = stated.getDimSize(1), bins = stated.getDimSize(2);
  auto constantOrNothing = [&](size_t input) -> std::optional<int64_t> {
    ElementsAttr constant = node.input(input) ? node.constantInput(input) : ElementsAttr();
    if (!constant || constant.getNumElements() != 1 || !isa<IntegerType>(constant.getElementType()))
      return std::nullopt;
    return (*constant.getValues<APInt>().begin()).getSExtValue();
  };
  SmallVector<int64_t> lengths;
  if (std::optional<int64_t> given = constantOrNothing(3))
    lengths.push_back(*given);
  else if (!node.input(3) && node.input(2) && node.inputType(2).hasStaticShape())
    lengths.push_back(node.inputType(2).getNumElements());
  else if (onesided)
    lengths.append({2 * (bins - 1), 2 * bins - 1}); // bins = n / 2 + 1
  else
    lengths.push_back(bins);
  std::optional<int64_t> givenStep = constantOrNothing(1);
  std::optional<std::pair<int64_t, int64_t>> found;
  for (int64_t n : lengths) {
    if (n <= 0 || n > length || (onesided ? n / 2 + 1 : n) != bins)
      continue;
    for (int64_t step = givenStep.value_or(1); step <= givenStep.value_or(length); ++step) {
      if (step <= 0 || (length - n) / step + 1 != frames)
        continue;
      if (found)
        return std::nullopt; // several pairs: the run could not tell which
      found = {n, step};
    }
  }
  return found;
}

/// STFT(signal [B, L, 1 or 2], frame_step, window [n], frame_length):
/// [B, frames, bins, 2]. The frames, (L - n) / frame_step + 1 of them, are
/// one gather of the signal; each, times the window, is transformed along
/// its n samples (one-sided: n / 2 + 1 bins).
LogicalResult importStft(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape() || type.getRank() != 3 || !isa<FloatType>(type.getElementType()) ||
      (type.getDimSize(2) != 1 && type.getDimSize(2) != 2))
    return node.unsupported("signal must be a static [batch, length, 1 or 2] of floats");
  int64_t length = type.getDimSize(1);
  bool onesided = node.intAttr("onesided", 1) != 0;
  std::optional<std::pair<int64_t, int64_t>> stated = statedFraming(node, length, onesided);
  auto implied = [&](bool ofStep) -> std::optional<ImpliedInts> {
    if (!stated)
      return std::nullopt;
    return exactly({ofStep ? stated->second : stated->first});
  };
  std::optional<SmallVector<int64_t>> step =
      shapeGivingInts(node, 1, "frame_step", [&] { return implied(true); });
  if (!step)
    return failure();
  int64_t frameLength = 0;
  if (node.input(3)) {
    std::optional<SmallVector<int64_t>> given =
        shapeGivingInts(node, 3, "frame_length", [&] { return implied(false); });
    if (!given || given->size() != 1)
      return failure();
    frameLength = given->front();
  } else if (node.input(2)) {
    RankedTensorType window = node.inputType(2);
    if (window.getRank() == 1 && window.hasStaticShape())
      frameLength = window.getDimSize(0);
  }
  if (step->size() != 1 || step->front() <= 0 || frameLength <= 0 || frameLength > length)
    return node.unsupported("frame_step must be positive and the frame (frame_length, or the "
                            "window's length) within the signal");
  if (node.input(2) && node.inputType(2).getShape() != ArrayRef<int64_t>{frameLength})
    return node.unsupported("the window must have frame_length entries");
  int64_t frames = (length - frameLength) / step->front() + 1;
  SmallVector<int64_t> positions;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t n = 0; n < frameLength; ++n)
      positions.push_back(f * step->front() + n);
  OpBuilder &b = node.builder();
  Value framed = node.createInferred<GatherOp>(
      node.input(0), node.int64Constant(positions, {frames, frameLength}), b.getI64IntegerAttr(1));
  if (node.input(2)) {
    RankedTensorType window = node.inputType(2);
    Value shaped = ReshapeOp::create(b, node.loc(), window.clone({1, 1, frameLength, 1}),
                                     node.input(2));
    framed = node.createInferred<MulOp>(framed, shaped);
  }
  return node.setInferredOutput(
      0, framed ? transformAlongAxis(node, framed, 2, frameLength, /*inverse=*/false, onesided)
                : Value());
}

} // namespace

void registerLinearMapHandlers(OpRegistry &registry) {
  registry.on("Col2Im", 18, importCol2Im);
  registry.on("DFT", 17, importDft);
  registry.on("STFT", 17, importStft);
}

} // namespace tessel::onnx_import
