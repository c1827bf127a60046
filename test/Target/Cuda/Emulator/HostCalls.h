//===- HostCalls.h - What the emulated kernels call in the emulator -*- C++ -*-===//
//
// The functions that NvvmOnHost.h's rewriting makes the kernels call in
// place of what only a GPU has:
//   tessel_emu_thread_id(dim), _block_id, _block_dim, _grid_dim, _lane_id
//                                      the special registers
//   tessel_emu_barrier(site)           a block's barrier
//   tessel_emu_ldmatrix(...)           ldmatrix.x4, its row checked inside
//                                      the block's shared memory
//   tessel_emu_copy_async(...)         cp.async, done when its thread
//   tessel_emu_commit_copies()         waits for its group (the latest a
//   tessel_emu_wait_copies(pending)    GPU may do it); commit and wait
//   tessel_emu_mma(...)                mma.sync.m16n8k16 of halves
//   tessel_emu_mma_integers(...)       mma.sync.m16n8k32 of 8-bit integers
//   tessel_emu_rounded_f32/f64(op, rounding, a, b, c)
//                                      an arithmetic instruction rounded
//                                      down, up or toward zero
// The warp instructions and barriers wait for the threads that meet there
// (BlockThreads.h). Their operands are integers (addresses as such).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_HOSTCALLS_H
#define TESSEL_TEST_CUDA_EMULATOR_HOSTCALLS_H

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace tessel::cuda::emulator {

/// The operations that tessel_emu_rounded_f32/f64 compute: a + b, a * b,
/// a / b, a * b + c (rounded once), sqrt(a), 1 / a.
enum class RoundedOperation : int32_t {
  Add,
  Multiply,
  Divide,
  MultiplyAdd,
  SquareRoot,
  Reciprocal
};

/// The directed roundings of PTX (.rm, .rp, .rz).
enum class DirectedRounding : int32_t { Down, Up, TowardZero };

/// The host calls, to define in a JIT.
llvm::orc::SymbolMap hostCallSymbols(llvm::orc::MangleAndInterner interner);

/// What the special registers read during the next blocks: the launch's
/// grid and block dimensions, and the shared memory of its kernel
/// (address, bytes), inside which ldmatrix must read.
void setLaunchShape(const std::array<uint32_t, 3> &grid, const std::array<uint32_t, 3> &block,
                    const std::vector<std::pair<uint8_t *, uint64_t>> &shared);

/// The block that the next BlockThreads::run computes.
void setBlock(const std::array<uint32_t, 3> &block);

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_HOSTCALLS_H
