//===- PackWeights.cpp - Constant matmul weights stored in panels ---------===//
//
// A register block of a contraction (ContractionBlocking) reads `columns`
// contiguous floats of its right operand B [K, N] per k step. Row-major, the
// rows of a block's segment lie N * 4 bytes apart, for power-of-two N a
// multiple of 4 KiB, so that they all fall into the same cache sets and the
// segment of a whole block never stays in cache. When B is a constant it is
// stored in panels instead, [N / P, K, P] with P the block's columns: a
// block then reads one contiguous panel, P floats per k step.
//
// NHWC convolution filters [KH, KW, C, F] are read the same way, one row
// segment of `channels` output channels per (kh, kw, c) step, and are stored
// as panels [F / P, KH, KW, C, P] for the same reason.
//
// The kernel receives the panels and restores the weight with a
// linalg.unpack, so its semantics do not change; the register-blocking
// emitters read blocks straight from the panels and the unpack is never
// materialized.
//
//===----------------------------------------------------------------------===//

#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86PACKWEIGHTSPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

constexpr llvm::StringLiteral kKernelAttr = "tessel.kernel";

/// A weight [..., N] (B [K, N], or an HWCF filter [KH, KW, C, F]) as panels
/// [ceil(N / panel), ..., panel] of its last axis, the last panel padded with
/// zeros so that blocks always load whole vectors.
DenseElementsAttr packPanels(DenseElementsAttr weight, int64_t panel) {
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t columns = type.getShape().back();
  int64_t rows = type.getNumElements() / columns;
  int64_t panels = llvm::divideCeil(columns, panel);
  SmallVector<int64_t> packedShape{panels};
  llvm::append_range(packedShape, type.getShape().drop_back());
  packedShape.push_back(panel);
  auto packedType = RankedTensorType::get(packedShape, type.getElementType());
  if (weight.isSplat() && columns % panel == 0)
    return weight.resizeSplat(packedType);
  SmallVector<float> values(weight.getValues<float>());
  SmallVector<float> packed(panels * rows * panel, 0.0f);
  for (int64_t block = 0; block < panels; ++block)
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t j = 0; j < std::min(panel, columns - block * panel); ++j)
        packed[(block * rows + row) * panel + j] = values[row * columns + block * panel + j];
  return DenseElementsAttr::get(packedType, ArrayRef<float>(packed));
}

/// The kernel argument that `operand` of `op` reads, when only `op` reads
/// it.
std::optional<unsigned> soleArgument(OpOperand &operand, func::FuncOp kernel) {
  auto argument = dyn_cast<BlockArgument>(operand.get());
  if (!argument || argument.getOwner()->getParentOp() != kernel || !argument.hasOneUse())
    return std::nullopt;
  return argument.getArgNumber();
}

/// The panel width for the right operand of `op`, when it is an argument of
/// `kernel` that only `op` reads, indexed [k, n].
std::optional<int64_t> panelWidthFor(linalg::LinalgOp op, func::FuncOp kernel,
                                     int64_t vectorWidth) {
  std::optional<ContractionLoops> loops = matchBlockableContraction(op);
  if (!loops || !loops->batch.empty())
    return std::nullopt;
  OpOperand *right = op.getDpsInputOperand(1);
  if (!soleArgument(*right, kernel))
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(right);
  if (map.getNumResults() != 2 || map.getDimPosition(0) != loops->k ||
      map.getDimPosition(1) != loops->n)
    return std::nullopt;
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  std::optional<ContractionBlock> block =
      chooseContractionBlock(extents[loops->m], extents[loops->n], vectorWidth);
  if (!block)
    return std::nullopt;
  return block->columns;
}

/// A kernel argument to pack, and the width of its panels.
struct Packing {
  unsigned argument;
  int64_t panel;
};

