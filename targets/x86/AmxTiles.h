//===- AmxTiles.h - INT8 blocks on AMX tiles --------------------*- C++ -*-===//
//
// AMX-INT8 multiplies tiles held in eight tile registers of up to 16 rows of
// 64 bytes: TDPBUSD adds to a 16 x 16 i32 accumulator tile the u8 x s8 dot
// products of an activation tile (a row per output row, 64 bytes of k) and
// a weight tile (a row per group of four k, the four weights of 16 columns
// side by side). A weight tile is thus 16 groups of k of a dot panel
// (PackWeights) exactly as it is stored, and the sums are VPDPBUSD's bit for
// bit, so a block computes the same i32 values on tiles as on vectors.
//
// Tiles are loaded from and stored to memory only: blocks read their
// operands from the buffers of the tensors they slice (bufferization.to_buffer)
// and stage their accumulators through a stack buffer from which the
// epilogue reads them as vectors. LLVM configures the tiles (LDTILECFG) from
// their static shapes in each kernel's prologue.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_AMXTILES_H
#define TESSEL_TARGETS_X86_AMXTILES_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace tessel::x86 {

/// Rows of a tile, and bytes per row.
inline constexpr int64_t kTileRows = 16;
inline constexpr int64_t kTileRowBytes = 64;
/// i32 columns of an accumulator tile, and groups of four k per weight tile.
inline constexpr int64_t kTileColumns = kTileRowBytes / 4;
/// Tile registers, and the most accumulator tiles of one block.
inline constexpr int64_t kTileRegisters = 8;
inline constexpr int64_t kMaxAccumulatorTiles = 4;

// LLVM configures each tile register with one shape for a whole kernel, so
// tiles of different shapes never share a register: a kernel whose blocks
// or reduction steps come in two sizes needs registers for both. Blocks and
// steps are therefore all of one size wherever a divisor of the extent
// allows, and the accumulators are fewer where it does not.

/// Groups of four k per reduction step, of `groups` in all: all of them up
/// to 16; else the largest divisor from 8 to 16; else 16, the last step
/// fewer.
int64_t reductionStep(int64_t groups);

/// Rows of a block, of `extent` rows in all: likewise.
int64_t blockRows(int64_t extent);

/// The most accumulator tiles a block of `rows` rows of a product of
/// `rowExtent` rows and `groups` groups of k may have, with tiles of every
/// shape its blocks and steps take in the eight registers.
int64_t accumulatorBudget(int64_t rowExtent, int64_t rows, int64_t groups);

/// The buffer of the tensor that `tensor` is a (chain of) unit-stride
/// slice(s) of, with the static identity layout of that tensor, and the
/// offsets of `tensor` in it.
struct TileSource {
  mlir::Value buffer;
  llvm::SmallVector<mlir::Value> offsets;
};
TileSource tileSource(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor);

/// `count` zero accumulator tiles of `rows` x 16 i32.
llvm::SmallVector<mlir::Value> zeroAccumulators(mlir::OpBuilder &b, mlir::Location loc,
                                                int64_t count, int64_t rows);

/// Loads a tile of `type` from `buffer` at `indices`, consecutive rows
/// `rowStride` elements apart.
mlir::Value loadTile(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type, mlir::Value buffer,
                     mlir::ValueRange indices, int64_t rowStride);

/// Adds to `accumulators` (tiles of `rows` x 16 i32) the products over
/// `groups` groups of four k, reductionStep(groups) groups per step:
/// `activations(b, loc, firstGroup, type)` loads the step's activation tile
/// of `type`, `weights(b, loc, firstGroup, tile, type)` the weight tile of
/// accumulator `tile`. Returns the new accumulators.
llvm::SmallVector<mlir::Value> accumulateTiles(
    mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange accumulators, int64_t rows,
    int64_t groups,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::Type)>
        activations,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value, int64_t,
                                   mlir::Type)>
        weights);

/// Stores the accumulators into a stack buffer [tiles, 16, 16] i32 in the
/// entry block of the function around the builder (shared by all its
/// blocks) and returns the buffer.
mlir::Value stageAccumulators(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::ValueRange accumulators);

/// Row `row` (an index) of accumulator `tile` in `stage`, 16 i32.
mlir::Value accumulatorRow(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stage,
                           int64_t tile, mlir::Value row);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_AMXTILES_H
