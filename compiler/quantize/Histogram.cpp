//===- Histogram.cpp - Activation statistics for calibration --------------===//

#include "compiler/quantize/Histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::quantize {

Histogram::Histogram(size_t binCount) : counts(binCount + binCount % 2, 0) {}

double Histogram::binCentre(size_t i) const {
  return -range + (i + 0.5) * (2.0 * range / counts.size());
}

double Histogram::binEdge(size_t i) const { return -range + i * (2.0 * range / counts.size()); }

void Histogram::growTo(double magnitude) {
  if (range == 0.0) {
    // The first limit is the first magnitude seen, rounded up to a power of
    // two so that later doublings keep bin edges on round values.
    range = std::exp2(std::ceil(std::log2(magnitude)));
    return;
  }
  size_t half = counts.size() / 2;
  while (range < magnitude) {
    // Doubling the limit merges each pair of bins; the merged pairs of each
    // half move towards zero, and the outer half of each side empties.
    std::vector<uint64_t> merged(counts.size(), 0);
    for (size_t i = 0; i < counts.size(); ++i) {
      // Bin i covers offset i - half (in bins from zero); after doubling it
      // lies in bin half + floor((i - half) / 2).
      int64_t offset = static_cast<int64_t>(i) - static_cast<int64_t>(half);
      int64_t target = static_cast<int64_t>(half) +
                       (offset >= 0 ? offset / 2 : -((-offset + 1) / 2));
      merged[target] += counts[i];
    }
    counts = std::move(merged);
    range *= 2.0;
  }
}

void Histogram::add(const float *values, size_t count) {
  double magnitude = 0.0;
  for (size_t i = 0; i < count; ++i) {
    double value = values[i];
    if (!std::isfinite(value))
      continue;
    lowest = std::min(lowest, value);
    highest = std::max(highest, value);
    magnitude = std::max(magnitude, std::fabs(value));
  }
  if (magnitude > range)
    growTo(magnitude);
  if (range == 0.0) {
    // All zeros so far: they fall in the bins either side of zero.
    counts[counts.size() / 2] += count;
    total += count;
    return;
  }
  double binsPerUnit = counts.size() / (2.0 * range);
  int64_t last = static_cast<int64_t>(counts.size()) - 1;
  for (size_t i = 0; i < count; ++i) {
    float value = values[i];
    if (!std::isfinite(value))
      continue;
    int64_t bin = static_cast<int64_t>(std::floor((value + range) * binsPerUnit));
    ++counts[std::clamp<int64_t>(bin, 0, last)];
    ++total;
  }
}

bool parseCalibrationMethod(const std::string &text, CalibrationMethod &method) {
  if (text == "minmax")
    method = CalibrationMethod::MinMax;
  else if (text == "percentile")
    method = CalibrationMethod::Percentile;
  else if (text == "entropy")
    method = CalibrationMethod::Entropy;
  else if (text == "mse")
    method = CalibrationMethod::Mse;
  else
    return false;
  return true;
}

const char *calibrationMethodName(CalibrationMethod method) {
  switch (method) {
  case CalibrationMethod::MinMax:
    return "minmax";
  case CalibrationMethod::Percentile:
    return "percentile";
  case CalibrationMethod::Entropy:
    return "entropy";
  case CalibrationMethod::Mse:
    return "mse";
  }
  return "";
}

namespace {

/// The value below which `fraction` of the histogram's samples lie.
double quantile(const Histogram &histogram, double fraction) {
  const std::vector<uint64_t> &bins = histogram.bins();
  double wanted = fraction * histogram.count();
  double width = 2.0 * histogram.limit() / bins.size();
  double seen = 0.0;
  for (size_t i = 0; i < bins.size(); ++i) {
    if (seen + bins[i] >= wanted && bins[i] > 0)
      return -histogram.limit() + (i + (wanted - seen) / bins[i]) * width;
    seen += bins[i];
  }
  return histogram.limit();
}

/// KL(p || q) of two unnormalized distributions over the same bins. Where q
/// is empty but p is not (the clipped values), q is taken as a small
/// probability instead of zero, as onnxruntime and TensorRT smooth it: a
/// few outliers must cost a little, not rule the threshold out.
double klDivergence(const std::vector<double> &p, const std::vector<double> &q) {
  constexpr double kEmptyProbability = 1e-4;
  double pSum = 0.0, qSum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    pSum += p[i];
    qSum += q[i];
  }
  if (pSum == 0.0 || qSum == 0.0)
    return std::numeric_limits<double>::infinity();
  double divergence = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0)
      continue;
    double pi = p[i] / pSum, qi = q[i] > 0.0 ? q[i] / qSum : kEmptyProbability;
    divergence += pi * std::log(pi / qi);
  }
  return divergence;
}

