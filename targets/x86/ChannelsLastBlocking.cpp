//===- ChannelsLastBlocking.cpp - Register blocks for NHWC windows --------===//
//
// In NHWC every output pixel holds its channels contiguously, so a block of
// a few output pixels by a few vectors of channels is all whole vectors
// however small the image gets (7 x 7 at the end of a ResNet). A regular
// convolution is then the contraction microkernel with pixels as rows: per
// reduction step (kh, kw, c) it loads one row segment of the filter and
// broadcasts one input element per pixel. A depthwise convolution and
// pooling keep one accumulator per pixel and channel vector and load the
// input vectors themselves. The INT8 convolution of quantized models steps
// four input channels at a time: it broadcasts four input bytes per pixel
// and accumulates dot products with the filter's dot panels (DotProduct.h);
// an INT8 depthwise convolution widens byte vectors to i32 lanes, and an
// INT8 max pool compares the byte vectors as they are.
//
// Blocks are walked channels outermost: the filter panel of a block of
// output channels stays in cache while every pixel block reads it, which
// matters at the end of a network, where a filter (2.4M floats for 3x3x512
// -> 512) outweighs the image it is applied to many times over.
//
//===----------------------------------------------------------------------===//

#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/AmxTiles.h"
#include "targets/x86/LoweringConfig.h"
#include "targets/x86/BlockingUtils.h"
#include "targets/x86/RegisterBudget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <tuple>

using namespace mlir;

