//===- DeformConv.cpp - ONNX DeformConv (opsets 19, 22) -------------------===//
//
// A 2-D convolution whose taps sample X where the offsets move them: tap
// (a, b) of output pixel (i, j) reads X at
//   y = i * stride_h - pad_top + a * dilation_h + offset_y,
//   x = j * stride_w - pad_left + b * dilation_w + offset_x,
// bilinearly, each of the four pixels around the point counting 0 outside
// X (ONNX's reference samples with GridSample, zeros padding and aligned
// corners), times the mask when there is one. The offsets (and mask) come
// per offset group of channels, per tap and per output pixel.
//
// The samples are gathered from X's pixels as rows of one offset group's
// channels, NHWC: four gathers of [N, G, K, OH, OW] rows, weighted and
// summed. Laid out as columns [N * OH * OW, C * K] (channel, then tap, as W
// orders them), they make the convolution one product per group.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The attributes and shapes of one DeformConv, checked.
struct Geometry {
  int64_t batch, channels, height, width;
  int64_t outChannels, groups, offsetGroups;
  int64_t kernelHeight, kernelWidth, outHeight, outWidth;
  SmallVector<int64_t> strides, dilations, pads;

  int64_t taps() const { return kernelHeight * kernelWidth; }
};

/// The 2-D geometry of `node`, or nullopt after recording why not.
std::optional<Geometry> readGeometry(NodeImporter &node) {
  RankedTensorType x = node.inputType(0), w = node.inputType(1), offset = node.inputType(2);
  if (x.getRank() != 4 || w.getRank() != 4 || offset.getRank() != 4 || !x.hasStaticShape() ||
      !w.hasStaticShape() || !offset.hasStaticShape()) {
    (void)node.unsupported("only 2-D convolutions of static shapes are supported (X [N, C, H, "
                           "W], W [OC, C / group, kH, kW], offset [N, 2 * offset_group * kH * "
                           "kW, OH, OW])");
    return std::nullopt;
  }
  Geometry g;
  g.batch = x.getDimSize(0), g.channels = x.getDimSize(1);
  g.height = x.getDimSize(2), g.width = x.getDimSize(3);
  g.outChannels = w.getDimSize(0);
  g.kernelHeight = w.getDimSize(2), g.kernelWidth = w.getDimSize(3);
  g.outHeight = offset.getDimSize(2), g.outWidth = offset.getDimSize(3);
  g.groups = node.intAttr("group", 1);
  g.offsetGroups = node.intAttr("offset_group", 1);
  auto ints = [&](StringRef name, SmallVector<int64_t> fallback) {
    if (std::optional<std::vector<int64_t>> given = node.intsAttr(name))
      return SmallVector<int64_t>(given->begin(), given->end());
    return fallback;
  };
  g.strides = ints("strides", {1, 1});
  g.dilations = ints("dilations", {1, 1});
  g.pads = ints("pads", {0, 0, 0, 0});
  SmallVector<int64_t> kernel = ints("kernel_shape", {g.kernelHeight, g.kernelWidth});
  auto fail = [&](const Twine &reason) {
    (void)node.unsupported(reason);
    return std::nullopt;
  };
  if (g.groups < 1 || g.offsetGroups < 1 || g.channels % g.groups != 0 ||
      g.channels % g.offsetGroups != 0 || g.outChannels % g.groups != 0 ||
      w.getDimSize(1) * g.groups != g.channels)
    return fail("group and offset_group must divide the channels, and W must have C / group "
                "input channels");
  if (g.strides.size() != 2 || g.dilations.size() != 2 || g.pads.size() != 4 ||
      kernel != SmallVector<int64_t>{g.kernelHeight, g.kernelWidth} ||
      llvm::any_of(g.strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(g.dilations, [](int64_t d) { return d < 1; }))
    return fail("strides, dilations, pads and kernel_shape must fit a 2-D kernel of W's shape");
  auto extent = [&](int64_t size, int64_t k, int64_t axis) {
    int64_t span = (k - 1) * g.dilations[axis] + 1;
    return (size + g.pads[axis] + g.pads[axis + 2] - span) / g.strides[axis] + 1;
  };
  if (offset.getDimSize(0) != g.batch || offset.getDimSize(1) != 2 * g.offsetGroups * g.taps() ||
      g.outHeight != extent(g.height, g.kernelHeight, 0) ||
      g.outWidth != extent(g.width, g.kernelWidth, 1))
    return fail("offset must be [N, 2 * offset_group * kH * kW, OH, OW], OH and OW those of the "
                "strides, dilations and pads");
  if (node.input(4)) {
    RankedTensorType mask = node.inputType(4);
    if (mask.getShape() !=
        ArrayRef<int64_t>{g.batch, g.offsetGroups * g.taps(), g.outHeight, g.outWidth})
      return fail("mask must be [N, offset_group * kH * kW, OH, OW]");
  }
  if (node.input(3) && node.inputType(3).getShape() != ArrayRef<int64_t>{g.outChannels})
    return fail("B must hold one bias per output channel");
  return g;
}

class DeformConvBuilder : public Formula {
public:
  DeformConvBuilder(NodeImporter &node, const Geometry &g) : Formula(node), g(g) {}

  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return node.createInferred<TransposeOp>(x, b.getDenseI64ArrayAttr(perm));
  }

  /// Where each tap samples along one axis: the tap's place in the window
  /// plus its offset, [N, G, K, OH, OW]. `axis` 0 is y, 1 is x.
  Value samplePoints(Value offsets, int64_t axis) {
    int64_t n = g.batch, groups = g.offsetGroups, k = g.taps();
    // offsets [N, G, K, 2, OH, OW]: y, then x, per tap.
    Value component = SliceOp::create(
        b, node.loc(),
        RankedTensorType::get({n, groups, k, 1, g.outHeight, g.outWidth}, b.getF32Type()), offsets,
        b.getDenseI64ArrayAttr({0, 0, 0, axis, 0, 0}), b.getDenseI64ArrayAttr({1, 1, 1, 1, 1, 1}));
    component = reshape(component, {n, groups, k, g.outHeight, g.outWidth});
    SmallVector<int64_t> start;
    for (int64_t a = 0; a < g.kernelHeight; ++a)
      for (int64_t c = 0; c < g.kernelWidth; ++c)
        for (int64_t out = 0; out < (axis == 0 ? g.outHeight : g.outWidth); ++out)
          start.push_back(out * g.strides[axis] - g.pads[axis] +
                          (axis == 0 ? a : c) * g.dilations[axis]);
    SmallVector<int64_t> shape = {1, 1, k, axis == 0 ? g.outHeight : 1, axis == 0 ? 1 : g.outWidth};
    return add(convert(node.int64Constant(start, shape), b.getF32Type()), component);
  }

  /// X's samples at the points (y, x), [N, G, K, OH, OW, C / G]: each of
  /// the four pixels around a point gathered from `pixels` (rows of one
  /// offset group's channels, [N * H * W * G, C / G]) and weighted, 0
  /// outside X, times `mask` ([N, G, K, OH, OW]) when given.
  Value sample(Value pixels, Value y, Value x, Value mask) {
    Value top = floor(y), left = floor(x);
    Value belowWeight = sub(y, top), rightWeight = sub(x, left);
    Value aboveWeight = sub(f32(1), belowWeight), leftWeight = sub(f32(1), rightWeight);
    auto shape = cast<RankedTensorType>(y.getType()).getShape();
    SmallVector<int64_t> groupIndex(shape.size(), 1);
    groupIndex[1] = g.offsetGroups;
    Value group =
        node.int64Constant(llvm::to_vector(llvm::seq<int64_t>(0, g.offsetGroups)), groupIndex);
    SmallVector<int64_t> batchIndex(shape.size(), 1);
    batchIndex[0] = g.batch;
    Value batch = node.int64Constant(llvm::to_vector(llvm::seq<int64_t>(0, g.batch)), batchIndex);
    Value sum;
    for (auto [dy, rowWeight] : {std::pair{0, aboveWeight}, std::pair{1, belowWeight}}) {
      for (auto [dx, columnWeight] : {std::pair{0, leftWeight}, std::pair{1, rightWeight}}) {
        Value row = add(top, f32(dy)), column = add(left, f32(dx));
        Value inside = node.createInferred<AndOp>(
            node.createInferred<AndOp>(compare("ge", row, f32(0)),
                                       compare("le", row, f32(double(g.height - 1)))),
            node.createInferred<AndOp>(compare("ge", column, f32(0)),
                                       compare("le", column, f32(double(g.width - 1)))));
        Value weight = select(inside, mul(rowWeight, columnWeight), f32(0));
        if (mask)
          weight = mul(weight, mask);
        // Row ((n * H + row) * W + column) * G + group, clamped into X.
        auto clamped = [&](Value v, int64_t size) {
          return convert(min(max(v, f32(0)), f32(double(size - 1))), b.getI64Type());
        };
        Value pixel = add(mul(add(mul(batch, i64(g.height)), clamped(row, g.height)), i64(g.width)),
                          clamped(column, g.width));
        Value index = add(mul(pixel, i64(g.offsetGroups)), group);
        Value gathered = node.createInferred<GatherOp>(pixels, index, b.getI64IntegerAttr(0));
        SmallVector<int64_t> weightShape(shape);
        weightShape.push_back(1);
        Value term = mul(gathered, reshape(weight, weightShape));
        sum = sum ? add(sum, term) : term;
      }
    }
    return sum;
  }

private:
  const Geometry &g;
};

