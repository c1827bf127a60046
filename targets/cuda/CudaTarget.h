//===- CudaTarget.h - PTX for NVIDIA GPUs ------------------------*- C++ -*-===//

#ifndef TESSEL_TARGETS_CUDA_CUDATARGET_H
#define TESSEL_TARGETS_CUDA_CUDATARGET_H

#include "targets/Target.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace tessel {

/// The CUDA target, or an error naming an architecture of
/// options.cudaArchitectures that it does not know.
llvm::Expected<std::unique_ptr<Target>> createCudaTarget(const TargetOptions &options);

/// The precision `--precision` names (fp32, fp16, bf16), if it names one.
std::optional<ProductPrecision> parseProductPrecision(llvm::StringRef name);

} // namespace tessel

#endif // TESSEL_TARGETS_CUDA_CUDATARGET_H
