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
// The INT8 products of quantized models step four k at a time (bf16
// products two): each column of a panel holds its next group of weights side
// by side, and each row broadcasts its next group of activations, which
// dot-product instructions multiply and sum into the i32 (f32)
// accumulators (DotProduct.h).
//
//===----------------------------------------------------------------------===//

#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/AmxTiles.h"
#include "targets/x86/LoweringConfig.h"
#include "targets/x86/BlockingUtils.h"
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

/// Issue slots of one k step of a `rows` x `vectors` block: one FMA (or
/// dot product) per accumulator, one load per vector and one broadcast per
/// row, and the preparation of each.
int64_t blockStepCost(int64_t rows, int64_t vectors, std::optional<DotProductKind> dot) {
  if (!dot)
    return stepCost(rows * vectors, rows + vectors);
  return stepCost(rows * vectors * dotInstructions(*dot) +
                      (rows + vectors) * preparationInstructions(*dot),
                  rows + vectors);
}

/// The panels and the panel index that a block's right operand `right`
/// ([K, columns]) reads, when it is a slice of a constant packed into panels
/// `panelWidth` wide.
struct PanelRead {
  Value panels;
  Value panel;
};

/// With `dot`, the panels are dot panels [N / P, K / G, P, G], returned
/// viewed as [N / P, K / G, P * G].
std::optional<PanelRead> tracePanels(OpBuilder &b, Location loc, Value right,
                                     int64_t panelWidth, bool dot) {
  auto rightType = cast<RankedTensorType>(right.getType());
  if (rightType.getRank() != 2)
    return std::nullopt;
  SliceOrigin origin = traceSlices(b, loc, right);
  auto unpack = origin.source.getDefiningOp<linalg::UnPackOp>();
  if (!unpack || (dot ? packedDotPanelWidth(unpack) : packedPanelWidth(unpack)) != panelWidth ||
      unpack.getDestType().getDimSize(0) != rightType.getDimSize(0) ||
      !isConstantIntValue(getAsOpFoldResult(origin.offsets[0]), 0))
    return std::nullopt;
  // Blocks start at multiples of the panel width: a block is one whole
  // panel, or the first columns of the last one.
  Value panel = b.createOrFold<arith::DivUIOp>(
      loc, origin.offsets[1], arith::ConstantIndexOp::create(b, loc, panelWidth));
  if (!dot)
    return PanelRead{unpack.getSource(), panel};
  Value bytes = tensor::CollapseShapeOp::create(
      b, loc, unpack.getSource(), ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
  return PanelRead{bytes, panel};
}

/// The indices of a block's accesses. Loop positions are set per access;
/// operands are indexed through their indexing maps (projected
/// permutations), so transposed and broadcast operands need nothing
/// special. The block's columns are `vectors` vectors `width` wide; the last
/// is masked past the block's last column.
class BlockIndexing {
public:
  BlockIndexing(OpBuilder &b, Location loc, linalg::LinalgOp tile,
                const ContractionLoops &loops, int64_t width)
      : tile(tile), loops(loops), width(width) {
    SmallVector<int64_t> extents = tile.getStaticLoopRanges();
    rows = extents[loops.m];
    columns = extents[loops.n];
    vectors = llvm::divideCeil(columns, width);
    position.assign(tile.getNumLoops(), arith::ConstantIndexOp::create(b, loc, 0));
    for (int64_t row = 0; row < rows; ++row)
      rowIndex.push_back(arith::ConstantIndexOp::create(b, loc, row));
    for (int64_t vector = 0; vector < vectors; ++vector)
      columnIndex.push_back(arith::ConstantIndexOp::create(b, loc, vector * width));
  }

  int64_t rowCount() const { return rows; }
  int64_t vectorCount() const { return vectors; }
  Value column(int64_t vector) const { return columnIndex[vector]; }
  bool inBounds(int64_t vector) const { return (vector + 1) * width <= columns; }

  void setRow(int64_t row) { position[loops.m] = rowIndex[row]; }
  void setRowIndex(Value row) { position[loops.m] = row; }
  void setVector(int64_t vector) { position[loops.n] = columnIndex[vector]; }
  void setK(Value k) { position[loops.k] = k; }

  /// The indices of `operand` at the current positions.
  SmallVector<Value> of(OpOperand *operand) {
    SmallVector<Value> indices;
    for (AffineExpr expr : tile.getMatchingIndexingMap(operand).getResults())
      indices.push_back(position[cast<AffineDimExpr>(expr).getPosition()]);
    return indices;
  }

  /// The block's accumulators read from `result` (or zero), row by row.
  SmallVector<Value> initialAccumulators(OpBuilder &b, Location loc, OpOperand *result,
                                         VectorType type, bool &readsInit) {
    SmallVector<Value> accumulators;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t vector = 0; vector < vectors; ++vector) {
        setRow(row);
        setVector(vector);
        accumulators.push_back(initialAccumulator(b, loc, result->get(), of(result),
                                                  inBounds(vector), type, readsInit));
      }
    return accumulators;
  }

  /// The final `sums` (ordered as initialAccumulators) with where they go in
  /// `result`.
  SmallVector<BlockValue> blockValues(ValueRange sums, OpOperand *result) {
    SmallVector<BlockValue> values;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t vector = 0; vector < vectors; ++vector) {
        setRow(row);
        setVector(vector);
        values.push_back({sums[values.size()], of(result), inBounds(vector)});
      }
    return values;
  }

