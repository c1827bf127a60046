//===- Loops.cpp - Tessel kernels as buffers and loop nests ---------------===//

#include "targets/cuda/Loops.h"
#include "passes/Passes.h"
#include "targets/KernelArguments.h"
#include "targets/cuda/AttentionKernels.h"
#include "targets/cuda/RowKernels.h"
#include "targets/cuda/TensorCoreProducts.h"
#include "targets/cuda/UnpackedOperands.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

/// Copies between buffers become linalg copies, so that they are loop
/// nests like every other computation and get launches of their own.
void copiesToLinalg(ModuleOp module) {
  SmallVector<memref::CopyOp> copies;
  module.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
  for (memref::CopyOp copy : copies) {
    OpBuilder builder(copy);
    linalg::makeMemRefCopyOp(builder, copy.getLoc(), copy.getSource(), copy.getTarget());
    copy.erase();
  }
}

/// Packs and unpacks (of weights the CPU's layout packed at compile time)
/// become transposes and reshapes, which lower to loops.
LogicalResult lowerPacking(ModuleOp module) {
  SmallVector<Operation *> packing;
  module.walk([&](Operation *op) {
    if (isa<linalg::PackOp, linalg::UnPackOp>(op))
      packing.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (Operation *op : packing) {
    rewriter.setInsertionPoint(op);
    bool lowered = isa<linalg::PackOp>(op)
                       ? succeeded(linalg::lowerPack(rewriter, cast<linalg::PackOp>(op)))
                       : succeeded(linalg::lowerUnPack(rewriter, cast<linalg::UnPackOp>(op)));
    if (!lowered)
      return op->emitError("the CUDA target cannot lower this packing");
  }
  return success();
}

/// The outputs of a product one thread computes, along its innermost M
/// and N dimensions, and the reduction it reads per step: a 4 x 4 tile
/// keeps 16 accumulators in registers and loads 8 values for 16 FMAs
/// where one output per thread loads 2 for 1.
constexpr int64_t kProductTile = 4;

/// The tile sizes of `op`'s loops when it is a matrix product: every loop
/// by 1 (an untiled parallel loop would run whole in each thread) but the
/// innermost M, N and K, by kProductTile. Empty for other ops.
/// (Convolutions tiled the same way made ptxas spill; they keep one output
/// per thread for now.)
SmallVector<int64_t> productTileSizes(linalg::LinalgOp op) {
  SmallVector<int64_t> sizes(op.getNumLoops(), 1);
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  // A tile divides its loop: partial tiles would leave loops of unknown
  // trip count in every thread, which neither unroll nor keep their
  // accumulators in registers.
  auto tile = [&](unsigned loop) {
    for (int64_t size = kProductTile; size > 1; size /= 2)
      if (extents[loop] % size == 0) {
        sizes[loop] = size;
        return;
      }
  };
  if (linalg::isaContractionOpInterface(op)) {
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
      return {};
    tile(dims->m.back()), tile(dims->n.back()), tile(dims->k.back());
    return sizes;
  }
  return {};
}

/// Tiles every matrix product (matmul, batched, named or generic) so
/// that each thread of its launch computes a kProductTile² block of
/// outputs: a parallel loop over the blocks around a loop over reduction
/// steps around the tile-sized product.
LogicalResult tileProducts(ModuleOp module) {
  SmallVector<linalg::LinalgOp> products;
  module.walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() && !op.hasDynamicShape() &&
        !productTileSizes(op).empty())
      products.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::LinalgOp op : products) {
    SmallVector<int64_t> sizes = productTileSizes(op);
    rewriter.setInsertionPoint(op);
    auto options = linalg::LinalgTilingOptions()
                       .setTileSizes(sizes)
                       .setLoopType(linalg::LinalgTilingLoopType::ParallelLoops);
    if (failed(linalg::tileLinalgOp(rewriter, op, options)))
      return op.emitError("the CUDA target cannot tile this product");
    rewriter.eraseOp(op);
  }
  return success();
}

