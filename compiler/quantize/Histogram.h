//===- Histogram.h - Activation statistics for calibration ------*- C++ -*-===//
//
// Calibration sees every activation of every calibration input but keeps
// only a fixed-size histogram per tensor (and its exact extremes), so that
// its memory does not grow with the data: a BERT-sized model's activations
// over a calibration set would not fit in memory.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_QUANTIZE_HISTOGRAM_H
#define TESSEL_COMPILER_QUANTIZE_HISTOGRAM_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace tessel::quantize {

/// A histogram of values over [-limit, limit] in a fixed number of equal
/// bins. When a value falls outside, the limit doubles and pairs of bins
/// merge, so the bins seen so far stay exact (no value changes bin edges
/// except by merging).
class Histogram {
public:
  explicit Histogram(size_t binCount = 4096);

  void add(const float *values, size_t count);

  /// The extremes seen (0 before any value).
  double min() const { return total ? lowest : 0.0; }
  double max() const { return total ? highest : 0.0; }
  uint64_t count() const { return total; }
  double limit() const { return range; }
  const std::vector<uint64_t> &bins() const { return counts; }
  /// The value at the centre of bin `i`.
  double binCentre(size_t i) const;
  /// The lower edge of bin `i` (`bins().size()`: the upper edge of the last).
  double binEdge(size_t i) const;

private:
  void growTo(double magnitude);

  std::vector<uint64_t> counts;
  double range = 0.0;
  double lowest = std::numeric_limits<double>::infinity();
  double highest = -std::numeric_limits<double>::infinity();
  uint64_t total = 0;
};

enum class CalibrationMethod { MinMax, Percentile, Entropy, Mse };

/// Parses "minmax", "percentile", "entropy", "mse".
bool parseCalibrationMethod(const std::string &text, CalibrationMethod &method);
const char *calibrationMethodName(CalibrationMethod method);

/// The range [lo, hi] a tensor is quantized over:
///  - MinMax: the extremes seen;
///  - Percentile: the `percentile` and 100 - `percentile` percentiles;
///  - Entropy: the symmetric clip threshold that minimizes the KL divergence
///    between the histogram of |x| and its quantization to `levels` levels
///    (TensorRT's and onnxruntime's method), intersected with the extremes;
///  - Mse: the range within the extremes whose quantization to 256 levels
///    has the least expected squared error over the histogram: values
///    outside cost their distance to the range squared, values inside the
///    rounding error of a uniform step, step^2 / 12.
std::pair<double, double> chooseRange(const Histogram &histogram, CalibrationMethod method,
                                      double percentile = 99.999, int levels = 128);

} // namespace tessel::quantize

#endif // TESSEL_COMPILER_QUANTIZE_HISTOGRAM_H