private:
  linalg::LinalgOp tile;
  const ContractionLoops &loops;
  int64_t width, rows, columns, vectors;
  SmallVector<Value> position, rowIndex, columnIndex;
};

/// Emits the dot-product microkernel for `block` (see emitBlock): per group
/// of k (four bytes: four i8 or two bf16), each vector of columns loads its
/// 4 * width weight bytes from the panel, each row broadcasts its group of
/// activations as an i32, and the accumulators gain their dot products. A
/// last, partial group reads the activations masked (the panels hold zero
/// weights there).
void emitDotBlock(RewriterBase &rewriter, const BlockTile &block,
                  const ContractionLoops &loops, int64_t panelWidth, int64_t width,
                  DotProductKind dot, bool &readsInit) {
  linalg::LinalgOp tile = block.producer;
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  int64_t depth = tile.getStaticLoopRanges()[loops.k];
  BlockIndexing indexing(rewriter, loc, tile, loops, width);
  OpOperand *left = tile.getDpsInputOperand(0);
  OpOperand *result = tile.getDpsInitOperand(0);
  MLIRContext *context = rewriter.getContext();
  int64_t group = dotGroupSize(dot);
  Type element = dotElementType(context, dot);
  auto accumulatorType = VectorType::get({width}, dotAccumulatorType(context, dot));
  auto weightType = VectorType::get({group * width}, element);
  auto groupType = VectorType::get({group}, element);
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(element));
  auto index = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  SmallVector<Value> accumulators =
      indexing.initialAccumulators(rewriter, loc, result, accumulatorType, readsInit);

  PanelRead panels = *tracePanels(rewriter, loc, tile.getDpsInputOperand(1)->get(),
                                  panelWidth, /*dot=*/true);
  // One step of the group of k at `groupIndex`; `partial` when fewer remain.
  auto step = [&](OpBuilder &b, Location at, Value groupIndex, ValueRange sums, bool partial) {
    SmallVector<DotOperand> weights;
    for (int64_t vector = 0; vector < indexing.vectorCount(); ++vector) {
      Value groups = vector::TransferReadOp::create(
          b, at, weightType, panels.panels,
          ValueRange{panels.panel, groupIndex, index(b, vector * width * group)}, zero,
          ArrayRef<bool>{true});
      weights.push_back(prepareWeights(b, at, dot, groups));
    }
    indexing.setK(b.createOrFold<arith::MulIOp>(at, groupIndex, index(b, group)));
    SmallVector<Value> updated;
    for (int64_t row = 0; row < indexing.rowCount(); ++row) {
      indexing.setRow(row);
      Value elements = vector::TransferReadOp::create(b, at, groupType, left->get(),
                                                      indexing.of(left), zero,
                                                      ArrayRef<bool>{!partial});
      DotOperand activations = prepareActivations(b, at, dot, elements, width);
      for (int64_t vector = 0; vector < indexing.vectorCount(); ++vector)
        updated.push_back(accumulateDot(b, at, dot, sums[updated.size()], activations,
                                        weights[vector]));
    }
    return updated;
  };
  int64_t groups = depth / group;
  auto loop = scf::ForOp::create(
      rewriter, loc, index(rewriter, 0), index(rewriter, groups), index(rewriter, 1),
      accumulators, [&](OpBuilder &b, Location at, Value groupIndex, ValueRange sums) {
        scf::YieldOp::create(b, at, step(b, at, groupIndex, sums, /*partial=*/false));
      });
  SmallVector<Value> results(loop.getResults());
  if (depth % group)
    results = step(rewriter, loc, index(rewriter, groups), results, /*partial=*/true);
  storeBlock(rewriter, loc, block, indexing.blockValues(results, result));
}

