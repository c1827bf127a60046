//===- Resize.cpp - Resize, Upsample and AffineGrid -----------------------===//
//
// Resizing is separable: each resized axis is a weighted sum of a few
// source elements per output position. With static shapes the positions
// and weights are compile-time tables, computed here as ONNX's reference
// implementation computes them, so the axis becomes a tessel.gather of the
// neighbours, a multiply by the weights and a sum over the taps (nearest
// mode: the gather alone).
//
// AffineGrid maps a constant grid of normalized coordinates (x, y[, z], 1)
// through each batch's affine matrix: one matrix product.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "compiler/onnx/ops/ResizeMode.h"
#include "dialects/tessel/TesselDialect.h"

#include <cmath>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The interpolation weights of the taps around a position whose distance
/// past its floor is `ratio` (1 at integer positions).
std::vector<double> coefficients(const ResizeMode &m, double ratio, double scale) {
  if (m.mode == "nearest") {
    if (ratio == 1.0)
      return {0, 1};
    if (m.nearest == "round_prefer_floor")
      return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (m.nearest == "round_prefer_ceil")
      return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m.nearest == "floor")
      return {1, 0};
    return {0, 1}; // ceil
  }
  auto normalized = [](std::vector<double> weights) {
    double sum = 0;
    for (double w : weights)
      sum += w;
    for (double &w : weights)
      w /= sum;
    return weights;
  };
  if (m.mode == "linear") {
    if (!m.antialias)
      return {1 - ratio, ratio};
    double s = std::min(scale, 1.0);
    int64_t start = int64_t(std::floor(-1 / s) + 1);
    int64_t footprint = 2 - 2 * start;
    std::vector<double> weights;
    for (int64_t i = start; i < start + footprint; ++i)
      weights.push_back(std::clamp(1 - std::abs((i - ratio) * s), 0.0, 1.0));
    return normalized(weights);
  }
  double a = m.cubicA;
  if (!m.antialias) {
    double r = ratio, q = 1 - ratio;
    return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * q - (a + 3)) * q * q + 1,
            ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a};
  }
  double s = std::min(scale, 1.0);
  auto kernel = [a](double x) {
    x = std::abs(x);
    if (x <= 1)
      return (a + 2) * x * x * x - (a + 3) * x * x + 1;
    if (x < 2)
      return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    return 0.0;
  };
  int64_t start = int64_t(std::floor(-2 / s) + 1), end = 2 - start;
  std::vector<double> weights;
  for (int64_t i = start; i < end; ++i)
    weights.push_back(kernel(s * (i - ratio)));
  return normalized(weights);
}

/// Source coordinate of output position `y` along an axis.
double sourceCoordinate(const ResizeMode &m, double y, double scale, int64_t input,
                        int64_t output, double roiStart, double roiEnd) {
  double outputWidth = scale * input;
  const std::string &c = m.coordinates;
  if (c == "align_corners")
    return outputWidth == 1 ? 0.0 : y * (input - 1) / (outputWidth - 1);
  if (c == "asymmetric")
    return y / scale;
  if (c == "tf_crop_and_resize")
    return (outputWidth == 1 ? (roiEnd - roiStart) * (input - 1) / 2
                             : y * (roiEnd - roiStart) * (input - 1) / (outputWidth - 1)) +
           roiStart * (input - 1);
  if (c == "tf_half_pixel_for_nn") // opsets 11 and 12
    return (y + 0.5) / scale;
  if (c == "pytorch_half_pixel")
    return outputWidth == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (c == "half_pixel_symmetric") {
    double adjustment = output / outputWidth;
    double offset = input / 2.0 * (1 - adjustment);
    return offset + (y + 0.5) / scale - 0.5;
  }
  return (y + 0.5) / scale - 0.5; // half_pixel
}

