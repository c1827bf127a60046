//===- RoiAlign.cpp - ONNX RoiAlign (opsets 10, 16, 22) -------------------===//
//
// Each region of interest is split into output_height x output_width bins,
// and each bin sampled at sampling_ratio x sampling_ratio points. A point's
// value interpolates its four neighbouring pixels bilinearly (nothing when
// the point lies more than a pixel outside the map, the edge pixel when it
// lies on or past the last one); a bin averages its points (mode "avg") or
// takes the largest of their weighted corners (mode "max", as ONNX's
// reference and onnxruntime do). The regions come at run time, so the
// points' positions are computed in the graph: per region, one row of
// positions along each axis, their corners and weights, and one gather of
// the corners' channel rows from the map in NHWC.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The sample points of every region along one axis of the map: for each
/// region and point, the pixel below and above it and their weights, [R,
/// points] (the weights zero for a point outside the map).
struct AxisSamples {
  Value low, high;
  Value lowWeight, highWeight;
};

class RoiAlignBuilder {
public:
  explicit RoiAlignBuilder(NodeImporter &node)
      : node(node), b(node.builder()), loc(node.loc()) {}

  Value f32(double value) { return node.splatConstant(b.getF32Type(), value); }
  Value i64(int64_t value) { return node.int64Constant({value}, {}); }
  Value compare(StringRef predicate, Value lhs, Value rhs) {
    return node.createInferred<CompareOp>(b.getStringAttr(predicate), lhs, rhs);
  }
  Value convert(Value value, Type element) { return convertElements(node, value, element); }
  Value reshape(Value value, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(value.getType());
    return ReshapeOp::create(b, loc, type.clone(shape), value);
  }

  /// Column `column` of the [R, 4] regions, as [R, 1].
  Value regionColumn(Value regions, int64_t column) {
    auto type = cast<RankedTensorType>(regions.getType());
    return SliceOp::create(b, loc, type.clone({type.getDimSize(0), 1}), regions,
                           b.getDenseI64ArrayAttr({0, column}),
                           b.getDenseI64ArrayAttr({1, 1}));
  }

  /// Points start + (bin + (i + 0.5) / ratio) * binSize of `bins` bins of
  /// `ratio` points each, on an axis of `extent` pixels; `start` and
  /// `binSize` are [R, 1].
  AxisSamples sample(Value start, Value binSize, int64_t bins, int64_t ratio, int64_t extent) {
    SmallVector<float> offsets;
    for (int64_t bin = 0; bin < bins; ++bin)
      for (int64_t i = 0; i < ratio; ++i)
        offsets.push_back(static_cast<float>(bin) + (static_cast<float>(i) + 0.5f) / ratio);
    auto offsetType = RankedTensorType::get({1, bins * ratio}, b.getF32Type());
    Value offset =
        ConstantOp::create(b, loc, DenseElementsAttr::get(offsetType, ArrayRef<float>(offsets)));
    Value position = node.createInferred<AddOp>(start, node.createInferred<MulOp>(offset, binSize));
    Value inside = node.createInferred<AndOp>(compare("ge", position, f32(-1.0)),
                                              compare("le", position, f32(extent)));
    Value clamped = node.createInferred<MaxOp>(position, f32(0.0));
    // Truncation is the floor of a non-negative position.
    Value floor = convert(clamped, b.getI64Type());
    Value atEdge = compare("ge", floor, i64(extent - 1));
    AxisSamples samples;
    samples.low = node.createInferred<WhereOp>(atEdge, i64(extent - 1), floor);
    samples.high = node.createInferred<WhereOp>(atEdge, i64(extent - 1),
                                                node.createInferred<AddOp>(floor, i64(1)));
    clamped = node.createInferred<WhereOp>(atEdge, f32(extent - 1), clamped);
    Value fraction =
        node.createInferred<SubOp>(clamped, convert(samples.low, b.getF32Type()));
    Value rest = node.createInferred<SubOp>(f32(1.0), fraction);
    samples.lowWeight = node.createInferred<WhereOp>(inside, rest, f32(0.0));
    samples.highWeight = node.createInferred<WhereOp>(inside, fraction, f32(0.0));
    return samples;
  }

private:
  NodeImporter &node;
  OpBuilder &b;
  Location loc;
};

