//===- Observation.cpp - Run compiled models and watch their tensors ------===//

#include "compiler/quantize/Observation.h"

#include "tessel/runtime.hpp"

#include <cmath>
#include <limits>
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

std::vector<Histogram> collectHistograms(const std::vector<uint8_t> &bytes,
                                         const std::vector<CalibrationSample> &samples,
                                         size_t firstWatched, const SampleProgress &progress) {
  tsl::Session session = sessionOf(bytes);
  std::vector<Histogram> histograms;
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<tsl::Tensor> outputs = session.run(wrapInputs(samples[s]));
    histograms.resize(outputs.size() - firstWatched);
    for (size_t i = firstWatched; i < outputs.size(); ++i)
      histograms[i - firstWatched].add(outputs[i].data<float>(), outputs[i].elementCount());
    if (progress)
      progress(s + 1, samples.size());
  }
  return histograms;
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
  tsl::Session candidateSession = sessionOf(candidate);
  std::vector<ErrorPower> powers(referenceIndex.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<tsl::Tensor> inputs = wrapInputs(samples[s]);
    std::vector<tsl::Tensor> expected = referenceSession.run(inputs);
    std::vector<tsl::Tensor> actual = candidateSession.run(inputs);
    for (size_t i = 0; i < referenceIndex.size() && i < actual.size(); ++i) {
      if (referenceIndex[i] == static_cast<size_t>(-1) ||
          actual[i].dtype() != TSL_F32)
        continue;
      const tsl::Tensor &want = expected.at(referenceIndex[i]);
      if (want.elementCount() != actual[i].elementCount())
        throw std::logic_error("watched tensors of the float and quantized models differ in size");
      const float *x = want.data<float>(), *y = actual[i].data<float>();
      for (size_t e = 0; e < want.elementCount(); ++e) {
        powers[i].signal += double(x[e]) * x[e];
        powers[i].noise += (double(x[e]) - y[e]) * (double(x[e]) - y[e]);
      }
    }
    if (progress)
      progress(s + 1, samples.size());
  }
  return powers;
}

} // namespace tessel::quantize