/// Resizes `x` along `axis` to `output` positions.
Value resizeAxis(NodeImporter &node, const ResizeMode &m, Value x, int64_t axis,
                 double scale, int64_t output, double roiStart, double roiEnd) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t input = type.getDimSize(axis);
  int64_t taps = 0;
  std::vector<int64_t> indices;
  std::vector<double> weights;
  std::vector<bool> outside;
  for (int64_t y = 0; y < output; ++y) {
    double source = sourceCoordinate(m, y, scale, input, output, roiStart, roiEnd);
    outside.push_back(m.coordinates == "tf_crop_and_resize" &&
                      (source < 0 || source > input - 1));
    double floor = std::floor(source);
    double ratio = source == floor ? 1.0 : source - floor;
    std::vector<double> w = coefficients(m, ratio, scale);
    int64_t n = w.size();
    taps = n;
    // The reference pads by ceil(n / 2) and takes the n nearest positions.
    int64_t pad = (n + 1) / 2;
    double padded = source + pad;
    int64_t p = int64_t(std::floor(padded));
    double fraction = padded - p;
    int64_t offset = n % 2 == 0 ? (fraction == 0 ? -(n / 2) : -(n / 2) + 1)
                                : (fraction <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
    int64_t first = p + offset - pad;
    if (m.excludeOutside) {
      double sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (first + t < 0 || first + t >= input)
          w[t] = 0;
        sum += w[t];
      }
      for (double &weight : w)
        weight /= sum == 0 ? 1 : sum;
    }
    for (int64_t t = 0; t < n; ++t) {
      indices.push_back(std::clamp<int64_t>(first + t, 0, input - 1));
      weights.push_back(w[t]);
    }
  }

  Value result;
  if (m.mode == "nearest") {
    // One weight is 1, the other 0: gather the chosen neighbour only.
    std::vector<int64_t> chosen;
    for (int64_t y = 0; y < output; ++y)
      chosen.push_back(indices[y * taps + (weights[y * taps] != 0 ? 0 : 1)]);
    result = node.createInferred<GatherOp>(x, node.int64Constant(chosen, {output}),
                                           b.getI64IntegerAttr(axis));
  } else {
    Value neighbours = node.createInferred<GatherOp>(
        x, node.int64Constant(indices, {output, taps}), b.getI64IntegerAttr(axis));
    SmallVector<int64_t> weightShape(type.getRank() + 1, 1);
    weightShape[axis] = output;
    weightShape[axis + 1] = taps;
    SmallVector<Attribute> weightValues;
    for (double w : weights)
      weightValues.push_back(b.getFloatAttr(type.getElementType(), w));
    Value weightTable = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get(weightShape, type.getElementType()),
                               weightValues));
    Value weighted = node.createInferred<MulOp>(neighbours, weightTable);
    result = node.createInferred<ReduceOp>(b.getStringAttr("sum"), weighted,
                                           b.getDenseI64ArrayAttr({axis + 1}));
  }
  if (llvm::is_contained(outside, true)) {
    SmallVector<int64_t> maskShape(type.getRank(), 1);
    maskShape[axis] = output;
    SmallVector<bool> mask(outside.begin(), outside.end());
    Value isOutside = ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get(maskShape, b.getI1Type()),
                                       ArrayRef<bool>(mask)));
    result = node.createInferred<WhereOp>(
        isOutside, node.splatConstant(type.getElementType(), m.extrapolation), result);
  }
  return result;
}

/// A float list from a constant input (empty when absent or empty).
std::optional<std::vector<double>> constantFloats(NodeImporter &node, size_t i,
                                                  StringRef role) {
  if (!node.input(i))
    return std::vector<double>();
  ElementsAttr constant = node.constantInput(i);
  if (!constant) {
    (void)node.constantInts(i, role); // records why, with a --freeze-input hint
    return std::nullopt;
  }
  std::vector<double> values;
  for (const APFloat &value : constant.getValues<APFloat>())
    values.push_back(value.convertToDouble());
  return values;
}

