//===- Ptx.h - PTX from LLVM dialect kernels with LLVM's NVPTX backend -*- C++ -*-===//

#ifndef TESSEL_TARGETS_CUDA_PTX_H
#define TESSEL_TARGETS_CUDA_PTX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/IR/Module.h"

#include <string>
#include <vector>

namespace tessel::cuda {

/// A GPU architecture Tessel generates PTX for, with the PTX ISA version
/// it emits for it: the oldest that has the architecture, so that the
/// oldest drivers JIT it. LLVM aborts the process on an architecture and
/// PTX version that do not go together, hence this table.
struct Architecture {
  const char *name;        // "sm_90"
  unsigned capability;     // compute capability × 10
  const char *ptxFeature;  // LLVM's subtarget feature, "+ptx78"
};

/// Where the CUDA toolkit is: $CUDA_HOME, by default /usr/local/cuda.
std::string cudaToolkitPath();

/// The architecture called `name`, or null.
const Architecture *findArchitecture(llvm::StringRef name);

/// The names of every architecture findArchitecture knows.
std::string knownArchitectures();

/// The LLVM IR that emitPtx hands the NVPTX backend for `architecture`:
/// `kernels` (a module of LLVM dialect functions marked nvvm.kernel)
/// translated, libdevice linked in, optimized at `optLevel`. Fails with a
/// diagnostic on `kernels`.
mlir::FailureOr<std::unique_ptr<llvm::Module>> translateKernels(mlir::ModuleOp kernels,
                                                                const Architecture &architecture,
                                                                int optLevel,
                                                                llvm::LLVMContext &context);

/// Translates `kernels` (a module of LLVM dialect functions marked
/// nvvm.kernel) to LLVM IR, optimizes it and emits PTX for `architecture`.
/// Fails with a diagnostic on `kernels`.
mlir::FailureOr<std::string> emitPtx(mlir::ModuleOp kernels, const Architecture &architecture,
                                     int optLevel);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_PTX_H
