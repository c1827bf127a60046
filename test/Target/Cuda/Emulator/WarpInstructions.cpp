//===- WarpInstructions.cpp - ldmatrix and mma.sync as PTX defines them ---===//
//
// Lane l of a warp is in group l / 4 ("groupID" in the PTX ISA) at place
// l % 4 in it ("threadID_in_group").
//
//===----------------------------------------------------------------------===//

#include "WarpInstructions.h"

#include <cmath>

namespace tessel::cuda::emulator {

double halfValue(uint16_t bits, HalfType type) {
  if (type == HalfType::BF16) {
    uint32_t wide = uint32_t(bits) << 16;
    float value;
    static_assert(sizeof value == sizeof wide);
    __builtin_memcpy(&value, &wide, 4);
    return value;
  }
  double sign = bits & 0x8000 ? -1.0 : 1.0;
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  if (exponent == 0x1F)
    return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0) // subnormal
    return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

std::string loadMatrices(const std::vector<void *> &lanes) {
  if (lanes.size() != kLanes)
    return "ldmatrix needs a whole warp";
  auto lane = [&](size_t l) { return static_cast<LoadMatrixOperands *>(lanes[l]); };
  bool transpose = lane(0)->transpose;
  for (size_t l = 0; l < kLanes; ++l) {
    if (lane(l)->transpose != transpose)
      return "the lanes of an ldmatrix disagree on .trans";
    size_t group = l / 4, inGroup = l % 4;
    for (size_t matrix = 0; matrix < 4; ++matrix) {
      // The rows of matrix i are those lanes 8i .. 8i+7 named.
      auto element = [&](size_t row, size_t column) { return lane(8 * matrix + row)->row[column]; };
      uint16_t *registerPair = &lane(l)->result[2 * matrix];
      if (!transpose) {
        registerPair[0] = element(group, 2 * inGroup);
        registerPair[1] = element(group, 2 * inGroup + 1);
      } else { // the matrix is read column by column
        registerPair[0] = element(2 * inGroup, group);
        registerPair[1] = element(2 * inGroup + 1, group);
      }
    }
  }
  return "";
}

std::string multiplyAccumulate(const std::vector<void *> &lanes) {
  if (lanes.size() != kLanes)
    return "mma.sync needs a whole warp";
  auto lane = [&](size_t l) { return static_cast<MultiplyOperands *>(lanes[l]); };
  HalfType type = lane(0)->type;
  double a[16][16], b[16][8], c[16][8];
  // The low 16 bits of a register hold its first element.
  auto half = [&](uint32_t word, int which) {
    return halfValue(uint16_t(word >> (16 * which)), type);
  };
  for (size_t l = 0; l < kLanes; ++l) {
    const MultiplyOperands &operands = *lane(l);
    if (operands.type != type)
      return "the lanes of an mma.sync disagree on its type";
    size_t group = l / 4, inGroup = l % 4;
    for (int i = 0; i < 2; ++i) {
      // A: a0,a1 (row g), a2,a3 (row g+8), a4,a5 (row g, column +8),
      // a6,a7 (row g+8, column +8), at columns 2t + i.
      a[group][2 * inGroup + i] = half(operands.a[0], i);
      a[group + 8][2 * inGroup + i] = half(operands.a[1], i);
      a[group][2 * inGroup + 8 + i] = half(operands.a[2], i);
      a[group + 8][2 * inGroup + 8 + i] = half(operands.a[3], i);
      // B: b0,b1 (rows 2t + i), b2,b3 (rows 2t + 8 + i), column g.
      b[2 * inGroup + i][group] = half(operands.b[0], i);
      b[2 * inGroup + 8 + i][group] = half(operands.b[1], i);
      // C: c0,c1 (row g), c2,c3 (row g+8), columns 2t + i.
      c[group][2 * inGroup + i] = operands.c[i];
      c[group + 8][2 * inGroup + i] = operands.c[2 + i];
    }
  }
  for (size_t l = 0; l < kLanes; ++l) {
    size_t group = l / 4, inGroup = l % 4;
    for (int e = 0; e < 4; ++e) {
      size_t row = group + 8 * (e / 2), column = 2 * inGroup + e % 2;
      double sum = c[row][column];
      for (size_t k = 0; k < 16; ++k)
        sum += a[row][k] * b[k][column];
      lane(l)->d[e] = float(sum);
    }
  }
  return "";
}

std::string multiplyAccumulateIntegers(const std::vector<void *> &lanes) {
  if (lanes.size() != kLanes)
    return "mma.sync needs a whole warp";
  auto lane = [&](size_t l) { return static_cast<IntegerMultiplyOperands *>(lanes[l]); };
  bool aUnsigned = lane(0)->aUnsigned, bUnsigned = lane(0)->bUnsigned;
  int64_t a[16][32], b[32][8], c[16][8];
  // Element i of a register file: byte i % 4 of register i / 4.
  auto element = [](const uint32_t *registers, int i, bool isUnsigned) -> int64_t {
    uint8_t byte = uint8_t(registers[i / 4] >> (8 * (i % 4)));
    return isUnsigned ? int64_t(byte) : int64_t(int8_t(byte));
  };
  for (size_t l = 0; l < kLanes; ++l) {
    const IntegerMultiplyOperands &operands = *lane(l);
    if (operands.aUnsigned != aUnsigned || operands.bUnsigned != bUnsigned)
      return "the lanes of an mma.sync disagree on its types";
    size_t group = l / 4, inGroup = l % 4;
    // A: a_i at row group for i in 0-3 and 8-11, else group + 8; column
    // 4t + (i & 3), plus 16 for i >= 8.
    for (int i = 0; i < 16; ++i) {
      size_t row = group + ((i < 4 || (i >= 8 && i < 12)) ? 0 : 8);
      size_t column = 4 * inGroup + (i & 3) + (i >= 8 ? 16 : 0);
      a[row][column] = element(operands.a, i, aUnsigned);
    }
    // B: b_i at row 4t + (i & 3), plus 16 for i >= 4; column group.
    for (int i = 0; i < 8; ++i)
      b[4 * inGroup + (i & 3) + (i >= 4 ? 16 : 0)][group] = element(operands.b, i, bUnsigned);
    // C: c_i at row group (i < 2) or group + 8, column 2t + (i & 1).
    for (int i = 0; i < 4; ++i)
      c[group + (i < 2 ? 0 : 8)][2 * inGroup + (i & 1)] = operands.c[i];
  }
  for (size_t l = 0; l < kLanes; ++l) {
    size_t group = l / 4, inGroup = l % 4;
    for (int i = 0; i < 4; ++i) {
      size_t row = group + (i < 2 ? 0 : 8), column = 2 * inGroup + (i & 1);
      int64_t sum = c[row][column];
      for (size_t k = 0; k < 32; ++k)
        sum += a[row][k] * b[k][column];
      lane(l)->d[i] = int32_t(uint32_t(sum)); // wraps
    }
  }
  return "";
}

} // namespace tessel::cuda::emulator