LogicalResult importDeformConv(NodeImporter &node) {
  if (!node.inputType(0).getElementType().isF32())
    return node.unsupported("only float X is supported");
  std::optional<Geometry> geometry = readGeometry(node);
  if (!geometry)
    return failure();
  const Geometry &g = *geometry;
  int64_t n = g.batch, groups = g.offsetGroups, k = g.taps(), c = g.channels;
  int64_t perOffsetGroup = c / groups, pixelsOut = g.outHeight * g.outWidth;
  if (failed(checkComputeBudget(node, double(n) * pixelsOut * k * c * 4, "bilinear samples")))
    return failure();
  DeformConvBuilder d(node, g);

  Value offsets = d.reshape(node.input(2), {n, groups, k, 2, g.outHeight, g.outWidth});
  Value mask =
      node.input(4) ? d.reshape(node.input(4), {n, groups, k, g.outHeight, g.outWidth}) : Value();
  // X as rows of one offset group's channels: [N * H * W * G, C / G].
  Value pixels = d.reshape(d.transpose(node.input(0), {0, 2, 3, 1}),
                           {n * g.height * g.width * groups, perOffsetGroup});
  Value samples = d.sample(pixels, d.samplePoints(offsets, 0), d.samplePoints(offsets, 1), mask);
  if (!samples)
    return failure();
  // Columns [N * OH * OW, C * K] (channel g * C/G + c, then tap), split
  // by convolution group: [groups, N * OH * OW, C / groups * K].
  Value columns = d.transpose(samples, {0, 3, 4, 1, 5, 2}); // [N, OH, OW, G, C/G, K]
  int64_t perGroup = c / g.groups, outPerGroup = g.outChannels / g.groups;
  columns = d.transpose(d.reshape(columns, {n * pixelsOut, g.groups, perGroup * k}), {1, 0, 2});
  // W [OC, C/groups, kH, kW] as [groups, C/groups * K, OC/groups].
  Value weight =
      d.transpose(d.reshape(node.input(1), {g.groups, outPerGroup, perGroup * k}), {0, 2, 1});
  Value product = node.createInferred<MatMulOp>(columns, weight); // [groups, N*OH*OW, OC/groups]
  if (!product)
    return failure();
  Value result = d.transpose(
      d.reshape(product, {g.groups, n, g.outHeight, g.outWidth, outPerGroup}), {1, 0, 4, 2, 3});
  result = d.reshape(result, {n, g.outChannels, g.outHeight, g.outWidth});
  if (node.input(3))
    result = d.add(result, d.reshape(node.input(3), {1, g.outChannels, 1, 1}));
  return node.setInferredOutput(0, result);
}

} // namespace

void registerDeformConvHandlers(OpRegistry &registry) {
  registry.on("DeformConv", 19, importDeformConv);
}

} // namespace tessel::onnx_import
