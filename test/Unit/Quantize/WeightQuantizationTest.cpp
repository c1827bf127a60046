//===- WeightQuantizationTest.cpp - Symmetric s8 weight levels ------------===//

#include "passes/WeightQuantization.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using tessel::quantizeSymmetric;
using tessel::SymmetricWeights;
using tessel::WeightAxes;

namespace {

double identity(double scale) { return scale; }

/// Weights [channels, inputs] (output channels on axis 0, the reduction on
/// axis 1), drawn normal as trained layers have them.
std::vector<float> normalWeights(int64_t channels, int64_t inputs, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> values(channels * inputs);
  for (float &value : values)
    value = normal(generator);
  return values;
}

double squaredError(const std::vector<float> &values, const SymmetricWeights &weights,
                    int64_t inputs) {
  double error = 0.0;
  for (size_t i = 0; i < values.size(); ++i) {
    double difference = values[i] - weights.levels[i] * weights.scales[i / inputs];
    error += difference * difference;
  }
  return error;
}

TEST(WeightQuantizationTest, FullRangeRoundsAtTheLargestMagnitudeOver127) {
  // Largest magnitudes 127/64 and 127/32: scales 1/64 and 1/32, exact in
  // f32, and 16.5 levels rounds half to even.
  std::vector<float> values{0.5f, -1.984375f, 0.2578125f, 3.96875f, -0.5f, 0.515625f};
  SymmetricWeights weights = quantizeSymmetric(values, {2, 3}, WeightAxes{0, 1},
                                               /*fitPairs=*/false, identity);
  ASSERT_EQ(weights.scales.size(), 2u);
  EXPECT_DOUBLE_EQ(weights.scales[0], 1.0 / 64);
  EXPECT_DOUBLE_EQ(weights.scales[1], 1.0 / 32);
  EXPECT_EQ(weights.levels, (llvm::SmallVector<int64_t>{32, -127, 16, 127, -16, 16}));
}

TEST(WeightQuantizationTest, FittedPairsNeverSaturateSixteenBitSums) {
  const int64_t channels = 32, inputs = 75; // odd: the last input has no pair
  std::vector<float> values = normalWeights(channels, inputs, 7);
  SymmetricWeights weights = quantizeSymmetric(values, {channels, inputs}, WeightAxes{0, 1},
                                               /*fitPairs=*/true, identity);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t k = 0; k + 1 < inputs; k += 2) {
      int64_t first = weights.levels[c * inputs + k], second = weights.levels[c * inputs + k + 1];
      // What VPMADDUBSW sums for u8 inputs of 255 or 0, at worst.
      int64_t highest = 255 * (std::max<int64_t>(first, 0) + std::max<int64_t>(second, 0));
      int64_t lowest = 255 * (std::min<int64_t>(first, 0) + std::min<int64_t>(second, 0));
      EXPECT_LE(highest, 32767) << "channel " << c << " pair " << k;
      EXPECT_GE(lowest, -32768) << "channel " << c << " pair " << k;
    }
}

TEST(WeightQuantizationTest, FittedPairsBeatSevenBitWeights) {
  // Seven bits (largest weight at level 64) is what onnxruntime's
  // reduce_range does to make every pair fit; the search includes it, so
  // it can only do better, and on normal weights it does by far.
  const int64_t channels = 16, inputs = 288;
  std::vector<float> values = normalWeights(channels, inputs, 11);
  SymmetricWeights fitted = quantizeSymmetric(values, {channels, inputs}, WeightAxes{0, 1},
                                              /*fitPairs=*/true, identity);
  SymmetricWeights full = quantizeSymmetric(values, {channels, inputs}, WeightAxes{0, 1},
                                            /*fitPairs=*/false, identity);
  SymmetricWeights sevenBit = full;
  for (int64_t c = 0; c < channels; ++c)
    sevenBit.scales[c] = full.scales[c] * 127 / 64;
  for (size_t i = 0; i < values.size(); ++i)
    sevenBit.levels[i] = std::lround(values[i] / sevenBit.scales[i / inputs]);
  EXPECT_LT(squaredError(values, fitted, inputs),
            0.75 * squaredError(values, sevenBit, inputs));
}

TEST(WeightQuantizationTest, PairsAlongAnInnerReductionAxis) {
  // [F = 1, C = 2, KH = 1, KW = 2]: pairs are (c = 0, c = 1) at each kw.
  // Full range would give 127 + 120 at kw = 0, which does not fit.
  std::vector<float> values{1.0f, 0.1f, 0.945f, 0.1f};
  SymmetricWeights weights = quantizeSymmetric(values, {1, 2, 1, 2}, WeightAxes{0, 1},
                                               /*fitPairs=*/true, identity);
  EXPECT_LE(weights.levels[0] + weights.levels[2], 128);
  EXPECT_LE(weights.levels[1] + weights.levels[3], 128);
  EXPECT_GT(weights.levels[0], weights.levels[2]);
}

TEST(WeightQuantizationTest, WeightsThatFitLoseNothing) {
  // Alternating signs: every pair fits at full range, which the search
  // tries, so its error is at most full range's (another scale may round
  // these four values better still).
  std::vector<float> values{1.0f, -0.9f, 0.8f, -0.7f};
  SymmetricWeights fitted = quantizeSymmetric(values, {1, 4}, WeightAxes{0, 1},
                                              /*fitPairs=*/true, identity);
  SymmetricWeights full = quantizeSymmetric(values, {1, 4}, WeightAxes{0, 1},
                                            /*fitPairs=*/false, identity);
  EXPECT_LE(squaredError(values, fitted, 4), squaredError(values, full, 4));
}

} // namespace