LogicalResult importRoiAlign(NodeImporter &node) {
  RankedTensorType mapType = node.inputType(0), regionType = node.inputType(1);
  if (mapType.getRank() != 4 || !mapType.hasStaticShape() ||
      !isa<FloatType>(mapType.getElementType()))
    return node.unsupported("X must be a static floating-point [N, C, H, W] tensor");
  if (regionType.getRank() != 2 || !regionType.hasStaticShape() ||
      regionType.getDimSize(1) != 4 || !isa<FloatType>(regionType.getElementType()))
    return node.unsupported("rois must be a static floating-point [num_rois, 4] tensor");
  int64_t regions = regionType.getDimSize(0);
  if (node.inputType(2).getShape() != ArrayRef<int64_t>{regions})
    return node.unsupported("batch_indices must hold one index per region (" +
                            Twine(regions) + ")");
  std::string mode = node.stringAttr("mode").value_or("avg");
  if (mode != "avg" && mode != "max")
    return node.unsupported("mode '" + mode + "' is not 'avg' or 'max'");
  // Opset 10 has no coordinate_transformation_mode and no half-pixel
  // offset; from opset 16 the default is "half_pixel".
  std::string transform = node.stringAttr("coordinate_transformation_mode")
                              .value_or(node.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return node.unsupported("coordinate_transformation_mode '" + transform +
                            "' is not 'half_pixel' or 'output_half_pixel'");
  bool halfPixel = transform == "half_pixel";
  int64_t binRows = node.intAttr("output_height", 1), binColumns = node.intAttr("output_width", 1);
  int64_t ratio = node.intAttr("sampling_ratio", 0);
  if (binRows <= 0 || binColumns <= 0)
    return node.unsupported("output_height and output_width must be positive");
  if (ratio <= 0)
    return node.unsupported("sampling_ratio " + Twine(ratio) +
                            " (as many points as each region's size gives) is not supported: "
                            "the regions come at run time; give sampling_ratio > 0");
  float scale = node.floatAttr("spatial_scale", 1.0f);
  int64_t batch = mapType.getDimSize(0), channels = mapType.getDimSize(1);
  int64_t height = mapType.getDimSize(2), width = mapType.getDimSize(3);
  if (failed(checkIndices(node, 2, {batch})))
    return failure();
  int64_t rows = binRows * ratio, columns = binColumns * ratio;
  if (failed(checkComputeBudget(node, double(regions) * rows * columns * channels,
                                "sampled elements")))
    return failure();

  RoiAlignBuilder a(node);
  OpBuilder &b = node.builder();
  Type f32 = b.getF32Type();
  Value rois = a.convert(node.input(1), f32);
  auto corner = [&](int64_t column) {
    Value scaled = node.createInferred<MulOp>(a.regionColumn(rois, column), a.f32(scale));
    return halfPixel ? node.createInferred<SubOp>(scaled, a.f32(0.5)) : scaled;
  };
  Value left = corner(0), top = corner(1), right = corner(2), bottom = corner(3);
  Value regionWidth = node.createInferred<SubOp>(right, left);
  Value regionHeight = node.createInferred<SubOp>(bottom, top);
  if (!halfPixel) {
    // Without the half-pixel offset, a malformed region is 1 x 1.
    regionWidth = node.createInferred<MaxOp>(regionWidth, a.f32(1.0));
    regionHeight = node.createInferred<MaxOp>(regionHeight, a.f32(1.0));
  }
  AxisSamples y = a.sample(top, node.createInferred<DivOp>(regionHeight, a.f32(binRows)),
                           binRows, ratio, height);
  AxisSamples x = a.sample(left, node.createInferred<DivOp>(regionWidth, a.f32(binColumns)),
                           binColumns, ratio, width);

  // The map as rows of channels, [N * H * W, C], and each corner's row:
  // (batch * H + y) * W + x, [R, rows, columns].
  Value map = a.convert(node.input(0), f32);
  Value pixels = a.reshape(
      node.createInferred<TransposeOp>(map, b.getDenseI64ArrayAttr({0, 2, 3, 1})),
      {batch * height * width, channels});
  Value batchIndex = a.convert(node.input(2), b.getI64Type());
  batchIndex = node.createInferred<WhereOp>(a.compare("lt", batchIndex, a.i64(0)),
                                            node.createInferred<AddOp>(batchIndex, a.i64(batch)),
                                            batchIndex);
  Value firstRow = node.createInferred<MulOp>(a.reshape(batchIndex, {regions, 1, 1}), a.i64(height));
  auto weightedCorner = [&](Value rowIndex, Value rowWeight, Value columnIndex,
                            Value columnWeight) {
    Value row = node.createInferred<MulOp>(
        node.createInferred<AddOp>(firstRow, a.reshape(rowIndex, {regions, rows, 1})),
        a.i64(width));
    Value index =
        node.createInferred<AddOp>(row, a.reshape(columnIndex, {regions, 1, columns}));
    Value values = node.createInferred<GatherOp>(pixels, index, b.getI64IntegerAttr(0));
    Value weight = node.createInferred<MulOp>(a.reshape(rowWeight, {regions, rows, 1}),
                                              a.reshape(columnWeight, {regions, 1, columns}));
    return node.createInferred<MulOp>(a.reshape(weight, {regions, rows, columns, 1}), values);
  };
  SmallVector<Value> corners{weightedCorner(y.low, y.lowWeight, x.low, x.lowWeight),
                             weightedCorner(y.low, y.lowWeight, x.high, x.highWeight),
                             weightedCorner(y.high, y.highWeight, x.low, x.lowWeight),
                             weightedCorner(y.high, y.highWeight, x.high, x.highWeight)};
  bool average = mode == "avg";
  Value points = corners.front();
  for (Value next : ArrayRef<Value>(corners).drop_front())
    points = average ? node.createInferred<AddOp>(points, next)
                     : node.createInferred<MaxOp>(points, next);
  // [R, bin rows, ratio, bin columns, ratio, C] -> [R, bin rows, bin columns, C].
  Value bins = node.createInferred<ReduceOp>(
      b.getStringAttr(average ? "sum" : "max"),
      a.reshape(points, {regions, binRows, ratio, binColumns, ratio, channels}),
      b.getDenseI64ArrayAttr({2, 4}));
  if (average)
    bins = node.createInferred<DivOp>(bins, a.f32(ratio * ratio));
  Value result = node.createInferred<TransposeOp>(bins, b.getDenseI64ArrayAttr({0, 3, 1, 2}));
  return node.setInferredOutput(0, a.convert(result, mapType.getElementType()));
}

} // namespace

void registerRoiAlignHandlers(OpRegistry &registry) {
  registry.on("RoiAlign", 10, importRoiAlign);
}

} // namespace tessel::onnx_import
