//===- Simulator.h - Runs an NPU program: order, timing, hazards -*- C++ -*-===//
//
// The timing half of the simulator and what binds the halves: the three
// engines take their queues' instructions in order, as the dependency
// tokens allow, each at the cycle docs/npu/isa.md section 4 gives it; each
// instruction's effect is applied (Machine) when it starts. Because the
// effects happen in an order the tokens permit and the hazard checker
// refuses any conflicting pair of accesses the tokens leave unordered, the
// result is the same for every schedule the hardware could choose.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_NPU_SIMULATOR_H
#define TESSEL_RUNTIME_SRC_NPU_SIMULATOR_H

#include "Machine.h"
#include "Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::runtime::npu {

/// When one instruction ran, in cycles from the start of its dispatch.
struct InstructionSpan {
  uint64_t start = 0, end = 0;
};

/// What one run of a program cost.
struct RunStatistics {
  uint64_t totalCycles = 0;
  /// Cycles the execute engine was busy, and the rest (waiting for data).
  uint64_t computeCycles = 0, stallCycles = 0;
  /// Cycles the array spent on GEMMs (preloads, streams, fills and drains
  /// not hidden by a neighbour), and the multiply-accumulates it did.
  uint64_t arrayCycles = 0, arrayMacs = 0;
  /// Multiply-accumulates of the vector unit (depthwise convolutions).
  uint64_t vectorMacs = 0;
  uint64_t dramBytes = 0, sramBytes = 0;
  double energyPj = 0;
  /// Per instruction, when `keepSpans` was asked for.
  std::vector<InstructionSpan> spans;

  /// arrayMacs over what the array could have done in arrayCycles.
  double arrayUtilization(const isa::Config &config) const {
    double capacity = double(config.arrayRows) * config.arrayColumns * double(arrayCycles);
    return capacity > 0 ? double(arrayMacs) / capacity : 0.0;
  }
};

struct RunOptions {
  /// Record when each instruction ran (RunStatistics::spans).
  bool keepSpans = false;
  /// Check the order (hazards, deadlocks) and count the cycles without
  /// computing any result, which neither depends on: how
  /// tessel-npu-delete-tokens tries thousands of broken streams.
  bool skipResults = false;
};

/// Runs `program` on `machine` (reset first) with `dram` as its DRAM.
/// Returns an empty string, or what stopped it: a hazard (naming both
/// instructions), a deadlock (naming the waiting instructions) or a data
/// fault.
std::string runProgram(const Program &program, const isa::Config &config, Machine &machine,
                       const Dram &dram, RunStatistics &statistics, RunOptions options = {});

} // namespace tessel::runtime::npu

#endif // TESSEL_RUNTIME_SRC_NPU_SIMULATOR_H
