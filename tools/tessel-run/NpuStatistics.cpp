//===- NpuStatistics.cpp - What the simulated NPU counted, per layer ------===//

#include "tools/tessel-run/NpuStatistics.h"
#include "tools/tessel-run/Text.h"

#include "runtime/schema/Artifact.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace tessel::run {

namespace sc = tessel::schema;

namespace {

std::string jsonString(const std::string &text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      quoted += {'\\', c};
    else if (static_cast<unsigned char>(c) < 0x20)
      quoted += printed("\\u%04x", c);
    else
      quoted += c;
  }
  return quoted + "\"";
}

double ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : 0.0;
}

} // namespace

std::string NpuLayer::name() const { return nodes.empty() ? kernel : joined(nodes); }

double NpuStatistics::macWeightedUtilization() const {
  double weighted = 0;
  for (const NpuLayer &layer : layers)
    weighted += layer.macs * layer.utilization;
  return ratio(weighted, macs);
}

NpuStatistics readNpuStatistics(const uint8_t *verifiedArtifact,
                                const std::vector<tsl_npu_step_statistics> &records) {
  const sc::Artifact &artifact = *sc::GetArtifact(verifiedArtifact);
  const auto &schedule = *artifact.schedule();
  NpuStatistics statistics;
  for (const tsl_npu_step_statistics &record : records) {
    const sc::DispatchStep *dispatch =
        record.step < schedule.size() ? schedule[record.step]->step_as_DispatchStep() : nullptr;
    if (!dispatch)
      throw std::runtime_error("NPU statistics name schedule step " +
                               std::to_string(record.step) + ", which dispatches nothing");
    if (!record.runs)
      continue;
    statistics.runs = record.runs;
    statistics.clockMhz = record.clock_mhz;
    statistics.arrayRows = record.array_rows;
    statistics.arrayColumns = record.array_columns;
    const sc::KernelEntry &entry =
        *artifact.executables()->Get(dispatch->executable())->entries()->Get(dispatch->entry());
    NpuLayer layer;
    layer.kernel = record.name;
    if (entry.source_nodes())
      for (const flatbuffers::String *node : *entry.source_nodes())
        layer.nodes.push_back(node->str());
    double runs = double(record.runs);
    layer.totalCycles = double(record.total_cycles) / runs;
    layer.computeCycles = double(record.compute_cycles) / runs;
    layer.stallCycles = double(record.stall_cycles) / runs;
    layer.arrayCycles = double(record.array_cycles) / runs;
    layer.macs = double(record.array_macs + record.vector_macs) / runs;
    layer.dramBytes = double(record.dram_bytes) / runs;
    layer.energyPj = record.energy_pj / runs;
    for (uint64_t bytes : *entry.binding_sizes())
      layer.bindingBytes += double(bytes);
    layer.spans.assign(record.spans, record.spans + record.span_count);
    double peak = double(record.array_rows) * record.array_columns;
    layer.utilization = ratio(double(record.array_macs) / runs, peak * layer.totalCycles);
    layer.arrayUtilization = ratio(double(record.array_macs) / runs, peak * layer.arrayCycles);
    statistics.totalCycles += layer.totalCycles;
    statistics.computeCycles += layer.computeCycles;
    statistics.stallCycles += layer.stallCycles;
    statistics.macs += layer.macs;
    statistics.dramBytes += layer.dramBytes;
    statistics.bindingBytes += layer.bindingBytes;
    statistics.energyPj += layer.energyPj;
    statistics.layers.push_back(std::move(layer));
  }
  return statistics;
}

std::string npuStatisticsJson(const NpuStatistics &statistics) {
  std::string json = "{\n";
  json += printed("  \"clock_mhz\": %u,\n  \"array\": [%u, %u],\n  \"runs\": %llu,\n",
                  statistics.clockMhz, statistics.arrayRows, statistics.arrayColumns,
                  static_cast<unsigned long long>(statistics.runs));
  json += printed("  \"total_cycles\": %.0f,\n  \"latency_ms\": %.6f,\n  \"energy_pj\": %.1f,\n"
                  "  \"dram_bytes\": %.0f,\n  \"binding_bytes\": %.0f,\n  \"macs\": %.0f,\n"
                  "  \"mac_weighted_utilization\": %.6f,\n  \"stall_share\": %.6f,\n",
                  statistics.totalCycles, statistics.latencySeconds() * 1e3,
                  statistics.energyPj, statistics.dramBytes, statistics.bindingBytes,
                  statistics.macs,
                  statistics.macWeightedUtilization(),
                  ratio(statistics.stallCycles, statistics.totalCycles));
  json += "  \"layers\": [";
  for (size_t i = 0; i < statistics.layers.size(); ++i) {
    const NpuLayer &layer = statistics.layers[i];
    std::string nodes;
    for (const std::string &node : layer.nodes)
      nodes += (nodes.empty() ? "" : ", ") + jsonString(node);
    json += i ? ",\n    " : "\n    ";
    json += "{\"node\": " + jsonString(layer.name()) + ", \"nodes\": [" + nodes +
            "], \"kernel\": " + jsonString(layer.kernel) + ", ";
    json += printed("\"total_cycles\": %.0f, \"compute_cycles\": %.0f, \"stall_cycles\": %.0f, "
                    "\"array_cycles\": %.0f, \"macs\": %.0f, \"utilization\": %.6f, "
                    "\"array_utilization\": %.6f, \"dram_bytes\": %.0f, \"binding_bytes\": %.0f, "
                    "\"energy_pj\": %.1f}",
                    layer.totalCycles, layer.computeCycles, layer.stallCycles,
                    layer.arrayCycles, layer.macs, layer.utilization, layer.arrayUtilization,
                    layer.dramBytes, layer.bindingBytes, layer.energyPj);
  }
  json += statistics.layers.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return json;
}

