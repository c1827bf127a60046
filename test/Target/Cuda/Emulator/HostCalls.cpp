//===- HostCalls.cpp - What the emulated kernels call in the emulator -----===//

#include "HostCalls.h"

#include "BlockThreads.h"
#include "WarpInstructions.h"

#include "llvm/ADT/STLExtras.h"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <string>

namespace tessel::cuda::emulator {

namespace {

std::array<uint32_t, 3> launchGrid = {1, 1, 1}, launchBlock = {1, 1, 1}, runningBlock = {0, 0, 0};
std::vector<std::pair<uint8_t *, uint64_t>> sharedMemory;

/// One cp.async of a thread: `sourceBytes` bytes copied from `source`, the
/// rest of `bytes` zeros.
struct AsyncCopy {
  uint8_t *destination;
  const uint8_t *source;
  int64_t bytes, sourceBytes;
};

/// A thread's cp.async copies: the groups it committed, oldest first, and
/// those it issued since. A copy happens when its thread waits for its
/// group, the latest a GPU may make it: a kernel that reads the tile before
/// it waits (or before the barrier after other threads waited) reads what
/// was there before.
struct ThreadCopies {
  std::deque<std::vector<AsyncCopy>> committed;
  std::vector<AsyncCopy> uncommitted;
};
std::vector<ThreadCopies> asyncCopies;

/// Whether `bytes` bytes at `address` lie in the block's shared memory.
bool inSharedMemory(const uint8_t *address, int64_t bytes) {
  return llvm::any_of(sharedMemory, [&](const std::pair<uint8_t *, uint64_t> &region) {
    return address >= region.first && address + bytes <= region.first + region.second;
  });
}

/// The running thread's index along `dimension` of its block (x varies
/// fastest in the block's linear order, as on the GPU).
int32_t tessel_emu_thread_id(int32_t dimension) {
  int64_t linear = BlockThreads::currentThread();
  if (dimension == 0)
    return int32_t(linear % launchBlock[0]);
  if (dimension == 1)
    return int32_t(linear / launchBlock[0] % launchBlock[1]);
  return int32_t(linear / (int64_t(launchBlock[0]) * launchBlock[1]));
}

int32_t tessel_emu_block_id(int32_t dimension) { return int32_t(runningBlock[dimension]); }
int32_t tessel_emu_block_dim(int32_t dimension) { return int32_t(launchBlock[dimension]); }
int32_t tessel_emu_grid_dim(int32_t dimension) { return int32_t(launchGrid[dimension]); }
int32_t tessel_emu_lane_id() { return int32_t(BlockThreads::currentThread() % kWarpSize); }

void tessel_emu_barrier(int64_t site) { BlockThreads::waitAtBarrier(site); }

/// ldmatrix's row at `address`, which must lie, all 16 bytes of it, in the
/// block's shared memory, 16-byte aligned.
void tessel_emu_ldmatrix(int64_t site, int64_t address, int64_t transpose, int64_t result) {
  auto *row = reinterpret_cast<const uint8_t *>(address);
  if (!inSharedMemory(row, 16))
    BlockThreads::fail("ldmatrix reads a row at " + std::to_string(address) +
                       ", outside the block's shared memory");
  if (address % 16)
    BlockThreads::fail("ldmatrix reads a row at " + std::to_string(address) +
                       ", which is not 16-byte aligned");
  LoadMatrixOperands operands;
  operands.row = reinterpret_cast<const uint16_t *>(row);
  operands.transpose = transpose != 0;
  BlockThreads::waitForWarp(site, loadMatrices, &operands);
  std::memcpy(reinterpret_cast<void *>(result), operands.result, sizeof operands.result);
}

/// cp.async of `bytes` (4, 8 or 16) to `destination` in the block's shared
/// memory, aligned to their size, of which `sourceBytes` come from
/// `source` and the rest are zeros.
void tessel_emu_copy_async(int64_t destination, int64_t source, int64_t bytes,
                           int64_t sourceBytes) {
  auto *to = reinterpret_cast<uint8_t *>(destination);
  if (!inSharedMemory(to, bytes) || destination % bytes)
    BlockThreads::fail("cp.async writes " + std::to_string(bytes) + " bytes at " +
                       std::to_string(destination) +
                       ", not aligned to their size inside the block's shared memory");
  if (source % bytes || sourceBytes < 0 || sourceBytes > bytes)
    BlockThreads::fail("cp.async reads " + std::to_string(sourceBytes) + " of " +
                       std::to_string(bytes) + " bytes at " + std::to_string(source) +
                       ", not aligned to their size");
  asyncCopies[BlockThreads::currentThread()].uncommitted.push_back(
      {to, reinterpret_cast<const uint8_t *>(source), bytes, sourceBytes});
}

void tessel_emu_commit_copies() {
  ThreadCopies &copies = asyncCopies[BlockThreads::currentThread()];
  copies.committed.push_back(std::move(copies.uncommitted));
  copies.uncommitted.clear();
}

/// cp.async.wait_group: the thread's committed groups but the `pending`
/// newest are done.
void tessel_emu_wait_copies(int64_t pending) {
  ThreadCopies &copies = asyncCopies[BlockThreads::currentThread()];
  while (int64_t(copies.committed.size()) > pending) {
    for (const AsyncCopy &copy : copies.committed.front()) {
      std::memcpy(copy.destination, copy.source, copy.sourceBytes);
      std::memset(copy.destination + copy.sourceBytes, 0, copy.bytes - copy.sourceBytes);
    }
    copies.committed.pop_front();
  }
}

void tessel_emu_mma(int64_t site, int64_t a, int64_t b, int64_t c, int64_t d, int64_t type) {
  MultiplyOperands operands;
  std::memcpy(operands.a, reinterpret_cast<void *>(a), sizeof operands.a);
  std::memcpy(operands.b, reinterpret_cast<void *>(b), sizeof operands.b);
  std::memcpy(operands.c, reinterpret_cast<void *>(c), sizeof operands.c);
  operands.type = static_cast<HalfType>(type);
  BlockThreads::waitForWarp(site, multiplyAccumulate, &operands);
  std::memcpy(reinterpret_cast<void *>(d), operands.d, sizeof operands.d);
}

void tessel_emu_mma_integers(int64_t site, int64_t a, int64_t b, int64_t c, int64_t d,
                             int64_t aUnsigned, int64_t bUnsigned) {
  IntegerMultiplyOperands operands;
  std::memcpy(operands.a, reinterpret_cast<void *>(a), sizeof operands.a);
  std::memcpy(operands.b, reinterpret_cast<void *>(b), sizeof operands.b);
  std::memcpy(operands.c, reinterpret_cast<void *>(c), sizeof operands.c);
  operands.aUnsigned = aUnsigned != 0;
  operands.bUnsigned = bUnsigned != 0;
  BlockThreads::waitForWarp(site, multiplyAccumulateIntegers, &operands);
  std::memcpy(reinterpret_cast<void *>(d), operands.d, sizeof operands.d);
}

/// `operation` on a, b and c, rounded as `rounding` says: the host's FPU
/// computes it in that rounding mode.
template <typename T> T computeRounded(int32_t operation, int32_t rounding, T a, T b, T c) {
#pragma STDC FENV_ACCESS ON
  int saved = std::fegetround();
  std::fesetround(rounding == int32_t(DirectedRounding::Down) ? FE_DOWNWARD
                  : rounding == int32_t(DirectedRounding::Up) ? FE_UPWARD
                                                              : FE_TOWARDZERO);
  // (volatile: the operation must happen here, in this rounding mode.)
  volatile T x = a, y = b, z = c;
  T result = std::numeric_limits<T>::quiet_NaN();
  switch (RoundedOperation(operation)) {
  case RoundedOperation::Add:
    result = x + y;
    break;
  case RoundedOperation::Multiply:
    result = x * y;
    break;
  case RoundedOperation::Divide:
    result = x / y;
    break;
  case RoundedOperation::MultiplyAdd:
    result = std::fma(T(x), T(y), T(z));
    break;
  case RoundedOperation::SquareRoot:
    result = std::sqrt(T(x));
    break;
  case RoundedOperation::Reciprocal:
    result = T(1) / x;
    break;
  }
  volatile T kept = result;
  std::fesetround(saved);
  return kept;
}

float tessel_emu_rounded_f32(int32_t operation, int32_t rounding, float a, float b, float c) {
  return computeRounded(operation, rounding, a, b, c);
}

double tessel_emu_rounded_f64(int32_t operation, int32_t rounding, double a, double b, double c) {
  return computeRounded(operation, rounding, a, b, c);
}

} // namespace

// compiler-rt's rounding of an f32 to bf16, which the JIT calls where the
// host CPU has no instruction for it (AVX2 without AVX512-BF16). Only its
// address is taken, so its signature does not matter here.
extern "C" void __truncsfbf2();

llvm::orc::SymbolMap hostCallSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char *name, auto *function) {
    symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                               llvm::JITSymbolFlags::Exported};
  };
  add("tessel_emu_thread_id", &tessel_emu_thread_id);
  add("tessel_emu_block_id", &tessel_emu_block_id);
  add("tessel_emu_block_dim", &tessel_emu_block_dim);
  add("tessel_emu_grid_dim", &tessel_emu_grid_dim);
  add("tessel_emu_lane_id", &tessel_emu_lane_id);
  add("tessel_emu_barrier", &tessel_emu_barrier);
  add("tessel_emu_ldmatrix", &tessel_emu_ldmatrix);
  add("tessel_emu_copy_async", &tessel_emu_copy_async);
  add("tessel_emu_commit_copies", &tessel_emu_commit_copies);
  add("tessel_emu_wait_copies", &tessel_emu_wait_copies);
  add("tessel_emu_mma", &tessel_emu_mma);
  add("tessel_emu_mma_integers", &tessel_emu_mma_integers);
  add("tessel_emu_rounded_f32", &tessel_emu_rounded_f32);
  add("tessel_emu_rounded_f64", &tessel_emu_rounded_f64);
  add("__truncsfbf2", &__truncsfbf2);
  return symbols;
}

void setLaunchShape(const std::array<uint32_t, 3> &grid, const std::array<uint32_t, 3> &block,
                    const std::vector<std::pair<uint8_t *, uint64_t>> &shared) {
  launchGrid = grid;
  launchBlock = block;
  sharedMemory = shared;
  asyncCopies.assign(size_t(block[0]) * block[1] * block[2], ThreadCopies());
}

void setBlock(const std::array<uint32_t, 3> &block) {
  runningBlock = block;
  // (Copies that a block's threads never waited for write nothing that
  // the next block sees: its shared memory is reset.)
  for (ThreadCopies &copies : asyncCopies) {
    copies.committed.clear();
    copies.uncommitted.clear();
  }
}

} // namespace tessel::cuda::emulator
