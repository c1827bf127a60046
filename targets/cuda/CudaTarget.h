//===- CudaTarget.h - PTX for NVIDIA GPUs ------------------------*- C++ -*-===//

#ifndef TESSEL_TARGETS_CUDA_CUDATARGET_H
#define TESSEL_TARGETS_CUDA_CUDATARGET_H

#include "targets/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace tessel {

/// The CUDA target, or an error naming an architecture of
/// options.cudaArchitectures that it does not know.
llvm::Expected<std::unique_ptr<Target>> createCudaTarget(const TargetOptions &options);

/// The precision `--precision` names (fp32, fp16, bf16), if it names one.
std::optional<ProductPrecision> parseProductPrecision(llvm::StringRef name);

namespace cuda {

/// The GPU kernels of a module of kernel functions, and how each kernel
/// function launches them.
struct DeviceKernels {
  /// LLVM dialect functions marked nvvm.kernel, ready for emitPtx.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// One per kernel function, in order, with its launches.
  std::vector<KernelEntry> entries;
};

/// Outlines the launches of every kernel function of `kernels` (lowered by
/// lowerKernelsToLoops) into GPU kernels lowered to the LLVM and NVVM
/// dialects: what the CUDA target translates to PTX, and what the
/// emulator runs. Fails with a diagnostic.
mlir::FailureOr<DeviceKernels> outlineDeviceKernels(mlir::ModuleOp kernels);

} // namespace cuda

} // namespace tessel

#endif // TESSEL_TARGETS_CUDA_CUDATARGET_H
