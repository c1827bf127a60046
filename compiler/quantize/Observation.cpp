//===- Observation.cpp - Run compiled models and watch their tensors ------===//

#include "compiler/quantize/Observation.h"

#include "tessel/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace tessel::quantize {

namespace {

std::vector<tsl::Tensor> wrapInputs(const CalibrationSample &sample) {
  std::vector<tsl::Tensor> inputs;
  for (const data::HostTensor &input : sample.inputs)
    inputs.push_back(tsl::Tensor::wrap(input.dtype, input.shape,
                                  const_cast<uint8_t *>(input.bytes.data()),
                                  input.bytes.size()));
  return inputs;
}

/// The real values of `tensor` (f32, or 8-bit quantized per tensor as
/// `info` says) in `values`; false for other tensors.
bool realValues(const tsl::Tensor &tensor, const tsl::TensorInfo &info,
                std::vector<float> &values) {
  values.resize(tensor.elementCount());
  if (tensor.dtype() == TSL_F32) {
    std::copy_n(tensor.data<float>(), values.size(), values.begin());
    return true;
  }
  if (info.scales.size() != 1)
    return false;
  double scale = info.scales[0], zeroPoint = static_cast<double>(info.zeroPoints[0]);
  auto dequantize = [&](const auto *q) {
    for (size_t e = 0; e < values.size(); ++e)
      values[e] = static_cast<float>((q[e] - zeroPoint) * scale);
  };
  if (tensor.dtype() == TSL_U8)
    dequantize(tensor.data<uint8_t>());
  else if (tensor.dtype() == TSL_I8)
    dequantize(tensor.data<int8_t>());
  else
    return false;
  return true;
}

tsl::Session sessionOf(const std::vector<uint8_t> &bytes) {
  return tsl::Session(tsl::Module::fromMemory(bytes.data(), bytes.size()));
}

} // namespace

std::vector<InputSpec> artifactInputs(const std::vector<uint8_t> &bytes) {
  std::vector<InputSpec> specs;
  for (const tsl::TensorInfo &info : tsl::Module::fromMemory(bytes.data(), bytes.size()).inputs())
    specs.push_back({info.name, info.dtype, info.shape});
  return specs;
}

std::vector<std::vector<int64_t>> artifactOutputShapes(const std::vector<uint8_t> &bytes) {
  std::vector<std::vector<int64_t>> shapes;
  for (const tsl::TensorInfo &info : tsl::Module::fromMemory(bytes.data(), bytes.size()).outputs())
    shapes.push_back(info.shape);
  return shapes;
}

Observations collectObservations(const std::vector<uint8_t> &bytes,
                                 const std::vector<CalibrationSample> &samples, size_t firstWatched,
                                 const std::vector<int64_t> &meanAxes,
                                 const SampleProgress &progress) {
  tsl::Session session = sessionOf(bytes);
  Observations observed;
  std::vector<std::vector<double>> sums;
  std::vector<uint64_t> counts;
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<tsl::Tensor> outputs = session.run(wrapInputs(samples[s]));
    size_t watched = outputs.size() - firstWatched;
    observed.histograms.resize(watched);
    sums.resize(watched);
    counts.resize(watched);
    for (size_t i = 0; i < watched; ++i) {
      const tsl::Tensor &tensor = outputs[firstWatched + i];
      const float *values = tensor.data<float>();
      observed.histograms[i].add(values, tensor.elementCount());
      int64_t axis = i < meanAxes.size() ? meanAxes[i] : -1;
      if (axis < 0)
        continue;
      // Elements are [outer, channel, inner] around the axis.
      const std::vector<int64_t> &shape = tensor.shape();
      size_t channels = shape.at(axis), inner = 1;
      for (size_t d = axis + 1; d < shape.size(); ++d)
        inner *= shape[d];
      sums[i].resize(channels, 0.0);
      size_t outer = tensor.elementCount() / std::max<size_t>(channels * inner, 1);
      for (size_t o = 0; o < outer; ++o)
        for (size_t c = 0; c < channels; ++c) {
          const float *run = values + (o * channels + c) * inner;
          sums[i][c] += std::accumulate(run, run + inner, 0.0);
        }
      counts[i] += outer * inner;
    }
    if (progress)
      progress(s + 1, samples.size());
  }
  observed.channelMeans.resize(sums.size());
  for (size_t i = 0; i < sums.size(); ++i)
    for (double sum : sums[i])
      observed.channelMeans[i].push_back(sum / static_cast<double>(counts[i]));
  return observed;
}

double ErrorPower::sqnrDb() const {
  if (noise == 0.0)
    return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

std::vector<ErrorPower> measureError(const std::vector<uint8_t> &reference,
                                     const std::vector<uint8_t> &candidate,
                                     const std::vector<size_t> &referenceIndex,
                                     const std::vector<CalibrationSample> &samples,
                                     const SampleProgress &progress) {
  tsl::Session referenceSession = sessionOf(reference);
  tsl::Module candidateModule = tsl::Module::fromMemory(candidate.data(), candidate.size());
  std::vector<tsl::TensorInfo> candidateOutputs = candidateModule.outputs();
  tsl::Session candidateSession(candidateModule);
  std::vector<ErrorPower> powers(referenceIndex.size());
  std::vector<float> values;
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<tsl::Tensor> inputs = wrapInputs(samples[s]);
    std::vector<tsl::Tensor> expected = referenceSession.run(inputs);
    std::vector<tsl::Tensor> actual = candidateSession.run(inputs);
    for (size_t i = 0; i < referenceIndex.size() && i < actual.size(); ++i) {
      if (referenceIndex[i] == static_cast<size_t>(-1) || !realValues(actual[i], candidateOutputs[i], values))
        continue;
      const tsl::Tensor &want = expected.at(referenceIndex[i]);
      // Watched tensors come in the layout each graph computes them in.
      if (want.shape() != actual[i].shape())
        throw std::logic_error("watched tensor " + std::to_string(i) +
                               " has another shape (layout) in the quantized model than in "
                               "the float one");
      const float *x = want.data<float>();
      for (size_t e = 0; e < want.elementCount(); ++e) {
        powers[i].signal += double(x[e]) * x[e];
        powers[i].noise += (double(x[e]) - values[e]) * (double(x[e]) - values[e]);
      }
    }
    if (progress)
      progress(s + 1, samples.size());
  }
  return powers;
}

} // namespace tessel::quantize
