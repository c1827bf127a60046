//===- CacheGeometry.h - The L1 data cache that blocks are sized for -*- C++ -*-===//
//
// Register blocks of convolutions read one run of input channels per output
// pixel at once; whether those runs evict each other depends on how many
// ways a set of the L1 data cache has (8 on Zen 4 and Skylake, 12 on Zen 5
// and Sapphire Rapids). The compiler reads the geometry of the CPU it runs
// on when it generates code for that CPU, and otherwise assumes the
// smallest of the CPUs it targets.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_CACHEGEOMETRY_H
#define TESSEL_TARGETS_X86_CACHEGEOMETRY_H

#include <cstdint>

namespace tessel::x86 {

struct CacheGeometry {
  int64_t lineBytes = 64;
  int64_t l1Sets = 64;
  int64_t l1Ways = 8;

  /// Whether blocks can be sized for it: set indices are address bits (a
  /// power-of-two line and number of sets) and a set has a way.
  bool isValid() const;
};

/// The L1 data cache of this machine's first CPU as Linux reports it
/// (/sys/devices/system/cpu/cpu0/cache), or the default geometry where it
/// does not (another OS, a container without sysfs, implausible values).
CacheGeometry hostCacheGeometry();

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_CACHEGEOMETRY_H
