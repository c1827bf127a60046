//===- Machine.h - The NPU's state and what each instruction does -*- C++ -*-===//
//
// The functional half of the simulator: the local memories and the effect of
// each instruction on them and on DRAM, bit for bit as docs/npu/isa.md
// section 3 defines it. Instructions come verified (Program.h), so every
// range they touch lies inside its memory; what only data can get wrong (a
// channel record's shift) is checked here.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_NPU_MACHINE_H
#define TESSEL_RUNTIME_SRC_NPU_MACHINE_H

#include "Program.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::runtime::npu {

/// The dispatch's buffers: DRAM as the instructions address it.
struct Dram {
  uint8_t *const *buffers;
  const uint64_t *sizes;
  size_t count;
};

class Machine {
public:
  explicit Machine(const isa::Config &config);

  /// Zeroes every local memory: each dispatch starts from the same state.
  void reset();

  /// Applies `instruction`; a data fault ends it with a message.
  std::string execute(const isa::Instruction &instruction, const Dram &dram);

  const std::vector<uint8_t> &scratchpad() const { return scratchpadBytes; }
  const std::vector<int32_t> &accumulator() const { return accumulatorEntries; }

private:
  std::string dma(const isa::Dma &dma, bool load, const Dram &dram);
  void gemm(const isa::Gemm &gemm);
  std::string post(const isa::Post &post);
  void add(const isa::Add &add);
  void pool(const isa::Pool &pool);
  void depthwise(const isa::DwConv &conv);
  uint8_t *local(isa::Memory memory);

  isa::Config config;
  std::vector<uint8_t> scratchpadBytes;
  std::vector<int32_t> accumulatorEntries;
  std::vector<uint8_t> parameterBytes;
  std::array<uint8_t, 256> lut{};
  // GEMM's operands widened once per instruction, reused between them.
  std::vector<int32_t> weightColumns, inputRow;
};

} // namespace tessel::runtime::npu

#endif // TESSEL_RUNTIME_SRC_NPU_MACHINE_H
