//===- ThreadFunctions.h - Launches that synchronize, as functions of one thread -*- C++ -*-===//
//
// A launch whose threads meet at barriers, run warp instructions
// (ldmatrix, mma.sync: the tensor-core products) or share memory (the row
// kernels) cannot become loops over its threads. Its body becomes instead
// a function of one thread, which the emulator runs for every thread of
// every block as fibers (BlockThreads.h); its barriers and warp
// instructions become calls into the emulator (HostCalls.h).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_THREADFUNCTIONS_H
#define TESSEL_TEST_CUDA_EMULATOR_THREADFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <array>
#include <string>
#include <vector>

namespace tessel::cuda::emulator {

/// A launch outlined into a function of one thread, as the emulator runs
/// it: `function(block x, block y, block z, thread, buffers...)`, where the
/// buffers are the `captured` ones the launch passes and then one per
/// entry of `sharedBytes`, the block's shared memory.
struct ThreadedLaunch {
  std::string function;
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t threads = 1;
  size_t captured = 0;
  std::vector<uint64_t> sharedBytes;
};

/// Replaces every launch of `kernel` (after formLaunches) that has a
/// barrier, a warp instruction or shared memory by a call `tessel_emu_launch(id,
/// pointers)`, where `id` is its place in `launches` (to which its record
/// is appended) and `pointers` an array of its captured buffers'
/// addresses. Its thread function goes beside `kernel`. Fails, with a
/// diagnostic, on what the emulator does not model.
mlir::LogicalResult outlineSynchronizingLaunches(mlir::func::FuncOp kernel,
                                                 std::vector<ThreadedLaunch> &launches);

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_THREADFUNCTIONS_H
