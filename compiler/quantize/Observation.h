//===- Observation.h - Run compiled models and watch their tensors -*- C++ -*-===//
//
// Calibration compiles the float model with the tensors it will quantize
// as extra outputs, runs it with Tessel's own runtime and keeps a histogram
// of each; evaluation runs the float and the quantized model side by side
// and keeps the signal and error power of each watched tensor. Neither
// keeps a tensor past the sample it came from.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_QUANTIZE_OBSERVATION_H
#define TESSEL_COMPILER_QUANTIZE_OBSERVATION_H

#include "compiler/quantize/CalibrationData.h"
#include "compiler/quantize/Histogram.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace tessel::quantize {

/// Called after each sample with the number done.
using SampleProgress = std::function<void(size_t done, size_t total)>;

/// The inputs of the artifact in `bytes`. Throws on a bad artifact.
std::vector<InputSpec> artifactInputs(const std::vector<uint8_t> &bytes);

/// The shapes of the outputs of the artifact in `bytes`, as it computes
/// them (watched tensors may be channels-last). Throws on a bad artifact.
std::vector<std::vector<int64_t>> artifactOutputShapes(const std::vector<uint8_t> &bytes);

/// What calibration keeps of each watched tensor.
struct Observations {
  std::vector<Histogram> histograms;
  /// The mean of each channel along the axis asked for (empty if none).
  std::vector<std::vector<double>> channelMeans;
};

/// Runs the artifact in `bytes` on every sample and observes each f32
/// output from `firstWatched` on: its histogram, and the mean of each
/// channel along `meanAxes[i - firstWatched]` where that is not -1.
/// Throws on a failed run.
Observations collectObservations(const std::vector<uint8_t> &bytes,
                                 const std::vector<CalibrationSample> &samples, size_t firstWatched,
                                 const std::vector<int64_t> &meanAxes,
                                 const SampleProgress &progress);

/// The power of a tensor and of its error, summed over samples.
struct ErrorPower {
  double signal = 0.0, noise = 0.0;
  /// 10 log10(signal / noise); +inf for an exact tensor.
  double sqnrDb() const;
};

/// Runs `reference` and `candidate` on every sample and compares candidate
/// output i with reference output `referenceIndex[i]`, for each i that has
/// one (npos entries are skipped).
std::vector<ErrorPower> measureError(const std::vector<uint8_t> &reference,
                                     const std::vector<uint8_t> &candidate,
                                     const std::vector<size_t> &referenceIndex,
                                     const std::vector<CalibrationSample> &samples,
                                     const SampleProgress &progress);

} // namespace tessel::quantize

#endif // TESSEL_COMPILER_QUANTIZE_OBSERVATION_H
