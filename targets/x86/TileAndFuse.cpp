//===- TileAndFuse.cpp - Workgroup tiling with producer fusion ------------===//

#include "passes/Passes.h"
#include "targets/x86/BlockingUtils.h"
#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/ConcatenationTiles.h"
#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/LoweringConfig.h"
#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
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

/// Scalar operations per iteration of `op`'s body, a transcendental function
/// (a polynomial of a dozen operations once expanded) counting for many: a
/// softmax's exponentials are worth splitting over threads long before its
/// additions would be.
int64_t bodyCost(linalg::LinalgOp op) {
  constexpr int64_t kTranscendentalCost = 12;
  int64_t cost = 0;
  for (Operation &inner : op->getRegion(0).front().without_terminator())
    cost += isa<math::MathDialect>(inner.getDialect()) ? kTranscendentalCost : 1;
  return std::max<int64_t>(cost, 1);
}

/// Bytes of the tensors `op` reads and writes.
int64_t bytesTouched(linalg::LinalgOp op) {
  int64_t bytes = 0;
  for (OpOperand &operand : op->getOpOperands())
    bytes += operandBytes(operand);
  return bytes;
}

/// Work of the kernel's costliest loop nest, in scalar operations: a
/// convolution's reduction loops count even when the kernel's root is the
/// elementwise op after it. A byte moved counts as one operation (a core
/// moves about as many bytes per cycle from L2 as it does f32 operations),
/// so that a matrix-vector product, which does two operations per 4-byte
/// weight, is split once its weight is large enough for its cores' caches
/// to share.
int64_t kernelWork(func::FuncOp function) {
  int64_t work = 1;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  function.walk([&](linalg::LinalgOp op) {
    work = std::max(work, bytesTouched(op));
    int64_t iterations = 1;
    for (int64_t extent : op.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(extent) || extent <= 0)
        return;
      iterations = iterations > kMax / extent ? kMax : iterations * extent;
    }
    int64_t cost = bodyCost(op);
    work = std::max(work, iterations > kMax / cost ? kMax : iterations * cost);
  });
  return work;
}

/// How the workgroup tiles of a kernel's root must be shaped.
struct TileConstraints {
  /// Per root loop: what its tile must be a multiple of, and the least
  /// tile worth a workgroup (0: the default, 64 along the innermost loop).
  SmallVector<int64_t> granules;
  SmallVector<int64_t> minTiles;
  /// Per root loop: the largest tile allowed (0: any).
  SmallVector<int64_t> maxTiles;
  /// The root loop split first, if any.
  std::optional<unsigned> first;
};

/// Root loop d -> axis of `op`'s result, when the root is `op` itself or an
/// elementwise op on `op`'s result (an epilogue), whose loops are the
/// result's axes.
std::optional<SmallVector<unsigned>> resultAxesOfRoot(TilingInterface root,
                                                      linalg::LinalgOp op) {
  auto result = cast<OpResult>(op->getResult(0));
  int64_t rank = cast<RankedTensorType>(result.getType()).getRank();
  if (root.getOperation() != op.getOperation()) {
    auto epilogue = dyn_cast<linalg::LinalgOp>(root.getOperation());
    if (!epilogue || epilogue.getNumLoops() != rank ||
        epilogue.getNumParallelLoops() != epilogue.getNumLoops() ||
        cast<ShapedType>(epilogue->getResult(0).getType()).getShape() !=
            cast<ShapedType>(result.getType()).getShape() ||
        !epilogue.getIndexingMapMatchingResult(cast<OpResult>(epilogue->getResult(0)))
             .isIdentity())
      return std::nullopt;
  }
  return llvm::to_vector(llvm::seq<unsigned>(0, rank));
}

/// Bytes of the score matrix that a workgroup of an attention kernel may
/// hold: the scores of its query rows stay in L1 between the product that
/// writes them, the softmax and the product that reads them.
constexpr int64_t kScoreTileBytes = 32 * 1024;

/// Attention: `product` is probabilities x V, the root or the op whose
/// epilogue the root is (root loop d is the product's result axis d), and
/// `scores` (Q x K) feeds the softmax that computes the probabilities. A
/// workgroup takes whole rows of the output, or each part of a row would
/// compute the row's scores again, and one batch entry (head) and as many
/// query rows as have their scores fit kScoreTileBytes, if a number that
/// large divides them.
TileConstraints attentionConstraints(linalg::LinalgOp scores, linalg::LinalgOp product,
                                     TileConstraints constraints) {
  std::optional<ContractionLoops> loops = matchBlockableContraction(product);
  std::optional<ContractionLoops> scoreLoops = matchBlockableContraction(scores);
  if (!loops || !scoreLoops)
    return constraints;
  SmallVector<int64_t> extents = product.getStaticLoopRanges();
  ContractionBlock block = contractionBlockOf(product, *loops);
  int64_t keys = scores.getStaticLoopRanges()[scoreLoops->n];
  AffineMap resultMap =
      product.getIndexingMapMatchingResult(cast<OpResult>(product->getResult(0)));
  for (unsigned axis = 0; axis < resultMap.getNumResults(); ++axis) {
    unsigned loop = resultMap.getDimPosition(axis);
    if (loop == loops->n) {
      constraints.granules[axis] = constraints.minTiles[axis] = extents[loop];
    } else if (loop == loops->m) {
      // Any number of query rows from one block up: a workgroup's last
      // block of rows may be smaller (both products' blocks have tails).
      constraints.minTiles[axis] = std::min(extents[loop], block.rows);
      constraints.maxTiles[axis] = std::max<int64_t>(
          kScoreTileBytes / (keys * static_cast<int64_t>(sizeof(float))), 1);
    } else {
      constraints.maxTiles[axis] = 1;
    }
  }
  return constraints;
}

