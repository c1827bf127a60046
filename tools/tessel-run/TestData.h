//===- TestData.h - Inputs and expected outputs of ONNX test data -*- C++ -*-===//
//
// An ONNX test-data folder holds one input_N.pb per graph input and one
// output_N.pb per graph output: a TensorProto, or for a sequence or an
// optional a SequenceProto or OptionalProto. An artifact takes and gives
// tensors only; its graph_inputs and graph_outputs tables say which of them
// hold each graph value that is not one tensor.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_TESTDATA_H
#define TESSEL_TOOLS_TESSEL_RUN_TESTDATA_H

#include "compiler/data/TensorFiles.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::run {

/// The tensors the folder gives `verifiedArtifact`'s `inputCount` inputs,
/// in order. A folder may hold more graph inputs than the artifact takes,
/// when some were frozen at compile time (--freeze-input); then they are
/// matched by name and the rest skipped. Throws std::runtime_error naming a
/// file it cannot read, or a graph input whose structure differs from what
/// the artifact was compiled for (a sequence of another length, say).
std::vector<data::HostTensor> readTestInputs(const std::string &folder,
                                             const uint8_t *verifiedArtifact, size_t inputCount);

/// What a test-data folder expects of an artifact's outputs.
struct ExpectedOutputs {
  /// One per output of the artifact, in order, up to the last that the
  /// folder gives.
  std::vector<data::HostTensor> tensors;
  /// Graph outputs whose structure differs from what the artifact gives:
  /// a sequence of another length, an optional present where the
  /// artifact's is empty or the other way round.
  std::vector<std::string> structuralProblems;
};

/// Reads the folder's output_N.pb against `verifiedArtifact`'s
/// `outputCount` outputs. Throws std::runtime_error naming a file it
/// cannot read.
ExpectedOutputs readTestOutputs(const std::string &folder, const uint8_t *verifiedArtifact,
                                size_t outputCount);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_TESTDATA_H
