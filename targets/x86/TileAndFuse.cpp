//===- TileAndFuse.cpp - Workgroup tiling with producer fusion ------------===//

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

/// Splits the outermost parallel loops so that the kernel has about
/// `work / minWork` workgroups (at most `maxWorkgroups`). Tile sizes divide
/// the loop extents, so every workgroup has the same static shape, and stay
/// large enough for register blocks: 8 along outer loops (output channels,
/// rows), 64 along the innermost, contiguous one.
SmallVector<int64_t> chooseWorkgroupTiles(TilingInterface root, int64_t work,
                                          int64_t maxWorkgroups,
                                          int64_t minWork) {
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

  int64_t wanted = std::clamp<int64_t>(work / minWork, 1, maxWorkgroups);
  SmallVector<int64_t> tiles(domain.size(), 0);
  for (size_t d = 0; d < domain.size() && wanted > 1; ++d) {
    int64_t extent = extents[d];
    if (iterators[d] != utils::IteratorType::parallel || extent <= 1)
      continue;
    int64_t minTile = std::min<int64_t>(
        extent, static_cast<int64_t>(d) == innermostParallel ? 64 : 8);
    // The smallest divisor of the extent, at least minTile, that makes at
    // most `wanted` parts.
    int64_t tile = std::max<int64_t>(minTile, llvm::divideCeil(extent, wanted));
    while (extent % tile != 0)
      ++tile;
    if (tile == extent)
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
    SmallVector<int64_t> tiles = chooseWorkgroupTiles(
        root, kernelWork(function), maxWorkgroups, minWorkPerWorkgroup);
    if (llvm::all_of(tiles, [](int64_t t) { return t == 0; }))
      return;

    MLIRContext *context = &getContext();
    scf::SCFTilingOptions tiling;
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
        .setTileSizes(getAsIndexOpFoldResult(context, tiles));
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    // Fuse every producer that computes something; constants stay shared.
    options.setFusionControlFn(
        [](tensor::ExtractSliceOp, OpResult producer,
           bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          if (!isa<TilingInterface>(producer.getOwner()))
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
