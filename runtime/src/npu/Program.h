//===- Program.h - An NPU entry's instructions, decoded and verified -*- C++ -*-===//
//
// A command stream is data read from a file: before the simulator runs one,
// every instruction is decoded and checked against the configuration and
// the entry's bindings (docs/npu/isa.md section 5). What each instruction
// reads and writes is described once (accessesOf); the verifier checks
// those ranges lie inside their memories, and the hazard checker tracks
// them while the stream runs, so an access the verifier did not bound
// cannot happen.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_NPU_PROGRAM_H
#define TESSEL_RUNTIME_SRC_NPU_PROGRAM_H

#include "runtime/schema/NpuConfig.h"
#include "runtime/schema/NpuIsa.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::runtime::npu {

namespace isa = tessel::schema::npu;

/// The local memories, as the hazard checker tracks them.
enum class Space : uint8_t { Scratchpad, Accumulator, Parameters, Lut };
inline constexpr int kSpaceCount = 4;

/// A range an instruction reads or writes: bytes (entries for the
/// accumulator) [begin, end) of `space`.
struct Access {
  Space space;
  uint64_t begin, end;
  bool write;
};

/// The local-memory ranges `instruction` touches. The reads of a GEMM or
/// window op are its whole input tile, a superset of what the window picks.
std::vector<Access> accessesOf(const isa::Instruction &instruction);

/// One entry's instructions, decoded and verified for a configuration and
/// the entry's binding sizes.
struct Program {
  std::vector<isa::Instruction> instructions;
};

/// A dependency token: the k-th push and the k-th pop on one channel
/// between two neighbouring queues, as instruction indices. `forward`
/// tokens go from a queue to the next (LD->EX, EX->ST), the others back.
struct Token {
  size_t push, pop;
  bool forward;
};

/// Every token of a loaded program, channel by channel (their pushes and
/// pops balance, which loading checked).
std::vector<Token> tokensOf(const Program &program);

/// Deletes `token` from `program`: its push and its pop.
void deleteToken(Program &program, const Token &token);

/// Decodes and verifies the `count` instructions at `words` (4 words each).
/// An empty result means the program is valid; otherwise it names the
/// instruction (its index from 0) and what is wrong.
std::string loadProgram(const uint64_t *words, size_t count, const isa::Config &config,
                        const std::vector<uint64_t> &bindingSizes, Program &program);

} // namespace tessel::runtime::npu

#endif // TESSEL_RUNTIME_SRC_NPU_PROGRAM_H
