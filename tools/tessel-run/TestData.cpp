//===- TestData.cpp - Inputs and expected outputs of ONNX test data -------===//

#include "tools/tessel-run/TestData.h"

#include "runtime/schema/Artifact.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

namespace tessel::run {

namespace sc = tessel::schema;

namespace {

using GraphValues = flatbuffers::Vector<flatbuffers::Offset<sc::GraphValue>>;

/// The folder's `prefix`N.pb files, in order, up to the first missing.
std::vector<std::string> valueFiles(const std::string &folder, const std::string &prefix) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  for (size_t i = 0;; ++i) {
    fs::path path = fs::path(folder) / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(path))
      return paths;
    paths.push_back(path.string());
  }
}

data::ValueKind fileKind(const sc::GraphValue &value) {
  switch (value.kind()) {
  case sc::GraphValueKind_Tensor:
    return data::ValueKind::Tensor;
  case sc::GraphValueKind_Sequence:
    return data::ValueKind::Sequence;
  default:
    return data::ValueKind::Optional;
  }
}

bool isSequence(const sc::GraphValue &value) {
  return value.kind() == sc::GraphValueKind_Sequence ||
         value.kind() == sc::GraphValueKind_OptionalSequence;
}

std::string describe(bool present, size_t count, bool sequence) {
  if (!present)
    return "an empty optional";
  if (!sequence)
    return "a tensor";
  return "a sequence of " + std::to_string(count) + (count == 1 ? " tensor" : " tensors");
}

/// Why `file` does not have the structure of graph value `value` (its
/// `role`, input or output, and index), or "" when it does.
std::string structuralProblem(const data::ValueFile &file, const sc::GraphValue &value,
                              const std::string &role, size_t index) {
  if (file.present == value.present() && file.tensors.size() == value.count())
    return "";
  std::string artifact = describe(value.present(), value.count(), isSequence(value));
  std::string data = describe(file.present, file.tensors.size(), isSequence(value));
  return "graph " + role + " " + std::to_string(index) + " '" + value.name()->str() + "' is " +
         artifact + ", but the test data " + (role == "input" ? "gives " : "expects ") + data;
}

} // namespace

std::vector<data::HostTensor> readTestInputs(const std::string &folder,
                                             const uint8_t *verifiedArtifact, size_t inputCount) {
  std::vector<std::string> paths = valueFiles(folder, "input_");
  const GraphValues *graphInputs = sc::GetArtifact(verifiedArtifact)->graph_inputs();
  std::vector<data::HostTensor> tensors;
  if (!graphInputs) {
    std::vector<data::HostTensor> found;
    for (const std::string &path : paths)
      found.push_back(data::readTensorProto(path));
    if (found.size() <= inputCount)
      return found;
    // Frozen inputs are left out: the artifact's inputs are matched by name.
    const auto &inputs = *sc::GetArtifact(verifiedArtifact)->inputs();
    for (const sc::TensorSignature *input : inputs) {
      auto match = std::find_if(found.begin(), found.end(), [&](const data::HostTensor &tensor) {
        return tensor.name == input->name()->str();
      });
      if (match == found.end())
        throw std::runtime_error("test data in " + folder + " has no input named '" +
                                 input->name()->str() + "'");
      tensors.push_back(std::move(*match));
    }
    return tensors;
  }
  bool byName = paths.size() != graphInputs->size();
  for (size_t g = 0; g < graphInputs->size(); ++g) {
    const sc::GraphValue &input = *graphInputs->Get(g);
    std::optional<data::ValueFile> file;
    if (!byName)
      file = data::readValueProto(paths[g], fileKind(input));
    for (size_t i = 0; byName && i < paths.size() && !file; ++i) {
      // A file of another kind (a sequence read as a tensor, say) is not
      // the input looked for.
      try {
        data::ValueFile read = data::readValueProto(paths[i], fileKind(input));
        if (read.name == input.name()->str())
          file = std::move(read);
      } catch (const std::runtime_error &) {
      }
    }
    if (!file)
      throw std::runtime_error("test data in " + folder + " has no input named '" +
                               input.name()->str() + "'");
    std::string problem = structuralProblem(*file, input, "input", g);
    if (!problem.empty())
      throw std::runtime_error(problem);
    for (data::HostTensor &tensor : file->tensors)
      tensors.push_back(std::move(tensor));
  }
  return tensors;
}

ExpectedOutputs readTestOutputs(const std::string &folder, const uint8_t *verifiedArtifact,
                                size_t outputCount) {
  std::vector<std::string> paths = valueFiles(folder, "output_");
  ExpectedOutputs expected;
  const GraphValues *graphOutputs = sc::GetArtifact(verifiedArtifact)->graph_outputs();
  if (!graphOutputs) {
    for (size_t i = 0; i < outputCount && i < paths.size(); ++i)
      expected.tensors.push_back(data::readTensorProto(paths[i]));
    return expected;
  }
  std::vector<std::optional<data::HostTensor>> byOutput(outputCount);
  for (size_t g = 0; g < graphOutputs->size() && g < paths.size(); ++g) {
    const sc::GraphValue &output = *graphOutputs->Get(g);
    data::ValueFile file = data::readValueProto(paths[g], fileKind(output));
    std::string problem = structuralProblem(file, output, "output", g);
    if (!problem.empty()) {
      expected.structuralProblems.push_back(problem);
      continue;
    }
    for (size_t k = 0; k < file.tensors.size(); ++k)
      byOutput[output.first() + k] = std::move(file.tensors[k]);
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
