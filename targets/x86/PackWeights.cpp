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
// The kernel receives the panels and restores B with a linalg.unpack, so its
// semantics do not change; ContractionBlocking reads blocks straight from
// the panels and the unpack is never materialized.
//
//===----------------------------------------------------------------------===//

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

/// B [K, N] as panels [N / panel, K, panel].
DenseElementsAttr packPanels(DenseElementsAttr weight, int64_t panel) {
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  auto packedType =
      RankedTensorType::get({columns / panel, rows, panel}, type.getElementType());
  if (weight.isSplat())
    return weight.resizeSplat(packedType);
  SmallVector<float> values(weight.getValues<float>());
  SmallVector<float> packed(values.size());
  for (int64_t block = 0; block < columns / panel; ++block)
    for (int64_t k = 0; k < rows; ++k)
      for (int64_t j = 0; j < panel; ++j)
        packed[(block * rows + k) * panel + j] = values[k * columns + block * panel + j];
  return DenseElementsAttr::get(packedType, ArrayRef<float>(packed));
}

/// The panel width for the right operand of `op`, when it is an argument of
/// `kernel` that only `op` reads, indexed [k, n].
std::optional<int64_t> panelWidthFor(linalg::LinalgOp op, func::FuncOp kernel,
                                     int64_t vectorWidth) {
  std::optional<ContractionLoops> loops = matchBlockableContraction(op);
  if (!loops || !loops->batch.empty())
    return std::nullopt;
  OpOperand *right = op.getDpsInputOperand(1);
  auto argument = dyn_cast<BlockArgument>(right->get());
  if (!argument || argument.getOwner()->getParentOp() != kernel || !argument.hasOneUse())
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

/// Gives argument `index` of `kernel` (called only by `call`) the packed
/// `weight` and unpacks it at the kernel's entry.
void packArgument(RewriterBase &rewriter, func::FuncOp kernel, func::CallOp call,
                  unsigned index, DenseElementsAttr weight, int64_t panel) {
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
  auto unpack = linalg::UnPackOp::create(
      rewriter, loc, argument, empty, /*innerDimsPos=*/{1},
      /*innerTiles=*/{rewriter.getIndexAttr(panel)}, /*outerDimsPerm=*/{1, 0});
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
      SmallVector<std::pair<unsigned, int64_t>> packable;
      kernel.walk([&](linalg::LinalgOp op) {
        std::optional<int64_t> panel = panelWidthFor(op, kernel, vectorWidth);
        if (panel)
          packable.emplace_back(
              cast<BlockArgument>(op.getDpsInputOperand(1)->get()).getArgNumber(), *panel);
      });
      for (auto [index, panel] : packable) {
        DenseElementsAttr weight;
        Value operand = call.getOperand(index);
        // A weight that other kernels read too would be stored twice.
        if (!matchPattern(operand, m_Constant(&weight)) || !operand.hasOneUse())
          continue;
        packArgument(rewriter, kernel, call, index, weight, panel);
      }
    }
  }
};

} // namespace
} // namespace tessel::x86
