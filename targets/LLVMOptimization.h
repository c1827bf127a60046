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

/// What a target asks of LLVM's pipeline beyond the -O level.
struct LLVMTuning {
  /// Whether LLVM may unroll loops. The x86 target's register blocks are
  /// unrolled already, sized to the register file: unrolling their
  /// reduction loops again spills accumulators (a 13-pixel block of a
  /// convolution ran at half speed).
  bool unrollLoops = true;
};

/// LLVM's optimization pipeline of `optLevel` (0 to 3) on `module`.
void optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine, int optLevel,
                        LLVMTuning tuning = {});

} // namespace tessel

#endif // TESSEL_TARGETS_LLVMOPTIMIZATION_H
