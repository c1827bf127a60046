//===- ProductEpilogues.h - Elementwise ops computed in a product's epilogue -*- C++ -*-===//
//
// A tensor-core product C += A·B usually sits between two elementwise ops
// of its kernel: one that fills C first (a bias broadcast, a zero fill) and
// one that reads C element by element (a ReLU, a residual add, GELU). Each
// would be a launch and a pass over C in memory of its own. Instead the
// product's epilogue computes the fill's value for each of its outputs, adds
// its sum, applies the consumer, and stores the consumer's result: C itself
// is then never written, and when only the consumer read it, never
// allocated.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_PRODUCTEPILOGUES_H
#define TESSEL_TARGETS_CUDA_PRODUCTEPILOGUES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace tessel::cuda {

/// The elementwise ops a product's epilogue takes over (either may be
/// null).
struct ProductEpilogue {
  /// Writes every element of C just before the product, from its own
  /// inputs only (C's old contents unread).
  mlir::linalg::LinalgOp init;
  /// Reads C element by element just after the product, as its input
  /// `consumedOperand`; nothing else reads C's buffer.
  mlir::linalg::LinalgOp consumer;
  unsigned consumedOperand = 0;
};

/// The ops next to `product` (on buffers, at the top level of its kernel)
/// that its epilogue can compute, where the ops `unrelated` before the
/// product, which touch neither C nor what fills it (the padding of an
/// operand), do not count as ops between them. The address computations
/// that the consumer uses (its output's allocation) move before the
/// product.
ProductEpilogue findEpilogue(mlir::linalg::LinalgOp product,
                             llvm::ArrayRef<mlir::Operation *> unrelated);

/// The value `init` writes at `indices` of its output.
mlir::Value emitInitValue(mlir::OpBuilder &builder, mlir::Location loc, mlir::linalg::LinalgOp init,
                          mlir::ValueRange indices);

/// Stores what `consumer` computes at `indices` of the product's output,
/// where the product's value is `value`.
void emitConsumer(mlir::OpBuilder &builder, mlir::Location loc, const ProductEpilogue &epilogue,
                  mlir::ValueRange indices, mlir::Value value);

/// Erases the ops the epilogue took over, and C's buffer when nothing else
/// uses it.
void eraseFused(const ProductEpilogue &epilogue, mlir::Value output);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_PRODUCTEPILOGUES_H
