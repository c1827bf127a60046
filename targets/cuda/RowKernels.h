//===- RowKernels.h - Reductions, Softmax and LayerNorm, a block per row -*- C++ -*-===//
//
// A reduction along its operand's innermost dimensions (a ReduceSum over
// the last axis, a Softmax's maximum and sum, a LayerNorm's mean and
// variance) as a launch of one block per output row, whose threads share
// the row's terms. The ops around it that work on the same rows join its
// launch, so that a Softmax or a LayerNorm is one launch.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_ROWKERNELS_H
#define TESSEL_TARGETS_CUDA_ROWKERNELS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

namespace tessel::cuda {

/// Whether `op` is a reduction whose terms a row kernel's threads share:
/// static, on buffers, one output combined by one op that has an identity
/// (add, multiply, maximum, minimum, bitwise), at least a warp's worth of
/// terms per output, which are its first input's innermost elements or
/// else few outputs (a thread each would leave the GPU idle). Its terms are
/// then summed in another order than one loop's (a tree over the threads).
bool reducesAcrossThreads(mlir::linalg::LinalgOp op);

/// Replaces every reduction of `kernels` (bufferized, its ops at the top
/// level of their kernel function, parallel loops first) that
/// reducesAcrossThreads, together with the ops next to it on the same rows,
/// by a gpu.launch of one block per row: its threads stride over the row,
/// partial results are combined in shared memory, and the ops follow one
/// another with a barrier between them. The rest stays for the loop
/// lowering.
void launchRowKernels(mlir::ModuleOp kernels);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_ROWKERNELS_H