LogicalResult resize(NodeImporter &node, const ResizeMode &m, std::vector<double> scales,
                     SmallVector<int64_t> sizes, std::vector<double> roi,
                     SmallVector<int64_t> axes) {
  RankedTensorType type = node.inputType(0);
  int64_t rank = type.getRank();
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  if (m.mode != "nearest" && !isa<FloatType>(type.getElementType()))
    return node.unsupported(m.mode + " resizing needs a floating-point input");
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  if (!normalizeAxes(node, axes, rank))
    return failure();
  size_t count = axes.size();
  if ((!scales.empty() && scales.size() != count) || (!sizes.empty() && sizes.size() != count))
    return node.unsupported("scales or sizes need one entry per resized axis");
  if (scales.empty() == sizes.empty())
    return node.unsupported("exactly one of scales and sizes must be given");
  if (!roi.empty() && roi.size() != 2 * count)
    return node.unsupported("roi needs two entries per resized axis");

  std::vector<double> axisScale(rank, 1.0);
  SmallVector<int64_t> axisSize(type.getShape());
  if (!sizes.empty()) {
    std::string policy = node.opset() >= 18
                             ? node.stringAttr("keep_aspect_ratio_policy").value_or("stretch")
                             : "stretch";
    std::vector<double> ratios;
    for (size_t i = 0; i < count; ++i)
      ratios.push_back(double(sizes[i]) / type.getDimSize(axes[i]));
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      return node.unsupported("keep_aspect_ratio_policy '" + policy + "' is not supported");
    double common = policy == "not_larger" ? *std::min_element(ratios.begin(), ratios.end())
                                           : *std::max_element(ratios.begin(), ratios.end());
    for (size_t i = 0; i < count; ++i) {
      int64_t input = type.getDimSize(axes[i]);
      axisScale[axes[i]] = policy == "stretch" ? ratios[i] : common;
      axisSize[axes[i]] = policy == "stretch" ? sizes[i] : int64_t(common * input + 0.5);
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      if (scales[i] <= 0)
        return node.unsupported("scales must be positive");
      axisScale[axes[i]] = scales[i];
      axisSize[axes[i]] = int64_t(scales[i] * type.getDimSize(axes[i]));
    }
  }

  Value x = node.input(0);
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes[i];
    double roiStart = roi.empty() ? 0.0 : roi[i], roiEnd = roi.empty() ? 1.0 : roi[count + i];
    if (std::abs(axisScale[axis] - 1.0) < 1e-9 && axisSize[axis] == type.getDimSize(axis) &&
        roiStart == 0.0 && roiEnd == 1.0)
      continue;
    if (axisSize[axis] <= 0)
      return node.unsupported("axis " + Twine(axis) + " would be resized to no elements");
    if (failed(checkComputeBudget(node, double(axisSize[axis]),
                                  "resized positions on axis " + Twine(axis))))
      return failure();
    x = resizeAxis(node, m, x, axis, axisScale[axis], axisSize[axis], roiStart, roiEnd);
    if (!x)
      return failure();
  }
  node.setOutput(0, x);
  return success();
}

/// A Resize whose scales, sizes (fitted by an aspect-ratio policy) or
/// region of interest are known only at run time, resized at run time to
/// the shape the model states; nothing when they are all constants or the
/// model states no shape (the compile-time path records why). Resize 11
/// on reads roi, scales and sizes from inputs 1 to 3; Resize 10 and
/// Upsample only scales, from input 1.
std::optional<LogicalResult> resizeAtRunTimeIfNeeded(NodeImporter &node, const ResizeMode &m,
                                                     SmallVector<int64_t> axes,
                                                     size_t scalesInput = 2) {
  bool scalesOnly = scalesInput != 2;
  auto present = [&](size_t i) {
    return (!scalesOnly || i == scalesInput) && node.input(i) &&
           node.inputType(i).getNumElements() > 0;
  };
  auto atRunTime = [&](size_t i) { return present(i) && !node.constantInput(i); };
  std::string policy = node.opset() >= 18
                           ? node.stringAttr("keep_aspect_ratio_policy").value_or("stretch")
                           : "stretch";
  bool cropsAtRunTime = m.coordinates == "tf_crop_and_resize" && atRunTime(1);
  bool fitsAtRunTime = atRunTime(3) && policy != "stretch";
  RankedTensorType stated = node.declaredOutputType(0);
  // Antialiasing's number of taps depends on the scale.
  if (!(atRunTime(scalesInput) || fitsAtRunTime || cropsAtRunTime) || !stated || m.antialias)
    return std::nullopt;
  int64_t rank = node.inputType(0).getRank();
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  if (!normalizeAxes(node, axes, rank))
    return failure();
  RunTimeResize given;
  given.policy = policy;
  bool hasScales = present(scalesInput), hasSizes = present(3);
  if (hasScales == hasSizes)
    return node.unsupported("exactly one of scales and sizes must be given");
  size_t perAxisInput = hasScales ? scalesInput : 3;
  (hasScales ? given.scales : given.sizes) = node.input(perAxisInput);
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return node.unsupported("keep_aspect_ratio_policy '" + policy + "' is not supported");
  if (m.coordinates == "tf_crop_and_resize")
    given.roi = node.input(1);
  int64_t perAxis = node.inputType(perAxisInput).getNumElements();
  if (perAxis != static_cast<int64_t>(axes.size()) ||
      (given.roi && node.inputType(1).getNumElements() != 2 * perAxis))
    return node.unsupported("scales, sizes and roi need one entry (two for roi) per resized axis");
  return resizeAtRunTime(node, m, given, axes, stated);
}

