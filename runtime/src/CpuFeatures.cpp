//===- CpuFeatures.cpp - Does this CPU have an x86 extension? -------------===//

#include "CpuFeatures.h"

namespace tessel::runtime {

std::optional<bool> hostHasCpuFeature(std::string_view name) {
#if defined(__x86_64__)
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
