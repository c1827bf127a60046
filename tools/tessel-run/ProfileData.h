//===- ProfileData.h - A run's profile joined with its artifact -*- C++ -*-===//
//
// The step timings a profiled session records say how long each schedule
// step took; the artifact says what each step computed (its kernel's ONNX
// nodes and arithmetic, the bytes it binds) and where each intermediate
// lived in the arena and when. Joined, they are what a report shows.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_PROFILEDATA_H
#define TESSEL_TOOLS_TESSEL_RUN_PROFILEDATA_H

#include "tessel/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::run {

/// One kernel entry, over every step that dispatched it.
struct KernelProfile {
  std::string name;               // the kernel it runs (its entry symbol in older artifacts)
  std::vector<std::string> nodes; // the ONNX nodes it computes
  uint64_t steps = 0;             // dispatches per run
  double nanosecondsPerRun = 0.0;
  /// Arithmetic and bytes bound, per run (all its dispatches).
  double floatOperations = 0.0, integerOperations = 0.0, bytes = 0.0;

  bool isInteger() const { return integerOperations > floatOperations; }
  double operations() const { return floatOperations + integerOperations; }
  /// Operations per second, in G; 0 when it does no arithmetic.
  double gigaOperationsPerSecond() const {
    return nanosecondsPerRun > 0 ? operations() / nanosecondsPerRun : 0.0;
  }
  /// Operations per byte bound.
  double intensity() const { return bytes > 0 ? operations() / bytes : 0.0; }
};

/// An intermediate tensor's place in the arena and the schedule steps from
/// its first to its last use.
struct ArenaLifetime {
  uint64_t offset = 0, size = 0;
  uint32_t firstStep = 0, lastStep = 0;
  std::string producer; // nodes of the kernel that writes it, if any
};

struct LayerRecord {
  std::string node, op, precision;
  double sqnrDb = 0, addedSqnrDb = 0;
  double inputScale = 0, outputScale = 0;
  int64_t inputZeroPoint = 0, outputZeroPoint = 0;
  double weightScaleMin = 0, weightScaleMax = 0;
};

/// What post-training quantization recorded in the artifact.
struct QuantizationRecord {
  std::string method;
  uint64_t samples = 0;
  double minSqnrDb = 0;
  std::vector<LayerRecord> layers;
  std::vector<std::pair<std::string, double>> outputs;
  int64_t integerOps = 0;
  std::vector<std::string> floatIslands;
};

struct ProfileData {
  std::string modelName, compilerVersion, options, modelHash;
  uint64_t runs = 0;
  uint32_t stepCount = 0;
  double nanosecondsPerRun = 0.0;       // every step
  double otherNanosecondsPerRun = 0.0;  // copy and check steps
  std::vector<KernelProfile> kernels;   // longest first
  uint64_t arenaBytes = 0;
  std::vector<ArenaLifetime> arena;     // by offset
  std::optional<QuantizationRecord> quantization;
};

/// Joins `timings` (one per schedule step, as tsl_session_get_step_timings
/// gives them) with the artifact at `verifiedArtifact`, which the runtime
/// has verified (tsl_artifact_verify or a load). Throws std::runtime_error
/// when they do not belong together.
ProfileData readProfile(const uint8_t *verifiedArtifact,
                        const std::vector<tsl_step_timing> &timings);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_PROFILEDATA_H
