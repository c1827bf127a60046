//===- ChooseLowering.cpp - Register blocks chosen once per op ------------===//

#include "passes/Passes.h"
#include "targets/x86/BlockingUtils.h"
#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/KernelWeights.h"
#include "targets/x86/LoweringConfig.h"
#include "targets/x86/Passes.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86CHOOSELOWERINGPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// What is known of the op being configured: its kernel, the kernel's only
/// call (null if none), the ISA's dot products of bytes and of bf16, and
/// whether it has AMX tiles for INT8, and its L1 data cache.
struct KernelContext {
  func::FuncOp kernel;
  func::CallOp call;
  int64_t width;
  DotProductKind isa;
  DotProductKind bf16Isa;
  bool amx;
  CacheGeometry caches;

  /// The dot product of a dot-product op whose weight `operand` reads: the
  /// bf16 one for bf16 ops; for INT8 ops VPMADDUBSW only where the constant
  /// weight is known to fit.
  DotProductKind dotProductFor(OpOperand &operand) const {
    if (dotBodyElement(cast<linalg::LinalgOp>(operand.getOwner())).isBF16())
      return bf16Isa;
    std::optional<KernelWeight> weight = constantWeight(operand, kernel, call);
    return x86::dotProductFor(isa, weight && bytePairsFit(weight->value));
  }
};

std::optional<LoweringConfig> chooseForContraction(linalg::LinalgOp op,
                                                   const ContractionLoops &loops,
                                                   const KernelContext &context) {
  std::optional<DotProductKind> dot;
  if (loops.dot)
    dot = context.dotProductFor(*op.getDpsInputOperand(1));
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  AffineMap resultMap = op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)));
  // Rows along the length axis go to workgroups lengthTile() at a time.
  int64_t rows = extents[loops.m];
  if (auto axis = op->getAttrOfType<IntegerAttr>(kLengthAxisAttr);
      axis && axis.getInt() >= 0 && axis.getInt() < resultMap.getNumResults() &&
      resultMap.getDimPosition(axis.getInt()) == loops.m)
    rows = lengthTile(rows);
  std::optional<ContractionBlock> block;
  if (context.amx && contractionFitsAmxTiles(op, loops)) {
    dot = DotProductKind::Amx;
    block = chooseAmxContractionBlock(op, loops);
  } else {
    block = chooseContractionBlock(rows, extents[loops.n], context.width, dot);
  }
  if (!block)
    return std::nullopt;
  LoweringConfig config;
  config.dotProduct = dot;
  for (AffineExpr result : resultMap.getResults()) {
    unsigned loop = cast<AffineDimExpr>(result).getPosition();
    config.registerBlock.push_back(loop == loops.n   ? block->columns
                                   : loop == loops.m ? block->rows
                                                     : 1);
  }
  return config;
}

LoweringConfig chooseForWindow(linalg::LinalgOp op, const KernelContext &context) {
  LoweringConfig config;
  if (context.amx && convolutionFitsAmxTiles(op)) {
    PixelBlock block = chooseAmxBlock(op);
    config.dotProduct = DotProductKind::Amx;
    config.registerBlock = {1, block.height, block.width, block.channels};
    return config;
  }
  if (isDotConvolution(op))
    config.dotProduct = context.dotProductFor(*op.getDpsInputOperand(1));
  PixelBlock block =
      choosePixelBlock(op, context.width, config.dotProduct.value_or(context.isa), context.caches);
  config.registerBlock = {1, block.height, block.width, block.channels};
  return config;
}

/// A config written into the input (by a test or a tuner) must be one the
/// emitters can follow, and VPMADDUBSW is exact only for weights that fit.
LogicalResult checkPinnedConfig(linalg::LinalgOp op, const KernelContext &context) {
  if (failed(verifyLoweringConfig(op, context.width)))
    return failure();
  if (loweringConfigOf(op)->dotProduct == DotProductKind::MultiplyAddBytes &&
      context.dotProductFor(*op.getDpsInputOperand(1)) != DotProductKind::MultiplyAddBytes)
    return op->emitError("dot_product \"pmaddubsw\" needs a constant weight whose byte "
                         "pairs sum into 16 bits exactly");
  return success();
}

struct TesselX86ChooseLoweringPass
    : impl::TesselX86ChooseLoweringPassBase<TesselX86ChooseLoweringPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<DotProductKind> isa = parseDotProduct(dotProduct);
    if (!isa || isBf16(*isa)) {
      module.emitError("unknown dot-product kind '") << dotProduct << "' for bytes";
      return signalPassFailure();
    }
    std::optional<DotProductKind> bf16Isa = parseDotProduct(bf16DotProduct);
    if (!bf16Isa || !isBf16(*bf16Isa)) {
      module.emitError("unknown dot-product kind '") << bf16DotProduct << "' for bf16";
      return signalPassFailure();
    }
    CacheGeometry caches{cacheLine, l1Sets, l1Ways};
    if (!caches.isValid()) {
      module.emitError("the L1 cache needs power-of-two line bytes and sets and at least "
                       "one way; got cache-line=")
          << cacheLine.getValue() << " l1-sets=" << l1Sets.getValue()
          << " l1-ways=" << l1Ways.getValue();
      return signalPassFailure();
    }
    KernelCalls calls(module);
    for (func::FuncOp kernel : module.getOps<func::FuncOp>()) {
      if (kernel.isExternal())
        continue;
      KernelContext context{kernel, calls.soleCall(kernel), vectorWidth, *isa, *bf16Isa,
                            amx, caches};
      WalkResult walk = kernel.walk([&](linalg::LinalgOp op) {
        if (op->hasAttr(kLoweringConfigAttr))
          return failed(checkPinnedConfig(op, context)) ? WalkResult::interrupt()
                                                        : WalkResult::advance();
        std::optional<LoweringConfig> config;
        if (std::optional<ContractionLoops> loops = matchContraction(op))
          config = chooseForContraction(op, *loops, context);
        else if (matchChannelsLastWindow(op))
          config = chooseForWindow(op, context);
        if (config)
          setLoweringConfig(op, *config);
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace tessel::x86
