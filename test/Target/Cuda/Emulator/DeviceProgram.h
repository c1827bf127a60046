//===- DeviceProgram.h - A kernel function's GPU kernels, from their LLVM IR -*- C++ -*-===//
//
// The GPU kernels that the CUDA target makes of one kernel function, taken
// as the LLVM IR it hands to the NVPTX backend for sm_80 (optimized,
// libdevice linked in), made to run on the host (NvvmOnHost.h) and
// launched as the runtime's CUDA stream launches them: the entry's launch
// table in order, each launch's arguments its bindings' and scratch's
// addresses plus offsets, every block of its grid, and each block's
// threads as fibers (BlockThreads.h).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_DEVICEPROGRAM_H
#define TESSEL_TEST_CUDA_EMULATOR_DEVICEPROGRAM_H

#include "NvvmOnHost.h"

#include "targets/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace tessel::cuda::emulator {

class DeviceProgram {
public:
  /// Compiles the kernel function of `kernels` (lowered by
  /// lowerKernelsToLoops; the module is changed) as the CUDA target does,
  /// up to its LLVM IR, and that for the host, less the synchronization
  /// `removed` names.
  static llvm::Expected<std::unique_ptr<DeviceProgram>> compile(mlir::ModuleOp kernels,
                                                                RemovedSynchronization removed);

  /// Runs the launches on `bindings`, the kernel function's buffers in
  /// the order of its arguments. Fails on a launch that the threads of a
  /// block leave diverged, or whose ldmatrix reads outside shared memory.
  llvm::Error run(llvm::ArrayRef<void *> bindings);

  size_t launchCount() const { return entry.cudaLaunches.size(); }
  /// The launches whose threads meet at barriers or warp instructions.
  size_t synchronizingLaunches() const {
    return llvm::count_if(launches, [](const Launch &launch) { return launch.meets; });
  }

private:
  /// What the host runs for one launch of the entry.
  struct Launch {
    /// The kernel, called with an array of its arguments.
    void (*kernel)(void *const *) = nullptr;
    bool meets = false;
    /// The kernel's shared memory (address, bytes).
    std::vector<std::pair<uint8_t *, uint64_t>> shared;
  };

  DeviceProgram() = default;

  KernelEntry entry;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  /// One per launch of `entry`.
  std::vector<Launch> launches;
};

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_DEVICEPROGRAM_H