/// Moves every parallel loop of a generic op outside its reductions (a sum
/// over an image's rows and columns per channel, [n, h, w, c], becomes
/// [n, c, h, w]): a launch gets one thread per iteration of its outer
/// parallel loops only, so a parallel loop inside a reduction would run
/// whole in each thread.
void parallelLoopsFirst(ModuleOp module) {
  SmallVector<linalg::GenericOp> generics;
  module.walk([&](linalg::GenericOp op) {
    if (isa<func::FuncOp>(op->getParentOp()))
      generics.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::GenericOp op : generics) {
    SmallVector<unsigned> order;
    for (auto [loop, type] : llvm::enumerate(op.getIteratorTypesArray()))
      if (linalg::isParallelIterator(type))
        order.push_back(loop);
    for (auto [loop, type] : llvm::enumerate(op.getIteratorTypesArray()))
      if (!linalg::isParallelIterator(type))
        order.push_back(loop);
    if (llvm::is_sorted(order))
      continue;
    rewriter.setInsertionPoint(op);
    // Cannot fail: `order` is a permutation of the loops.
    (void)linalg::interchangeGenericOp(rewriter, op, order);
  }
}

/// Upstream's elementwise fusion (linalg-fuse-elementwise-ops), except that
/// a product the tensor cores will take is neither fused into its consumer
/// nor takes in its producers: its kernel reads plain operands, where a
/// fused producer would put its arithmetic and its reshapes (of the weights
/// the CPU's layout packed) inside the product's loops.
LogicalResult fuseElementwise(ModuleOp kernels, ProductPrecision precision) {
  MLIRContext *context = kernels.getContext();
  linalg::ControlFusionFn control = [precision](OpOperand *fused) {
    Operation *producer = fused->get().getDefiningOp();
    if (!producer || !producer->hasOneUse())
      return false;
    return !takesTensorCores(producer, precision) &&
           !takesTensorCores(fused->getOwner(), precision);
  };
  RewritePatternSet patterns(context);
  linalg::populateElementwiseOpsFusionPatterns(patterns, control);
  linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
  tensor::populateBubbleUpExpandShapePatterns(patterns);
  affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
  linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
  context->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
  linalg::populateConstantFoldLinalgOperations(patterns, control);
  return applyPatternsGreedily(kernels, std::move(patterns),
                               GreedyRewriteConfig().setUseTopDownTraversal());
}

/// Unrolls the step loops of recurrences (tessel.scan): their steps become
/// launches one after another, each parallel within the step. A step's
/// states, stored over the previous ones for a loop, are then values of
/// their own.
LogicalResult unrollSteps(ModuleOp kernels) {
  SmallVector<scf::ForOp> loops;
  kernels.walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops)
    if (failed(loopUnrollFull(loop)))
      // The location names the node; the loop itself says nothing more.
      return emitError(loop.getLoc(),
                       "a loop whose trip count is known only when the model runs (a Loop with "
                       "a run-time trip count or condition) cannot run on the GPU, whose "
                       "launches are the iterations unrolled; compile it for x86 alone");
  kernels.walk([](bufferization::MaterializeInDestinationOp store) {
    if (store.getResult()) {
      store.getResult().replaceAllUsesWith(store.getSource());
      store.erase();
    }
  });
  return success();
}

} // namespace

Value rootBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

bool leavesBuffersAlone(Operation *op) {
  return isa<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp, arith::ConstantOp,
             ViewLikeOpInterface>(op);
}

Value copiedBuffer(Operation *operation) {
  auto op = dyn_cast_or_null<linalg::LinalgOp>(operation);
  if (!op || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() || !op.getBlock() ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) { return map.isIdentity(); }))
    return Value();
  Value yielded = op.getBlock()->getTerminator()->getOperand(0);
  if (yielded != op.getBlock()->getArgument(0))
    return Value();
  return op.getDpsInputs()[0];
}

bool isPlainStatic(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref.hasStaticShape() && memref.getLayout().isIdentity();
}

SmallVector<Value> indicesAt(OpBuilder &builder, Location loc, AffineMap map, ValueRange loops) {
  SmallVector<Value> indices;
  for (unsigned result = 0; result < map.getNumResults(); ++result)
    indices.push_back(affine::AffineApplyOp::create(builder, loc, map.getSubMap({result}), loops));
  return indices;
}

uint64_t bufferBytes(MemRefType type) {
  return type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

LogicalResult bufferizeKernels(ModuleOp kernels, ProductPrecision precision) {
  if (failed(unrollSteps(kernels)) || failed(lowerPacking(kernels)) ||
      failed(fuseElementwise(kernels, precision)))
    return failure();
  markKernelArgumentsReadOnly(kernels);
  PassManager pm(kernels.getContext());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createTesselNumberConstantsPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  if (failed(pm.run(kernels)))
    return failure();
  copiesToLinalg(kernels);
  return success();
}

LogicalResult lowerKernelsToLoops(ModuleOp kernels, ProductPrecision precision) {
  if (failed(bufferizeKernels(kernels, precision)))
    return failure();
  launchAttentionKernels(kernels, precision);
  if (failed(launchProductsOnTensorCores(kernels, precision)))
    return failure();
  transposeInPlaceOfCopies(kernels);
  if (failed(tileProducts(kernels)))
    return failure();
  parallelLoopsFirst(kernels);
  launchRowKernels(kernels);
  PassManager loops(kernels.getContext());
  loops.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  loops.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  loops.addNestedPass<func::FuncOp>(createCSEPass());
  return loops.run(kernels);
}

} // namespace tessel::cuda