namespace tessel::x86 {

namespace {

/// Whether `op` is a generic over an NHWC window with the loops of the
/// named ops, (n, oh, ow, channel, kh, kw[, c]): `loops` of them, the input
/// read at (n, oh * stride + kh * dilation, ow * stride + kw * dilation,
/// `inputChannel`), the filter at `filterDims`, the output at (n, oh, ow,
/// channel).
bool isWindowGeneric(linalg::LinalgOp op, unsigned loops, unsigned inputChannel,
                     ArrayRef<unsigned> filterDims) {
  if (op.getNumLoops() != loops || op.getNumReductionLoops() != loops - 4)
    return false;
  MLIRContext *context = op.getContext();
  auto d = [&](unsigned dim) { return getAffineDimExpr(dim, context); };
  SmallVector<AffineExpr> filter;
  for (unsigned dim : filterDims)
    filter.push_back(d(dim));
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap input = maps[0];
  return input.getNumResults() == 4 && input.getResult(0) == d(0) &&
         input.getResult(3) == d(inputChannel) && input.getResult(1).isFunctionOfDim(1) &&
         input.getResult(1).isFunctionOfDim(4) && input.getResult(2).isFunctionOfDim(2) &&
         input.getResult(2).isFunctionOfDim(5) &&
         maps[1] == AffineMap::get(loops, 0, filter, context) &&
         maps[2] == AffineMap::get(loops, 0, {d(0), d(1), d(2), d(3)}, context);
}

} // namespace

bool isDotConvolution(linalg::LinalgOp op) {
  // linalg.conv_2d_nhwc_hwcf's space: (n, oh, ow, f, kh, kw, c), HWCF filter.
  return dotBodyElement(op) && isWindowGeneric(op, 7, 6, {4, 5, 6, 3});
}

namespace {

enum class WindowKind { Convolution, DotConvolution, Depthwise, MaxPool, SumPool };

/// Loops shared by the four named ops: (n, oh, ow, channel, kh, kw[, c]).
enum Loop : unsigned { kBatch = 0, kRow = 1, kColumn = 2, kChannel = 3, kKernelRow = 4,
                       kKernelColumn = 5, kInputChannel = 6 };

/// Most output pixels of a block.
constexpr int64_t kMaxPixels = 16;
/// Most vectors of channels of a block.
constexpr int64_t kMaxChannelVectors = 4;
/// Most window positions (kh, kw) emitted one after another instead of as
/// loops.
constexpr int64_t kMaxUnrolledWindow = 16;

/// The quantized lowering's NHWC depthwise convolution: a generic with
/// linalg.depthwise_conv_2d_nhwc_hwc's iteration space, (n, oh, ow, c, kh,
/// kw), and HWC filter, whose body sums u8 x s8 products into i32.
bool isIntegerDepthwise(linalg::LinalgOp op) {
  return isDotProductBody(op) && isWindowGeneric(op, 6, 3, {4, 5, 3});
}

std::optional<WindowKind> windowKind(linalg::LinalgOp op) {
  if (isDotConvolution(op))
    return WindowKind::DotConvolution;
  if (isa<linalg::Conv2DNhwcHwcfOp>(op.getOperation()))
    return WindowKind::Convolution;
  if (isa<linalg::DepthwiseConv2DNhwcHwcOp>(op.getOperation()) || isIntegerDepthwise(op))
    return WindowKind::Depthwise;
  if (isa<linalg::PoolingNhwcMaxOp, linalg::PoolingNhwcMaxUnsignedOp>(op.getOperation()))
    return WindowKind::MaxPool;
  if (isa<linalg::PoolingNhwcSumOp>(op.getOperation()))
    return WindowKind::SumPool;
  return std::nullopt;
}

/// Strides (`name` "strides") or dilations of the (h, w) window: a named
/// op's attribute, or read off the input map (oh * stride + kh * dilation)
/// of a generic.
SmallVector<int64_t> windowAttribute(linalg::LinalgOp op, StringRef name) {
  if (auto attr = op->getAttrOfType<DenseIntElementsAttr>(name))
    return llvm::to_vector(attr.getValues<int64_t>());
  AffineMap input = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  // The output loops (1, 2) carry the strides, the window loops (4, 5) the
  // dilations: the map's value with that loop at 1 and the others at 0.
  unsigned first = name == "strides" ? 1 : 4;
  SmallVector<int64_t> values;
  for (unsigned axis = 0; axis < 2; ++axis) {
    SmallVector<int64_t> point(op.getNumLoops(), 0);
    point[first + axis] = 1;
    values.push_back(input.compose(point)[1 + axis]);
  }
  return values;
}

/// Issue slots of one reduction step of a block of `pixels` x `vectors`.
int64_t pixelStepCost(WindowKind kind, int64_t pixels, int64_t vectors, DotProductKind dot) {
  int64_t arithmetic = pixels * vectors;
  switch (kind) {
  case WindowKind::Convolution: // filter vectors + one broadcast per pixel
    return stepCost(arithmetic, vectors + pixels);
  case WindowKind::DotConvolution:
    // The same, in dot products and their operands; a broadcast of four
    // bytes takes a vector pipe besides its load (Zen), unlike an f32 one.
    return stepCost(arithmetic * dotInstructions(dot) + pixels +
                        (vectors + pixels) * preparationInstructions(dot),
                    vectors + pixels);
  case WindowKind::Depthwise: // filter vectors + input vectors
    return stepCost(arithmetic, vectors + arithmetic);
  case WindowKind::MaxPool:
  case WindowKind::SumPool: // input vectors
    return stepCost(arithmetic, arithmetic);
  }
  llvm_unreachable("window kind");
}

/// Accumulators a block may hold besides its loaded operands.
int64_t accumulatorBudget(WindowKind kind, int64_t vectors, int64_t width,
                          DotProductKind dot) {
  int64_t registers = vectorRegisters(width);
  switch (kind) {
  case WindowKind::Convolution: // filter vectors, one broadcast
    return registers - vectors - 1;
  case WindowKind::DotConvolution: // the same, prepared for dot products
    return registers - vectors * weightRegisters(dot) - activationRegisters(dot);
  case WindowKind::Depthwise: // filter vectors, one input vector
    return registers - vectors - 1;
  case WindowKind::MaxPool:
  case WindowKind::SumPool: // one input vector
    return registers - 1;
  }
  llvm_unreachable("window kind");
}

/// Whether the input rows that a regular convolution's block of `height` x
/// `width` pixels broadcasts from fit the L1 cache together. Each pixel
/// reads its own run of channels; when pixels lie a multiple of 4 KiB apart
/// (1024 or 2048 channels) every run maps to the same set, and more runs
/// than the set has ways (two stay for the filter stream) evict each other
/// at every step.
bool pixelRunsFitL1(linalg::LinalgOp op, int64_t height, int64_t width,
                    const CacheGeometry &caches) {
  auto inputType = cast<RankedTensorType>(op.getDpsInputOperand(0)->get().getType());
  int64_t inputColumns = inputType.getDimSize(2), channels = inputType.getDimSize(3);
  SmallVector<int64_t> strides = windowAttribute(op, "strides");
  SmallVector<int64_t> perSet(caches.l1Sets, 0);
  for (int64_t row = 0; row < height; ++row)
    for (int64_t column = 0; column < width; ++column) {
      int64_t pixel = row * strides[0] * inputColumns + column * strides[1];
      int64_t set = (pixel * channels * 4 / caches.lineBytes) % caches.l1Sets;
      if (++perSet[set] > caches.l1Ways - 2)
        return false;
    }
  return true;
}

/// Full blocks of `block` along `extent`, and the size of the last, partial
/// one (0 if none).
std::pair<int64_t, int64_t> blocksAlong(int64_t extent, int64_t block) {
  return {extent / block, extent % block};
}

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

/// Where a convolution block's filter [KH, KW, C, channels] lives when it is
/// a slice of a constant packed into panels (PackWeights).
struct FilterPanels {
  Value panels;
  Value panel;
};

/// The panels `panelWidth` wide that `filter` is a slice of, and the panel
/// the block reads. With `dot`, the filter of an INT8 convolution is a slice
/// of dot panels [F / P, KH, KW, C / 4, P, 4], returned viewed as
/// [F / P, KH, KW, C / 4, P * 4] bytes.
std::optional<FilterPanels> traceFilterPanels(OpBuilder &b, Location loc, Value filter,
                                              int64_t panelWidth, bool dot) {
  auto filterType = cast<RankedTensorType>(filter.getType());
  SliceOrigin origin = traceSlices(b, loc, filter);
  auto unpack = origin.source.getDefiningOp<linalg::UnPackOp>();
  if (!unpack || (dot ? packedFilterDotPanelWidth(unpack)
                      : packedFilterPanelWidth(unpack)) != panelWidth)
    return std::nullopt;
  for (unsigned axis = 0; axis < 3; ++axis)
    if (!isConstantIntValue(getAsOpFoldResult(origin.offsets[axis]), 0) ||
        unpack.getDestType().getDimSize(axis) != filterType.getDimSize(axis))
      return std::nullopt;
  Value panel = b.createOrFold<arith::DivUIOp>(
      loc, origin.offsets[3], arith::ConstantIndexOp::create(b, loc, panelWidth));
  if (!dot)
    return FilterPanels{unpack.getSource(), panel};
  Value bytes = tensor::CollapseShapeOp::create(
      b, loc, unpack.getSource(),
      ArrayRef<ReassociationIndices>{{0}, {1}, {2}, {3}, {4, 5}});
  return FilterPanels{bytes, panel};
}

/// The unpadded source of a block's input window, when the window is a slice
/// of a tensor.pad of the image (spatial padding only, a constant value):
/// blocks read the source in place, and only those whose window crosses the
/// border check their positions, instead of every kernel materializing the
/// padded image.
struct PaddedInput {
  Value source;
  Value padding;
  /// Where the window starts in the source: batch, row, column (rows and
  /// columns negative when the window starts in the padding), channel.
  SmallVector<Value> start;
  int64_t rows, columns;
};

std::optional<PaddedInput> tracePaddedInput(OpBuilder &b, Location loc, Value window) {
  auto pad = sliceRoot(window).getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getConstantPaddingValue())
    return std::nullopt;
  ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
  auto sourceType = pad.getSourceType();
  if (llvm::any_of(low, ShapedType::isDynamic) || llvm::any_of(high, ShapedType::isDynamic) ||
      low[0] || high[0] || low[3] || high[3] || !sourceType.hasStaticShape())
    return std::nullopt;
  SliceOrigin origin = traceSlices(b, loc, window);
  PaddedInput padded{pad.getSource(), pad.getConstantPaddingValue(), {}, sourceType.getDimSize(1),
                     sourceType.getDimSize(2)};
  for (unsigned axis = 0; axis < 4; ++axis)
    padded.start.push_back(b.createOrFold<arith::SubIOp>(
        loc, origin.offsets[axis], arith::ConstantIndexOp::create(b, loc, low[axis])));
  return padded;
}

/// A max pool of bytes (INT8 activations): u8 compared unsigned
/// (linalg.pooling_nhwc_max_unsigned), s8 signed.
bool isByteMaxPool(linalg::LinalgOp op) {
  return isa<linalg::PoolingNhwcMaxOp, linalg::PoolingNhwcMaxUnsignedOp>(op.getOperation()) &&
         llvm::all_of(op->getOperandTypes(), [](Type type) {
           auto tensor = dyn_cast<RankedTensorType>(type);
           return tensor && tensor.getElementType().isInteger(8);
         });
}

/// Whether a step that reads `padding` at every pixel leaves the sums as
/// they are (a zero product or sum, -inf under max, the least byte under a
/// byte max): a block skips the window positions where it would read
/// nothing else.
bool isIdentityOfStep(WindowKind kind, Value padding, bool unsignedMax) {
  if (kind == WindowKind::MaxPool) {
    APFloat value(0.0f);
    APInt byte;
    if (matchPattern(padding, m_ConstantInt(&byte)))
      return unsignedMax ? byte.isMinValue() : byte.isMinSignedValue();
    return matchPattern(padding, m_ConstantFloat(&value)) && value.isInfinity() &&
           value.isNegative();
  }
  return matchPattern(padding, m_Zero()) || matchPattern(padding, m_AnyZeroFloat());
}

/// max(sum, in), NaN-propagating like arith.maximumf but without ordering
/// -0 below +0, which costs AVX2 three more blends per step: the greater of
/// the two (the sum when it is NaN), or the input when it is NaN. The first
/// step's -inf sum folds away.
Value maximum(OpBuilder &b, Location loc, Value sum, Value in) {
  Value start = sum;
  if (auto broadcast = start.getDefiningOp<vector::BroadcastOp>())
    start = broadcast.getSource();
  APFloat value(0.0f);
  if (matchPattern(start, m_ConstantFloat(&value)) && value.isInfinity() && value.isNegative())
    return in;
  Value greater = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, in, sum);
  Value larger = arith::SelectOp::create(b, loc, greater, in, sum);
  Value inputIsNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, in, in);
  return arith::SelectOp::create(b, loc, inputIsNaN, in, larger);
}

