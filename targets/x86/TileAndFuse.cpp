//===- TileAndFuse.cpp - Workgroup tiling with producer fusion ------------===//

#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86TILEANDFUSEPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// The op whose result the kernel returns, looking through reshapes (views).
TilingInterface findRoot(func::FuncOp function) {
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  if (ret.getNumOperands() != 1)
    return {};
  Value value = ret.getOperand(0);
  while (Operation *op = value.getDefiningOp()) {
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
      break;
    value = op->getOperand(0);
  }
  return value.getDefiningOp<TilingInterface>();
}

/// Iterations of the kernel's costliest loop nest: a convolution's reduction
/// loops count even when the kernel's root is the elementwise op after it.
int64_t kernelWork(func::FuncOp function) {
  int64_t work = 1;
  function.walk([&](linalg::LinalgOp op) {
    int64_t iterations = 1;
    for (int64_t extent : op.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(extent) || extent <= 0)
        return;
      iterations = iterations > std::numeric_limits<int64_t>::max() / extent
                       ? std::numeric_limits<int64_t>::max()
                       : iterations * extent;
    }
    work = std::max(work, iterations);
  });
  return work;
}

/// How the workgroup tiles of a kernel's root must be shaped.
struct TileConstraints {
  /// Per root loop: what its tile must be a multiple of.
  SmallVector<int64_t> granules;
  /// The root loop split first, if any.
  std::optional<unsigned> first;
};

/// A kernel with a register-blocked contraction (ContractionBlocking) needs
/// whole blocks per workgroup, and splits the contraction's columns first:
/// a workgroup then reads only its own panels of the right operand, each
/// once for all rows. The root is the contraction or an elementwise op on
/// its result (an epilogue), whose loops are the result's axes.
TileConstraints constraintsFor(func::FuncOp function, TilingInterface root,
                               int64_t vectorWidth) {
  TileConstraints constraints;
  constraints.granules.assign(root.getLoopIteratorTypes().size(), 1);
  linalg::LinalgOp contraction;
  std::optional<ContractionLoops> loops;
  function.walk([&](linalg::LinalgOp op) {
    if (!loops && (loops = matchBlockableContraction(op)))
      contraction = op;
  });
  if (!loops)
    return constraints;
  SmallVector<int64_t> extents = contraction.getStaticLoopRanges();
  std::optional<ContractionBlock> block =
      chooseContractionBlock(extents[loops->m], extents[loops->n], vectorWidth);
  if (!block)
    return constraints;

  AffineMap resultMap = contraction.getIndexingMapMatchingResult(
      cast<OpResult>(contraction->getResult(0)));
  // Root loop d -> contraction loop.
  SmallVector<unsigned> loopOf;
  if (root.getOperation() == contraction.getOperation()) {
    loopOf = llvm::to_vector(llvm::seq<unsigned>(0, contraction.getNumLoops()));
  } else {
    auto epilogue = dyn_cast<linalg::LinalgOp>(root.getOperation());
    if (!epilogue || epilogue.getNumLoops() != resultMap.getNumResults() ||
        epilogue.getNumParallelLoops() != epilogue.getNumLoops() ||
        epilogue->getResult(0).getType() != contraction->getResult(0).getType() ||
        !epilogue.getIndexingMapMatchingResult(cast<OpResult>(epilogue->getResult(0)))
             .isIdentity())
      return constraints;
    for (unsigned d = 0; d < resultMap.getNumResults(); ++d)
      loopOf.push_back(resultMap.getDimPosition(d));
  }
  for (auto [d, loop] : llvm::enumerate(loopOf)) {
    if (loop == loops->n) {
      constraints.granules[d] = block->columns;
      constraints.first = d;
    } else if (loop == loops->m) {
      // A shorter last block of rows cannot be split off a workgroup.
      int64_t rows = extents[loops->m];
      constraints.granules[d] = rows % block->rows ? rows : block->rows;
    }
  }
  return constraints;
}

