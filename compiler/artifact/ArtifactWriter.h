//===- ArtifactWriter.h - Serialize a compiled model to .tsl ----*- C++ -*-===//

#ifndef TESSEL_COMPILER_ARTIFACT_ARTIFACTWRITER_H
#define TESSEL_COMPILER_ARTIFACT_ARTIFACTWRITER_H

#include "compiler/HostPlan.h"
#include "compiler/KernelStatistics.h"
#include "compiler/quantize/PostTraining.h"
#include "targets/Target.h"

#include "mlir/IR/Types.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace tessel {

/// How a quantized integer tensor of the signature is read (the schema's
/// Quantization): axis -1 per tensor.
struct SignatureQuantization {
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;
  int32_t axis = -1;
};

struct TensorSignature {
  std::string name;
  uint8_t dtype; // schema::DType
  std::vector<int64_t> shape;
  std::optional<SignatureQuantization> quantization;
  /// Dimension 0 is the batch, and `shape` gives one sample.
  bool batched = false;
  /// The dimension that is the varying length (-1: none), `shape` giving
  /// its bound; and whether this is the hidden input holding the length.
  int32_t varyingAxis = -1;
  bool holdsLength = false;
};

/// An ONNX graph input or output and the signature's tensors that hold it
/// (the schema's GraphValue).
struct GraphValueSignature {
  std::string name;
  uint8_t kind; // schema::GraphValueKind
  bool present = true;
  uint32_t first = 0, count = 0;
};

struct Provenance {
  std::string compilerVersion;
  std::string modelHash;
  std::string options;
  std::string modelName;
};

struct ArtifactContents {
  std::vector<TensorSignature> inputs, outputs;
  /// Empty when every graph input, or output, is one tensor.
  std::vector<GraphValueSignature> graphInputs, graphOutputs;
  const HostPlan *plan = nullptr;
  std::vector<Executable> executables;
  Provenance provenance;
  /// What each kernel computes, by kernel function name; entries of
  /// kernels it lacks record none.
  const llvm::StringMap<KernelStatistics> *kernelStatistics = nullptr;
  /// What post-training quantization did, when the compiler quantized.
  const QuantizationReport *quantization = nullptr;
};

/// The schema DType of a tessel-level element type (unsigned integers keep
/// their signedness there); nullopt for types the format lacks.
std::optional<uint8_t> artifactDType(mlir::Type elementType);

/// Builds the FlatBuffer, resolves each dispatch's kernel to its executable
/// entry and seals the file with its integrity checksum. The same contents
/// always give the same bytes.
llvm::Expected<std::vector<uint8_t>>
serializeArtifact(const ArtifactContents &contents);

} // namespace tessel

#endif // TESSEL_COMPILER_ARTIFACT_ARTIFACTWRITER_H