/// Emits the block computation for `block`, whose producer's output is one
/// block [1, height, width, channels] (and its epilogue), in place of it.
void emitBlock(RewriterBase &rewriter, const BlockTile &block, WindowKind kind,
               int64_t panelWidth, int64_t width, std::optional<DotProductKind> dot,
               bool &readsInit) {
  linalg::LinalgOp tile = block.producer;
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  Value input = tile.getDpsInputOperand(0)->get();
  Value filter = tile.getDpsInputOperand(1)->get();
  Value output = tile.getDpsInitOperand(0)->get();
  auto outputType = cast<RankedTensorType>(output.getType());
  int64_t height = outputType.getDimSize(1), columns = outputType.getDimSize(2);
  int64_t channels = outputType.getDimSize(3);
  int64_t vectors = llvm::divideCeil(channels, width);
  SmallVector<int64_t> strides = windowAttribute(tile, "strides");
  SmallVector<int64_t> dilations = windowAttribute(tile, "dilations");
  SmallVector<int64_t> extents = tile.getStaticLoopRanges();
  // INT8 convolutions accumulate i32 from bytes (dot products four input
  // channels at a time, depthwise ones byte vectors widened lane by lane),
  // bf16 ones f32 from pairs of input channels; the others compute in f32.
  bool dotProduct = kind == WindowKind::DotConvolution;
  bool integerDepthwise = kind == WindowKind::Depthwise && isDotProductBody(tile);
  // Byte max pools compare the bytes themselves.
  bool byteMax = isByteMaxPool(tile);
  bool unsignedMax = isa<linalg::PoolingNhwcMaxUnsignedOp>(tile.getOperation());
  MLIRContext *context = rewriter.getContext();
  Type elementType = dotProduct         ? dotAccumulatorType(context, *dot)
                     : integerDepthwise ? Type(rewriter.getI32Type())
                     : byteMax          ? Type(rewriter.getI8Type())
                                        : Type(rewriter.getF32Type());
  auto vectorType = VectorType::get({width}, elementType);
  Value padding = ub::PoisonOp::create(rewriter, loc, elementType);
  // What `read` loads: bytes for integer depthwise convolutions.
  Type loadElement = integerDepthwise ? Type(rewriter.getI8Type()) : elementType;
  auto loadType = VectorType::get({width}, loadElement);
  Value loadPadding = ub::PoisonOp::create(rewriter, loc, loadElement);
  // Dot products read the input channels a group at a time (four bytes:
  // four i8 or two bf16).
  int64_t group = dotProduct ? dotGroupSize(*dot) : 1;
  Type groupElement = dotProduct ? dotElementType(context, *dot) : elementType;
  auto groupType = VectorType::get({group}, groupElement);
  auto weightType = VectorType::get({group * width}, groupElement);
  Value zeroGroupElement =
      arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(groupElement));
  int64_t inputChannels = cast<RankedTensorType>(input.getType()).getDimSize(3);
  auto index = [&](OpBuilder &b, Location at, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, at, value);
  };
  Value zero = index(rewriter, loc, 0);
  SmallVector<Value> channelIndex;
  for (int64_t vector = 0; vector < vectors; ++vector)
    channelIndex.push_back(index(rewriter, loc, vector * width));
  // The lanes past the block's last channel are masked.
  auto inBounds = [&](int64_t vector) {
    return SmallVector<bool>{(vector + 1) * width <= channels};
  };
  auto read = [&](OpBuilder &b, Location at, Value source, ValueRange indices,
                  int64_t vector) -> Value {
    return vector::TransferReadOp::create(b, at, loadType, source, indices, loadPadding,
                                          inBounds(vector));
  };

  SmallVector<Value> accumulators;
  for (int64_t row = 0; row < height; ++row)
    for (int64_t column = 0; column < columns; ++column)
      for (int64_t vector = 0; vector < vectors; ++vector)
        accumulators.push_back(initialAccumulator(
            rewriter, loc, output,
            {zero, index(rewriter, loc, row), index(rewriter, loc, column),
             channelIndex[vector]},
            inBounds(vector).front(), vectorType, readsInit));

  std::optional<FilterPanels> panels;
  if (kind == WindowKind::Convolution || dotProduct)
    panels = traceFilterPanels(rewriter, loc, filter, panelWidth, dotProduct);
  std::optional<PaddedInput> padded = tracePaddedInput(rewriter, loc, input);

  // Whether source row or column `start` + `offset` lies in [0, extent).
  auto insideExtent = [&](OpBuilder &b, Location at, Value start, Value offset,
                          int64_t extent) -> Value {
    Value position = b.createOrFold<arith::AddIOp>(at, start, offset);
    Value aboveZero = arith::CmpIOp::create(b, at, arith::CmpIPredicate::sge, position, zero);
    Value belowEnd =
        arith::CmpIOp::create(b, at, arith::CmpIPredicate::slt, position, index(b, at, extent));
    return arith::AndIOp::create(b, at, aboveZero, belowEnd).getResult();
  };

  // What loadInput reads at a position: one element (convolution), one
  // vector of channels (depthwise, pooling), or one group of channels (dot
  // products; masked past the last channel).
  struct Load {
    enum { Element, Vector, Group } shape;
    int64_t vector = 0;
  };
  // Input element, vector or group at window position (h, w) and channel
  // `c`. Read through padding, a position outside the source reads the
  // padding value; `guarded` says the window may cross the border, which
  // only then costs a bounds check and a select.
  auto loadInput = [&](OpBuilder &b, Location at, Value h, Value w, Value c, Load shape,
                       bool guarded) -> Value {
    auto load = [&](Value source, ValueRange indices) -> Value {
      switch (shape.shape) {
      case Load::Vector:
        return read(b, at, source, indices, shape.vector);
      case Load::Group:
        return vector::TransferReadOp::create(b, at, groupType, source, indices,
                                              zeroGroupElement,
                                              ArrayRef<bool>{inputChannels % group == 0});
      case Load::Element:
        return tensor::ExtractOp::create(b, at, source, indices);
      }
      llvm_unreachable("load shape");
    };
    if (!padded)
      return load(input, {zero, h, w, c});
    auto add = [&](Value x, Value y) { return b.createOrFold<arith::AddIOp>(at, x, y); };
    Value row = add(padded->start[1], h), column = add(padded->start[2], w);
    SmallVector<Value> indices{padded->start[0], row, column, add(padded->start[3], c)};
    if (!guarded)
      return load(padded->source, indices);
    Value valid = arith::AndIOp::create(b, at, insideExtent(b, at, zero, row, padded->rows),
                                        insideExtent(b, at, zero, column, padded->columns));
    indices[1] = arith::SelectOp::create(b, at, valid, row, zero);
    indices[2] = arith::SelectOp::create(b, at, valid, column, zero);
    Value loaded = load(padded->source, indices);
    Value fill = padded->padding;
    if (shape.shape == Load::Vector)
      fill = vector::BroadcastOp::create(b, at, loadType, fill);
    if (shape.shape == Load::Group)
      fill = vector::BroadcastOp::create(b, at, groupType, fill);
    return arith::SelectOp::create(b, at, valid, loaded, fill);
  };

  // The input position of pixel (row, column) at kernel position (kh, kw).
  auto inputPosition = [&](OpBuilder &b, Location at, int64_t row, int64_t column,
                           Value kh, Value kw) -> std::pair<Value, Value> {
    auto offset = [&](int64_t base, Value k, int64_t dilation) {
      Value scaled = arith::MulIOp::create(b, at, k, index(b, at, dilation));
      return arith::AddIOp::create(b, at, scaled, index(b, at, base)).getResult();
    };
    return {offset(row * strides[0], kh, dilations[0]),
            offset(column * strides[1], kw, dilations[1])};
  };

  auto step = [&](OpBuilder &b, Location at, ValueRange ivs, ValueRange sums,
                  bool guarded) {
    Value kh = ivs[0], kw = ivs[1];
    SmallVector<Value> updated;
    SmallVector<Value> filterVectors;
    if (kind == WindowKind::Convolution) {
      Value c = ivs[2];
      for (int64_t vector = 0; vector < vectors; ++vector)
        filterVectors.push_back(
            panels ? vector::TransferReadOp::create(
                         b, at, vectorType, panels->panels,
                         ValueRange{panels->panel, kh, kw, c, channelIndex[vector]}, padding,
                         ArrayRef<bool>{true})
                         .getResult()
                   : read(b, at, filter, {kh, kw, c, channelIndex[vector]}, vector));
      for (int64_t row = 0; row < height; ++row)
        for (int64_t column = 0; column < columns; ++column) {
          auto [h, w] = inputPosition(b, at, row, column, kh, kw);
          Value scalar = loadInput(b, at, h, w, c, {Load::Element}, guarded);
          Value broadcast = vector::BroadcastOp::create(b, at, vectorType, scalar);
          for (int64_t vector = 0; vector < vectors; ++vector)
            updated.push_back(vector::FMAOp::create(b, at, broadcast, filterVectors[vector],
                                                    sums[updated.size()]));
        }
      return updated;
    }
    if (dotProduct) {
      // ivs[2] steps a group of input channels at a time.
      Value groupIndex = ivs[2];
      SmallVector<DotOperand> weights;
      for (int64_t vector = 0; vector < vectors; ++vector) {
        Value groups = vector::TransferReadOp::create(
            b, at, weightType, panels->panels,
            ValueRange{panels->panel, kh, kw, groupIndex, index(b, at, vector * width * group)},
            zeroGroupElement, ArrayRef<bool>{true});
        weights.push_back(prepareWeights(b, at, *dot, groups));
      }
      Value c = arith::MulIOp::create(b, at, groupIndex, index(b, at, group));
      for (int64_t row = 0; row < height; ++row)
        for (int64_t column = 0; column < columns; ++column) {
          auto [h, w] = inputPosition(b, at, row, column, kh, kw);
          Value elements = loadInput(b, at, h, w, c, {Load::Group}, guarded);
          DotOperand activations = prepareActivations(b, at, *dot, elements, width);
          for (int64_t vector = 0; vector < vectors; ++vector)
            updated.push_back(accumulateDot(b, at, *dot, sums[updated.size()], activations,
                                            weights[vector]));
        }
      return updated;
    }
    if (kind == WindowKind::Depthwise)
      for (int64_t vector = 0; vector < vectors; ++vector) {
        Value weights = read(b, at, filter, {kh, kw, channelIndex[vector]}, vector);
        filterVectors.push_back(integerDepthwise
                                    ? arith::ExtSIOp::create(b, at, vectorType, weights)
                                    : weights);
      }
    for (int64_t row = 0; row < height; ++row)
      for (int64_t column = 0; column < columns; ++column) {
        auto [h, w] = inputPosition(b, at, row, column, kh, kw);
        for (int64_t vector = 0; vector < vectors; ++vector) {
          Value in =
              loadInput(b, at, h, w, channelIndex[vector], {Load::Vector, vector}, guarded);
          Value sum = sums[updated.size()];
          switch (kind) {
          case WindowKind::Depthwise:
            if (integerDepthwise) {
              Value widened = arith::ExtUIOp::create(b, at, vectorType, in);
              Value product = arith::MulIOp::create(b, at, widened, filterVectors[vector]);
              updated.push_back(arith::AddIOp::create(b, at, sum, product));
            } else {
              updated.push_back(vector::FMAOp::create(b, at, in, filterVectors[vector], sum));
            }
            break;
          case WindowKind::MaxPool:
            if (!byteMax)
              updated.push_back(maximum(b, at, sum, in));
            else if (unsignedMax)
              updated.push_back(arith::MaxUIOp::create(b, at, sum, in));
            else
              updated.push_back(arith::MaxSIOp::create(b, at, sum, in));
            break;
          case WindowKind::SumPool:
            updated.push_back(arith::AddFOp::create(b, at, sum, in));
            break;
          case WindowKind::Convolution:
          case WindowKind::DotConvolution:
            llvm_unreachable("handled above");
          }
        }
      }
    return updated;
  };

  Value one = index(rewriter, loc, 1);
  SmallVector<Value> windowExtents{index(rewriter, loc, extents[kKernelRow]),
                                   index(rewriter, loc, extents[kKernelColumn])};
  // Convolutions also step their input channels, dot products a group at a
  // time.
  bool channelLoop = kind == WindowKind::Convolution || dotProduct;
  Value channelSteps =
      channelLoop ? index(rewriter, loc, llvm::divideCeil(extents[kInputChannel], group))
                  : Value();
  // Small windows are unrolled: the window positions become constants, so
  // that a block spanning whole rows knows at compile time which of its
  // positions fall into the left and right padding.
  int64_t kernelRows = extents[kKernelRow], kernelColumns = extents[kKernelColumn];
  bool unroll = kernelRows * kernelColumns <= kMaxUnrolledWindow;
  // One window position: the input channel loop of convolutions, a single
  // step otherwise.
  auto reducePosition = [&](OpBuilder &b, Location at, Value kh, Value kw, ValueRange sums,
                            bool guarded) -> SmallVector<Value> {
    if (!channelLoop)
      return step(b, at, {kh, kw}, sums, guarded);
    auto channels = scf::ForOp::create(
        b, at, zero, channelSteps, one, sums,
        [&](OpBuilder &nested, Location inner, Value c, ValueRange carried) {
          scf::YieldOp::create(nested, inner, step(nested, inner, {kh, kw, c}, carried, guarded));
        });
    return SmallVector<Value>(channels.getResults());
  };
  // A window position of a block that crosses the border: where every
  // pixel of the block reads inside the image (most positions, for a block
  // beside the border), it reads unchecked; where none does and padding
  // leaves the sums as they are, the position is skipped; only the others
  // check each read.
  bool paddingIsIdentity = padded && isIdentityOfStep(kind, padded->padding, unsignedMax);
  auto reduceBorderPosition = [&](OpBuilder &b, Location at, Value kh, Value kw,
                                  ValueRange sums) -> SmallVector<Value> {
    auto pixelsInside = [&](int64_t count, bool rows) -> std::pair<Value, Value> {
      Value all, any;
      for (int64_t i = 0; i < count; ++i) {
        auto [h, w] = inputPosition(b, at, rows ? i : 0, rows ? 0 : i, kh, kw);
        Value inside = rows ? insideExtent(b, at, padded->start[1], h, padded->rows)
                            : insideExtent(b, at, padded->start[2], w, padded->columns);
        all = all ? arith::AndIOp::create(b, at, all, inside).getResult() : inside;
        any = any ? arith::OrIOp::create(b, at, any, inside).getResult() : inside;
      }
      return {all, any};
    };
    auto [allRows, anyRow] = pixelsInside(height, /*rows=*/true);
    auto [allColumns, anyColumn] = pixelsInside(columns, /*rows=*/false);
    Value allInside = arith::AndIOp::create(b, at, allRows, allColumns);
    Value anyInside = arith::AndIOp::create(b, at, anyRow, anyColumn);
    auto ifElse = [&](OpBuilder &builder, Value condition, auto thenSums, auto elseSums) {
      auto branch = scf::IfOp::create(builder, at, sums.getTypes(), condition,
                                      /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(&branch.getThenRegion().front());
      scf::YieldOp::create(builder, at, thenSums(builder));
      builder.setInsertionPointToStart(&branch.getElseRegion().front());
      scf::YieldOp::create(builder, at, elseSums(builder));
      return SmallVector<Value>(branch.getResults());
    };
    auto checked = [&](OpBuilder &builder) {
      return reducePosition(builder, at, kh, kw, sums, /*guarded=*/true);
    };
    return ifElse(
        b, allInside,
        [&](OpBuilder &builder) {
          return reducePosition(builder, at, kh, kw, sums, /*guarded=*/false);
        },
        [&](OpBuilder &builder) -> SmallVector<Value> {
          if (!paddingIsIdentity)
            return checked(builder);
          return ifElse(builder, anyInside, checked,
                        [&](OpBuilder &) { return SmallVector<Value>(sums); });
        });
  };
  auto reduce = [&](OpBuilder &b, bool border) -> SmallVector<Value> {
    auto position = [&](OpBuilder &nested, Location at, Value kh, Value kw, ValueRange sums) {
      return border ? reduceBorderPosition(nested, at, kh, kw, sums)
                    : reducePosition(nested, at, kh, kw, sums, /*guarded=*/false);
    };
    if (!unroll)
      return scf::buildLoopNest(
                 b, loc, {zero, zero}, windowExtents, {one, one}, accumulators,
                 [&](OpBuilder &nested, Location at, ValueRange ivs, ValueRange sums) {
                   return position(nested, at, ivs[0], ivs[1], sums);
                 })
          .results;
    SmallVector<Value> sums = accumulators;
    for (int64_t kh = 0; kh < kernelRows; ++kh)
      for (int64_t kw = 0; kw < kernelColumns; ++kw)
        sums = position(b, loc, index(b, loc, kh), index(b, loc, kw), sums);
    return sums;
  };
  SmallVector<Value> results;
  if (!padded) {
    results = reduce(rewriter, /*border=*/false);
  } else {
    // Most blocks' windows lie inside the image and read it unchecked.
    auto windowType = cast<RankedTensorType>(input.getType());
    auto within = [&](Value start, int64_t extent, int64_t sourceExtent) {
      Value end = arith::AddIOp::create(rewriter, loc, start, index(rewriter, loc, extent));
      return arith::AndIOp::create(
          rewriter, loc,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, start, zero),
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, end,
                                index(rewriter, loc, sourceExtent)));
    };
    Value interior = arith::AndIOp::create(
        rewriter, loc, within(padded->start[1], windowType.getDimSize(1), padded->rows),
        within(padded->start[2], windowType.getDimSize(2), padded->columns));
    auto branch = scf::IfOp::create(rewriter, loc, ValueRange(accumulators).getTypes(),
                                    interior, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&branch.getThenRegion().front());
    scf::YieldOp::create(rewriter, loc, reduce(rewriter, /*border=*/false));
    rewriter.setInsertionPointToStart(&branch.getElseRegion().front());
    scf::YieldOp::create(rewriter, loc, reduce(rewriter, /*border=*/true));
    results = branch.getResults();
  }

  SmallVector<BlockValue> values;
  for (int64_t row = 0; row < height; ++row)
    for (int64_t column = 0; column < columns; ++column)
      for (int64_t vector = 0; vector < vectors; ++vector)
        values.push_back({results[values.size()],
                          {zero, index(rewriter, loc, row), index(rewriter, loc, column),
                           channelIndex[vector]},
                          inBounds(vector).front()});
  storeBlock(rewriter, loc, block, values);
}