/// Resize 11 and later: X, roi, scales, sizes.
LogicalResult importResize(NodeImporter &node) {
  ResizeMode m;
  m.mode = node.stringAttr("mode").value_or("nearest");
  m.coordinates = node.stringAttr("coordinate_transformation_mode").value_or("half_pixel");
  m.nearest = node.stringAttr("nearest_mode").value_or("round_prefer_floor");
  m.cubicA = node.floatAttr("cubic_coeff_a", -0.75f);
  m.excludeOutside = node.intAttr("exclude_outside", 0) != 0;
  m.extrapolation = node.floatAttr("extrapolation_value", 0.0f);
  if (node.opset() >= 18)
    m.antialias = node.intAttr("antialias", 0) != 0;
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    return node.unsupported("mode '" + m.mode + "' is not supported");
  SmallVector<int64_t> axes;
  if (node.opset() >= 18)
    if (std::optional<std::vector<int64_t>> given = node.intsAttr("axes"))
      axes.assign(given->begin(), given->end());
  if (std::optional<LogicalResult> done = resizeAtRunTimeIfNeeded(node, m, axes))
    return *done;
  // Only tf_crop_and_resize reads the region of interest.
  std::optional<std::vector<double>> roi = m.coordinates == "tf_crop_and_resize"
                                               ? constantFloats(node, 1, "roi")
                                               : std::vector<double>();
  std::optional<std::vector<double>> scales = roi ? constantFloats(node, 2, "scales")
                                                  : std::nullopt;
  if (!roi || !scales)
    return failure();
  SmallVector<int64_t> sizes;
  if (node.input(3)) {
    std::optional<SmallVector<int64_t>> given =
        shapeGivingInts(node, 3, "sizes", [&]() -> std::optional<ImpliedInts> {
          // Other policies fit the image inside or around the sizes.
          RankedTensorType stated = node.declaredOutputType(0);
          if (!stated || stated.getRank() != node.inputType(0).getRank() ||
              node.stringAttr("keep_aspect_ratio_policy").value_or("stretch") != "stretch")
            return std::nullopt;
          if (axes.empty())
            return exactly(stated.getShape());
          SmallVector<int64_t> resized;
          for (int64_t axis : axes) {
            std::optional<int64_t> normalized = normalizeAxis(axis, stated.getRank());
            if (!normalized)
              return std::nullopt;
            resized.push_back(stated.getDimSize(*normalized));
          }
          return exactly(resized);
        });
    if (!given)
      return failure();
    sizes = *given;
  }
  if (m.coordinates != "tf_crop_and_resize")
    roi->clear();
  int64_t rank = node.inputType(0).getRank();
  if (axes.empty() && !roi->empty() && roi->size() != size_t(2 * rank))
    return node.unsupported("roi needs two entries per axis");
  return resize(node, m, *scales, sizes, *roi, axes);
}

/// Resize 10 and Upsample: scales only, asymmetric coordinates, nearest
/// rounding down as the old operators did.
LogicalResult importScalesOnly(NodeImporter &node, size_t scalesInput) {
  ResizeMode m;
  m.mode = node.stringAttr("mode").value_or("nearest");
  if (m.mode == "bilinear")
    m.mode = "linear";
  if (m.mode != "nearest" && m.mode != "linear")
    return node.unsupported("mode '" + m.mode + "' is not supported");
  m.coordinates = "asymmetric";
  m.nearest = "floor";
  std::vector<double> scales;
  if (std::optional<std::vector<float>> given = node.floatsAttr("scales")) {
    scales.assign(given->begin(), given->end());
  } else if (std::optional<LogicalResult> done =
                 resizeAtRunTimeIfNeeded(node, m, {}, scalesInput)) {
    return *done;
  } else {
    std::optional<std::vector<double>> input = constantFloats(node, scalesInput, "scales");
    if (!input)
      return failure();
    scales = *input;
  }
  return resize(node, m, scales, {}, {}, {});
}

/// The normalized coordinates of `size` points along an axis: the corners'
/// centres at -1 and 1 (align_corners), else the pixels' centres.
SmallVector<double> normalizedCoordinates(int64_t size, bool alignCorners) {
  SmallVector<double> coordinates;
  for (int64_t i = 0; i < size; ++i)
    coordinates.push_back(alignCorners ? (size == 1 ? -1.0 : -1.0 + 2.0 * i / (size - 1))
                                       : -1.0 + (2.0 * i + 1.0) / size);
  return coordinates;
}

