//===- MelWeightMatrix.cpp - ONNX MelWeightMatrix (opset 17) --------------===//
//
// The [dft_length / 2 + 1, num_mel_bins] matrix that maps a spectrum's bins
// to mel bands, as ONNX's reference builds it: num_mel_bins + 2 points
// evenly spaced on the mel scale (2595 log10(1 + hertz / 700)) from
// lower_edge_hertz to upper_edge_hertz, in steps of the range over
// num_mel_bins + 2, back to hertz and to spectrum bins,
// floor((dft_length + 1) hertz / sample_rate). Band i rises linearly from
// bin l = point i to 1 at c = point i + 1 and falls to 0 at h = point i + 2
// (a band whose l = c is 1 at c).
//
// The matrix's shape is its result's: num_mel_bins and dft_length are
// constants, or the stated result shape implies them (checked at run
// time). The frequencies may be known only at run time, so the matrix is
// computed from them at run time (constants fold): the mel end points in
// the frequencies' type, the rest in f64, as the reference does.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

class MelWeightBuilder : public Formula {
public:
  using Formula::Formula;

  /// 0, 1, ..., count - 1 as f64, shaped `shape`.
  Value positions(int64_t count, ArrayRef<int64_t> shape) {
    SmallVector<int64_t> values(count);
    std::iota(values.begin(), values.end(), 0);
    return convert(node.int64Constant(values, shape), b.getF64Type());
  }
  Value both(Value x, Value y) { return node.createInferred<AndOp>(x, y); }
  /// value[start : start + count] of a 1-D `value`.
  Value slice(Value value, int64_t start, int64_t count) {
    auto type = cast<RankedTensorType>(value.getType());
    return SliceOp::create(b, node.loc(), type.clone({count}), value,
                           b.getDenseI64ArrayAttr({start}), b.getDenseI64ArrayAttr({1}));
  }
  /// 2595 log10(1 + hertz / 700), in the type of `hertz`.
  Value mel(Value hertz) {
    Value ratio = div(hertz, scalar(hertz, 700.0));
    Value log10 = div(log(add(scalar(hertz, 1.0), ratio)), scalar(hertz, std::log(10.0)));
    return mul(scalar(hertz, 2595.0), log10);
  }

  /// The spectrum bin of each of the bands' `points` (num_mel_bins + 2).
  Value bandPoints(int64_t points, Value dftLength, Value sampleRate, Value lower, Value upper) {
    Value lowMel = mel(lower);
    Value step = div(sub(mel(upper), lowMel), scalar(lowMel, double(points)));
    Type f64 = b.getF64Type();
    Value melPoints =
        add(mul(positions(points, {points}), convert(step, f64)), convert(lowMel, f64));
    Value ln10 = scalar(melPoints, std::log(10.0));
    Value hertz =
        mul(scalar(melPoints, 700.0),
            sub(exp(div(mul(melPoints, ln10), scalar(melPoints, 2595.0))), scalar(melPoints, 1.0)));
    Value scaled = mul(add(convert(dftLength, f64), scalar(melPoints, 1.0)), hertz);
    return floor(div(scaled, convert(sampleRate, f64)));
  }

  /// The [bins, bands] matrix of the bands' `points`.
  Value matrix(Value points, int64_t bins, int64_t bands) {
    Value low = reshape(slice(points, 0, bands), {1, bands});
    Value center = reshape(slice(points, 1, bands), {1, bands});
    Value high = reshape(slice(points, 2, bands), {1, bands});
    Value bin = positions(bins, {bins, 1});
    Value zero = scalar(bin, 0.0), one = scalar(bin, 1.0);
    Value rising =
        both(both(compare("ge", bin, low), compare("le", bin, center)), compare("gt", center, low));
    Value peak = both(compare("eq", center, low), compare("eq", bin, center));
    Value falling = both(compare("gt", bin, center), compare("lt", bin, high));
    Value rise = div(sub(bin, low), sub(center, low));
    Value fall = div(sub(high, bin), sub(high, center));
    return select(rising, rise, select(peak, one, select(falling, fall, zero)));
  }
};

LogicalResult importMelWeightMatrix(NodeImporter &node) {
  RankedTensorType stated = node.declaredOutputType(0);
  bool statedMatrix = stated && stated.getRank() == 2 && stated.hasStaticShape();
  std::optional<SmallVector<int64_t>> bands =
      shapeGivingInts(node, 0, "num_mel_bins", [&]() -> std::optional<ImpliedInts> {
        if (!statedMatrix)
          return std::nullopt;
        return exactly({stated.getDimSize(1)});
      });
  std::optional<SmallVector<int64_t>> dftLength =
      shapeGivingInts(node, 1, "dft_length", [&]() -> std::optional<ImpliedInts> {
        if (!statedMatrix)
          return std::nullopt;
        // dft_length / 2 + 1 bins: two lengths give them.
        int64_t bins = stated.getDimSize(0);
        return ImpliedInts{{2 * bins - 2}, {{2 * bins - 2, 2 * bins - 1}}};
      });
  if (!bands || !dftLength)
    return failure();
  int64_t bandCount = bands->front(), bins = dftLength->front() / 2 + 1;
  if (bandCount <= 0 || dftLength->front() <= 0)
    return node.unsupported("num_mel_bins and dft_length must be positive");
  if (failed(checkComputeBudget(node, double(bins) * double(bandCount), "matrix entries")))
    return failure();
  OpBuilder &b = node.builder();
  Type elementType = elementTypeFor(b.getContext(), node.intAttr("output_datatype", 1));
  if (!elementType)
    return node.unsupported("output_datatype is not supported");

  MelWeightBuilder f(node);
  Value points =
      f.bandPoints(bandCount + 2, node.input(1), node.input(2), node.input(3), node.input(4));
  Value matrix = f.convert(f.matrix(points, bins, bandCount), elementType);
  if (!matrix)
    return failure();
  node.setOutput(0, matrix);
  return success();
}

} // namespace

void registerMelWeightMatrixHandlers(OpRegistry &registry) {
  registry.on("MelWeightMatrix", 17, importMelWeightMatrix);
}

} // namespace tessel::onnx_import
