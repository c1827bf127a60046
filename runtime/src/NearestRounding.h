//===- NearestRounding.h - Round to nearest while kernels run ---*- C++ -*-===//
//
// x86 kernels convert floats to integers with the instructions that round
// by MXCSR's mode, meaning round half to even (the requantization of INT8
// products: targets/x86/RoundingConversions.h). An application may have
// set another mode on the thread that calls the runtime; this sets
// round-to-nearest for a scope and gives the caller's mode back after.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_NEARESTROUNDING_H
#define TESSEL_RUNTIME_NEARESTROUNDING_H

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tessel::runtime {

class NearestRounding {
public:
#if defined(__x86_64__)
  NearestRounding() : saved(_mm_getcsr()) {
    if (saved & kRoundingBits)
      _mm_setcsr(saved & ~kRoundingBits);
  }
  ~NearestRounding() {
    if (saved & kRoundingBits)
      _mm_setcsr(saved);
  }
#endif
  NearestRounding(const NearestRounding &) = delete;
  NearestRounding &operator=(const NearestRounding &) = delete;

private:
#if defined(__x86_64__)
  /// MXCSR.RC: 00 is round to nearest (even).
  static constexpr unsigned kRoundingBits = 0x6000;
  unsigned saved;
#endif
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_NEARESTROUNDING_H
