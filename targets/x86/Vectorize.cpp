//===- Vectorize.cpp - Vector-sized tiles, vectorized ---------------------===//

#include "targets/x86/BlockingUtils.h"
#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/ConvolutionBlocking.h"
#include "targets/x86/LoweringConfig.h"
#include "targets/x86/Passes.h"
#include "targets/x86/RowReduction.h"
#include "targets/x86/RegisterBudget.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/bit.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86VECTORIZEPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// The largest divisor of `extent` that is at most `limit`, preferring
/// multiples of `multiple`: tiles of equal static shape vectorize without
/// masks.
int64_t divisorTile(int64_t extent, int64_t limit, int64_t multiple) {
  int64_t best = 1;
  for (int64_t tile = std::min(extent, limit); tile >= 1; --tile) {
    if (extent % tile != 0)
      continue;
    if (tile % multiple == 0)
      return tile;
    best = std::max(best, tile);
  }
  return best;
}

/// Register-sized tiles for `op`, or nullopt to leave it as loops.
std::optional<SmallVector<int64_t>> vectorTiles(linalg::LinalgOp op,
                                                int64_t width) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0)
    return std::nullopt;
  if (isa<linalg::ConvolutionOpInterface>(op.getOperation()))
    return std::nullopt;
  // Booleans and 4- and 2-bit types are a byte each in memory, but LLVM
  // stores vectors of them as packed bits: ops that touch them stay scalar.
  for (OpOperand &operand : op->getOpOperands())
    if (getElementTypeOrSelf(operand.get().getType()).getIntOrFloatBitWidth() < 8)
      return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return std::nullopt;
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  if (llvm::any_of(extents, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<int64_t> tiles(extents.size(), 1);

  // A contraction: an m x n block of accumulators in registers, k stepped
  // one at a time (outer products).
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (succeeded(dims) && dims->m.size() == 1 && dims->n.size() == 1 &&
      dims->k.size() == 1 && isa<linalg::GenericOp>(op.getOperation())) {
    // Few rows (a matrix-vector product) get wider rows, so that enough
    // independent FMAs hide their latency.
    int64_t m = divisorTile(extents[dims->m.front()], 6, 1);
    // A power-of-two count of registers per row: LLVM splits a row of 3
    // vectors badly (a 4x24 block ran 6x slower than a 4x16 one).
    int64_t rowRegisters = std::max<int64_t>(
        2, llvm::bit_floor(uint64_t(accumulatorRegisters(width) / m)));
    tiles[dims->m.front()] = m;
    tiles[dims->n.front()] =
        divisorTile(extents[dims->n.front()], rowRegisters * width, width);
    return tiles;
  }
  // Elementwise maps and reductions: rows along the innermost loop.
  tiles.back() = divisorTile(extents.back(), 4 * width, width);
  // A transpose (NCHW to NHWC) would read each result row as a gather
  // across the input's rows. Blocks of a vector along the loop that is
  // contiguous in the input by at most a vector of the result's row read
  // whole input vectors instead and transpose them in registers.
  unsigned last = extents.size() - 1;
  if (op.getNumParallelLoops() == op.getNumLoops()) {
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      // An input broadcast along the rows (a gather's indices) is read
      // once per row, not across rows.
      if (map.getNumResults() == 0 || !map.isFunctionOfDim(last))
        continue;
      unsigned contiguous = cast<AffineDimExpr>(map.getResults().back()).getPosition();
      if (contiguous != last && extents[contiguous] >= width) {
        tiles[contiguous] = divisorTile(extents[contiguous], width, width);
        tiles[last] = divisorTile(extents[last], width, width);
        break;
      }
    }
  }
  return tiles;
}

/// Tiles `op` by `tiles` and vectorizes each tile, at `vectorSizes` when
/// given (larger than the tile: the lanes past it are masked). An op that
/// does not vectorize stays as loops.
void vectorizeTiled(RewriterBase &rewriter, linalg::LinalgOp op, ArrayRef<int64_t> tiles,
                    ArrayRef<int64_t> vectorSizes = {}) {
  linalg::LinalgOp target = op;
  if (llvm::any_of(llvm::zip(tiles, op.getStaticLoopRanges()),
                   [](auto pair) { return std::get<0>(pair) < std::get<1>(pair); })) {
    FailureOr<linalg::LinalgOp> tiled = tileOp(rewriter, op, tiles);
    if (failed(tiled))
      return;
    target = *tiled;
  }
  rewriter.setInsertionPoint(target);
  // Scalable flags spelled out: mask types built without them differ from
  // the ones the transfer ops infer, though they print the same.
  SmallVector<bool> scalable(vectorSizes.size(), false);
  // Gathers (tensor.extract at computed indices) too, as vector gathers,
  // in whole tiles: masked ones build transfers that fail to verify
  // (MLIR 22).
  FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
      rewriter, target, vectorSizes, scalable, /*vectorizeNDExtract=*/vectorSizes.empty());
  if (failed(vectorized))
    return;
  rewriter.replaceOp(target, vectorized->replacements);
}

/// Whether `op` divides integers: LLVM computes every lane of a masked
/// vector, and the padding lanes' zero divisors would trap.
bool dividesIntegers(linalg::LinalgOp op) {
  return op->walk([](Operation *inner) {
           return isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
                      arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(inner)
                      ? WalkResult::interrupt()
                      : WalkResult::advance();
         }).wasInterrupted();
}