/// Emits `block`, an INT8 convolution tile of [1, 1, pixels, channels]
/// outputs whose input is a slice of an unpadded image, on AMX tiles
/// (AmxTiles.h): the block's pixels are the rows of its activation tiles,
/// `rowStride` bytes apart in the image, and every 16 of its channels an
/// accumulator tile. Per window position (kh, kw), 64 input channels at a
/// time, one activation tile and, per accumulator, 16 groups of k of the
/// filter's dot panel.
void emitAmxBlock(RewriterBase &rewriter, const BlockTile &block, int64_t panelWidth,
                  bool &readsInit) {
  linalg::LinalgOp tile = block.producer;
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  Value input = tile.getDpsInputOperand(0)->get();
  Value output = tile.getDpsInitOperand(0)->get();
  auto outputType = cast<RankedTensorType>(output.getType());
  int64_t pixels = outputType.getDimSize(2), channels = outputType.getDimSize(3);
  int64_t accumulatorCount = llvm::divideCeil(channels, kTileColumns);
  SmallVector<int64_t> strides = windowAttribute(tile, "strides");
  SmallVector<int64_t> dilations = windowAttribute(tile, "dilations");
  SmallVector<int64_t> extents = tile.getStaticLoopRanges();
  auto index = [&](OpBuilder &b, Location at, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, at, value);
  };

  TileSource image = tileSource(rewriter, loc, input);
  int64_t imageChannels = cast<MemRefType>(image.buffer.getType()).getDimSize(3);
  FilterPanels panels = *traceFilterPanels(rewriter, loc, tile.getDpsInputOperand(1)->get(),
                                           panelWidth, /*dot=*/true);
  TileSource filter = tileSource(rewriter, loc, panels.panels);
  int64_t panelRowBytes = cast<MemRefType>(filter.buffer.getType()).getDimSize(4);

  auto position = [&](OpBuilder &b, Location at, ValueRange ivs, ValueRange sums) {
    Value kh = ivs[0], kw = ivs[1];
    auto offset = [&](Value start, Value k, int64_t dilation) {
      return b.createOrFold<arith::AddIOp>(
          at, start, b.createOrFold<arith::MulIOp>(at, k, index(b, at, dilation)));
    };
    Value row = offset(image.offsets[1], kh, dilations[0]);
    Value column = offset(image.offsets[2], kw, dilations[1]);
    return accumulateTiles(
        b, at, sums, pixels, extents[kInputChannel] / 4,
        [&](OpBuilder &nested, Location inner, Value firstGroup, Type type) {
          Value channel = offset(image.offsets[3], firstGroup, 4);
          return loadTile(nested, inner, type, image.buffer,
                          {image.offsets[0], row, column, channel},
                          strides[1] * imageChannels);
        },
        [&](OpBuilder &nested, Location inner, Value firstGroup, int64_t accumulator,
            Type type) {
          return loadTile(nested, inner, type, filter.buffer,
                          {panels.panel, kh, kw, firstGroup,
                           index(nested, inner, accumulator * kTileRowBytes)},
                          panelRowBytes);
        });
  };
  Value zero = index(rewriter, loc, 0), one = index(rewriter, loc, 1);
  SmallVector<Value> sums =
      scf::buildLoopNest(rewriter, loc, {zero, zero},
                         {index(rewriter, loc, extents[kKernelRow]),
                          index(rewriter, loc, extents[kKernelColumn])},
                         {one, one}, zeroAccumulators(rewriter, loc, accumulatorCount, pixels),
                         position)
          .results;

  Value stage = stageAccumulators(rewriter, loc, sums);
  auto rowType = VectorType::get({kTileColumns}, rewriter.getI32Type());
  storeBlockRows(rewriter, loc, block, pixels, [&](OpBuilder &b, Location at, Value pixel) {
    SmallVector<BlockValue> values;
    for (int64_t accumulator = 0; accumulator < accumulatorCount; ++accumulator) {
      SmallVector<Value> indices{zero, zero, pixel,
                                 index(b, at, accumulator * kTileColumns)};
      bool inBounds = (accumulator + 1) * kTileColumns <= channels;
      Value start = initialAccumulator(b, at, output, indices, inBounds, rowType, readsInit);
      Value sum = accumulatorRow(b, at, stage, accumulator, pixel);
      values.push_back({arith::AddIOp::create(b, at, start, sum), indices, inBounds});
    }
    return values;
  });
}

} // namespace

