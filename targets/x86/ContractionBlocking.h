//===- ContractionBlocking.h - Register blocks for matrix products -*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_CONTRACTIONBLOCKING_H
#define TESSEL_TARGETS_X86_CONTRACTIONBLOCKING_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace tessel::x86 {

/// The loops of a contraction that register blocking handles: one row loop
/// (m), one column loop (n, the innermost axis of the right operand and of
/// the result), one reduction loop (k) and any batch loops.
struct ContractionLoops {
  unsigned m, n, k;
  llvm::SmallVector<unsigned> batch;
};

/// The loops of `op` when it is a static f32 multiply-accumulate
/// contraction that reads its right operand and writes its result along
/// contiguous columns; nullopt otherwise.
std::optional<ContractionLoops> matchBlockableContraction(mlir::linalg::LinalgOp op);

/// An accumulator block of `rows` x `columns` f32, `columns` a multiple of
/// the vector width.
struct ContractionBlock {
  int64_t rows;
  int64_t columns;
};

/// The register block for a product of `rowExtent` x `columnExtent` results
/// with `width`-lane vectors, `columns` wide when given (the panel width of
/// a packed right operand). The last block of rows or columns may be
/// smaller. Nullopt for products narrower than a vector.
std::optional<ContractionBlock>
chooseContractionBlock(int64_t rowExtent, int64_t columnExtent, int64_t width,
                       std::optional<int64_t> columns = std::nullopt);

/// The panel width of `op`'s right operand when it is (a slice of) a
/// constant packed into panels.
std::optional<int64_t> rightPanelWidth(mlir::linalg::LinalgOp op);

/// Whether `unpack` restores a right operand [K, N] that was packed into
/// panels [N / P, K, P] of P contiguous columns; returns P.
std::optional<int64_t> packedPanelWidth(mlir::linalg::UnPackOp unpack);

/// Rewrites a contraction that matchBlockableContraction accepts into loops
/// over register blocks:
///
///   for each block of `columns` result columns, for each block of `rows`:
///     for k:   (rows x columns / width loop-carried vectors)
///       b[j] = right[k, n + j * width ...]              (vector loads)
///       acc[i][j] = fma(broadcast(left[m + i, k]), b[j], acc[i][j])
///
/// A right operand restored by linalg.unpack from panels (packedPanelWidth)
/// whose width is the block's is read from the panels instead, so that the
/// unpack is never materialized.
mlir::LogicalResult registerBlockContraction(mlir::RewriterBase &rewriter,
                                             mlir::linalg::LinalgOp op,
                                             int64_t width);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_CONTRACTIONBLOCKING_H
