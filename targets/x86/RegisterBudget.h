//===- RegisterBudget.h - Vector registers left for accumulators -*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_REGISTERBUDGET_H
#define TESSEL_TARGETS_X86_REGISTERBUDGET_H

#include <cstdint>

namespace tessel::x86 {

/// Vector registers of the ISA whose vectors have `width` f32 lanes: 16 with
/// AVX2, 32 with AVX-512.
inline int64_t vectorRegisters(int64_t width) { return width >= 16 ? 32 : 16; }

/// Vector registers a register block may fill with accumulators when vectors
/// have `width` f32 lanes: x86 has 16 with AVX2 and 32 with AVX-512, and a
/// few stay free for the loaded and broadcast operands.
inline int64_t accumulatorRegisters(int64_t width) {
  return width >= 16 ? 28 : 12;
}

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_REGISTERBUDGET_H
