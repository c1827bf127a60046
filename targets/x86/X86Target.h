//===- X86Target.h - The x86 CPU target -------------------------*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_X86TARGET_H
#define TESSEL_TARGETS_X86_X86TARGET_H

#include "targets/Target.h"

namespace tessel {

/// Compiles kernels to one x86-64 ELF shared object: tiled loops lowered
/// through LLVM for the host CPU (or TargetOptions::cpu), linked in-process
/// by lld. Entries follow runtime/schema/KernelAbi.h.
std::unique_ptr<Target> createX86Target();

} // namespace tessel

#endif // TESSEL_TARGETS_X86_X86TARGET_H