/// The kernel argument holding the filter of `op`, an NHWC convolution that
/// register blocking handles, when only `op` reads it.
std::optional<unsigned> convolutionFilter(linalg::LinalgOp op, func::FuncOp kernel) {
  if (!isa<linalg::Conv2DNhwcHwcfOp>(op.getOperation()) || !isBlockableChannelsLast(op))
    return std::nullopt;
  return soleArgument(*op.getDpsInputOperand(1), kernel);
}

/// Gives argument `packing.argument` of `kernel` (called only by `call`) the
/// packed `weight` and unpacks it at the kernel's entry.
void packArgument(RewriterBase &rewriter, func::FuncOp kernel, func::CallOp call,
                  const Packing &packing, DenseElementsAttr weight) {
  unsigned index = packing.argument;
  int64_t panel = packing.panel;
  DenseElementsAttr packed = packPanels(weight, panel);
  Operation *original = call.getOperand(index).getDefiningOp();
  rewriter.setInsertionPoint(call);
  Value packedWeight = arith::ConstantOp::create(rewriter, original->getLoc(), packed);
  rewriter.modifyOpInPlace(call, [&] { call->setOperand(index, packedWeight); });
  if (original->use_empty())
    rewriter.eraseOp(original);

  BlockArgument argument = kernel.getArgument(index);
  auto unpackedType = cast<RankedTensorType>(argument.getType());
  argument.setType(packed.getType());
  SmallVector<Type> inputs(kernel.getArgumentTypes());
  inputs[index] = packed.getType();
  kernel.setType(FunctionType::get(kernel.getContext(), inputs, kernel.getResultTypes()));

  rewriter.setInsertionPointToStart(&kernel.getBody().front());
  Location loc = argument.getLoc();
  Value empty = tensor::EmptyOp::create(rewriter, loc, unpackedType.getShape(),
                                        unpackedType.getElementType());
  // [N / P, K, P] -> [K, N], or [F / P, KH, KW, C, P] -> [KH, KW, C, F]:
  // the last axis is tiled, and its tiles are the outermost axis.
  int64_t last = unpackedType.getRank() - 1;
  SmallVector<int64_t> innerDims{last};
  SmallVector<int64_t> outerPerm{last};
  llvm::append_range(outerPerm, llvm::seq<int64_t>(0, last));
  auto unpack = linalg::UnPackOp::create(rewriter, loc, argument, empty, innerDims,
                                         {rewriter.getIndexAttr(panel)}, outerPerm);
  rewriter.replaceAllUsesExcept(argument, unpack.getResult(), unpack);
}

struct TesselX86PackWeightsPass
    : impl::TesselX86PackWeightsPassBase<TesselX86PackWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    IRRewriter rewriter(&getContext());
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) { calls.push_back(call); });
    for (func::CallOp call : calls) {
      auto kernel = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!kernel || kernel.isExternal() || !kernel->hasAttr(kKernelAttr))
        continue;
      // The kernel's arguments change type: it must have no other caller.
      std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(kernel, module);
      if (!uses || !llvm::hasSingleElement(*uses))
        continue;
      SmallVector<Packing> packable;
      kernel.walk([&](linalg::LinalgOp op) {
        if (std::optional<int64_t> panel = panelWidthFor(op, kernel, vectorWidth))
          packable.push_back(
              {cast<BlockArgument>(op.getDpsInputOperand(1)->get()).getArgNumber(), *panel});
        else if (std::optional<unsigned> filter = convolutionFilter(op, kernel))
          packable.push_back({*filter, choosePixelBlock(op, vectorWidth).channels});
      });
      for (const Packing &packing : packable) {
        DenseElementsAttr weight;
        Value operand = call.getOperand(packing.argument);
        // A weight that other kernels read too would be stored twice.
        if (!matchPattern(operand, m_Constant(&weight)) || !operand.hasOneUse())
          continue;
        packArgument(rewriter, kernel, call, packing, weight);
      }
    }
  }
};

} // namespace
} // namespace tessel::x86
