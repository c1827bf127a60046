//===- WarpInstructions.h - ldmatrix and mma.sync as PTX defines them -*- C++ -*-===//
//
// The warp-wide instructions of the CUDA target's tensor-core kernels,
// executed for a whole warp once all its lanes have arrived (BlockThreads.h).
// Each follows the PTX ISA's description of which lane holds which element,
// written here from the ISA and not from the compiler's own code, so that
// a fragment the compiler puts in the wrong lane or register gives wrong
// products.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_WARPINSTRUCTIONS_H
#define TESSEL_TEST_CUDA_EMULATOR_WARPINSTRUCTIONS_H

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cuda::emulator {

/// The lanes of a warp.
constexpr size_t kLanes = 32;

/// One lane's part of `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16`:
/// lane l names row l % 8 of matrix l / 8 (eight 16-bit elements at `row`)
/// and receives, in `result`, one register (two elements) per matrix. (A
/// tile of bytes is read as such: each 16-bit element two bytes.)
struct LoadMatrixOperands {
  const uint16_t *row = nullptr;
  bool transpose = false;
  uint16_t result[8] = {};
};
std::string loadMatrices(const std::vector<void *> &lanes);

/// The 16-bit floating-point types mma.sync multiplies.
enum class HalfType : int64_t { F16 = 0, BF16 = 1 };

/// One lane's part of `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32`:
/// D = A (16 x 16) · B (16 x 8) + C, with four 32-bit registers of A (two
/// elements each), two of B, and four f32 of C and D.
struct MultiplyOperands {
  uint32_t a[4] = {}, b[2] = {};
  float c[4] = {}, d[4] = {};
  HalfType type = HalfType::F16;
};
std::string multiplyAccumulate(const std::vector<void *> &lanes);

/// One lane's part of `mma.sync.aligned.m16n8k32.row.col.s32.A.B.s32`:
/// D = A (16 x 32) · B (32 x 8) + C of 8-bit integers, each operand signed
/// (s8) or unsigned (u8), summed in i32 and wrapping (no .satfinite): four
/// 32-bit registers of A (four elements each, the first in the low byte),
/// two of B, and four i32 of C and D.
struct IntegerMultiplyOperands {
  uint32_t a[4] = {}, b[2] = {};
  int32_t c[4] = {}, d[4] = {};
  bool aUnsigned = false, bUnsigned = false;
};
std::string multiplyAccumulateIntegers(const std::vector<void *> &lanes);

/// The value of a 16-bit float's bits, exactly.
double halfValue(uint16_t bits, HalfType type);

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_WARPINSTRUCTIONS_H