std::string npuTraceJson(const NpuStatistics &statistics) {
  // Trace events count microseconds; the layers ran one after another.
  double cyclesPerMicrosecond = statistics.clockMhz ? double(statistics.clockMhz) : 1.0;
  auto microseconds = [&](double cycles) { return cycles / cyclesPerMicrosecond; };
  const char *tracks[4] = {"layers", "load queue", "execute queue", "store queue"};
  std::string json = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  json += printed("{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": "
                  "{\"name\": \"NPU %ux%u at %u MHz (simulated)\"}}",
                  statistics.arrayRows, statistics.arrayColumns, statistics.clockMhz);
  for (int track = 0; track < 4; ++track)
    json += printed(",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": \"thread_name\", "
                    "\"args\": {\"name\": \"%s\"}}",
                    track, tracks[track]);
  double start = 0;
  for (const NpuLayer &layer : statistics.layers) {
    uint64_t end = 0;
    for (const tsl_npu_instruction_span &span : layer.spans)
      end = std::max(end, span.end_cycle);
    json += ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"name\": " +
            jsonString(layer.name()) +
            printed(", \"ts\": %.4f, \"dur\": %.4f, \"args\": {\"kernel\": ",
                    microseconds(start), microseconds(double(end))) +
            jsonString(layer.kernel) + printed(", \"cycles\": %llu}}",
                                               static_cast<unsigned long long>(end));
    for (size_t i = 0; i < layer.spans.size(); ++i) {
      const tsl_npu_instruction_span &span = layer.spans[i];
      json += printed(",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"name\": \"%s\", "
                      "\"ts\": %.4f, \"dur\": %.4f, \"args\": {\"instruction\": %zu}}",
                      span.queue + 1, span.opcode,
                      microseconds(start + double(span.start_cycle)),
                      microseconds(double(span.end_cycle - span.start_cycle)), i);
    }
    start += double(end);
  }
  return json + "\n]}\n";
}

std::string npuSummary(const NpuStatistics &statistics) {
  double seconds = statistics.latencySeconds();
  std::string text = printed(
      "npu: %zu layers, %.0f cycles per inference: %.3f ms at %u MHz, %.1f inferences/s, "
      "%.3f mJ, average power %.3f W\n",
      statistics.layers.size(), statistics.totalCycles, seconds * 1e3, statistics.clockMhz,
      ratio(1.0, seconds), statistics.energyPj * 1e-9,
      ratio(statistics.energyPj * 1e-12, seconds));
  text += printed("npu: %ux%u array, utilization %.1f%% (MAC-weighted), stalled on DMA "
                  "%.1f%% of cycles, DRAM %.3f MB per inference (%.2fx its layers' "
                  "bindings once)\n",
                  statistics.arrayRows, statistics.arrayColumns,
                  100 * statistics.macWeightedUtilization(),
                  100 * ratio(statistics.stallCycles, statistics.totalCycles),
                  statistics.dramBytes / 1e6, ratio(statistics.dramBytes, statistics.bindingBytes));
  text += printed("%12s %7s %6s %7s %10s %10s  %s\n", "cycles", "share", "util", "stall",
                  "DRAM KB", "energy uJ", "layer");
  for (const NpuLayer &layer : statistics.layers)
    text += printed("%12.0f %6.1f%% %5.1f%% %6.1f%% %10.1f %10.3f  %s\n", layer.totalCycles,
                    100 * ratio(layer.totalCycles, statistics.totalCycles),
                    100 * layer.utilization, 100 * ratio(layer.stallCycles, layer.totalCycles),
                    layer.dramBytes / 1e3, layer.energyPj * 1e-6, layer.name().c_str());
  return text;
}

} // namespace tessel::run
