//===- GridSample.cpp - GridSample ----------------------------------------===//
//
// GridSample samples X [N, C, D1, ..., Dd] (d = 2 or 3) at the points of
// grid [N, O1, ..., Od, d], normalized coordinates with the last axis first,
// the way ONNX's reference implementation does:
//   - each coordinate is denormalized;
//   - nearest mode rounds it half to even;
//   - a coordinate outside the borders is clamped (border padding) or
//     reflected (reflection padding).
// The interpolation is then a sum over taps (1 for nearest, 2^d for linear,
// 16 for cubic) of the product of the axes' weights times X at the tap. Each
// tap index is checked once more against the padding: zeros padding gives
// taps outside X weight 0. Every tap is one gather_elements of X flattened
// to [N, C, D1 * ... * Dd].
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

enum class Interpolation { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

/// Elementwise arithmetic on the [N, P] tensors of per-point coordinates,
/// whose constants have X's element type.
class Points : public Formula {
public:
  Points(NodeImporter &node, Type element) : Formula(node), element(element) {}

  Value constant(double value) { return node.splatConstant(element, value); }
  /// A constant with the shape of `like`.
  Value constantLike(Value like, double value) {
    return node.splatConstant(element, value, cast<RankedTensorType>(like.getType()).getShape());
  }
  Value clamp(Value x, double low, double high) {
    return min(max(x, constant(low)), constant(high));
  }
  /// Toward zero, as C's int() of the reference.
  Value truncate(Value x) { return select(compare("lt", x, constant(0)), ceil(x), floor(x)); }
  /// Whether the integer-valued `n` is even.
  Value isEven(Value n) {
    Value half = floor(div(n, constant(2)));
    return compare("eq", sub(n, mul(half, constant(2))), constant(0));
  }
  /// Reflects `x` by the nearer border until it lies within [low, high]:
  /// a point `distance` past a border lands `rest` (the distance modulo the
  /// range) inside the same border after an even number of turns, inside
  /// the other after an odd one.
  Value reflect(Value x, double low, double high) {
    double range = high - low;
    if (range <= 0)
      return add(mul(x, constant(0)), constant(low));
    auto inside = [&](Value distance, double border, double other, double sign) {
      Value turns = floor(div(distance, constant(range)));
      Value rest = sub(distance, mul(turns, constant(range)));
      return select(isEven(turns), add(constant(border), mul(constant(sign), rest)),
                    sub(constant(other), mul(constant(sign), rest)));
    };
    Value fromBelow = inside(sub(constant(low), x), low, high, 1);
    Value fromAbove = inside(sub(x, constant(high)), high, low, -1);
    return select(compare("lt", x, constant(low)), fromBelow,
                  select(compare("gt", x, constant(high)), fromAbove, x));
  }
  /// Whether the integer-valued `index` lies in [0, extent).
  Value within(Value index, int64_t extent) {
    return node.createInferred<AndOp>(compare("ge", index, constant(0)),
                                      compare("le", index, constant(double(extent - 1))));
  }

private:
  Type element;
};

/// One tap along one axis: its index (integer-valued, within the axis) and
/// weight, and whether it lies inside X (zeros padding: else weight 0).
struct Tap {
  Value index, weight, inside;
};

/// Keys' cubic convolution weights (a = -0.75) of the 4 taps around a
/// point `t` past the second one.
SmallVector<Value> cubicWeights(Points &p, Value t) {
  const double a = -0.75;
  auto near = [&](Value x) { // |x| <= 1
    return p.add(p.mul(p.mul(p.sub(p.mul(p.constant(a + 2), x), p.constant(a + 3)), x), x),
                 p.constant(1));
  };
  auto far = [&](Value x) { // 1 < |x| < 2
    Value inner = p.add(p.mul(p.sub(p.mul(p.constant(a), x), p.constant(5 * a)), x),
                        p.constant(8 * a));
    return p.sub(p.mul(inner, x), p.constant(4 * a));
  };
  Value one = p.constant(1), two = p.constant(2);
  return {far(p.add(t, one)), near(t), near(p.sub(one, t)), far(p.sub(two, t))};
}

/// The taps of one axis of `extent` for the denormalized coordinates `x`.
SmallVector<Tap> axisTaps(Points &p, Value x, int64_t extent, double low, double high,
                          Interpolation interpolation, Padding padding) {
  Value base = interpolation == Interpolation::Nearest ? p.truncate(x) : p.floor(x);
  Value t = p.sub(x, base);
  SmallVector<int64_t> offsets;
  SmallVector<Value> weights;
  switch (interpolation) {
  case Interpolation::Nearest:
    offsets = {0}, weights = {p.constantLike(x, 1)};
    break;
  case Interpolation::Linear:
    offsets = {0, 1}, weights = {p.sub(p.constant(1), t), t};
    break;
  case Interpolation::Cubic:
    offsets = {-1, 0, 1, 2}, weights = cubicWeights(p, t);
    break;
  }
  SmallVector<Tap> taps;
  for (auto [offset, weight] : llvm::zip(offsets, weights)) {
    Value index = p.add(base, p.constant(double(offset)));
    Tap tap{index, weight, nullptr};
    if (padding == Padding::Zeros)
      tap.inside = p.within(index, extent);
    if (padding == Padding::Reflection)
      index = p.truncate(p.reflect(index, low, high));
    // Clamped for every mode: within the axis the gather reads, whatever
    // the padding made of it.
    tap.index = p.clamp(index, 0, double(extent - 1));
    taps.push_back(tap);
  }
  return taps;
}

/// The interpolation a mode names, in either opset's spelling.
std::optional<Interpolation> interpolationOf(const std::string &mode) {
  if (mode == "nearest")
    return Interpolation::Nearest;
  if (mode == "linear" || mode == "bilinear")
    return Interpolation::Linear;
  if (mode == "cubic" || mode == "bicubic")
    return Interpolation::Cubic;
  return std::nullopt;
}

std::optional<Padding> paddingOf(const std::string &mode) {
  if (mode == "zeros")
    return Padding::Zeros;
  if (mode == "border")
    return Padding::Border;
  if (mode == "reflection")
    return Padding::Reflection;
  return std::nullopt;
}

LogicalResult importGridSample(NodeImporter &node) {
  RankedTensorType xType = node.inputType(0), gridType = node.inputType(1);
  int64_t d = xType.getRank() - 2;
  if (!xType.hasStaticShape() || !gridType.hasStaticShape())
    return node.unsupported("X and grid must have static shapes");
  if ((d != 2 && d != 3) || gridType.getRank() != d + 2 || gridType.getDimSize(d + 1) != d ||
      gridType.getDimSize(0) != xType.getDimSize(0))
    return node.unsupported("X must be [N, C, H, W] or [N, C, D, H, W] and grid "
                            "[N, H_out, W_out, 2] or [N, D_out, H_out, W_out, 3]");
  Type element = xType.getElementType();
  if (!isa<FloatType>(element) || gridType.getElementType() != element)
    return node.unsupported("X and grid must have the same floating-point type");
  std::optional<Interpolation> interpolation =
      interpolationOf(node.stringAttr("mode").value_or("linear"));
  std::optional<Padding> padding = paddingOf(node.stringAttr("padding_mode").value_or("zeros"));
  if (!interpolation || !padding)
    return node.unsupported("unknown mode or padding_mode");
  if (*interpolation == Interpolation::Cubic && d != 2)
    return node.unsupported("cubic interpolation is defined for 2-D images only");
  bool alignCorners = node.intAttr("align_corners", 0) != 0;

  int64_t batch = xType.getDimSize(0), channels = xType.getDimSize(1);
  ArrayRef<int64_t> extents = xType.getShape().drop_front(2);
  ArrayRef<int64_t> outputs = gridType.getShape().slice(1, d);
  int64_t points = 1, pixels = 1;
  for (int64_t extent : outputs)
    points *= extent;
  for (int64_t extent : extents)
    pixels *= extent;
  int64_t tapsPerAxis = *interpolation == Interpolation::Nearest  ? 1
                        : *interpolation == Interpolation::Linear ? 2
                                                                  : 4;
  double taps = std::pow(double(tapsPerAxis), double(d));
  if (failed(checkComputeBudget(node, double(batch) * channels * points * taps, "samples")))
    return failure();

  OpBuilder &b = node.builder();
  Points p(node, element);
  Value grid = ReshapeOp::create(b, node.loc(), gridType.clone({batch, points, d}), node.input(1));
  // Per axis of X, its taps; the grid lists the last axis first.
  SmallVector<SmallVector<Tap>> axes;
  for (int64_t axis = 0; axis < d; ++axis) {
    int64_t extent = extents[axis];
    Value normalized = node.createInferred<GatherOp>(
        grid, node.int64Constant({d - 1 - axis}, {}), b.getI64IntegerAttr(2));
    Value one = p.constant(1);
    Value x = alignCorners
                  ? p.mul(p.div(p.add(normalized, one), p.constant(2)), p.constant(extent - 1))
                  : p.div(p.sub(p.mul(p.add(normalized, one), p.constant(extent)), one),
                          p.constant(2));
    if (*interpolation == Interpolation::Nearest)
      x = p.round(x);
    double low = alignCorners ? 0 : -0.5, high = alignCorners ? extent - 1 : extent - 0.5;
    if (*padding == Padding::Border) {
      Value outside = node.createInferred<OrOp>(p.compare("lt", x, p.constant(low)),
                                                p.compare("gt", x, p.constant(high)));
      x = p.select(outside, p.clamp(x, 0, double(extent - 1)), x);
    }
    if (*padding == Padding::Reflection)
      x = p.reflect(x, low, high);
    axes.push_back(axisTaps(p, x, extent, low, high, *interpolation, *padding));
  }

  // Every combination of one tap per axis: its flat index into X's pixels
  // and the product of its weights.
  RankedTensorType flatType = xType.clone({batch, channels, pixels});
  Value flatX = ReshapeOp::create(b, node.loc(), flatType, node.input(0));
  RankedTensorType indexType = RankedTensorType::get({batch, points}, b.getI64Type());
  Value sum;
  SmallVector<size_t> choice(d, 0);
  while (true) {
    Value index, weight, inside;
    int64_t stride = 1;
    for (int64_t axis = d - 1; axis >= 0; --axis) {
      const Tap &tap = axes[axis][choice[axis]];
      Value scaled = p.mul(tap.index, p.constant(double(stride)));
      index = index ? p.add(index, scaled) : scaled;
      weight = weight ? p.mul(weight, tap.weight) : tap.weight;
      if (tap.inside)
        inside = inside ? node.createInferred<AndOp>(inside, tap.inside) : tap.inside;
      stride *= extents[axis];
    }
    if (inside)
      weight = p.select(inside, weight, p.constant(0));
    // Indices below 2^24 are exact in f32; larger images are refused above
    // by the compute budget long before.
    Value indices = CastOp::create(b, node.loc(), indexType, index);
    indices = ReshapeOp::create(b, node.loc(), indexType.clone({batch, 1, points}), indices);
    indices = ExpandOp::create(b, node.loc(), indexType.clone({batch, channels, points}), indices);
    Value gathered = GatherElementsOp::create(b, node.loc(), flatType.clone({batch, channels, points}),
                                              flatX, indices, b.getI64IntegerAttr(2));
    Value term = p.mul(gathered, ReshapeOp::create(b, node.loc(), flatType.clone({batch, 1, points}),
                                                   weight));
    sum = sum ? p.add(sum, term) : term;
    // The next combination, the last axis fastest.
    int64_t axis = d - 1;
    while (axis >= 0 && ++choice[axis] == axes[axis].size())
      choice[axis--] = 0;
    if (axis < 0)
      break;
  }
  SmallVector<int64_t> shape{batch, channels};
  shape.append(outputs.begin(), outputs.end());
  return node.setInferredOutput(
      0, sum ? ReshapeOp::create(b, node.loc(), xType.clone(shape), sum) : Value());
}

} // namespace

void registerGridSampleHandlers(OpRegistry &registry) {
  registry.on("GridSample", 16, importGridSample);
}

} // namespace tessel::onnx_import
