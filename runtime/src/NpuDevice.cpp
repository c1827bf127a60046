//===- NpuDevice.cpp - The NPU, simulated, as a device --------------------===//
//
// The NPU of docs/npu/isa.md, run by the simulator in src/npu: bit-exact
// results and a cycle count for every dispatch. Its DRAM is host memory, so
// it binds the same buffers as the CPU device and a model placed partly on
// each needs no copies. Loading an executable decodes and verifies every
// entry's instructions against the configuration the artifact records and
// the entry's binding sizes; a stream holds the machine's state.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "Memory.h"
#include "npu/ArtifactConfig.h"
#include "npu/Simulator.h"

#include "runtime/schema/NpuConfig.h"

#include <cstring>
#include <string>
#include <vector>

namespace tessel::runtime {

namespace {

namespace isa = tessel::schema::npu;

struct NpuEntry {
  npu::Program program;
  const char *symbol; // points into the module's bytes
};

class NpuExecutable final : public Executable {
public:
  NpuExecutable(isa::Config config, std::vector<NpuEntry> entries)
      : config(config), entries(std::move(entries)) {}

  isa::Config config;
  std::vector<NpuEntry> entries;
};

class NpuStream final : public Stream {
public:
  explicit NpuStream(bool keepSpans) : keepSpans(keepSpans) {}

  tsl_status dispatch(const Executable &executable, uint32_t entry, const Bindings &bindings,
                      int64_t /*length*/, uint32_t step) override {
    const auto &npuExecutable = static_cast<const NpuExecutable &>(executable);
    const NpuEntry &kernel = npuExecutable.entries[entry];
    // One machine per configuration the stream meets (an artifact has one).
    if (!machine || machineConfig.scratchpadBytes != npuExecutable.config.scratchpadBytes ||
        machineConfig.accumulatorBytes != npuExecutable.config.accumulatorBytes ||
        machineConfig.parameterBytes != npuExecutable.config.parameterBytes) {
      machineConfig = npuExecutable.config;
      machine = std::make_unique<npu::Machine>(machineConfig);
    }
    npu::Dram dram{reinterpret_cast<uint8_t *const *>(bindings.pointers), bindings.sizes,
                   bindings.count};
    lastConfig = npuExecutable.config;
    lastProgram = &kernel.program;
    std::string problem = npu::runProgram(kernel.program, npuExecutable.config, *machine, dram,
                                          statistics, {keepSpans});
    if (!problem.empty())
      return makeError(TSL_INVALID_ARTIFACT, "schedule step %u: NPU entry '%s': %s", step,
                       kernel.symbol, problem.c_str());
    return nullptr;
  }

  /// The simulator finishes each dispatch before returning it.
  tsl_status synchronize() override { return nullptr; }

  bool addLastDispatchStatistics(tsl_npu_step_statistics &total,
                                 std::vector<tsl_npu_instruction_span> &spans) const override {
    total.runs += 1;
    total.total_cycles += statistics.totalCycles;
    total.compute_cycles += statistics.computeCycles;
    total.stall_cycles += statistics.stallCycles;
    total.array_cycles += statistics.arrayCycles;
    total.array_macs += statistics.arrayMacs;
    total.vector_macs += statistics.vectorMacs;
    total.dram_bytes += statistics.dramBytes;
    total.sram_bytes += statistics.sramBytes;
    total.energy_pj += statistics.energyPj;
    total.clock_mhz = lastConfig.clockMhz;
    total.array_rows = lastConfig.arrayRows;
    total.array_columns = lastConfig.arrayColumns;
    spans.clear();
    for (size_t i = 0; i < statistics.spans.size(); ++i) {
      isa::Opcode opcode = lastProgram->instructions[i].opcode;
      spans.push_back({statistics.spans[i].start, statistics.spans[i].end,
                       uint32_t(isa::queueOf(opcode)), isa::opcodeName(opcode)});
    }
    return true;
  }

private:
  bool keepSpans;
  const npu::Program *lastProgram = nullptr;
  /// The last dispatch's counts and the configuration it ran on.
  npu::RunStatistics statistics;
  isa::Config lastConfig;
  isa::Config machineConfig;
  std::unique_ptr<npu::Machine> machine;
};

class NpuDevice final : public Device {
public:
  NpuDevice() : info{kBufferAlignment, /*hostAccessible=*/true, /*computeUnits=*/1} {}

  const DeviceCapabilities &capabilities() const override { return info; }

  tsl_status allocate(size_t bytes, size_t alignment, void *&buffer) override {
    AlignedBytes memory =
        allocateAligned(bytes, std::max(alignment, kBufferAlignment), /*zero=*/true);
    if (!memory)
      return makeError(TSL_OUT_OF_MEMORY, "cannot allocate %zu bytes of npu memory", bytes);
    buffer = memory.release();
    return nullptr;
  }

  void deallocate(void *buffer) override { FreeDeleter()(buffer); }

  tsl_status copy(void *destination, const void *source, size_t bytes, CopyDirection) override {
    if (bytes)
      std::memcpy(destination, source, bytes);
    return nullptr;
  }

  tsl_status loadExecutable(const schema::Executable &executable, uint32_t index,
                            std::unique_ptr<Executable> &loaded) override {
    const schema::NpuProgram &program = *executable.npu();
    isa::Config config = npu::configOf(*program.config());
    if (std::string problem = config.problem(); !problem.empty())
      return makeError(TSL_UNSUPPORTED, "executable %u: this simulator cannot run its NPU: %s",
                       index, problem.c_str());
    const auto &words = *program.instructions();
    std::vector<NpuEntry> entries;
    for (const schema::KernelEntry *entry : *executable.entries()) {
      uint64_t first = entry->npu_first_instruction(), count = entry->npu_instruction_count();
      std::vector<uint64_t> bindingSizes(entry->binding_sizes()->begin(),
                                         entry->binding_sizes()->end());
      NpuEntry loadedEntry{{}, entry->symbol()->c_str()};
      // The verifier has checked the range lies inside the instructions.
      std::string problem =
          npu::loadProgram(words.data() + first * isa::kInstructionWords, size_t(count), config,
                           bindingSizes, loadedEntry.program);
      if (!problem.empty())
        return makeError(TSL_INVALID_ARTIFACT, "executable %u entry '%s': %s", index,
                         loadedEntry.symbol, problem.c_str());
      entries.push_back(std::move(loadedEntry));
    }
    loaded = std::make_unique<NpuExecutable>(config, std::move(entries));
    return nullptr;
  }

  tsl_status createStream(const StreamOptions &options, std::unique_ptr<Stream> &stream) override {
    stream = std::make_unique<NpuStream>(options.keepSpans);
    return nullptr;
  }

private:
  DeviceCapabilities info;
};

} // namespace

Device &getNpuDevice() {
  static NpuDevice device;
  return device;
}

} // namespace tessel::runtime
