//===- CpuFeatures.h - x86 extensions an executable may require -*- C++ -*-===//
//
// The x86 instruction-set extensions that the compiler records in
// Executable.cpu_features and the runtime checks on the CPU it runs on, by
// their LLVM (and GCC __builtin_cpu_supports) names. Extensions outside this
// list are not recorded: every x86-64 CPU has them, or code generation does
// not use them for the kernels Tessel emits.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SCHEMA_CPUFEATURES_H
#define TESSEL_RUNTIME_SCHEMA_CPUFEATURES_H

namespace tessel::schema {

inline constexpr const char *kCheckedCpuFeatures[] = {
    "sse4.2",   "avx",      "avx2",     "fma",      "f16c",
    "bmi2",     "avx512f",  "avx512bw", "avx512dq", "avx512vl",
    "avx512vnni", "avxvnni",  "avx512bf16", "avx512fp16",
    // Beyond the baseline of the CPUs that have the ones above, LLVM's
    // vectorized code uses these where the target CPU has them: SSE4A's
    // insertq (AMD Zen; an Intel CPU faults on it), VBMI's byte permutes,
    // GFNI's byte shifts.
    "sse4a",    "avx512vbmi", "avx512vbmi2", "avx512ifma", "avx512bitalg",
    "avx512vpopcntdq", "gfni",
    // AMX tiles, which INT8 convolutions use where the CPU has them; the
    // runtime also asks the OS for the tile state (Linux grants it per
    // process on request).
    "amx-tile", "amx-int8",
};

} // namespace tessel::schema

#endif // TESSEL_RUNTIME_SCHEMA_CPUFEATURES_H
