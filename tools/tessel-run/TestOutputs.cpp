//===- TestOutputs.cpp - Expected outputs of an ONNX test-data folder -----===//

#include "tools/tessel-run/TestOutputs.h"

#include "runtime/schema/Artifact.h"

#include <filesystem>
#include <optional>

namespace tessel::run {

namespace sc = tessel::schema;

namespace {

/// The tensors graph output `output`'s file holds, or nullopt for an empty
/// optional.
std::optional<std::vector<data::HostTensor>> readGraphOutput(const std::string &path,
                                                             const sc::GraphOutput &output) {
  switch (output.kind()) {
  case sc::GraphValueKind_Tensor:
    return std::vector<data::HostTensor>{data::readTensorProto(path)};
  case sc::GraphValueKind_Sequence:
    return data::readSequenceProto(path);
  default:
    return data::readOptionalProto(path);
  }
}

std::string describe(const std::optional<std::vector<data::HostTensor>> &tensors, bool sequence) {
  if (!tensors)
    return "an empty optional";
  if (!sequence)
    return "a tensor";
  return "a sequence of " + std::to_string(tensors->size()) + " tensors";
}

} // namespace

ExpectedOutputs readTestOutputs(const std::string &folder, const uint8_t *verifiedArtifact,
                                size_t outputCount) {
  namespace fs = std::filesystem;
  auto path = [&](size_t i) {
    return (fs::path(folder) / ("output_" + std::to_string(i) + ".pb")).string();
  };
  ExpectedOutputs expected;
  const auto *graphOutputs = sc::GetArtifact(verifiedArtifact)->graph_outputs();
  if (!graphOutputs) {
    for (size_t i = 0; i < outputCount && fs::exists(path(i)); ++i)
      expected.tensors.push_back(data::readTensorProto(path(i)));
    return expected;
  }
  std::vector<std::optional<data::HostTensor>> byOutput(outputCount);
  for (size_t g = 0; g < graphOutputs->size() && fs::exists(path(g)); ++g) {
    const sc::GraphOutput &output = *graphOutputs->Get(g);
    std::optional<std::vector<data::HostTensor>> tensors = readGraphOutput(path(g), output);
    bool sequence = output.kind() == sc::GraphValueKind_Sequence ||
                    output.kind() == sc::GraphValueKind_OptionalSequence;
    std::optional<std::vector<data::HostTensor>> given;
    if (output.present())
      given.emplace(output.count());
    if (tensors.has_value() != given.has_value() ||
        (tensors && tensors->size() != output.count())) {
      expected.structuralProblems.push_back(
          "graph output " + std::to_string(g) + " '" + output.name()->str() + "' is " +
          describe(given, sequence) + ", but the test data expects " + describe(tensors, sequence));
      continue;
    }
    for (size_t k = 0; tensors && k < tensors->size(); ++k)
      byOutput[output.first() + k] = std::move((*tensors)[k]);
  }
  // The outputs the folder gives, up to the first it leaves out.
  for (std::optional<data::HostTensor> &tensor : byOutput) {
    if (!tensor)
      break;
    expected.tensors.push_back(std::move(*tensor));
  }
  return expected;
}

} // namespace tessel::run
