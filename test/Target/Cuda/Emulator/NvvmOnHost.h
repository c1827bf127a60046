//===- NvvmOnHost.h - The kernels' NVPTX LLVM IR made to run on the host -*- C++ -*-===//
//
// The LLVM IR the CUDA target hands to the NVPTX backend (Ptx.h) is kept as
// it is, but for what only a GPU has, each of which becomes a call into the
// emulator (HostCalls.h):
//   - the special registers (thread, block, their counts, the lane);
//   - libdevice's arithmetic intrinsics (NvvmArithmetic.h), which become
//     host LLVM IR instead;
//   - the block's barriers;
//   - the warp instructions, ldmatrix and mma.sync, whose lanes meet in the
//     emulator and are executed as the PTX ISA defines them
//     (WarpInstructions.h);
//   - cp.async and its group's commits and waits.
// Shared memory stays as the kernels declare it, globals of address space 3,
// which the host's code generator treats as ordinary memory: the emulator
// runs one block at a time and resets them before each.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_NVVMONHOST_H
#define TESSEL_TEST_CUDA_EMULATOR_NVVMONHOST_H

#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cuda::emulator {

/// One kernel of the module, as the rewriting found it. It also gets a
/// function `<name>_packed(ptr arguments)`, which calls it with the
/// pointers of an array.
struct HostKernel {
  std::string name;
  /// Whether its threads meet: it, or a function it calls, has a barrier
  /// or a warp instruction.
  bool meets = false;
  /// The shared-memory globals it uses (or a function it calls does), and
  /// their sizes in bytes.
  std::vector<std::pair<std::string, uint64_t>> shared;
};

/// The synchronization to delete from the kernels, to check that the
/// emulator sees the race this makes.
struct RemovedSynchronization {
  bool barriers = false;
  /// cp.async's waits for its groups (then its copies are never seen).
  bool copyWaits = false;
};

/// Rewrites `module` (NVPTX LLVM IR, optimized) to run on the host, for a
/// JIT whose data layout is `hostLayout`: the kernels get the C calling
/// convention, the GPU's intrinsics calls into the emulator, less what
/// `removed` names. Returns the module's kernels, in order. Fails on an
/// intrinsic the emulator does not run.
llvm::Expected<std::vector<HostKernel>> rewriteForHost(llvm::Module &module,
                                                       const llvm::DataLayout &hostLayout,
                                                       RemovedSynchronization removed);

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_NVVMONHOST_H
