//===- AttentionKernels.h - softmax(Q·K)·V as one launch ---------*- C++ -*-===//
//
// Attention, as the shared lowering writes it (a product of the queries and
// keys, the Softmax of its rows, a product of those probabilities and the
// values), as one launch that keeps the scores and probabilities in shared
// memory: each block takes 64 queries through the keys 32 at a time on the
// tensor cores, rescaling what it has summed as each tile raises a row's
// maximum (the online Softmax of FlashAttention).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_ATTENTIONKERNELS_H
#define TESSEL_TARGETS_CUDA_ATTENTIONKERNELS_H

#include "targets/Target.h"

#include "mlir/IR/BuiltinOps.h"

namespace tessel::cuda {

/// Replaces each attention of `kernels` (bufferized, its ops at the top
/// level of their kernel function) whose two products the tensor cores
/// take at `precision` (F16 or BF16), whose tiles fit 48 KiB of shared
/// memory (head and output dimensions up to 112 each, or 128 and 112)
/// and whose scores and probabilities are used by nothing else, by one
/// gpu.launch. The products' operands are rounded to `precision`, the
/// scores, the Softmax and the sums are f32, and the probabilities are
/// rounded to `precision` for the second product, as they would be on
/// their own.
void launchAttentionKernels(mlir::ModuleOp kernels, ProductPrecision precision);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_ATTENTIONKERNELS_H