/// A kernel with a register-blocked contraction (ContractionBlocking) or
/// NHWC window op (ChannelsLastBlocking) needs whole blocks of its lowering
/// config per workgroup, and splits first the axis that keeps each
/// workgroup's reads smallest (splitsLastAxisFirst). Any number of whole
/// blocks, or of whole batch entries, is worth a workgroup.
TileConstraints constraintsFor(func::FuncOp function, TilingInterface root) {
  TileConstraints constraints;
  size_t rootLoops = root.getLoopIteratorTypes().size();
  constraints.granules.assign(rootLoops, 1);
  constraints.minTiles.assign(rootLoops, 0);
  constraints.maxTiles.assign(rootLoops, 0);
  // A softmax or a normalization reduces rows that its last map, the root,
  // then reads: a workgroup takes whole rows, or each part of a row would
  // compute the row's statistics again.
  bool rowReduction = false;
  function.walk([&](linalg::LinalgOp op) {
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    if (op.getOperation() != root.getOperation() && !iterators.empty() &&
        iterators.back() == utils::IteratorType::reduction && !matchBlockableContraction(op) &&
        !isBlockableChannelsLast(op))
      rowReduction = true;
  });
  auto rootOp = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (rowReduction && rootOp && rootLoops > 0 &&
      rootOp.getNumParallelLoops() == rootOp.getNumLoops()) {
    int64_t extent = rootOp.getStaticLoopRanges().back();
    if (!ShapedType::isDynamic(extent))
      constraints.granules.back() = constraints.minTiles.back() = extent;
  }
  // The blocked op that the root is, or whose epilogue it is, is the last.
  SmallVector<linalg::LinalgOp> blockedOps;
  function.walk([&](linalg::LinalgOp op) {
    if (matchBlockableContraction(op) || isBlockableChannelsLast(op))
      blockedOps.push_back(op);
  });
  if (blockedOps.empty())
    return constraints;
  linalg::LinalgOp blocked = blockedOps.back();
  std::optional<SmallVector<unsigned>> axes = resultAxesOfRoot(root, blocked);
  if (!axes)
    return constraints;
  // Two products in one kernel: attention (see tessel-form-kernels).
  if (blockedOps.size() == 2)
    return attentionConstraints(blockedOps.front(), blocked, std::move(constraints));

  ArrayRef<int64_t> axisExtents =
      cast<RankedTensorType>(blocked->getResult(0).getType()).getShape();
  SmallVector<int64_t> axisBlocks = loweringConfigOf(blocked)->registerBlock;
  std::optional<unsigned> firstAxis;
  if (splitsLastAxisFirst(blocked))
    firstAxis = axisExtents.size() - 1;
  // A shorter last block cannot go to a workgroup of its own: workgroups
  // have one static shape.
  for (auto [d, axis] : llvm::enumerate(*axes)) {
    int64_t extent = axisExtents[axis], blockExtent = axisBlocks[axis];
    constraints.granules[d] = extent % blockExtent ? extent : blockExtent;
    constraints.minTiles[d] = constraints.granules[d];
    if (axis == firstAxis)
      constraints.first = d;
  }
  return constraints;
}

/// The root loop along the kernel's length axis (tessel.length_axis on its
/// result), when the root is a linalg op whose result reaches the kernel's
/// through reshapes: they keep the elements' order, so the axis is the one
/// as long as the bound with as many elements after it.
std::optional<unsigned> lengthLoop(func::FuncOp function, TilingInterface root) {
  auto axis = function.getResultAttrOfType<IntegerAttr>(0, kLengthAxisAttr);
  auto rootOp = dyn_cast<linalg::LinalgOp>(root.getOperation());
  if (!axis || !rootOp || rootOp->getNumResults() != 1)
    return std::nullopt;
  auto kernelType = cast<RankedTensorType>(function.getResultTypes()[0]);
  auto rootType = cast<RankedTensorType>(rootOp->getResult(0).getType());
  if (!kernelType.hasStaticShape() || !rootType.hasStaticShape() || axis.getInt() < 0 ||
      axis.getInt() >= kernelType.getRank())
    return std::nullopt;
  int64_t bound = kernelType.getDimSize(axis.getInt());
  int64_t inner = elementsAfter(kernelType, axis.getInt());
  AffineMap map = rootOp.getIndexingMapMatchingResult(cast<OpResult>(rootOp->getResult(0)));
  for (int64_t rootAxis = 0; rootAxis < rootType.getRank(); ++rootAxis) {
    if (rootType.getDimSize(rootAxis) != bound || elementsAfter(rootType, rootAxis) != inner)
      continue;
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(rootAxis));
    if (!dim || rootOp.getIteratorTypesArray()[dim.getPosition()] != utils::IteratorType::parallel)
      return std::nullopt;
    return dim.getPosition();
  }
  return std::nullopt;
}

