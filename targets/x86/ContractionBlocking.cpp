//===- ContractionBlocking.cpp - Register blocks for matrix products ------===//
//
// The classic outer-product microkernel, emitted as vector ops on tensors:
// a block of rows x columns accumulators lives in registers for the whole
// reduction, and each k step loads one row segment of the right operand
// (columns / width vectors) and broadcasts one element of the left operand
// per row. Building the loop by hand, with the accumulators as loop-carried
// values, keeps them in registers without relying on LLVM to prove that the
// result does not alias the operands.
//
// Columns run along the innermost axis of the right operand, so its loads
// are contiguous. A constant right operand is stored in panels of `columns`
// columns at compile time (PackWeights.cpp), so that a block reads one
// contiguous panel instead of rows that lie a multiple of 4 KiB apart and
// share cache sets.
//
//===----------------------------------------------------------------------===//

#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/RegisterBudget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::x86 {

namespace {

/// More rows than this put more concurrent row streams of the left operand
/// into one L1 set than it has ways when the rows lie 4 KiB apart.
constexpr int64_t kMaxRows = 8;

/// Most vectors per row of a block: each takes a register for the loaded
/// right-operand segment besides its accumulators.
constexpr int64_t kMaxRowVectors = 4;

/// Issue slots of one k step of a `rows` x `vectors` block, in FMAs: the
/// FMAs themselves, the loads (one per vector and one broadcast per row), or
/// the FMA latency when too few accumulators are independent.
int64_t stepCost(int64_t rows, int64_t vectors) {
  constexpr int64_t kLatencySlots = 8;
  return std::max({rows * vectors, rows + vectors, kLatencySlots});
}

/// The value `value` is a (chain of) unit-stride, rank-preserving slice(s)
/// of, with the offsets of `value` within it.
struct SliceOrigin {
  Value source;
  SmallVector<Value> offsets;
};

SliceOrigin traceSlices(OpBuilder &b, Location loc, Value value) {
  auto rank = cast<RankedTensorType>(value.getType()).getRank();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SliceOrigin origin{value, SmallVector<Value>(rank, zero)};
  while (auto slice = origin.source.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (slice.getSourceType().getRank() != rank ||
        !llvm::all_of(slice.getMixedStrides(),
                      [](OpFoldResult s) { return isConstantIntValue(s, 1); }))
      break;
    for (auto [total, offset] : llvm::zip(origin.offsets, slice.getMixedOffsets()))
      total = b.createOrFold<arith::AddIOp>(
          loc, total, getValueOrCreateConstantIndexOp(b, loc, offset));
    origin.source = slice.getSource();
  }
  return origin;
}

/// The panels and the panel index that a block's right operand `right`
/// ([K, columns]) reads, when it is a slice of a packed constant whose
/// panels are exactly `columns` wide.
struct PanelRead {
  Value panels;
  Value panel;
};

std::optional<PanelRead> tracePanels(OpBuilder &b, Location loc, Value right,
                                     int64_t columns) {
  auto rightType = cast<RankedTensorType>(right.getType());
  if (rightType.getRank() != 2)
    return std::nullopt;
  SliceOrigin origin = traceSlices(b, loc, right);
  auto unpack = origin.source.getDefiningOp<linalg::UnPackOp>();
  if (!unpack || packedPanelWidth(unpack) != columns ||
      unpack.getDestType().getDimSize(0) != rightType.getDimSize(0) ||
      !isConstantIntValue(getAsOpFoldResult(origin.offsets[0]), 0))
    return std::nullopt;
  // Block offsets along the columns are multiples of the panel width: the
  // block is one whole panel.
  Value panel = b.createOrFold<arith::DivUIOp>(
      loc, origin.offsets[1], arith::ConstantIndexOp::create(b, loc, columns));
  return PanelRead{unpack.getSource(), panel};
}

/// Emits the microkernel for `tile`, a contraction whose row and column
/// extents are the block's, in place of it.
void emitBlock(RewriterBase &rewriter, linalg::LinalgOp tile,
               const ContractionLoops &loops, int64_t width) {
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  SmallVector<int64_t> extents = tile.getStaticLoopRanges();
  int64_t rows = extents[loops.m], columns = extents[loops.n];
  int64_t vectors = columns / width;
  OpOperand *left = tile.getDpsInputOperand(0);
  OpOperand *right = tile.getDpsInputOperand(1);
  OpOperand *result = tile.getDpsInitOperand(0);
  Type elementType = rewriter.getF32Type();
  auto vectorType = VectorType::get({width}, elementType);
  Value padding = ub::PoisonOp::create(rewriter, loc, elementType);

  auto index = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  // Loop positions are set per access; operands are indexed through their
  // indexing maps (projected permutations), so transposed and broadcast
  // operands need nothing special.
  SmallVector<Value> position(tile.getNumLoops(), index(rewriter, 0));
  auto indicesOf = [&](OpOperand *operand) {
    SmallVector<Value> indices;
    for (AffineExpr expr : tile.getMatchingIndexingMap(operand).getResults())
      indices.push_back(position[cast<AffineDimExpr>(expr).getPosition()]);
    return indices;
  };
  SmallVector<Value> rowIndex, columnIndex;
  for (int64_t row = 0; row < rows; ++row)
    rowIndex.push_back(index(rewriter, row));
  for (int64_t vector = 0; vector < vectors; ++vector)
    columnIndex.push_back(index(rewriter, vector * width));
  SmallVector<bool> inBounds{true};

  SmallVector<Value> accumulators;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t vector = 0; vector < vectors; ++vector) {
      position[loops.m] = rowIndex[row];
      position[loops.n] = columnIndex[vector];
      accumulators.push_back(vector::TransferReadOp::create(
          rewriter, loc, vectorType, result->get(), indicesOf(result), padding,
          inBounds));
    }

