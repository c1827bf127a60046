//===- TestOutputs.h - Expected outputs of an ONNX test-data folder -*- C++ -*-===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_TESTOUTPUTS_H
#define TESSEL_TOOLS_TESSEL_RUN_TESTOUTPUTS_H

#include "compiler/data/TensorFiles.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::run {

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

/// Reads the folder's output_N.pb, one per graph output of
/// `verifiedArtifact`: a TensorProto, or for a sequence or optional (the
/// artifact's graph_outputs) a SequenceProto or OptionalProto whose tensors
/// stand for the artifact outputs that the graph output lists. Throws
/// std::runtime_error naming a file it cannot read.
ExpectedOutputs readTestOutputs(const std::string &folder, const uint8_t *verifiedArtifact,
                                size_t outputCount);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_TESTOUTPUTS_H
