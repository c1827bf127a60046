//===- BlockingUtils.h - What the register-blocking emitters share -*- C++ -*-===//
//
// Both emitters (ContractionBlocking, ChannelsLastBlocking) block an op whose
// result is computed in vector registers, a block at a time, and apply the
// elementwise ops that follow it in the kernel (its epilogue: bias,
// activation, residual add) to the registers before storing them, so that
// the result is written once instead of being written, read back and
// written again by each elementwise op.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_BLOCKINGUTILS_H
#define TESSEL_TARGETS_X86_BLOCKINGUTILS_H


#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <algorithm>
#include <cstdint>

namespace tessel::x86 {

/// Issue slots that one reduction step of a register block takes, in FMAs:
/// its `fmas` FMAs (or other vector arithmetic), its `loads` loads and
/// broadcasts (two of each issue per cycle), or the FMA latency when too
/// few accumulators are independent to hide it.
inline int64_t stepCost(int64_t fmas, int64_t loads) {
  constexpr int64_t kLatencySlots = 8;
  return std::max({fmas, loads, kLatencySlots});
}

/// Bytes of the tensor `operand` holds (0 if it is no tensor of static
/// shape).
int64_t operandBytes(mlir::OpOperand &operand);

/// Whether workgroups of `op` should split its result's last axis (a
/// contraction's columns, a window's channels) before the others. Each
/// workgroup reads whole the operand that its split leaves whole: split
/// the columns, and every workgroup reads all of the input; split the rows
/// (pixels), and every workgroup reads all of the weight. So the last axis
/// goes first only where the weight is the larger operand (a 3x3 filter of
/// 512 channels on a 7x7 image, BERT's projections). Pooling has no weight:
/// splitting its channels would only make two cores share every line of
/// the image.
bool splitsLastAxisFirst(mlir::linalg::LinalgOp op);

/// Whether `op` (a generic) sums extui(input 0) * extsi(input 1) into an i32
/// output: the product of u8 activations and s8 weights that dot-product
/// instructions compute.
bool isDotProductBody(mlir::linalg::LinalgOp op);

/// Whether `op` (a generic) sums extf(input 0) * extf(input 1) of bf16
/// inputs into an f32 output: the products of --precision bf16.
bool isBf16DotBody(mlir::linalg::LinalgOp op);

/// The element type of the groups a dot-product block reads for `op`: i8
/// (isDotProductBody), bf16 (isBf16DotBody), or null for an op that is
/// neither.
mlir::Type dotBodyElement(mlir::linalg::LinalgOp op);

/// The value that `value` is a (chain of) unit-stride, rank-preserving
/// slice(s) of, with the offsets of `value` within it.
struct SliceOrigin {
  mlir::Value source;
  llvm::SmallVector<mlir::Value> offsets;
};

SliceOrigin traceSlices(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value);

/// The value at the root of the unit-stride, rank-preserving slices that
/// `value` is (`value` itself if it is no slice); creates nothing.
mlir::Value sliceRoot(mlir::Value value);

/// Tiles `op` by `tiles` (0: not tiled) into scf.for loops; returns the
/// tile's op.
mlir::FailureOr<mlir::linalg::LinalgOp> tileOp(mlir::RewriterBase &rewriter,
                                               mlir::linalg::LinalgOp op,
                                               llvm::ArrayRef<int64_t> tiles);

/// A blocked op and its epilogue: the elementwise generics that consume its
/// result one after another, each the only user of the previous result,
/// with the same shape (their loops are the result's axes), bodies of
/// elementwise arith/math ops, and other operands that are contiguous along
/// the last axis or broadcast along it.
struct BlockedOp {
  explicit BlockedOp(mlir::linalg::LinalgOp producer);

  /// What is tiled: the epilogue's last op, or the producer.
  mlir::Operation *root() const;
  /// The loop of `root` (the root or a piece of it) that is axis `axis` of
  /// the producer's result.
  unsigned rootLoop(mlir::Operation *root, unsigned axis) const;