  std::optional<PanelRead> panels =
      tracePanels(rewriter, loc, right->get(), columns);
  auto step = [&](OpBuilder &b, Location at, Value k, ValueRange sums) {
    position[loops.k] = k;
    SmallVector<Value> rightVectors;
    for (int64_t vector = 0; vector < vectors; ++vector) {
      if (panels) {
        rightVectors.push_back(vector::TransferReadOp::create(
            b, at, vectorType, panels->panels,
            ValueRange{panels->panel, k, columnIndex[vector]}, padding, inBounds));
        continue;
      }
      position[loops.m] = rowIndex[0];
      position[loops.n] = columnIndex[vector];
      rightVectors.push_back(vector::TransferReadOp::create(
          b, at, vectorType, right->get(), indicesOf(right), padding, inBounds));
    }
    SmallVector<Value> updated;
    for (int64_t row = 0; row < rows; ++row) {
      position[loops.m] = rowIndex[row];
      position[loops.n] = columnIndex[0];
      Value scalar = tensor::ExtractOp::create(b, at, left->get(), indicesOf(left));
      Value broadcast = vector::BroadcastOp::create(b, at, vectorType, scalar);
      for (int64_t vector = 0; vector < vectors; ++vector)
        updated.push_back(vector::FMAOp::create(b, at, broadcast, rightVectors[vector],
                                                sums[updated.size()]));
    }
    scf::YieldOp::create(b, at, updated);
  };
  auto loop = scf::ForOp::create(
      rewriter, loc, index(rewriter, 0), index(rewriter, extents[loops.k]),
      index(rewriter, 1), accumulators,
      [&](OpBuilder &b, Location at, Value k, ValueRange sums) { step(b, at, k, sums); });

  Value written = result->get();
  size_t next = 0;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t vector = 0; vector < vectors; ++vector) {
      position[loops.m] = rowIndex[row];
      position[loops.n] = columnIndex[vector];
      written = vector::TransferWriteOp::create(rewriter, loc, loop.getResult(next++),
                                                written, indicesOf(result), inBounds)
                    .getResult();
    }
  rewriter.replaceOp(tile, written);
}

/// Tiles `op` into blocks of `rows` x `columns` (columns outermost, so that
/// a panel of the right operand stays in cache while the rows walk it) and
/// emits each block.
LogicalResult blockContraction(RewriterBase &rewriter, linalg::LinalgOp op,
                               const ContractionLoops &loops, int64_t rows,
                               int64_t columns, int64_t width) {
  SmallVector<int64_t> tiles(op.getNumLoops(), 0);
  for (unsigned batch : loops.batch)
    tiles[batch] = 1;
  tiles[loops.m] = rows;
  tiles[loops.n] = columns;
  SmallVector<int64_t> order(loops.batch.begin(), loops.batch.end());
  order.append({loops.n, loops.m, loops.k});

  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tiles))
      .setInterchange(order);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  emitBlock(rewriter, cast<linalg::LinalgOp>(tiled->tiledOps.back()), loops, width);
  return success();
}

} // namespace

