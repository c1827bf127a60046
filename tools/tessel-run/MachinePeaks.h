//===- MachinePeaks.h - The roofline of the machine tessel-run runs on -*- C++ -*-===//
//
// A profile says how fast each kernel ran; a roofline says how fast it could
// have run. The ceilings are measured here, on the threads the session
// uses, rather than taken from a table: the machines Tessel runs on differ
// (Zen 3 to Zen 5 on one cloud kind), and a ceiling from another CPU would
// put every point in the wrong place.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_MACHINEPEAKS_H
#define TESSEL_TOOLS_TESSEL_RUN_MACHINEPEAKS_H

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::run {

/// Where data can come from, and how fast the session's threads read it.
struct MemoryLevel {
  std::string name; // "L2", "L3", "memory"
  /// Bytes the level holds for all the threads together (L2: one per core;
  /// L3: shared); 0 for main memory, which holds everything.
  uint64_t capacity = 0;
  double gigabytesPerSecond = 0.0;
};

struct MachinePeaks {
  unsigned threads = 1;
  /// FP32 fused multiply-adds, 2 operations each, in GFLOP/s.
  double floatGflops = 0.0;
  std::string floatSequence; // "AVX-512 FMA", "AVX2 FMA"
  /// u8 x s8 products summed into i32, 2 operations each, in GOP/s.
  double integerGops = 0.0;
  std::string integerSequence; // "AVX-512 VNNI vpdpbusd", "AVX2 vpmaddubsw+vpmaddwd"
  /// Read bandwidths, fastest level first; the last is main memory, read
  /// from a buffer far larger than the caches.
  std::vector<MemoryLevel> memory;
  /// The CPU's model name, family and model, as the OS reports them.
  std::string cpuName;

  /// The bandwidth of the fastest level that holds `bytes`; 0 when none
  /// was measured.
  double bandwidthFor(double bytes) const {
    for (const MemoryLevel &level : memory)
      if (level.capacity == 0 || bytes <= double(level.capacity))
        return level.gigabytesPerSecond;
    return 0.0;
  }
  double memoryGBps() const { return memory.empty() ? 0.0 : memory.back().gigabytesPerSecond; }
};

/// Measures the peaks with `threads` threads at once (best of a few
/// repetitions; about a second in all).
MachinePeaks measureMachinePeaks(unsigned threads);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_MACHINEPEAKS_H
