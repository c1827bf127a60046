//===- WeightQuantization.cpp - Symmetric s8 weights per channel ----------===//

#include "passes/WeightQuantization.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel {

namespace {

/// The largest-magnitude levels tried for a channel when pairs must fit:
/// 127 down to 64 (where every pair fits as it is).
constexpr int64_t kTopLevels[] = {127, 119, 111, 103, 95, 87, 79, 71, 64};

/// Where a row-major element sits along the channel and reduction axes.
struct Layout {
  Layout(llvm::ArrayRef<int64_t> shape, WeightAxes axes) {
    auto strideOf = [&](int64_t axis) {
      int64_t stride = 1;
      for (int64_t i = axis + 1; i < static_cast<int64_t>(shape.size()); ++i)
        stride *= shape[i];
      return stride;
    };
    channels = shape[axes.channel];
    channelStride = strideOf(axes.channel);
    reductionExtent = shape[axes.reduction];
    reductionStride = strideOf(axes.reduction);
  }
  int64_t channelOf(int64_t index) const { return (index / channelStride) % channels; }

  int64_t channels, channelStride, reductionExtent, reductionStride;
};

/// The channel and reduction position of consecutive row-major elements,
/// stepped without dividing (the search visits every weight many times).
class Walk {
public:
  explicit Walk(const Layout &layout)
      : layout(layout), channelLeft(layout.channelStride),
        positionLeft(layout.reductionStride) {}
  int64_t channel() const { return currentChannel; }
  int64_t position() const { return currentPosition; }
  void next() {
    if (--channelLeft == 0) {
      channelLeft = layout.channelStride;
      currentChannel = currentChannel + 1 == layout.channels ? 0 : currentChannel + 1;
    }
    if (--positionLeft == 0) {
      positionLeft = layout.reductionStride;
      currentPosition = currentPosition + 1 == layout.reductionExtent ? 0 : currentPosition + 1;
    }
  }

private:
  const Layout &layout;
  int64_t currentChannel = 0, currentPosition = 0, channelLeft, positionLeft;
};

int64_t roundedLevel(double level) {
  return static_cast<int64_t>(std::clamp(std::nearbyint(level), -127.0, 127.0));
}

/// Levels of a pair whose real levels are (a, b): each rounded, unless
/// their positive (or negative) parts then sum past 128 (-128); such a pair
/// moves to the nearest levels on that sum.
std::pair<int64_t, int64_t> fitPair(double a, double b) {
  int64_t first = roundedLevel(a), second = roundedLevel(b);
  // Two levels over 128 together are both positive (or both negative).
  int64_t sign = std::max<int64_t>(first, 0) + std::max<int64_t>(second, 0) > 128    ? 1
                 : std::min<int64_t>(first, 0) + std::min<int64_t>(second, 0) < -128 ? -1
                                                                                      : 0;
  if (sign == 0)
    return {first, second};
  // The nearest point of x + y = 128 to (x, y) is ((x - y) / 2 + 64, ...).
  double x = a * sign, y = b * sign;
  int64_t moved = std::clamp<int64_t>(std::llround((x - y) / 2.0 + 64.0), 1, 127);
  return {sign * moved, sign * (128 - moved)};
}

/// Levels of every weight at the channels' `scales`, and each channel's
/// squared error.
void quantizeAt(llvm::ArrayRef<float> values, const Layout &layout, bool fitPairs,
                llvm::ArrayRef<double> scales, llvm::SmallVectorImpl<int64_t> &levels,
                llvm::SmallVectorImpl<double> &errors) {
  levels.assign(values.size(), 0);
  errors.assign(layout.channels, 0.0);
  // In f32, as ONNX's QuantizeLinear divides.
  auto realLevel = [&](int64_t index, double scale) -> double {
    return values[index] / static_cast<float>(scale);
  };
  auto keep = [&](int64_t index, int64_t level, double scale, int64_t channel) {
    levels[index] = level;
    double error = values[index] - level * scale;
    errors[channel] += error * error;
  };
  Walk walk(layout);
  for (int64_t index = 0; index < static_cast<int64_t>(values.size()); ++index, walk.next()) {
    int64_t channel = walk.channel(), position = walk.position();
    double scale = scales[channel];
    bool paired = fitPairs && layout.reductionExtent > 1;
    if (paired && position % 2 == 1)
      continue; // kept with its pair's first element
    if (paired && position + 1 < layout.reductionExtent) {
      int64_t partner = index + layout.reductionStride;
      auto [first, second] = fitPair(realLevel(index, scale), realLevel(partner, scale));
      keep(index, first, scale, channel);
      keep(partner, second, scale, channel);
      continue;
    }
    keep(index, roundedLevel(realLevel(index, scale)), scale, channel);
  }
}

} // namespace

SymmetricWeights quantizeSymmetric(llvm::ArrayRef<float> values, llvm::ArrayRef<int64_t> shape,
                                   WeightAxes axes, bool fitPairs,
                                   const std::function<double(double)> &representable) {
  Layout layout(shape, axes);
  llvm::SmallVector<double> absMax(layout.channels, 0.0);
  for (int64_t index = 0; index < static_cast<int64_t>(values.size()); ++index) {
    double &channelMax = absMax[layout.channelOf(index)];
    channelMax = std::max<double>(channelMax, std::fabs(values[index]));
  }
  auto scalesAt = [&](llvm::ArrayRef<int64_t> topLevels) {
    llvm::SmallVector<double> scales;
    for (int64_t channel = 0; channel < layout.channels; ++channel) {
      double scale = representable(absMax[channel] / topLevels[channel]);
      scales.push_back(scale > 0.0 ? scale : 1.0);
    }
    return scales;
  };

  llvm::SmallVector<int64_t> bestTop(layout.channels, 127);
  llvm::SmallVector<int64_t> levels;
  llvm::SmallVector<double> errors;
  if (fitPairs) {
    llvm::SmallVector<double> bestError(layout.channels, std::numeric_limits<double>::infinity());
    for (int64_t top : kTopLevels) {
      llvm::SmallVector<int64_t> tops(layout.channels, top);
      quantizeAt(values, layout, fitPairs, scalesAt(tops), levels, errors);
      for (int64_t channel = 0; channel < layout.channels; ++channel)
        if (errors[channel] < bestError[channel]) {
          bestError[channel] = errors[channel];
          bestTop[channel] = top;
        }
    }
  }
  SymmetricWeights weights;
  weights.scales = scalesAt(bestTop);
  quantizeAt(values, layout, fitPairs, weights.scales, weights.levels, errors);
  return weights;
}

} // namespace tessel
