//===- ContractionBlocking.h - Register blocks for matrix products -*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_CONTRACTIONBLOCKING_H
#define TESSEL_TARGETS_X86_CONTRACTIONBLOCKING_H

#include "targets/x86/DotProduct.h"

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
  /// Products of groups (u8 x s8 into i32, or bf16 pairs into f32: a
  /// dot-product block) rather than f32 multiply-adds.
  bool dot = false;
};

/// The loops of `op` when it is a static f32 multiply-accumulate
/// contraction that reads its right operand and writes its result along
/// contiguous columns, or a dot-product contraction (the quantized
/// lowering's sum + zext(u8) * sext(s8) into i32, or --precision bf16's sum
/// + extf(bf16) * extf(bf16) into f32) whose left operand is contiguous
/// along k; nullopt otherwise.
std::optional<ContractionLoops> matchContraction(mlir::linalg::LinalgOp op);

/// matchContraction, for an op that carries a lowering config
/// (LoweringConfig.h), where a dot-product contraction must also read its
/// right operand from dot panels of the config's width: the contractions
/// register blocking handles.
std::optional<ContractionLoops> matchBlockableContraction(mlir::linalg::LinalgOp op);

/// An accumulator block of `rows` x `columns` f32, `columns` a multiple of
/// the vector width.
struct ContractionBlock {
  int64_t rows;
  int64_t columns;
};

/// The register block for a product of `rowExtent` x `columnExtent` results
/// with `width`-lane vectors, of f32 FMAs or, with `dot`, of integer dot
/// products. The last block of rows or columns may be smaller. Nullopt for
/// products narrower than a vector.
std::optional<ContractionBlock>
chooseContractionBlock(int64_t rowExtent, int64_t columnExtent, int64_t width,
                       std::optional<DotProductKind> dot = std::nullopt);

/// Whether `op` (matchContraction's `loops`) is an INT8 contraction that AMX
/// tiles can compute (AmxTiles.h): its reduction is whole groups of four.
bool contractionFitsAmxTiles(mlir::linalg::LinalgOp op, const ContractionLoops &loops);

/// The most columns of a block of `rows` rows of an INT8 contraction on AMX
/// tiles (contractionFitsAmxTiles): the accumulator tiles that fit beside
/// those of every other shape its blocks and steps take
/// (accumulatorBudget), 16 columns each.
int64_t amxContractionColumns(mlir::linalg::LinalgOp op, const ContractionLoops &loops,
                              int64_t rows);

/// The block of an INT8 contraction on AMX tiles: up to 16 rows, the rows of
/// its tiles, by up to amxContractionColumns columns.
ContractionBlock chooseAmxContractionBlock(mlir::linalg::LinalgOp op,
                                           const ContractionLoops &loops);

/// The block that the lowering config of `op` (matchBlockableContraction)
/// names.
ContractionBlock contractionBlockOf(mlir::linalg::LinalgOp op, const ContractionLoops &loops);

/// The panel width of `op`'s right operand when it is (a slice of) a
/// constant packed into panels.
std::optional<int64_t> rightPanelWidth(mlir::linalg::LinalgOp op);

/// Whether `unpack` restores a right operand [K, N] that was packed into
/// panels [N / P, K, P] of P contiguous columns; returns P.
std::optional<int64_t> packedPanelWidth(mlir::linalg::UnPackOp unpack);

/// Whether `unpack` restores an 8-bit or bf16 right operand [K, N] packed
/// for dot products, [N / P, K / G, P, G] with G the group size
/// (dotGroupSize): per panel and group of k, the G weights of each of the P
/// columns side by side; returns P.
std::optional<int64_t> packedDotPanelWidth(mlir::linalg::UnPackOp unpack);

/// Rewrites a contraction that matchBlockableContraction accepts into loops
/// over the register blocks of its lowering config:
///
///   for each block of `columns` result columns, for each block of `rows`:
///     for k:   (rows x columns / width loop-carried vectors)
///       b[j] = right[k, n + j * width ...]              (vector loads)
///       acc[i][j] = fma(broadcast(left[m + i, k]), b[j], acc[i][j])
///
/// A right operand restored by linalg.unpack from panels (packedPanelWidth)
/// whose width is the block's is read from the panels instead, so that the
/// unpack is never materialized.
///
/// An integer contraction steps four k at a time: it reads its right operand
/// from dot panels (packedDotPanelWidth), broadcasts four bytes of a left
/// row, and accumulates the config's dot products (DotProduct.h); or, when
/// its config names "amx", multiplies tiles of 16 rows by 64 bytes of k of
/// the left operand with tiles of the dot panels.
mlir::LogicalResult registerBlockContraction(mlir::RewriterBase &rewriter,
                                             mlir::linalg::LinalgOp op, int64_t width);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_CONTRACTIONBLOCKING_H