bool matchChannelsLastWindow(linalg::LinalgOp op) {
  std::optional<WindowKind> kind = windowKind(op);
  if (!kind || !op.hasPureTensorSemantics())
    return false;
  // Static f32 tensors, or the bytes and i32 sums of INT8 convolutions, the
  // bf16 operands of bf16 ones, or the bytes of INT8 max pools.
  bool narrow = dotBodyElement(op) || isByteMaxPool(op);
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || (!narrow && !type.getElementType().isF32()))
      return false;
  }
  return true;
}

/// The panel width of `op`'s packed filter, if it is read from panels (dot
/// panels for dot products).
std::optional<int64_t> filterPanelWidth(linalg::LinalgOp op) {
  auto unpack = sliceRoot(op.getDpsInputOperand(1)->get()).getDefiningOp<linalg::UnPackOp>();
  if (!unpack)
    return std::nullopt;
  if (isDotConvolution(op))
    return packedFilterDotPanelWidth(unpack);
  return packedFilterPanelWidth(unpack);
}

bool convolutionFitsAmxTiles(linalg::LinalgOp op) {
  if (!isDotConvolution(op) || !isDotProductBody(op))
    return false;
  // Rows of whole groups of four input channels, so that no tile reads past
  // the image.
  return op.getStaticLoopRanges()[kInputChannel] % 4 == 0;
}

