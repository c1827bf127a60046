//===- HostCalls.h - What the emulated kernels call in the emulator -*- C++ -*-===//
//
// The functions that ThreadFunctions.h's rewriting makes the kernels call:
//   tessel_emu_launch(id, pointers)   runs a launch's blocks, each as fibers
//   tessel_emu_barrier(site)          a block's barrier
//   tessel_emu_ldmatrix(...)          ldmatrix.x4, its row checked inside its tile
//   tessel_emu_mma(...)               mma.sync.m16n8k16 of halves
//   tessel_emu_mma_integers(...)      mma.sync.m16n8k32 of 8-bit integers
// Each takes only integers (addresses as such), so that one declaration
// serves every call.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_HOSTCALLS_H
#define TESSEL_TEST_CUDA_EMULATOR_HOSTCALLS_H

#include "ThreadFunctions.h"

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

#include <functional>

namespace tessel::cuda::emulator {

/// The host calls, to register with an ExecutionEngine.
llvm::orc::SymbolMap hostCallSymbols(llvm::orc::MangleAndInterner interner);

/// Sets what the next run's tessel_emu_launch calls execute: `launches`, whose
/// thread functions `lookup` finds by name. Clears the previous error.
void prepareLaunches(const std::vector<ThreadedLaunch> &launches,
                     std::function<void *(const std::string &)> lookup);

/// The first error of a launch since prepareLaunches (a divergence, a
/// shared-memory row outside its tile), or an empty text. Launches after
/// an error do not run.
const std::string &launchError();

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_HOSTCALLS_H
