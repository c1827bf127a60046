//===- HistogramTest.cpp - Calibration statistics and ranges --------------===//

#include "compiler/quantize/Histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

using tessel::quantize::CalibrationMethod;
using tessel::quantize::chooseRange;
using tessel::quantize::Histogram;

namespace {

uint64_t totalCount(const Histogram &histogram) {
  return std::accumulate(histogram.bins().begin(), histogram.bins().end(), uint64_t{0});
}

TEST(HistogramTest, GrowingKeepsEveryValueOnItsSide) {
  Histogram histogram(64);
  std::vector<float> small{-0.3f, -0.1f, 0.1f, 0.2f, 0.45f};
  histogram.add(small.data(), small.size());
  std::vector<float> large{-7.5f, 3.0f};
  histogram.add(large.data(), large.size());
  EXPECT_EQ(totalCount(histogram), 7u);
  EXPECT_EQ(histogram.count(), 7u);
  EXPECT_DOUBLE_EQ(histogram.min(), -7.5);
  EXPECT_DOUBLE_EQ(histogram.max(), 3.0);
  EXPECT_GE(histogram.limit(), 7.5);
  // Bins left of the middle hold the three negative values.
  const std::vector<uint64_t> &bins = histogram.bins();
  uint64_t negative = std::accumulate(bins.begin(), bins.begin() + bins.size() / 2, uint64_t{0});
  EXPECT_EQ(negative, 3u);
}

TEST(HistogramTest, NonFiniteValuesAreIgnored) {
  Histogram histogram(16);
  std::vector<float> values{1.0f, NAN, INFINITY, -2.0f};
  histogram.add(values.data(), values.size());
  EXPECT_EQ(histogram.count(), 2u);
  EXPECT_DOUBLE_EQ(histogram.min(), -2.0);
  EXPECT_DOUBLE_EQ(histogram.max(), 1.0);
}

TEST(HistogramTest, MinMaxIsTheExtremes) {
  Histogram histogram;
  std::vector<float> values{0.0f, 0.5f, 5.25f, -1.5f};
  histogram.add(values.data(), values.size());
  auto [lo, hi] = chooseRange(histogram, CalibrationMethod::MinMax);
  EXPECT_DOUBLE_EQ(lo, -1.5);
  EXPECT_DOUBLE_EQ(hi, 5.25);
}

TEST(HistogramTest, PercentileOfUniformValues) {
  // 0, 0.001, ..., 9.999: the 99th percentile is 9.9 (to a bin's width).
  Histogram histogram;
  std::vector<float> values(10000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = i * 0.001f;
  histogram.add(values.data(), values.size());
  auto [lo, hi] = chooseRange(histogram, CalibrationMethod::Percentile, 99.0);
  double binWidth = 2.0 * histogram.limit() / histogram.bins().size();
  EXPECT_NEAR(hi, 9.9, binWidth);
  EXPECT_NEAR(lo, 0.1, binWidth);
}

TEST(HistogramTest, EntropyClipsRareOutliers) {
  // A unit Gaussian with a handful of values at 100: minmax spends the
  // range on the outliers, entropy keeps the bulk of the distribution.
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(200000);
  for (float &value : values)
    value = normal(generator);
  for (int i = 0; i < 5; ++i)
    values[i] = 100.0f;
  Histogram histogram;
  histogram.add(values.data(), values.size());
  auto [lo, hi] = chooseRange(histogram, CalibrationMethod::Entropy);
  EXPECT_GT(hi, 2.0);
  EXPECT_LT(hi, 10.0);
  EXPECT_LT(lo, -2.0);
  EXPECT_GT(lo, -10.0);
}

TEST(HistogramTest, EntropyKeepsAWellSpreadRange) {
  // Uniform values: nothing to clip, so the threshold stays near the end.
  Histogram histogram;
  std::vector<float> values(100000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) / values.size();
  histogram.add(values.data(), values.size());
  auto [lo, hi] = chooseRange(histogram, CalibrationMethod::Entropy);
  EXPECT_GT(hi, 0.9);
  EXPECT_LE(hi, 1.0);
  EXPECT_DOUBLE_EQ(lo, 0.0);
}

} // namespace

/// The mean squared error of quantizing `values` to 256 levels over
/// [lo, hi] (the asymmetric u8 scheme), measured on the values themselves.
double quantizationError(const std::vector<float> &values, double lo, double hi) {
  double step = (hi - lo) / 255.0, error = 0.0;
  for (float value : values) {
    double level = std::nearbyint((std::clamp<double>(value, lo, hi) - lo) / step);
    double difference = value - (lo + level * step);
    error += difference * difference;
  }
  return error / values.size();
}

TEST(HistogramTest, MseHasTheLeastErrorOfTheMethods) {
  // A unit Gaussian with a few outliers at 8: measured on the values
  // themselves, the range chosen for least squared error beats those of
  // the other methods (within what the histogram's bins blur).
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(200000);
  for (float &value : values)
    value = normal(generator);
  for (int i = 0; i < 20; ++i)
    values[i] = 8.0f;
  Histogram histogram;
  histogram.add(values.data(), values.size());
  auto [lo, hi] = chooseRange(histogram, CalibrationMethod::Mse);
  double error = quantizationError(values, lo, hi);
  for (CalibrationMethod other :
       {CalibrationMethod::MinMax, CalibrationMethod::Percentile, CalibrationMethod::Entropy}) {
    auto [otherLo, otherHi] = chooseRange(histogram, other);
    EXPECT_LE(error, 1.01 * quantizationError(values, otherLo, otherHi))
        << calibrationMethodName(other);
  }
  EXPECT_LT(hi, 8.0);
}

TEST(HistogramTest, MseClipsEachEndByItsOwnTail) {
  // SiLU-like activations: a short negative end at -0.28 and a long
  // exponential tail. Clipping the short end saves nothing; the long one
  // is clipped, and the result beats the extremes on the values.
  std::mt19937 generator(11);
  std::exponential_distribution<float> tail(1.0f);
  std::uniform_real_distribution<float> negative(-0.28f, 0.0f);
  std::vector<float> values(200000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = i % 4 == 0 ? negative(generator) : tail(generator);
  Histogram histogram;
  histogram.add(values.data(), values.size());
  auto [lo, hi] = chooseRange(histogram, CalibrationMethod::Mse);
  EXPECT_LT(lo, -0.2);
  EXPECT_LT(hi, histogram.max());
  EXPECT_GT(hi, 4.0);
  EXPECT_LT(quantizationError(values, lo, hi),
            quantizationError(values, histogram.min(), histogram.max()));
}

TEST(HistogramTest, MseKeepsAWellSpreadRange) {
  Histogram histogram;
  std::vector<float> values(100000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) / values.size();
  histogram.add(values.data(), values.size());
  auto [lo, hi] = chooseRange(histogram, CalibrationMethod::Mse);
  EXPECT_GT(hi, 0.95);
  EXPECT_LE(hi, 1.0);
  EXPECT_DOUBLE_EQ(lo, 0.0);
}