/// Vectorizes `op` in `tiles`. When the last loop is not a multiple of the
/// vector width, its last elements are split off and vectorized as one
/// masked vector: rows of 197 or 7 elements would otherwise get tiles of
/// one element (197 is prime) or odd-sized vectors that LLVM splits.
void vectorizeRows(RewriterBase &rewriter, linalg::LinalgOp op, SmallVector<int64_t> tiles,
                   int64_t width) {
  unsigned last = op.getNumLoops() - 1;
  int64_t extent = op.getStaticLoopRanges()[last];
  int64_t tail = extent % width;
  // Whole short rows, several at a time (a transpose's blocks): the rows
  // together fill the vectors without masks.
  bool transposeBlocks =
      llvm::any_of(ArrayRef(tiles).drop_back(), [](int64_t tile) { return tile > 1; });
  bool wholeShortRows = extent < width && tiles[last] == extent && transposeBlocks;
  if (tail == 0 || tiles[last] % width == 0 || wholeShortRows || dividesIntegers(op)) {
    vectorizeTiled(rewriter, op, tiles);
    return;
  }
  linalg::LinalgOp tailOp = op;
  if (extent > width) {
    rewriter.setInsertionPoint(op);
    auto [head, rest] = linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                                        last, rewriter.getIndexAttr(extent - tail));
    SmallVector<int64_t> headTiles = tiles;
    // A transpose's blocks stay square (width x width), the shape whose
    // transpose lowers to in-register shuffles.
    headTiles[last] = divisorTile(extent - tail, transposeBlocks ? width : 4 * width, width);
    vectorizeTiled(rewriter, cast<linalg::LinalgOp>(head.getOperation()), headTiles);
    tailOp = cast<linalg::LinalgOp>(rest.getOperation());
  }
  tiles[last] = tail;
  SmallVector<int64_t> vectorSizes = tiles;
  vectorSizes[last] = width;
  vectorizeTiled(rewriter, tailOp, tiles, vectorSizes);
}

/// linalg's pad decomposition, for the pads that are materialized.
struct DecomposeMaterializedPad : linalg::DecomposePadOpPattern {
  using DecomposePadOpPattern::DecomposePadOpPattern;

  LogicalResult matchAndRewrite(tensor::PadOp pad,
                                PatternRewriter &rewriter) const override {
    if (padsChannelsLastWindow(pad))
      return failure();
    return DecomposePadOpPattern::matchAndRewrite(pad, rewriter);
  }
};

struct TesselX86VectorizePass
    : impl::TesselX86VectorizePassBase<TesselX86VectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    MLIRContext *context = &getContext();
    // Padding becomes a fill and a copy of the source into it, which
    // vectorize (a tensor.pad would bufferize into scalar loops), unless
    // register blocks read through it.
    RewritePatternSet pads(context);
    pads.add<DecomposeMaterializedPad>(context);
    if (failed(applyPatternsGreedily(function, std::move(pads))))
      return signalPassFailure();

    // Register blocks first: they read the fills and bias broadcasts that
    // initialize them (and absorb the elementwise ops after them) before
    // those would be vectorized on their own.
    IRRewriter rewriter(context);
    SmallVector<linalg::LinalgOp> blockable;
    WalkResult configs = function.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kLoweringConfigAttr) &&
          failed(verifyLoweringConfig(op, vectorWidth)))
        return WalkResult::interrupt();
      if (isBlockableChannelsLast(op) || matchBlockableContraction(op) ||
          isa<linalg::Conv2DNchwFchwOp, linalg::DepthwiseConv2DNchwChwOp>(op.getOperation()))
        blockable.push_back(op);
      return WalkResult::advance();
    });
    if (configs.wasInterrupted())
      return signalPassFailure();
    for (linalg::LinalgOp op : blockable)
      if (failed(registerBlockChannelsLast(rewriter, op, vectorWidth)) &&
          failed(registerBlockConvolution(rewriter, op, vectorWidth)))
        (void)registerBlockContraction(rewriter, op, vectorWidth);

    SmallVector<linalg::LinalgOp> ops;
    function.walk([&](linalg::LinalgOp op) {
      if (!isBlockableChannelsLast(op) && !matchBlockableContraction(op))
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops) {
      if (succeeded(vectorizeRowReduction(rewriter, op, vectorWidth)))
        continue;
      std::optional<SmallVector<int64_t>> tiles = vectorTiles(op, vectorWidth);
      if (!tiles)
        continue;
      vectorizeRows(rewriter, op, *tiles, vectorWidth);
    }

    // Masked transfers become transfers with a mask operand first: the
    // folding patterns below do not look inside vector.mask.
    RewritePatternSet masks(context);
    vector::populateVectorMaskLoweringPatternsForSideEffectingOps(masks);
    if (failed(applyPatternsGreedily(function, std::move(masks))))
      return signalPassFailure();

    RewritePatternSet patterns(context);
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(patterns);
    vector::populateVectorReductionToContractPatterns(patterns);
    vector::populateSinkVectorOpsPatterns(patterns);
    vector::TransferReadOp::getCanonicalizationPatterns(patterns, context);
    vector::TransferWriteOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsGreedily(function, std::move(patterns))))
      return signalPassFailure();

    // Register blocks read packed weights from their panels and leave the
    // unpack dead. One that a product still reads (a product of a shared
    // weight that was not blocked in the end) is materialized instead: a
    // reshape, a transpose and a slice.
    SmallVector<linalg::UnPackOp> unpacks;
    function.walk([&](linalg::UnPackOp unpack) {
      if (!unpack->use_empty())
        unpacks.push_back(unpack);
    });
    for (linalg::UnPackOp unpack : unpacks) {
      rewriter.setInsertionPoint(unpack);
      if (failed(linalg::lowerUnPack(rewriter, unpack)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace tessel::x86
