//===- CalibrationData.cpp - The inputs post-training quantization sees ---===//

#include "compiler/quantize/CalibrationData.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

namespace fs = std::filesystem;

namespace tessel::quantize {

namespace {

using data::formatShape;

std::vector<fs::path> sortedEntries(const fs::path &directory) {
  std::vector<fs::path> entries;
  for (const fs::directory_entry &entry : fs::directory_iterator(directory))
    entries.push_back(entry.path());
  std::sort(entries.begin(), entries.end());
  return entries;
}

/// The file among `files` (keyed by stem) that holds input `index`.
const fs::path *fileForInput(const std::map<std::string, fs::path> &files,
                             const std::vector<InputSpec> &inputs, size_t index) {
  for (const std::string &key :
       {inputs[index].name, "input_" + std::to_string(index), std::to_string(index)}) {
    auto found = files.find(key);
    if (found != files.end())
      return &found->second;
  }
  if (inputs.size() == 1 && files.size() == 1)
    return &files.begin()->second;
  return nullptr;
}

void checkMatches(const data::HostTensor &tensor, const InputSpec &input,
                  const std::string &path) {
  if (tensor.dtype != input.dtype)
    throw std::runtime_error(path + ": holds " + tsl_dtype_name(tensor.dtype) +
                             " but input '" + input.name + "' is " +
                             tsl_dtype_name(input.dtype));
  // A -1 dimension (the batch, or a varying length) takes any size; the
  // runtime checks it against the model's bound.
  bool matches = tensor.shape.size() == input.shape.size();
  for (size_t d = 0; matches && d < tensor.shape.size(); ++d)
    matches = input.shape[d] < 0 || tensor.shape[d] == input.shape[d];
  if (!matches)
    throw std::runtime_error(path + ": shape " + formatShape(tensor.shape) +
                             " but input '" + input.name + "' is " +
                             formatShape(input.shape));
}

/// A folder holding one sample: input_N.pb or .npy files.
std::optional<CalibrationSample> readSampleFolder(const fs::path &folder,
                                                  const std::vector<InputSpec> &inputs) {
  std::map<std::string, fs::path> files;
  for (const fs::path &path : sortedEntries(folder))
    if (path.extension() == ".pb" || path.extension() == ".npy")
      if (path.stem().string().rfind("output_", 0) != 0)
        files[path.stem().string()] = path;
  if (files.empty())
    return std::nullopt;
  CalibrationSample sample{folder.string(), {}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fs::path *file = fileForInput(files, inputs, i);
    if (!file)
      throw std::runtime_error(folder.string() + ": no file for input '" + inputs[i].name +
                               "' (expected " + inputs[i].name + ".npy or input_" +
                               std::to_string(i) + ".pb)");
    data::HostTensor tensor = data::readTensorFile(file->string());
    checkMatches(tensor, inputs[i], file->string());
    sample.inputs.push_back(std::move(tensor));
  }
  return sample;
}

/// The samples stacked in `tensor` for `input`: [S, *shape] or [S * B, ...].
std::vector<data::HostTensor> splitSamples(const data::HostTensor &tensor,
                                           const InputSpec &input, const std::string &path) {
  if (tensor.shape == input.shape)
    return {tensor};
  std::vector<int64_t> inner;
  int64_t count = 0;
  if (tensor.shape.size() == input.shape.size() + 1) {
    inner.assign(tensor.shape.begin() + 1, tensor.shape.end());
    count = tensor.shape[0];
  } else if (tensor.shape.size() == input.shape.size() && !input.shape.empty() &&
             input.shape[0] > 0 && tensor.shape[0] % input.shape[0] == 0) {
    inner = tensor.shape;
    inner[0] = input.shape[0];
    count = tensor.shape[0] / input.shape[0];
  }
  if (inner != input.shape || tensor.dtype != input.dtype)
    throw std::runtime_error(path + ": " + tsl_dtype_name(tensor.dtype) +
                             formatShape(tensor.shape) + " is neither input '" + input.name +
                             "' (" + tsl_dtype_name(input.dtype) + formatShape(input.shape) +
                             ") nor a stack of it");
  std::vector<data::HostTensor> samples;
  size_t bytes = tensor.bytes.size() / count;
  for (int64_t s = 0; s < count; ++s) {
    data::HostTensor sample{tensor.name, tensor.dtype, input.shape, {}};
    sample.bytes.assign(tensor.bytes.begin() + s * bytes, tensor.bytes.begin() + (s + 1) * bytes);
    samples.push_back(std::move(sample));
  }
  return samples;
}

/// One .npy per input in `directory`, each holding one or more samples.
std::vector<CalibrationSample> readStackedFiles(const fs::path &directory,
                                                const std::vector<InputSpec> &inputs) {
  std::map<std::string, fs::path> files;
  for (const fs::path &path : sortedEntries(directory))
    if (path.extension() == ".npy")
      files[path.stem().string()] = path;
  if (files.empty())
    return {};
  std::vector<std::vector<data::HostTensor>> perInput;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fs::path *file = fileForInput(files, inputs, i);
    if (!file)
      throw std::runtime_error(directory.string() + ": no .npy file for input '" +
                               inputs[i].name + "'");
    perInput.push_back(splitSamples(data::readNpy(file->string()), inputs[i], file->string()));
    if (perInput.back().size() != perInput.front().size())
      throw std::runtime_error(file->string() + ": holds " +
                               std::to_string(perInput.back().size()) +
                               " samples, the first input's file " +
                               std::to_string(perInput.front().size()));
  }
  std::vector<CalibrationSample> samples(perInput.front().size());
  for (size_t s = 0; s < samples.size(); ++s) {
    samples[s].source = directory.string() + " sample " + std::to_string(s);
    for (std::vector<data::HostTensor> &input : perInput)
      samples[s].inputs.push_back(std::move(input[s]));
  }
  return samples;
}

} // namespace

std::vector<CalibrationSample> readCalibrationData(const std::string &directory,
                                                   const std::vector<InputSpec> &inputs,
                                                   size_t limit) {
  if (!fs::is_directory(directory))
    throw std::runtime_error(directory + ": not a directory");
  std::vector<CalibrationSample> samples = readStackedFiles(directory, inputs);
  if (samples.empty())
    for (const fs::path &path : sortedEntries(directory)) {
      if (!fs::is_directory(path))
        continue;
      if (std::optional<CalibrationSample> sample = readSampleFolder(path, inputs))
        samples.push_back(std::move(*sample));
      if (limit && samples.size() == limit)
        break;
    }
  if (samples.empty())
    throw std::runtime_error(directory +
                             ": no calibration data (expected test_data_set_*/input_N.pb "
                             "folders or one .npy file per input)");
  if (limit && samples.size() > limit)
    samples.resize(limit);
  return samples;
}

} // namespace tessel::quantize
