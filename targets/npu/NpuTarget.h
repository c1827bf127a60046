//===- NpuTarget.h - The NPU target -----------------------------*- C++ -*-===//

#ifndef TESSEL_TARGETS_NPU_NPUTARGET_H
#define TESSEL_TARGETS_NPU_NPUTARGET_H

#include "targets/Target.h"

#include "llvm/Support/Error.h"

namespace tessel {

/// Compiles the 8-bit layers it can run (convolutions, matrix products,
/// max pooling, additions) into a command stream for the NPU of
/// docs/npu/isa.md, configured by the JSON file options.npuConfigFile
/// (defaults when empty). Its kernels skip the shared linalg lowering: each
/// becomes an `npu.program`.
llvm::Expected<std::unique_ptr<Target>> createNpuTarget(const TargetOptions &options);

} // namespace tessel

#endif // TESSEL_TARGETS_NPU_NPUTARGET_H