int64_t amxConvolutionChannels(linalg::LinalgOp op, int64_t pixels) {
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  return accumulatorBudget(extents[kColumn], pixels, extents[kInputChannel] / 4) *
         kTileColumns;
}

PixelBlock chooseAmxBlock(linalg::LinalgOp op) {
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  int64_t pixels = blockRows(extents[kColumn]);
  return {1, pixels,
          std::min<int64_t>(llvm::alignTo(extents[kChannel], kTileColumns),
                            amxConvolutionChannels(op, pixels))};
}

bool isBlockableChannelsLast(linalg::LinalgOp op) {
  std::optional<LoweringConfig> config = loweringConfigOf(op);
  // Dot products read their filter from dot panels only.
  return config && matchChannelsLastWindow(op) &&
         (!isDotConvolution(op) || filterPanelWidth(op) == config->panelWidth());
}


PixelBlock choosePixelBlock(linalg::LinalgOp op, int64_t width, DotProductKind dot,
                            const CacheGeometry &caches) {
  WindowKind kind = *windowKind(op);
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  int64_t rows = extents[kRow], columns = extents[kColumn], channels = extents[kChannel];
  PixelBlock best{1, 1, width};
  int64_t bestCost = -1, bestBlocks = 0;
  bool bestSplitsFilter = false;
  for (int64_t vectors = 1; vectors <= kMaxChannelVectors; ++vectors) {
    int64_t blockChannels = vectors * width;
    if (blockChannels > static_cast<int64_t>(llvm::alignTo(channels, width)))
      break;
    int64_t maxPixels =
        std::min(kMaxPixels, accumulatorBudget(kind, vectors, width, dot) / vectors);
    auto [channelBlocks, channelTail] = blocksAlong(channels, blockChannels);
    // Workgroups split the channels of a filter larger than its image, each
    // reading its own panels, but only at whole blocks of one size
    // (TileAndFuse): with a tail they split pixel rows instead, and each
    // reads the whole filter. Of blocks that cost the same, one that
    // divides the channels (a 512 x 512 3x3 filter is 9.4 MB, read once
    // instead of 7 times), then the fewest blocks.
    bool splitsFilter = channelTail == 0 || channelBlocks == 0;
    for (int64_t blockColumns = 1; blockColumns <= std::min(columns, maxPixels);
         ++blockColumns) {
      // Whole rows of pixels may be stacked into one block.
      int64_t maxRows = blockColumns == columns ? maxPixels / blockColumns : 1;
      for (int64_t blockRows = 1; blockRows <= std::min(rows, maxRows); ++blockRows) {
        if ((kind == WindowKind::Convolution || kind == WindowKind::DotConvolution) &&
            blockRows * blockColumns > 1 &&
            !pixelRunsFitL1(op, blockRows, blockColumns, caches))
          continue;
        auto [rowBlocks, rowTail] = blocksAlong(rows, blockRows);
        auto [columnBlocks, columnTail] = blocksAlong(columns, blockColumns);
        int64_t cost = 0, blocks = 0;
        for (auto [rowCount, height] : {std::pair{rowBlocks, blockRows}, {1, rowTail}})
          for (auto [columnCount, blockWidth] :
               {std::pair{columnBlocks, blockColumns}, {1, columnTail}})
            for (auto [channelCount, blockVectors] :
                 {std::pair{channelBlocks, vectors},
                  {1, llvm::divideCeil(channelTail, width)}}) {
              int64_t count = rowCount * columnCount * channelCount;
              if (!height || !blockWidth || !blockVectors || !count)
                continue;
              cost += count * pixelStepCost(kind, height * blockWidth, blockVectors, dot);
              blocks += count;
            }
        if (bestCost < 0 || std::tuple(cost, !splitsFilter, blocks) <
                                std::tuple(bestCost, !bestSplitsFilter, bestBlocks)) {
          best = PixelBlock{blockRows, blockColumns, blockChannels};
          bestCost = cost;
          bestBlocks = blocks;
          bestSplitsFilter = splitsFilter;
        }
      }
    }
  }
  return best;
}

