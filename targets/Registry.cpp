//===- Registry.cpp - The targets Tessel can compile for ------------------===//

#include "targets/Registry.h"

#include "targets/cuda/CudaTarget.h"
#include "targets/npu/NpuTarget.h"
#include "targets/x86/X86Target.h"

#include "llvm/ADT/StringExtras.h"

namespace tessel {

namespace {

struct Registration {
  const char *name;
  llvm::Expected<std::unique_ptr<Target>> (*create)(const TargetOptions &);
};

llvm::Expected<std::unique_ptr<Target>> createX86(const TargetOptions &) {
  return createX86Target();
}

const Registration kTargets[] = {
    {"x86", createX86}, {"npu", createNpuTarget}, {"cuda", createCudaTarget}};

} // namespace

std::vector<std::string> registeredTargetNames() {
  std::vector<std::string> names;
  for (const Registration &target : kTargets)
    names.push_back(target.name);
  return names;
}

llvm::Expected<std::unique_ptr<Target>> createTarget(llvm::StringRef name,
                                                     const TargetOptions &options) {
  for (const Registration &target : kTargets)
    if (name == target.name)
      return target.create(options);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown target '" + name + "' (available: " +
                                     llvm::join(registeredTargetNames(), ", ") + ")");
}

llvm::StringRef fallbackTargetName() { return "x86"; }

} // namespace tessel