/// Emits `block`, an INT8 contraction tile of up to 16 rows, on AMX tiles
/// (AmxTiles.h): its rows are the rows of the activation tiles, read from
/// the left operand's buffer, and every 16 of its columns an accumulator
/// tile, whose weight tiles are 16 groups of k of the dot panel at a time.
void emitAmxBlock(RewriterBase &rewriter, const BlockTile &block,
                  const ContractionLoops &loops, int64_t panelWidth, bool &readsInit) {
  linalg::LinalgOp tile = block.producer;
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  SmallVector<int64_t> extents = tile.getStaticLoopRanges();
  int64_t rows = extents[loops.m];
  BlockIndexing indexing(rewriter, loc, tile, loops, kTileColumns);
  OpOperand *left = tile.getDpsInputOperand(0);
  OpOperand *result = tile.getDpsInitOperand(0);

  // The left operand's rows lie as far apart in its root as the root's
  // axis that the row loop indexes.
  TileSource activations = tileSource(rewriter, loc, left->get());
  auto activationType = cast<MemRefType>(activations.buffer.getType());
  AffineMap leftMap = tile.getMatchingIndexingMap(left);
  int64_t rowStride = 1;
  for (int64_t axis = leftMap.getNumResults() - 1;
       axis >= 0 && leftMap.getDimPosition(axis) != loops.m; --axis)
    rowStride *= activationType.getDimSize(axis);
  PanelRead panels = *tracePanels(rewriter, loc, tile.getDpsInputOperand(1)->get(), panelWidth,
                                  /*dot=*/true);
  TileSource weights = tileSource(rewriter, loc, panels.panels);
  int64_t panelRowBytes = cast<MemRefType>(weights.buffer.getType()).getDimSize(2);

  SmallVector<Value> sums = accumulateTiles(
      rewriter, loc, zeroAccumulators(rewriter, loc, indexing.vectorCount(), rows), rows,
      extents[loops.k] / 4,
      [&](OpBuilder &b, Location at, Value firstGroup, Type type) {
        indexing.setRow(0);
        indexing.setK(b.createOrFold<arith::MulIOp>(at, firstGroup,
                                                     arith::ConstantIndexOp::create(b, at, 4)));
        SmallVector<Value> indices = indexing.of(left);
        for (auto [index, offset] : llvm::zip(indices, activations.offsets))
          index = b.createOrFold<arith::AddIOp>(at, index, offset);
        return loadTile(b, at, type, activations.buffer, indices, rowStride);
      },
      [&](OpBuilder &b, Location at, Value firstGroup, int64_t accumulator, Type type) {
        Value column = arith::ConstantIndexOp::create(b, at, accumulator * kTileRowBytes);
        return loadTile(b, at, type, weights.buffer, {panels.panel, firstGroup, column},
                        panelRowBytes);
      });

  Value stage = stageAccumulators(rewriter, loc, sums);
  auto rowType = VectorType::get({kTileColumns}, rewriter.getI32Type());
  storeBlockRows(rewriter, loc, block, rows, [&](OpBuilder &b, Location at, Value row) {
    SmallVector<BlockValue> values;
    indexing.setRowIndex(row);
    for (int64_t accumulator = 0; accumulator < indexing.vectorCount(); ++accumulator) {
      indexing.setVector(accumulator);
      SmallVector<Value> indices = indexing.of(result);
      bool inBounds = indexing.inBounds(accumulator);
      Value start = initialAccumulator(b, at, result->get(), indices, inBounds, rowType,
                                       readsInit);
      Value sum = accumulatorRow(b, at, stage, accumulator, row);
      values.push_back({arith::AddIOp::create(b, at, start, sum), indices, inBounds});
    }
    return values;
  });
}

