//===- FuzzNpuStream.cpp - Any bytes as an NPU program --------------------===//
//
// docs/npu/isa.md promises that a command stream the simulator accepts
// cannot make it read or write outside its memories, whatever its data:
// the stream is data from a file, not trusted code. Here any bytes become
// a small NPU (array, memory sizes from the first bytes), four DRAM
// buffers and a stream of instructions; whatever the verifier accepts is
// run. A crash, a hang or a sanitizer report is a bug; refusals, hazards,
// deadlocks and data faults are the simulator doing its job.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/npu/Machine.h"
#include "runtime/src/npu/Program.h"
#include "runtime/src/npu/Simulator.h"

#include <cstring>
#include <vector>

namespace {

namespace isa = tessel::schema::npu;
using namespace tessel::runtime::npu;

/// Instructions per input at most, so that one input stays fast.
constexpr size_t kMaxInstructions = 64;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Bytes 0-7: the machine, small so that the fuzzer reaches its edges;
  // 8-11: four DRAM buffers' sizes in 16-byte units; 12: how many
  // instructions follow; the rest fills the buffers.
  if (size < 13)
    return 0;
  isa::Config config;
  config.arrayRows = 1 + data[0] % 64;
  config.arrayColumns = 1 + data[1] % 64;
  config.outputStationary = data[2] & 1;
  config.scalesimTiming = data[2] & 2;
  config.scratchpadBytes = 1024 * (1 + data[3] % 16);
  config.accumulatorBytes = 1024 * (1 + data[4] % 8);
  config.parameterBytes = 16 * (1 + data[5] % 64);
  config.dmaBytesPerCycle = 1 + data[6] % 64;
  config.dmaLatencyCycles = data[7];
  std::vector<std::vector<uint8_t>> buffers(4);
  for (size_t b = 0; b < buffers.size(); ++b)
    buffers[b].assign(size_t(data[8 + b]) * 16, uint8_t(b * 37));
  size_t count = std::min<size_t>(data[12], kMaxInstructions);
  data += 13;
  size -= 13;

  const size_t instructionBytes = isa::kInstructionWords * sizeof(uint64_t);
  count = std::min(count, size / instructionBytes);
  std::vector<uint64_t> words(count * isa::kInstructionWords);
  if (count)
    std::memcpy(words.data(), data, count * instructionBytes);
  data += count * instructionBytes;
  size -= count * instructionBytes;
  for (std::vector<uint8_t> &buffer : buffers) {
    size_t filled = std::min(size, buffer.size());
    if (filled)
      std::memcpy(buffer.data(), data, filled);
    data += filled;
    size -= filled;
  }

  std::vector<uint8_t *> pointers;
  std::vector<uint64_t> sizes;
  for (std::vector<uint8_t> &buffer : buffers) {
    pointers.push_back(buffer.data());
    sizes.push_back(buffer.size());
  }
  Program program;
  if (!loadProgram(words.data(), count, config, sizes, program).empty())
    return 0;
  Machine machine(config);
  RunStatistics statistics;
  Dram dram{pointers.data(), sizes.data(), pointers.size()};
  runProgram(program, config, machine, dram, statistics, {/*keepSpans=*/true});
  return 0;
}
