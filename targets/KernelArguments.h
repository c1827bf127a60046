//===- KernelArguments.h - Kernels read their operands, never write them -*- C++ -*-===//
//
// A kernel's operands are buffers of the host plan that other kernels may
// still read: a graph input, or a value with several users (two
// ScatterElements into one tensor). One-Shot Bufferize would let an op
// that updates its operand (a scatter, whose init is the data it scatters
// into) write the argument's buffer in place, changing what the other
// users read. Marked read-only, such an operand is copied into the
// kernel's result buffer first.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_KERNELARGUMENTS_H
#define TESSEL_TARGETS_KERNELARGUMENTS_H

#include "mlir/IR/BuiltinOps.h"

namespace tessel {

/// Marks every tensor argument of every function in `kernels` not writable
/// (`bufferization.writable = false`), before it is bufferized.
void markKernelArgumentsReadOnly(mlir::ModuleOp kernels);

} // namespace tessel

#endif // TESSEL_TARGETS_KERNELARGUMENTS_H
