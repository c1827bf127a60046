//===- ArtifactBuilder.h - Artifacts for the runtime's tests ----*- C++ -*-===//
//
// Describes an artifact with plain structs and serializes it the way the
// compiler's writer does (weights and binaries 64-byte aligned, the checksum
// sealed in last). Nothing is validated here: tests describe broken
// artifacts on purpose to see the runtime refuse them.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_UNIT_RUNTIME_ARTIFACTBUILDER_H
#define TESSEL_TEST_UNIT_RUNTIME_ARTIFACTBUILDER_H

#include "runtime/schema/Artifact.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessel::test {

struct QuantizationSpec {
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;
  int32_t axis = -1;
};

struct TensorSpec {
  std::string name;
  schema::DType dtype = schema::DType_f32;
  std::vector<int64_t> shape;
  std::optional<QuantizationSpec> quantization = std::nullopt;
  bool batched = false;
  int32_t varyingAxis = -1;
  bool holdsLength = false;
};

struct BufferSpec {
  schema::BufferKind kind = schema::BufferKind_arena;
  uint32_t index = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct EntrySpec {
  std::string symbol;
  uint64_t workgroupCount = 1;
  uint32_t bindingCount = 0;
  uint64_t scratchBytes = 0;
  /// By default the sizes of the buffers the entry's first dispatch binds
  /// (0 for one out of range), binding_count of them.
  std::optional<std::vector<uint64_t>> bindingSizes;
  /// NPU only: the entry's instructions in the executable's program.
  uint32_t npuFirstInstruction = 0, npuInstructionCount = 0;
  /// CUDA only: the entry's launches.
  struct Launch {
    std::string function;
    schema::Dim3 grid{1, 1, 1}, block{1, 1, 1};
    std::vector<schema::CudaArgument> arguments;
  };
  std::vector<Launch> cudaLaunches = {};
  /// CPU: rows of workgroups along the varying length (0: none).
  uint64_t lengthRowPositions = 0, lengthRowWorkgroups = 0;
  /// The kernel's name, for profiles; none when empty.
  std::string kernel = {};
};

/// An NPU executable's program: the schema's default configuration but for
/// the array's size, and the instructions' words.
struct NpuProgramSpec {
  uint32_t arrayRows = 32, arrayColumns = 32;
  std::vector<uint64_t> instructions;
};

struct ExecutableSpec {
  schema::DeviceKind device = schema::DeviceKind_cpu;
  schema::ExecutableFormat format = schema::ExecutableFormat_elf_shared_object;
  std::vector<uint8_t> binary;
  std::vector<EntrySpec> entries;
  std::string architecture;
  std::vector<std::string> cpuFeatures;
  std::optional<NpuProgramSpec> npu;
  /// The executable this one replaces on another device; -1 for none.
  int32_t replaces = -1;
};

struct DispatchSpec {
  uint32_t executable = 0;
  uint32_t entry = 0;
  std::vector<uint32_t> bindings;
};

struct CopySpec {
  uint32_t source = 0;
  uint32_t destination = 0;
  schema::DeviceKind sourceDevice = schema::DeviceKind_cpu;
  schema::DeviceKind destinationDevice = schema::DeviceKind_cpu;
};

struct CheckSpec {
  uint32_t count = 0;
  std::string node;
  std::string problem;
};

using StepSpec = std::variant<DispatchSpec, CopySpec, CheckSpec>;

/// A graph input or output of the artifact's graph_inputs or graph_outputs
/// table.
struct GraphValueSpec {
  std::string name;
  schema::GraphValueKind kind = schema::GraphValueKind_Tensor;
  bool present = true;
  uint32_t first = 0, count = 1;
};

struct ArtifactSpec {
  uint32_t formatVersion = schema::kFormatVersion;
  /// Whether the file carries its integrity checksum at all.
  bool withIntegrity = true;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<BufferSpec> buffers;
  std::vector<uint8_t> weights;
  std::vector<ExecutableSpec> executables;
  std::vector<StepSpec> steps;
  /// Empty: the table is left out.
  std::vector<GraphValueSpec> graphInputs, graphOutputs;
  /// How often the schedule refers to each step's one table. More than 1
  /// is what a crafted file does to describe far more than its size.
  uint32_t stepReferences = 1;
  uint64_t arenaSize = 0;
  uint32_t arenaAlignment = schema::kAlignment;
  std::string compilerVersion;
  std::string modelHash;
  std::string options;
  std::string modelName;
};

/// The sealed .tsl bytes of `spec`.
std::vector<uint8_t> buildArtifact(const ArtifactSpec &spec);

/// Recomputes the integrity checksum of an artifact whose bytes a test has
/// edited, so that the edit reaches the checks after the checksum.
void sealArtifact(std::vector<uint8_t> &bytes);

} // namespace tessel::test

#endif // TESSEL_TEST_UNIT_RUNTIME_ARTIFACTBUILDER_H