/// Splits the parallel loops, outermost first (or `constraints.first`
/// first), so that the kernel has about `work / minWork` workgroups (at most
/// `maxWorkgroups`). Tile sizes divide the loop extents, so every workgroup
/// has the same static shape, are multiples of the granules, and stay large
/// enough for register blocks: 8 along outer loops (output channels, rows),
/// 64 along the innermost, contiguous one.
SmallVector<int64_t> chooseWorkgroupTiles(TilingInterface root, int64_t work,
                                          int64_t maxWorkgroups, int64_t minWork,
                                          const TileConstraints &constraints) {
  OpBuilder builder(root);
  SmallVector<Range> domain = root.getIterationDomain(builder);
  SmallVector<utils::IteratorType> iterators = root.getLoopIteratorTypes();
  SmallVector<int64_t> extents;
  for (Range range : domain) {
    std::optional<int64_t> size = getConstantIntValue(range.size);
    if (!size)
      return SmallVector<int64_t>(domain.size(), 0);
    extents.push_back(*size);
  }
  int64_t innermostParallel = -1;
  for (size_t d = 0; d < domain.size(); ++d)
    if (iterators[d] == utils::IteratorType::parallel)
      innermostParallel = d;

  SmallVector<unsigned> order;
  if (constraints.first)
    order.push_back(*constraints.first);
  for (unsigned d = 0; d < domain.size(); ++d)
    if (d != constraints.first)
      order.push_back(d);

  int64_t wanted = std::clamp<int64_t>(work / minWork, 1, maxWorkgroups);
  SmallVector<int64_t> tiles(domain.size(), 0);
  for (unsigned d : order) {
    int64_t extent = extents[d];
    if (wanted <= 1 || iterators[d] != utils::IteratorType::parallel || extent <= 1)
      continue;
    int64_t granule = constraints.granules[d];
    int64_t minTile = llvm::alignTo(
        std::min<int64_t>(extent, static_cast<int64_t>(d) == innermostParallel ? 64 : 8),
        granule);
    // The smallest multiple of the granule dividing the extent, at least
    // minTile, that makes at most `wanted` parts.
    int64_t tile = std::max<int64_t>(
        minTile, llvm::alignTo(llvm::divideCeil(extent, wanted), granule));
    while (tile < extent && extent % tile != 0)
      tile += granule;
    if (tile >= extent)
      continue;
    tiles[d] = tile;
    wanted = llvm::divideCeil(wanted, extent / tile);
  }
  return tiles;
}

struct TesselX86TileAndFusePass
    : impl::TesselX86TileAndFusePassBase<TesselX86TileAndFusePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    TilingInterface root = findRoot(function);
    if (!root)
      return;
    SmallVector<int64_t> tiles =
        chooseWorkgroupTiles(root, kernelWork(function), maxWorkgroups, minWorkPerWorkgroup,
                             constraintsFor(function, root, vectorWidth));
    if (llvm::all_of(tiles, [](int64_t t) { return t == 0; }))
      return;

    MLIRContext *context = &getContext();
    scf::SCFTilingOptions tiling;
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
        .setTileSizes(getAsIndexOpFoldResult(context, tiles));
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    // Fuse every producer that computes something; constants stay shared,
    // and so do weights unpacked from panels, which blocks read in place.
    options.setFusionControlFn(
        [](tensor::ExtractSliceOp, OpResult producer,
           bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          if (!isa<TilingInterface>(producer.getOwner()) ||
              isa<linalg::UnPackOp>(producer.getOwner()))
            return std::nullopt;
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        });

    IRRewriter rewriter(context);
    rewriter.setInsertionPoint(root);
    FailureOr<scf::SCFTileAndFuseResult> result =
        scf::tileConsumerAndFuseProducersUsingSCF(rewriter, root, options);
    if (failed(result)) {
      root.emitError("tiling the kernel into workgroups failed");
      return signalPassFailure();
    }
    for (OpResult value : root->getResults())
      rewriter.replaceAllUsesWith(value, result->replacements.lookup(value));
  }
};

} // namespace
} // namespace tessel::x86