/// AffineGrid(theta [N, d, d + 1], size [N, C, (D,) H, W]): [N, (D,) H, W, d]
/// = the grid of homogeneous points (x, y[, z], 1) times theta's transpose.
LogicalResult importAffineGrid(NodeImporter &node) {
  RankedTensorType theta = node.inputType(0);
  std::optional<SmallVector<int64_t>> size =
      shapeGivingInts(node, 1, "size", [&]() -> std::optional<ImpliedInts> {
        // [N, (D,) H, W, d] states all of size but its channels, which
        // the grid does not depend on.
        RankedTensorType stated = node.declaredOutputType(0);
        if (!stated || stated.getRank() < 4)
          return std::nullopt;
        ArrayRef<int64_t> points = stated.getShape().drop_back();
        ImpliedInts implied = exactly(points);
        implied.values.insert(implied.values.begin() + 1, 1);
        implied.accepted.insert(implied.accepted.begin() + 1, SmallVector<int64_t>());
        return implied;
      });
  if (!size)
    return failure();
  int64_t dimensions = int64_t(size->size()) - 2;
  if ((dimensions != 2 && dimensions != 3) || !theta.hasStaticShape() || theta.getRank() != 3 ||
      theta.getDimSize(1) != dimensions || theta.getDimSize(2) != dimensions + 1 ||
      theta.getDimSize(0) != (*size)[0])
    return node.unsupported("theta must be [N, 2, 3] or [N, 3, 4] for a size of [N, C, H, W] "
                            "or [N, C, D, H, W]");
  if (!isa<FloatType>(theta.getElementType()))
    return node.unsupported("theta must be floating-point");
  ArrayRef<int64_t> spatial = ArrayRef<int64_t>(*size).drop_front(2);
  int64_t points = 1;
  for (int64_t extent : spatial) {
    if (extent <= 0)
      return node.unsupported("size holds an empty extent");
    points *= extent;
  }
  if (failed(checkComputeBudget(node, double(points) * (dimensions + 1), "grid points")))
    return failure();
  bool alignCorners = node.intAttr("align_corners").value_or(0) != 0;
  // Row p of the grid: the point's coordinates, x (the last axis) first.
  SmallVector<SmallVector<double>> axes;
  for (int64_t extent : spatial)
    axes.push_back(normalizedCoordinates(extent, alignCorners));
  OpBuilder &b = node.builder();
  Type element = theta.getElementType();
  SmallVector<Attribute> grid;
  for (int64_t p = 0; p < points; ++p) {
    SmallVector<int64_t> index(dimensions);
    for (int64_t axis = dimensions - 1, rest = p; axis >= 0; --axis) {
      index[axis] = rest % spatial[axis];
      rest /= spatial[axis];
    }
    for (int64_t axis = dimensions - 1; axis >= 0; --axis)
      grid.push_back(b.getFloatAttr(element, axes[axis][index[axis]]));
    grid.push_back(b.getFloatAttr(element, 1.0));
  }
  Value homogeneous = ConstantOp::create(
      b, node.loc(),
      DenseElementsAttr::get(RankedTensorType::get({points, dimensions + 1}, element), grid));
  Value transposed = node.createInferred<TransposeOp>(node.input(0),
                                                      b.getDenseI64ArrayAttr({0, 2, 1}));
  Value mapped = transposed ? node.createInferred<MatMulOp>(homogeneous, transposed) : Value();
  if (!mapped)
    return failure();
  SmallVector<int64_t> shape{theta.getDimSize(0)};
  shape.append(spatial.begin(), spatial.end());
  shape.push_back(dimensions);
  node.setOutput(0, ReshapeOp::create(b, node.loc(), theta.clone(shape), mapped));
  return success();
}

} // namespace

void registerResizeHandlers(OpRegistry &registry) {
  registry.on("AffineGrid", 20, importAffineGrid);
  registry.on("Resize", 10, [](NodeImporter &node) { return importScalesOnly(node, 1); });
  registry.on("Resize", 11, importResize);
  registry.on("Upsample", 7, [](NodeImporter &node) { return importScalesOnly(node, 1); });
}

} // namespace tessel::onnx_import