/// Emits the microkernel for `block`, a contraction tile whose row and
/// column extents are the block's (and its epilogue), in place of it.
void emitBlock(RewriterBase &rewriter, const BlockTile &block,
               const ContractionLoops &loops, int64_t panelWidth, int64_t width,
               bool &readsInit) {
  linalg::LinalgOp tile = block.producer;
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  int64_t depth = tile.getStaticLoopRanges()[loops.k];
  // A block narrower than whole vectors masks the lanes past its last
  // column in every access but the reads of padded panels.
  BlockIndexing indexing(rewriter, loc, tile, loops, width);
  OpOperand *left = tile.getDpsInputOperand(0);
  OpOperand *right = tile.getDpsInputOperand(1);
  OpOperand *result = tile.getDpsInitOperand(0);
  Type elementType = rewriter.getF32Type();
  auto vectorType = VectorType::get({width}, elementType);
  Value padding = ub::PoisonOp::create(rewriter, loc, elementType);
  auto index = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  SmallVector<bool> inPanel{true};
  SmallVector<Value> accumulators =
      indexing.initialAccumulators(rewriter, loc, result, vectorType, readsInit);

  std::optional<PanelRead> panels =
      tracePanels(rewriter, loc, right->get(), panelWidth, /*dot=*/false);
  auto step = [&](OpBuilder &b, Location at, Value k, ValueRange sums) {
    indexing.setK(k);
    SmallVector<Value> rightVectors;
    for (int64_t vector = 0; vector < indexing.vectorCount(); ++vector) {
      if (panels) {
        rightVectors.push_back(vector::TransferReadOp::create(
            b, at, vectorType, panels->panels,
            ValueRange{panels->panel, k, indexing.column(vector)}, padding, inPanel));
        continue;
      }
      indexing.setRow(0);
      indexing.setVector(vector);
      rightVectors.push_back(vector::TransferReadOp::create(
          b, at, vectorType, right->get(), indexing.of(right), padding,
          ArrayRef<bool>{indexing.inBounds(vector)}));
    }
    SmallVector<Value> updated;
    for (int64_t row = 0; row < indexing.rowCount(); ++row) {
      indexing.setRow(row);
      indexing.setVector(0);
      Value scalar = tensor::ExtractOp::create(b, at, left->get(), indexing.of(left));
      Value broadcast = vector::BroadcastOp::create(b, at, vectorType, scalar);
      for (int64_t vector = 0; vector < indexing.vectorCount(); ++vector)
        updated.push_back(vector::FMAOp::create(b, at, broadcast, rightVectors[vector],
                                                sums[updated.size()]));
    }
    scf::YieldOp::create(b, at, updated);
  };
  auto loop = scf::ForOp::create(
      rewriter, loc, index(rewriter, 0), index(rewriter, depth), index(rewriter, 1),
      accumulators,
      [&](OpBuilder &b, Location at, Value k, ValueRange sums) { step(b, at, k, sums); });
  storeBlock(rewriter, loc, block, indexing.blockValues(loop.getResults(), result));
}

} // namespace


std::optional<ContractionLoops> matchBlockableContraction(linalg::LinalgOp op) {
  std::optional<LoweringConfig> config = loweringConfigOf(op);
  if (!config)
    return std::nullopt;
  std::optional<ContractionLoops> loops = matchContraction(op);
  if (loops && loops->dot && rightPanelWidth(op) != config->panelWidth())
    return std::nullopt;
  return loops;
}