/// Splits `loop`, along the kernel's length axis, first and into tiles of
/// about lengthTile() positions, so that a run at a shorter length skips
/// the workgroups past it; false if no such tile fits the constraints.
/// Tiles hold whole register blocks where blocks divide the extent; where
/// they do not, each tile ends in a shorter block of its own, as all of
/// them do when the extent is one tile.
bool splitLengthFirst(unsigned loop, int64_t extent, TileConstraints &constraints) {
  bool wholeBlocks = constraints.granules[loop] < extent;
  int64_t granule = wholeBlocks ? constraints.granules[loop] : 1;
  int64_t least = std::max(lengthTile(extent), wholeBlocks ? constraints.minTiles[loop] : 1);
  int64_t most = constraints.maxTiles[loop] ? constraints.maxTiles[loop] : extent;
  for (int64_t tile = llvm::alignTo(least, granule); tile < extent && tile <= most;
       tile += granule) {
    if (extent % tile != 0)
      continue;
    constraints.granules[loop] = granule;
    constraints.minTiles[loop] = constraints.maxTiles[loop] = tile;
    constraints.first = loop;
    return true;
  }
  return false;
}

/// Splits the parallel loops, outermost first (or `constraints.first`
/// first), so that the kernel has about `work / minWork` workgroups (at most
/// `maxWorkgroups`). Tile sizes divide the loop extents, so every workgroup
/// has the same static shape, are multiples of the granules (whole register
/// blocks), and by default at least 64 along the innermost, contiguous loop,
/// which is vectorized.
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
    int64_t maxTile = constraints.maxTiles[d] ? constraints.maxTiles[d] : extent;
    if ((wanted <= 1 && maxTile >= extent) ||
        iterators[d] != utils::IteratorType::parallel || extent <= 1)
      continue;
    int64_t granule = constraints.granules[d];
    int64_t minTile = constraints.minTiles[d];
    if (!minTile)
      minTile = llvm::alignTo(
          std::min<int64_t>(extent, static_cast<int64_t>(d) == innermostParallel ? 64 : 1),
          granule);
    // The smallest multiple of the granule dividing the extent, at least
    // minTile, that makes at most `wanted` parts.
    int64_t tile = std::max<int64_t>(
        minTile, llvm::alignTo(llvm::divideCeil(extent, wanted), granule));
    while (tile < extent && extent % tile != 0)
      tile += granule;
    // Down to the largest allowed tile, if one divides the extent.
    for (int64_t smaller = llvm::alignDown(maxTile, granule);
         tile > maxTile && smaller >= std::max(minTile, granule); smaller -= granule)
      if (extent % smaller == 0)
        tile = smaller;
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
    if (!root) {
      IRRewriter rewriter(&getContext());
      tileConcatenation(rewriter, function, maxWorkgroups, minWorkPerWorkgroup);
      return;
    }
    TileConstraints constraints = constraintsFor(function, root);
    std::optional<unsigned> length = lengthLoop(function, root);
    if (length) {
      OpBuilder builder(root);
      std::optional<int64_t> extent =
          getConstantIntValue(root.getIterationDomain(builder)[*length].size);
      if (!extent || !splitLengthFirst(*length, *extent, constraints))
        length.reset();
    }
    SmallVector<int64_t> tiles = chooseWorkgroupTiles(root, kernelWork(function), maxWorkgroups,
                                                      minWorkPerWorkgroup, constraints);
    if (llvm::all_of(tiles, [](int64_t t) { return t == 0; }))
      return;

    MLIRContext *context = &getContext();
    scf::SCFTilingOptions tiling;
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
        .setTileSizes(getAsIndexOpFoldResult(context, tiles));
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    // Fuse every producer that computes something; constants stay shared,
    // and so do weights unpacked from panels and images padded for NHWC
    // window ops, which blocks read in place.
    options.setFusionControlFn(
        [](tensor::ExtractSliceOp, OpResult producer,
           bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          Operation *op = producer.getOwner();
          if (!isa<TilingInterface>(op) || isa<linalg::UnPackOp>(op) ||
              (isa<tensor::PadOp>(op) && padsChannelsLastWindow(cast<tensor::PadOp>(op))))
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
    // The forall's loops are the split ones, in order.
    if (length && tiles[*length] != 0 && result->loops.size() == 1) {
      int64_t position = llvm::count_if(ArrayRef(tiles).take_front(*length),
                                        [](int64_t tile) { return tile != 0; });
      int64_t loops = llvm::count_if(tiles, [](int64_t tile) { return tile != 0; });
      result->loops.front()->setAttr(kLengthLoopAttr,
                                     rewriter.getDenseI64ArrayAttr({position, loops}));
    }
  }
};

} // namespace
} // namespace tessel::x86
