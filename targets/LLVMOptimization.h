//===- LLVMOptimization.h - LLVM's optimization pipeline for a target --*- C++ -*-===//
//
// The targets that end in LLVM IR (x86, CUDA) optimize it the same way:
// LLVM's default per-module pipeline at the compile's -O level, with the
// target machine's own analyses and passes registered.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_LLVMOPTIMIZATION_H
#define TESSEL_TARGETS_LLVMOPTIMIZATION_H

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace tessel {

/// LLVM's optimization pipeline of `optLevel` (0 to 3) on `module`.
void optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine, int optLevel);

} // namespace tessel

#endif // TESSEL_TARGETS_LLVMOPTIMIZATION_H
