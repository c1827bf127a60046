//===- Registry.h - The targets Tessel can compile for ----------*- C++ -*-===//
//
// The one list of targets: compiler/, the tools and the Python package ask
// it for names and instances instead of knowing any target themselves.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_REGISTRY_H
#define TESSEL_TARGETS_REGISTRY_H

#include "targets/Target.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace tessel {

/// The names users select targets by ("x86", "npu"), in registration order.
std::vector<std::string> registeredTargetNames();

/// The target called `name`, configured by `options`; an error naming the
/// registered ones for an unknown name, or the target's own error (an NPU
/// configuration file it cannot read).
llvm::Expected<std::unique_ptr<Target>> createTarget(llvm::StringRef name,
                                                     const TargetOptions &options);

/// The target that runs whatever the others cannot: every compile places
/// kernels on it last.
llvm::StringRef fallbackTargetName();

} // namespace tessel

#endif // TESSEL_TARGETS_REGISTRY_H
