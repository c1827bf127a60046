//===- CpuFeatures.h - Does this CPU have an x86 extension? -----*- C++ -*-===//

#ifndef TESSEL_RUNTIME_SRC_CPUFEATURES_H
#define TESSEL_RUNTIME_SRC_CPUFEATURES_H

#include <optional>
#include <string_view>

namespace tessel::runtime {

/// Whether the CPU running this process has the x86 extension `name` (an
/// LLVM feature name from schema::kCheckedCpuFeatures) and may use it; nullopt
/// for a name this runtime does not know how to check. AMX needs the OS's
/// leave too: Linux enables the tile state only for a process that asks,
/// which this does, once.
std::optional<bool> hostHasCpuFeature(std::string_view name);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_CPUFEATURES_H