std::optional<ContractionLoops> matchContraction(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op.getOperation()) || !op.hasPureTensorSemantics() ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  bool dot = static_cast<bool>(dotBodyElement(op));
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || (!dot && !type.getElementType().isF32()))
      return std::nullopt;
  }
  if (!dot && !linalg::isaContractionOpInterface(op))
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
  // A dot-product block reads a group of consecutive k of a left row at
  // once.
  unsigned k = dims->k.front();
  AffineMap leftMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  if (dot && (leftMap.getNumResults() == 0 ||
                  leftMap.getResults().back() != getAffineDimExpr(k, op.getContext())))
    return std::nullopt;
  return ContractionLoops{dims->m.front(), n, k,
                          SmallVector<unsigned>(dims->batch.begin(), dims->batch.end()),
                          dot};
}

bool contractionFitsAmxTiles(linalg::LinalgOp op, const ContractionLoops &loops) {
  // Rows of whole groups of four k, so that no tile reads past the left
  // operand.
  return loops.dot && isDotProductBody(op) && op.getStaticLoopRanges()[loops.k] % 4 == 0;
}

int64_t amxContractionColumns(linalg::LinalgOp op, const ContractionLoops &loops,
                              int64_t rows) {
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  return accumulatorBudget(extents[loops.m], rows, extents[loops.k] / 4) * kTileColumns;
}

ContractionBlock chooseAmxContractionBlock(linalg::LinalgOp op, const ContractionLoops &loops) {
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  int64_t rows = blockRows(extents[loops.m]);
  return {rows, std::min<int64_t>(llvm::alignTo(extents[loops.n], kTileColumns),
                                  amxContractionColumns(op, loops, rows))};
}

std::optional<int64_t> rightPanelWidth(linalg::LinalgOp op) {
  auto unpack = sliceRoot(op.getDpsInputOperand(1)->get()).getDefiningOp<linalg::UnPackOp>();
  if (!unpack)
    return std::nullopt;
  if (dotBodyElement(op))
    return packedDotPanelWidth(unpack);
  return packedPanelWidth(unpack);
}

ContractionBlock contractionBlockOf(linalg::LinalgOp op, const ContractionLoops &loops) {
  LoweringConfig config = *loweringConfigOf(op);
  AffineMap resultMap = op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)));
  ContractionBlock block{1, config.panelWidth()};
  for (auto [axis, result] : llvm::enumerate(resultMap.getResults()))
    if (cast<AffineDimExpr>(result).getPosition() == loops.m)
      block.rows = config.registerBlock[axis];
  return block;
}

std::optional<ContractionBlock> chooseContractionBlock(int64_t rowExtent,
                                                       int64_t columnExtent, int64_t width,
                                                       std::optional<DotProductKind> dot) {
  // Narrower products waste most lanes of every vector.
  if (columnExtent < width)
    return std::nullopt;
  std::optional<ContractionBlock> best;
  int64_t bestCost = 0, bestBlocks = 0;
  int64_t registers = vectorRegisters(width);
  for (int64_t vectors = 1; vectors <= kMaxRowVectors; ++vectors) {
    int64_t blockColumns = vectors * width;
    if (blockColumns > static_cast<int64_t>(llvm::alignTo(columnExtent, width)))
      break;
    int64_t panels = columnExtent / blockColumns;
    int64_t tailColumns = columnExtent % blockColumns;
    // Besides the accumulators: the loaded right-operand vectors and one
    // broadcast (prepared for dot products: two of each for the pairwise
    // form).
    int64_t operandRegisters = dot ? vectors * weightRegisters(*dot) + activationRegisters(*dot)
                                   : vectors + 1;
    int64_t maxRows =
        std::min({kMaxRows, rowExtent, (registers - operandRegisters) / vectors});
    for (int64_t rows = 1; rows <= maxRows; ++rows) {
      int64_t tailRows = rowExtent % rows;
      // A column of blocks `blockVectors` wide, its last block shorter.
      auto columnCost = [&](int64_t blockVectors) {
        return (rowExtent / rows) * blockStepCost(rows, blockVectors, dot) +
               (tailRows ? blockStepCost(tailRows, blockVectors, dot) : 0);
      };
      int64_t cost = panels * columnCost(vectors) +
                     (tailColumns ? columnCost(llvm::divideCeil(tailColumns, width)) : 0);
      int64_t blocks = (panels + (tailColumns > 0)) * llvm::divideCeil(rowExtent, rows);
      if (!best || cost < bestCost || (cost == bestCost && blocks < bestBlocks)) {
        best = ContractionBlock{rows, blockColumns};
        bestCost = cost;
        bestBlocks = blocks;
      }
    }
  }
  return best;
}

