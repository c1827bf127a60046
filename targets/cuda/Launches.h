//===- Launches.h - Kernel functions split into GPU kernel launches -*- C++ -*-===//
//
// A Tessel kernel, once bufferized and lowered to parallel loops, is a
// sequence of loop nests over its bindings and temporaries. Each top-level
// nest becomes one GPU kernel (a gpu.func) and one launch; the host side
// keeps only the launch list, which the runtime replays on a stream.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_LAUNCHES_H
#define TESSEL_TARGETS_CUDA_LAUNCHES_H

#include "targets/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace tessel::cuda {

/// The launches of one kernel function and the scratch its temporaries
/// take.
struct KernelLaunches {
  std::vector<CudaLaunch> launches;
  uint64_t scratchBytes = 0;
};

/// Turns every top-level loop nest of `kernel` (bufferized, its linalg
/// ops lowered to scf.parallel and scf.for) into a one-dimensional
/// gpu.launch in place: a parallel nest gets one thread per iteration,
/// `threadsPerBlock` to a block; whatever else computes runs in a launch of
/// one thread. Views and constants are rebuilt inside the launches, which
/// then use only whole buffers from outside. Fails, with a diagnostic on
/// `kernel`, on what a launch cannot take (dynamic shapes).
mlir::LogicalResult formLaunches(mlir::func::FuncOp kernel, unsigned threadsPerBlock);

/// Outlines the launches formLaunches made into gpu.funcs of `gpuModule`;
/// top-level allocations become offsets into the entry's scratch.
mlir::FailureOr<KernelLaunches> outlineLaunches(mlir::func::FuncOp kernel,
                                                mlir::gpu::GPUModuleOp gpuModule);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_LAUNCHES_H