/// Whether every use of `value` is the input of an NHWC window op that
/// register blocking handles, directly or through slices (the workgroups'
/// tiles of the op, while tiling fuses producers into them).
static bool readByBlockedWindows(Value value) {
  return !value.use_empty() && llvm::all_of(value.getUses(), [](OpOperand &use) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(use.getOwner()))
      return readByBlockedWindows(slice.getResult());
    auto op = dyn_cast<linalg::LinalgOp>(use.getOwner());
    // Tiles are loaded from memory whole: AMX blocks read a padded image.
    return op && isBlockableChannelsLast(op) && use.getOperandNumber() == 0 &&
           loweringConfigOf(op)->dotProduct != DotProductKind::Amx;
  });
}

bool padsChannelsLastWindow(tensor::PadOp pad) {
  return pad.getConstantPaddingValue() && readByBlockedWindows(pad.getResult());
}

std::optional<int64_t> packedFilterPanelWidth(linalg::UnPackOp unpack) {
  RankedTensorType source = unpack.getSourceType(), dest = unpack.getDestType();
  if (source.getRank() != 5 || dest.getRank() != 4 || !source.hasStaticShape() ||
      !dest.hasStaticShape() || unpack.getInnerDimsPos() != ArrayRef<int64_t>{3} ||
      unpack.getOuterDimsPerm() != ArrayRef<int64_t>{3, 0, 1, 2})
    return std::nullopt;
  ArrayRef<int64_t> tiles = unpack.getStaticInnerTiles();
  if (tiles.size() != 1 || ShapedType::isDynamic(tiles[0]) ||
      static_cast<int64_t>(llvm::divideCeil(dest.getDimSize(3), tiles[0])) !=
          source.getDimSize(0))
    return std::nullopt;
  return tiles[0];
}