std::optional<int64_t> packedDotPanelWidth(linalg::UnPackOp unpack) {
  RankedTensorType source = unpack.getSourceType(), dest = unpack.getDestType();
  if (source.getRank() != 4 || dest.getRank() != 2 || !source.hasStaticShape() ||
      !dest.hasStaticShape() ||
      !(source.getElementType().isInteger(8) || source.getElementType().isBF16()) ||
      unpack.getInnerDimsPos() != ArrayRef<int64_t>{1, 0} ||
      unpack.getOuterDimsPerm() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  ArrayRef<int64_t> tiles = unpack.getStaticInnerTiles();
  if (tiles.size() != 2 || ShapedType::isDynamic(tiles[0]) ||
      tiles[1] != dotGroupSize(source.getElementType()) ||
      static_cast<int64_t>(llvm::divideCeil(dest.getDimSize(1), tiles[0])) !=
          source.getDimSize(0))
    return std::nullopt;
  return tiles[0];
}

std::optional<int64_t> packedPanelWidth(linalg::UnPackOp unpack) {
  RankedTensorType source = unpack.getSourceType(), dest = unpack.getDestType();
  if (source.getRank() != 3 || dest.getRank() != 2 || !source.hasStaticShape() ||
      !dest.hasStaticShape() || unpack.getInnerDimsPos() != ArrayRef<int64_t>{1} ||
      unpack.getOuterDimsPerm() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  ArrayRef<int64_t> tiles = unpack.getStaticInnerTiles();
  if (tiles.size() != 1 || ShapedType::isDynamic(tiles[0]) ||
      static_cast<int64_t>(llvm::divideCeil(dest.getDimSize(1), tiles[0])) !=
          source.getDimSize(0))
    return std::nullopt;
  return tiles[0];
}

LogicalResult registerBlockContraction(RewriterBase &rewriter, linalg::LinalgOp op,
                                       int64_t width) {
  std::optional<ContractionLoops> loops = matchBlockableContraction(op);
  if (!loops)
    return failure();
  LoweringConfig config = *loweringConfigOf(op);
  int64_t columns = config.panelWidth();

  // Blocks per axis of the result, the config's; columns outermost, so that
  // a panel of the right operand stays in cache while the rows walk it. The
  // last block of columns or rows may be narrower.
  BlockedOp blocked(op);
  AffineMap resultMap = op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)));
  SmallVector<unsigned> batchAxes;
  unsigned rowAxis = 0, columnAxis = 0;
  for (unsigned axis = 0; axis < resultMap.getNumResults(); ++axis) {
    unsigned loop = resultMap.getDimPosition(axis);
    if (loop == loops->m)
      rowAxis = axis;
    else if (loop == loops->n)
      columnAxis = axis;
    else
      batchAxes.push_back(axis);
  }
  SmallVector<unsigned> order = batchAxes;
  order.append({columnAxis, rowAxis});
  Operation *init = initComputation(op);
  bool readsInit = false;
  if (failed(blockPieces(rewriter, blocked, blocked.root(), config.registerBlock,
                         {columnAxis, rowAxis}, order,
                         [&](const BlockTile &tile, ArrayRef<int64_t>) {
                           if (config.dotProduct == DotProductKind::Amx)
                             emitAmxBlock(rewriter, tile, *loops, columns, readsInit);
                           else if (loops->dot)
                             emitDotBlock(rewriter, tile, *loops, columns, width,
                                          *config.dotProduct, readsInit);
                           else
                             emitBlock(rewriter, tile, *loops, columns, width, readsInit);
                         })))
    return failure();
  if (!readsInit)
    dropInitComputation(rewriter, init);
  return success();
}

} // namespace tessel::x86
