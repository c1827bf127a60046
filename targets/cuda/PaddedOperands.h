//===- PaddedOperands.h - Padded images read in place by a product -*- C++ -*-===//
//
// A convolution with padding reads an image that its kernel first pads: a
// buffer filled with zeros, then the image copied into its interior. That
// is two launches and a pass over the image in memory before the product
// starts. A tensor-core product instead reads the image itself: an element
// of the padded buffer inside the interior is the image's element at the
// interior's offset, and one outside it is the fill.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_PADDEDOPERANDS_H
#define TESSEL_TARGETS_CUDA_PADDEDOPERANDS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace tessel::cuda {

/// A buffer `padded` that holds `fill` everywhere but in its interior
/// [offsets, offsets + the source's shape), which is a copy of `source`.
struct PaddedOperand {
  mlir::Value padded, source, fill;
  llvm::SmallVector<int64_t> offsets;
  /// The ops that write `padded`: its fill and the copy of the source.
  mlir::Operation *filling = nullptr, *copying = nullptr;
};

/// `operand` of `product` (on buffers, at the top level of its kernel) as a
/// padded buffer that the product can read in place of: nothing but the
/// fill, the copy and the product use the buffer, and nothing writes the
/// source between the copy and the product.
std::optional<PaddedOperand> findPadding(mlir::linalg::LinalgOp product, mlir::OpOperand *operand);

/// Reads `vectorType` at `indices` of `padding.padded` from its source:
/// the source's elements where the indices fall in the interior, the fill
/// elsewhere. The vector runs along the innermost dimension, which must be
/// unpadded when it holds more than one element.
mlir::Value loadPadded(mlir::OpBuilder &builder, mlir::Location loc, const PaddedOperand &padding,
                       mlir::VectorType vectorType, mlir::ValueRange indices,
                       llvm::MaybeAlign alignment);

/// Whether the innermost dimension of `padding` is unpadded, so that
/// vectors along it are whole inside or outside the interior.
bool innermostUnpadded(const PaddedOperand &padding);

/// Erases the fill, the copy and the padded buffer, once the product no
/// longer reads it.
void erasePadding(const PaddedOperand &padding);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_PADDEDOPERANDS_H