std::optional<int64_t> packedFilterDotPanelWidth(linalg::UnPackOp unpack) {
  RankedTensorType source = unpack.getSourceType(), dest = unpack.getDestType();
  if (source.getRank() != 6 || dest.getRank() != 4 || !source.hasStaticShape() ||
      !dest.hasStaticShape() ||
      !(source.getElementType().isInteger(8) || source.getElementType().isBF16()) ||
      unpack.getInnerDimsPos() != ArrayRef<int64_t>{3, 2} ||
      unpack.getOuterDimsPerm() != ArrayRef<int64_t>{3, 0, 1, 2})
    return std::nullopt;
  ArrayRef<int64_t> tiles = unpack.getStaticInnerTiles();
  if (tiles.size() != 2 || ShapedType::isDynamic(tiles[0]) ||
      tiles[1] != dotGroupSize(source.getElementType()) ||
      static_cast<int64_t>(llvm::divideCeil(dest.getDimSize(3), tiles[0])) !=
          source.getDimSize(0))
    return std::nullopt;
  return tiles[0];
}

LogicalResult registerBlockChannelsLast(RewriterBase &rewriter, linalg::LinalgOp op,
                                        int64_t width) {
  if (!isBlockableChannelsLast(op))
    return failure();
  LoweringConfig config = *loweringConfigOf(op);
  WindowKind kind = *windowKind(op);
  BlockedOp blocked(op);
  Operation *init = initComputation(op);
  bool readsInit = false;
  // Result axes (n, oh, ow, channel). A convolution walks channels
  // outermost, keeping a filter panel in cache; pooling and depthwise
  // blocks, whose filters are small, walk them innermost, so that every
  // input line is read once for all channels instead of once per block.
  bool largeFilter = kind == WindowKind::Convolution || kind == WindowKind::DotConvolution;
  SmallVector<unsigned> order = largeFilter
                                    ? SmallVector<unsigned>{kBatch, kChannel, kRow, kColumn}
                                    : SmallVector<unsigned>{kBatch, kRow, kColumn, kChannel};
  if (failed(blockPieces(rewriter, blocked, blocked.root(), config.registerBlock,
                         {kRow, kColumn, kChannel}, order,
                         [&](const BlockTile &tile, ArrayRef<int64_t>) {
                           if (config.dotProduct == DotProductKind::Amx)
                             emitAmxBlock(rewriter, tile, config.panelWidth(), readsInit);
                           else
                             emitBlock(rewriter, tile, kind, config.panelWidth(), width,
                                       config.dotProduct, readsInit);
                         })))
    return failure();
  if (!readsInit)
    dropInitComputation(rewriter, init);
  return success();
}

} // namespace tessel::x86
