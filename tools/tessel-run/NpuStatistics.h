//===- NpuStatistics.h - What the simulated NPU counted, per layer -*- C++ -*-===//
//
// A session counts, for every schedule step on the NPU, the cycles, MACs,
// bytes and energy the simulator charged it. Joined with the artifact's
// record of which ONNX nodes each kernel computes, they are the per-layer
// figures of `tessel-run --npu-stats` and its console summary.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_NPUSTATISTICS_H
#define TESSEL_TOOLS_TESSEL_RUN_NPUSTATISTICS_H

#include "tessel/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::run {

/// One NPU step, per inference (the session's counts over its runs).
struct NpuLayer {
  std::string kernel;
  std::vector<std::string> nodes;
  double totalCycles = 0, computeCycles = 0, stallCycles = 0, arrayCycles = 0;
  double macs = 0, dramBytes = 0, energyPj = 0;
  /// The bytes of the kernel's bindings (inputs, weights, parameters,
  /// output): its DRAM traffic if it moved each once.
  double bindingBytes = 0;
  /// MACs over what the array could do in the layer's cycles; over what it
  /// could do in the cycles it worked.
  double utilization = 0, arrayUtilization = 0;
  /// When each instruction of the last run ran (sessions with npu_trace).
  std::vector<tsl_npu_instruction_span> spans;

  /// Its ONNX nodes, or its kernel when the artifact names none.
  std::string name() const;
};

struct NpuStatistics {
  uint32_t clockMhz = 0, arrayRows = 0, arrayColumns = 0;
  uint64_t runs = 0;
  std::vector<NpuLayer> layers; // schedule order
  double totalCycles = 0, computeCycles = 0, stallCycles = 0, macs = 0, dramBytes = 0,
         bindingBytes = 0, energyPj = 0;

  double latencySeconds() const { return clockMhz ? totalCycles / (clockMhz * 1e6) : 0; }
  /// The layers' utilizations weighted by their MACs.
  double macWeightedUtilization() const;
};

/// Joins `records` (tsl_session_get_npu_statistics) with the verified
/// artifact at `verifiedArtifact`.
NpuStatistics readNpuStatistics(const uint8_t *verifiedArtifact,
                                const std::vector<tsl_npu_step_statistics> &records);

/// The JSON of `--npu-stats`: totals and one object per layer.
std::string npuStatisticsJson(const NpuStatistics &statistics);

/// A Chrome/Perfetto trace (JSON trace events) of the last run: a track
/// of layers and one per queue (load, execute, store), each instruction a
/// slice, at the configured clock. Needs the spans of a traced session.
std::string npuTraceJson(const NpuStatistics &statistics);

/// The console summary: latency at the configured clock, throughput,
/// average power, utilization and DMA stalls, overall and per layer.
std::string npuSummary(const NpuStatistics &statistics);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_NPUSTATISTICS_H
