//===- CpuFeatures.cpp - Does this CPU have an x86 extension? -------------===//

#include "CpuFeatures.h"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tessel::runtime {

namespace {

/// Asks Linux for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA), without which the first tile instruction faults;
/// the grant holds for every thread of the process.
bool amxTileStateGranted() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kRequestComponentPermission = 0x1023;
  constexpr long kTileDataComponent = 18;
  static const bool granted =
      syscall(SYS_arch_prctl, kRequestComponentPermission, kTileDataComponent) == 0;
  return granted;
#else
  return false;
#endif
}

} // namespace

std::optional<bool> hostHasCpuFeature(std::string_view name) {
#if defined(__x86_64__)
  if (name == "amx-tile" || name == "amx-int8")
    return __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8") &&
           amxTileStateGranted();
  // __builtin_cpu_supports takes string literals only, hence the table.
#define TSL_CPU_FEATURE(feature)                                               \
  if (name == feature)                                                         \
    return __builtin_cpu_supports(feature) != 0;
  TSL_CPU_FEATURE("sse4.2")
  TSL_CPU_FEATURE("avx")
  TSL_CPU_FEATURE("avx2")
  TSL_CPU_FEATURE("fma")
  TSL_CPU_FEATURE("f16c")
  TSL_CPU_FEATURE("bmi2")
  TSL_CPU_FEATURE("avx512f")
  TSL_CPU_FEATURE("avx512bw")
  TSL_CPU_FEATURE("avx512dq")
  TSL_CPU_FEATURE("avx512vl")
  TSL_CPU_FEATURE("avx512vnni")
  TSL_CPU_FEATURE("avxvnni")
  TSL_CPU_FEATURE("avx512bf16")
  TSL_CPU_FEATURE("avx512fp16")
  TSL_CPU_FEATURE("sse4a")
  TSL_CPU_FEATURE("avx512vbmi")
  TSL_CPU_FEATURE("avx512vbmi2")
  TSL_CPU_FEATURE("avx512ifma")
  TSL_CPU_FEATURE("avx512bitalg")
  TSL_CPU_FEATURE("avx512vpopcntdq")
  TSL_CPU_FEATURE("gfni")
#undef TSL_CPU_FEATURE
#endif
  return std::nullopt;
}

} // namespace tessel::runtime