/// The threshold on |x| that minimizes the information lost by clipping
/// there and quantizing [0, threshold] to `levels` levels.
double entropyThreshold(const Histogram &histogram, int levels) {
  const std::vector<uint64_t> &bins = histogram.bins();
  size_t half = bins.size() / 2;
  std::vector<double> magnitude(half, 0.0);
  for (size_t i = 0; i < half; ++i)
    magnitude[i] = static_cast<double>(bins[half + i]) + bins[half - 1 - i];
  size_t used = half;
  while (used > 0 && magnitude[used - 1] == 0.0)
    --used;
  double width = histogram.limit() / half;
  if (used <= static_cast<size_t>(levels))
    return used * width;
  double bestDivergence = std::numeric_limits<double>::infinity();
  size_t best = used;
  std::vector<double> clipped, expanded;
  for (size_t threshold = levels; threshold <= used; ++threshold) {
    // p: the bins below the threshold, the values above it clipped into the
    // last one.
    clipped.assign(magnitude.begin(), magnitude.begin() + threshold);
    for (size_t i = threshold; i < used; ++i)
      clipped.back() += magnitude[i];
    // q: the bins below the threshold (without the clipped values: their
    // loss is what p against q measures) merged into `levels` groups, each
    // group's mass spread evenly over its bins that are not empty.
    expanded.assign(threshold, 0.0);
    for (int level = 0; level < levels; ++level) {
      size_t begin = level * threshold / levels;
      size_t end = (level + 1) * threshold / levels;
      double mass = 0.0;
      size_t occupied = 0;
      for (size_t i = begin; i < end; ++i) {
        mass += magnitude[i];
        occupied += magnitude[i] != 0.0;
      }
      for (size_t i = begin; i < end; ++i)
        if (magnitude[i] != 0.0)
          expanded[i] = mass / occupied;
    }
    double divergence = klDivergence(clipped, expanded);
    if (divergence < bestDivergence) {
      bestDivergence = divergence;
      best = threshold;
    }
  }
  return best * width;
}

/// Sums over the bins below and above each bin edge of count, count x
/// centre and count x centre^2: the squared error of clipping at any edge
/// is then a few operations.
class ClippingCosts {
public:
  explicit ClippingCosts(const Histogram &histogram) : histogram(histogram) {
    const std::vector<uint64_t> &bins = histogram.bins();
    for (auto *sums : {&count, &first, &second})
      sums->assign(bins.size() + 1, 0.0);
    for (size_t i = 0; i < bins.size(); ++i) {
      double n = bins[i], c = histogram.binCentre(i);
      count[i + 1] = count[i] + n;
      first[i + 1] = first[i] + n * c;
      second[i + 1] = second[i] + n * c * c;
    }
  }

  /// Squared error of clamping to [lo, hi] where lo is edge `low` and hi
  /// edge `high` (Histogram::binEdge), and the count inside.
  std::pair<double, double> clip(size_t low, size_t high) const {
    double lo = histogram.binEdge(low), hi = histogram.binEdge(high);
    size_t last = count.size() - 1;
    auto cost = [](double n, double sum, double squares, double at) {
      return squares - 2.0 * at * sum + at * at * n;
    };
    double below = cost(count[low], first[low], second[low], lo);
    double above = cost(count[last] - count[high], first[last] - first[high],
                        second[last] - second[high], hi);
    return {below + above, count[high] - count[low]};
  }

private:
  const Histogram &histogram;
  std::vector<double> count, first, second;
};

/// The edges [lo, hi] (bin edges between the extremes' bins, around zero)
/// whose quantization to 256 levels has the least expected squared error.
std::pair<double, double> leastSquaredErrorRange(const Histogram &histogram) {
  const std::vector<uint64_t> &bins = histogram.bins();
  size_t lowest = 0, highest = bins.size();
  while (lowest < highest && bins[lowest] == 0)
    ++lowest;
  while (highest > lowest && bins[highest - 1] == 0)
    --highest;
  // A quantized range holds zero; its ends step from the extremes' bins to
  // zero, each on a grid of at most kSteps + 1 edges.
  constexpr size_t kSteps = 128;
  auto edgesToZero = [&](size_t from) {
    size_t zero = bins.size() / 2;
    size_t distance = from > zero ? from - zero : zero - from;
    size_t step = std::max<size_t>(1, distance / kSteps);
    std::vector<size_t> edges;
    for (size_t moved = 0; moved < distance; moved += step)
      edges.push_back(from > zero ? from - moved : from + moved);
    edges.push_back(zero);
    return edges;
  };
  ClippingCosts costs(histogram);
  double bestError = std::numeric_limits<double>::infinity();
  std::pair<size_t, size_t> best;
  for (size_t low : edgesToZero(std::min(lowest, bins.size() / 2)))
    for (size_t high : edgesToZero(std::max(highest, bins.size() / 2))) {
      double step = (histogram.binEdge(high) - histogram.binEdge(low)) / 255.0;
      auto [clipped, inside] = costs.clip(low, high);
      double error = clipped + inside * step * step / 12.0;
      if (error < bestError) {
        bestError = error;
        best = {low, high};
      }
    }
  return {histogram.binEdge(best.first), histogram.binEdge(best.second)};
}

} // namespace

std::pair<double, double> chooseRange(const Histogram &histogram, CalibrationMethod method,
                                      double percentile, int levels) {
  double lo = histogram.min(), hi = histogram.max();
  if (histogram.count() == 0 || histogram.limit() == 0.0)
    return {lo, hi};
  switch (method) {
  case CalibrationMethod::MinMax:
    break;
  case CalibrationMethod::Percentile:
    lo = std::max(lo, quantile(histogram, 1.0 - percentile / 100.0));
    hi = std::min(hi, quantile(histogram, percentile / 100.0));
    break;
  case CalibrationMethod::Entropy: {
    double threshold = entropyThreshold(histogram, levels);
    lo = std::max(lo, -threshold);
    hi = std::min(hi, threshold);
    break;
  }
  case CalibrationMethod::Mse: {
    auto [low, high] = leastSquaredErrorRange(histogram);
    lo = std::max(lo, low);
    hi = std::min(hi, high);
    break;
  }
  }
  return {std::min(lo, hi), hi};
}

} // namespace tessel::quantize
