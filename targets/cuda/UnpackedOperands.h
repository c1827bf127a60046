//===- UnpackedOperands.h - Packed weights read in place by a product -*- C++ -*-===//
//
// The weights are shared by the x86 and CUDA executables, and the x86
// layout packs a product's constant weights into panels at compile time
// ([f/16][kh][kw][c][16] for a convolution's [kh][kw][c][f]). A CUDA kernel
// that takes such a weight first unpacks it: a transpose into a temporary,
// then a copy of it, reshaped, into the buffer the product reads. That is
// two launches and two passes over the weights on every run. A tensor-core
// product instead reads the packed weight itself: an element of the
// unpacked buffer is the packed one at indices that the reshapes split and
// the transpose permutes.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_UNPACKEDOPERANDS_H
#define TESSEL_TARGETS_CUDA_UNPACKEDOPERANDS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace tessel::cuda {

/// A buffer `unpacked` whose element at indices i is `packed`'s at
/// `packedIndices(i)`: written by `copying` from `transposed`, a temporary
/// that `transposing` wrote from `packed`, through the reshapes and the
/// slice in `views`.
struct UnpackedOperand {
  mlir::Value unpacked, packed;
  mlir::AffineMap packedIndices;
  /// The dimension of `unpacked` that the packed weight's innermost index
  /// follows: the last but for an INT8 weight, whose x86 panels keep four
  /// of its input channels innermost.
  unsigned contiguousDim = 0;
  mlir::Operation *transposing = nullptr, *copying = nullptr;
  llvm::SmallVector<mlir::Operation *> views;
};

/// `operand` of `product` (on buffers, at the top level of its kernel) as
/// an unpacked weight that the product can read in place of: nothing but
/// the copy and the product use it, nothing but the transpose and the copy
/// use the temporary, and nothing in the kernel writes the packed weight
/// (an operand of the kernel or a constant), so that the blocks of the
/// product may read it while others store their outputs.
std::optional<UnpackedOperand> findUnpacking(mlir::linalg::LinalgOp product,
                                             mlir::OpOperand *operand);

/// Whether vectors of `width` elements along `unpacking.contiguousDim`,
/// starting at multiples of `width`, are contiguous and aligned to their
/// size in `unpacking.packed`.
bool packedVectorsContiguous(const UnpackedOperand &unpacking, int64_t width);

/// Reads `vectorType` at `indices` of `unpacking.unpacked` from the packed
/// weight; a vector must be one that packedVectorsContiguous allows.
mlir::Value loadUnpacked(mlir::OpBuilder &builder, mlir::Location loc,
                         const UnpackedOperand &unpacking, mlir::VectorType vectorType,
                         mlir::ValueRange indices, llvm::MaybeAlign alignment);

/// Erases the transpose, the copy, the views and the temporaries, once the
/// product no longer reads the unpacked buffer.
void eraseUnpacking(const UnpackedOperand &unpacking);

/// Lets each transpose of `kernels` (on buffers) whose temporary a copy
/// then moves whole into a buffer, or a reshaped view of one, write there
/// itself: an unpacking that a product not on the tensor cores reads is
/// then one launch and one pass over the weight, not two.
void transposeInPlaceOfCopies(mlir::ModuleOp kernels);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_UNPACKEDOPERANDS_H