  mlir::linalg::LinalgOp producer;
  llvm::SmallVector<mlir::linalg::GenericOp> epilogue;
  /// Per epilogue op: which of its inputs is the previous op's result.
  llvm::SmallVector<unsigned> chainInputs;
};

/// The ops of one block: the producer's tile and its epilogue's tiles.
struct BlockTile {
  mlir::linalg::LinalgOp producer;
  llvm::SmallVector<mlir::linalg::GenericOp> epilogue;
  llvm::SmallVector<unsigned> chainInputs;
};

/// Splits `root` (a root of `op`, or a piece of one) wherever `sizes` (per
/// result axis) do not divide its extent along `splitAxes`, tiles every
/// piece into blocks of its sizes, result axes in `order` outermost first,
/// fuses the producer and the epilogue into each block, and calls `emit`
/// with the block's tiles and sizes.
mlir::LogicalResult
blockPieces(mlir::RewriterBase &rewriter, const BlockedOp &op, mlir::Operation *root,
            llvm::SmallVector<int64_t> sizes, llvm::ArrayRef<unsigned> splitAxes,
            llvm::ArrayRef<unsigned> order,
            llvm::function_ref<void(const BlockTile &, llvm::ArrayRef<int64_t>)> emit);

/// The initial value of a block accumulator at `indices` of the producer's
/// init tile `init`, without reading the tile when it is a slice of a fill
/// (zeros, -inf) or of a vector broadcast along the last axis (a bias):
/// otherwise computing the init would write the whole result once more and
/// the block read it back. Sets `readsInit` when it reads the tile.
mlir::Value initialAccumulator(mlir::OpBuilder &b, mlir::Location loc, mlir::Value init,
                               mlir::ValueRange indices, bool inBounds,
                               mlir::VectorType type, bool &readsInit);

/// The fill or bias broadcast computing `producer`'s init for `producer`
/// alone, whose values initialAccumulator reads without the tensor.
mlir::Operation *initComputation(mlir::linalg::LinalgOp producer);

/// Once every block of the producer started from the init computation's
/// values instead of its tensor (no initialAccumulator read it), the blocks'
/// destination need not hold them: the computation is replaced by its own
/// (uninitialized) destination.
void dropInitComputation(mlir::RewriterBase &rewriter, mlir::Operation *init);

/// Computes `op`'s body (elementwise arith/math scalar ops) on vectors of
/// `width` lanes, its block arguments given by `arguments` (vectors);
/// returns the yielded vector.
mlir::Value vectorizeBody(mlir::OpBuilder &b, mlir::Location loc, mlir::linalg::GenericOp op,
                          llvm::ArrayRef<mlir::Value> arguments, int64_t width);

/// One accumulator of a block and where it goes in the producer's result
/// tile.
struct BlockValue {
  mlir::Value vector;
  llvm::SmallVector<mlir::Value> indices;
  bool inBounds;
};

/// Applies the block's epilogue to every accumulator and stores them into
/// the last tile's result; the block's tiles are replaced.
void storeBlock(mlir::RewriterBase &rewriter, mlir::Location loc, const BlockTile &tile,
                llvm::ArrayRef<BlockValue> values);

/// storeBlock for a block whose values come a row at a time:
/// `rowValues(b, loc, row)` gives the values of row `row` (an index) of
/// rows [0, `rows`). They are stored in a loop over the rows rather than
/// one after another, which keeps a block of many rows (AMX tiles, 16) from
/// multiplying its epilogue's code, and LLVM's time, by as many.
void storeBlockRows(
    mlir::RewriterBase &rewriter, mlir::Location loc, const BlockTile &tile, int64_t rows,
    llvm::function_ref<llvm::SmallVector<BlockValue>(mlir::OpBuilder &, mlir::Location,
                                                     mlir::Value)>
        rowValues);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_BLOCKINGUTILS_H
