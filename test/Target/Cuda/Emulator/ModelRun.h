//===- ModelRun.h - A whole model's kernels, run on its inputs ---*- C++ -*-===//
//
// Runs the `@main` of `tessel-compile --emit linalg --emit-all-constants`
// on a model's inputs: each kernel it calls as both KernelPair forms, the
// emulated form's outputs passed on to the kernels after it, as the host
// plan passes a GPU's buffers. Its outputs are then what the CUDA target's
// launches compute for the whole model, which tests compare with the x86
// executable's on the same inputs.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_MODELRUN_H
#define TESSEL_TEST_CUDA_EMULATOR_MODELRUN_H

#include "KernelPair.h"

#include "compiler/data/TensorFiles.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace tessel::cuda::emulator {

/// What runModel reports of each kernel call: the kernel function called,
/// the pair that ran it (compiled once for every function the same as it)
/// and how its two forms compared.
using CallObserver = llvm::function_ref<void(llvm::StringRef kernel, const KernelPair &pair,
                                             const KernelComparison &comparison)>;

/// A model's outputs, named as @main's results are.
struct ModelOutputs {
  /// As the emulated kernels compute them.
  std::vector<tessel::data::HostTensor> emulated;
  /// As the reference kernels compute them, each on the reference kernels'
  /// results before it: upstream linalg's loops with the operands rounded
  /// as the emulated kernels round them. Empty unless asked for.
  std::vector<tessel::data::HostTensor> reference;
};

/// Runs `module`'s `@main` on `inputs` (in its argument order), each kernel
/// call checked by `observe`; the reference kernels' chain too where
/// `chainReference`. Fails, naming the op or the input, on what it cannot run:
/// an input of another shape or type, an elided constant, an op of @main
/// other than calls, constants, reshapes and `tessel.check_zero` (whose
/// count, when not zero, stops the run as it stops the runtime's).
llvm::Expected<ModelOutputs> runModel(mlir::ModuleOp module, const EmulationOptions &options,
                                      const std::vector<tessel::data::HostTensor> &inputs,
                                      bool chainReference, CallObserver observe);

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_MODELRUN_H
