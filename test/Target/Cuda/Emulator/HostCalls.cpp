//===- HostCalls.cpp - What the emulated kernels call in the emulator -----===//

#include "HostCalls.h"

#include "BlockThreads.h"
#include "WarpInstructions.h"

#include "llvm/ADT/STLExtras.h"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace tessel::cuda::emulator {

namespace {

std::array<uint32_t, 3> launchGrid = {1, 1, 1}, launchBlock = {1, 1, 1}, runningBlock = {0, 0, 0};
std::vector<std::pair<uint8_t *, uint64_t>> sharedMemory;

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
  bool inside = llvm::any_of(sharedMemory, [&](const std::pair<uint8_t *, uint64_t> &region) {
    return row >= region.first && row + 16 <= region.first + region.second;
  });
  if (!inside)
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
}

void setBlock(const std::array<uint32_t, 3> &block) { runningBlock = block; }

} // namespace tessel::cuda::emulator