std::optional<ContractionLoops> matchBlockableContraction(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op.getOperation()) || !op.hasPureTensorSemantics() ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
      return std::nullopt;
  }
  if (!linalg::isaContractionOpInterface(op))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 || dims->k.size() != 1)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  unsigned n = dims->n.front();
  auto columnsInnermost = [&](OpOperand *operand) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    return map.getNumResults() > 0 && map.getResults().back() ==
                                          getAffineDimExpr(n, op.getContext());
  };
  if (!columnsInnermost(op.getDpsInputOperand(1)) ||
      !columnsInnermost(op.getDpsInitOperand(0)))
    return std::nullopt;
  return ContractionLoops{dims->m.front(), n, dims->k.front(),
                          SmallVector<unsigned>(dims->batch.begin(), dims->batch.end())};
}

std::optional<ContractionBlock> chooseContractionBlock(int64_t rowExtent,
                                                       int64_t columnExtent,
                                                       int64_t width) {
  std::optional<ContractionBlock> best;
  int64_t bestCost = 0, bestBlocks = 0;
  int64_t registers = vectorRegisters(width);
  for (int64_t vectors = 1; vectors <= kMaxRowVectors; ++vectors) {
    if (columnExtent % (vectors * width) != 0)
      continue;
    // Besides the accumulators: the loaded right-operand vectors and one
    // broadcast.
    int64_t maxRows = std::min({kMaxRows, rowExtent, (registers - vectors - 1) / vectors});
    for (int64_t rows = 1; rows <= maxRows; ++rows) {
      int64_t panels = columnExtent / (vectors * width);
      int64_t remainder = rowExtent % rows;
      int64_t cost = panels * ((rowExtent / rows) * stepCost(rows, vectors) +
                               (remainder ? stepCost(remainder, vectors) : 0));
      int64_t blocks = panels * llvm::divideCeil(rowExtent, rows);
      if (!best || cost < bestCost || (cost == bestCost && blocks < bestBlocks)) {
        best = ContractionBlock{rows, vectors * width};
        bestCost = cost;
        bestBlocks = blocks;
      }
    }
  }
  return best;
}

std::optional<int64_t> packedPanelWidth(linalg::UnPackOp unpack) {
  RankedTensorType source = unpack.getSourceType(), dest = unpack.getDestType();
  if (source.getRank() != 3 || dest.getRank() != 2 || !source.hasStaticShape() ||
      !dest.hasStaticShape() || unpack.getInnerDimsPos() != ArrayRef<int64_t>{1} ||
      unpack.getOuterDimsPerm() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  ArrayRef<int64_t> tiles = unpack.getStaticInnerTiles();
  if (tiles.size() != 1 || ShapedType::isDynamic(tiles[0]) ||
      dest.getDimSize(1) != source.getDimSize(0) * tiles[0])
    return std::nullopt;
  return tiles[0];
}

LogicalResult registerBlockContraction(RewriterBase &rewriter, linalg::LinalgOp op,
                                       int64_t width) {
  std::optional<ContractionLoops> loops = matchBlockableContraction(op);
  if (!loops)
    return failure();
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  int64_t rowExtent = extents[loops->m];
  std::optional<ContractionBlock> block =
      chooseContractionBlock(rowExtent, extents[loops->n], width);
  if (!block)
    return failure();
  int64_t remainder = rowExtent % block->rows;
  if (remainder == 0)
    return blockContraction(rewriter, op, *loops, block->rows, block->columns, width);

  // The last rows form a shorter block of their own.
  rewriter.setInsertionPoint(op);
  auto [head, tail] =
      linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), loops->m,
                      rewriter.getIndexAttr(rowExtent - remainder));
  if (failed(blockContraction(rewriter, cast<linalg::LinalgOp>(head.getOperation()),
                              *loops, block->rows, block->columns, width)))
    return failure();
  return blockContraction(rewriter, cast<linalg::LinalgOp>(tail.getOperation()), *loops,
                          remainder, block->columns, width);
}

} // namespace tessel::x86
