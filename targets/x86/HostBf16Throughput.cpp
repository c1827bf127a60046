//===- HostBf16Throughput.cpp - VDPBF16PS or FMAs, as measured ------------===//

#include "targets/x86/HostBf16Throughput.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace tessel::x86 {

namespace {

/// Independent accumulators: enough to cover either instruction's latency.
constexpr int kChains = 12;
/// Steps per timing: about a millisecond either way.
constexpr long kSteps = 100000;

// The empty asm makes every accumulator live after each step, so that the
// compiler neither drops nor merges the instructions being timed.
#define TESSEL_KEEP_ACCUMULATORS(acc)                                          \
  __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]), \
                   "+v"(acc[4]), "+v"(acc[5]), "+v"(acc[6]), "+v"(acc[7]),       \
                   "+v"(acc[8]), "+v"(acc[9]), "+v"(acc[10]), "+v"(acc[11]))

/// Seconds for kSteps * kChains VDPBF16PS.
__attribute__((target("avx512f,avx512bf16"))) double timePairDots() {
  __m512 acc[kChains];
  for (__m512 &value : acc)
    value = _mm512_setzero_ps();
  __m512bh ones = (__m512bh)_mm512_set1_epi32(0x3f803f80);
  auto start = std::chrono::steady_clock::now();
  for (long step = 0; step < kSteps; ++step) {
    for (__m512 &value : acc)
      value = _mm512_dpbf16_ps(value, ones, ones);
    TESSEL_KEEP_ACCUMULATORS(acc);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Seconds for the same pairs as two FMAs each: 2 * kSteps * kChains.
__attribute__((target("avx512f"))) double timeFmaPairs() {
  __m512 acc[kChains];
  for (__m512 &value : acc)
    value = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1e-9f), w = _mm512_set1_ps(1.0f);
  auto start = std::chrono::steady_clock::now();
  for (long step = 0; step < kSteps; ++step) {
    for (__m512 &value : acc)
      value = _mm512_fmadd_ps(x, w, value);
    TESSEL_KEEP_ACCUMULATORS(acc);
    for (__m512 &value : acc)
      value = _mm512_fmadd_ps(x, w, value);
    TESSEL_KEEP_ACCUMULATORS(acc);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

#undef TESSEL_KEEP_ACCUMULATORS

bool measure() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (!features.lookup("avx512f") || !features.lookup("avx512bf16"))
    return false;
  // The first rounds also bring the vector units up to speed; the best of
  // the rest counts.
  double dots = timePairDots(), fmas = timeFmaPairs();
  for (int round = 0; round < 3; ++round) {
    dots = std::min(dots, timePairDots());
    fmas = std::min(fmas, timeFmaPairs());
  }
  return dots < fmas;
}

} // namespace

bool hostPrefersDpbf16ps() {
  static const bool prefers = measure();
  return prefers;
}

} // namespace tessel::x86
