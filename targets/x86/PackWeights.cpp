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
// materialized. Layers that share a weight (ALBERT-style models, or layers
// cloned before export) share its panels.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/KernelWeights.h"
#include "targets/x86/LoweringConfig.h"
#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86PACKWEIGHTSPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// A weight of 8-bit or bf16 elements [..., K, N] (B [K, N], or an HWCF
/// filter [KH, KW, C, F]) as dot panels [ceil(N / panel), ..., ceil(K / G),
/// panel, G], G = dotGroupSize: per panel and group of k, each column's G
/// weights side by side. Columns and k past the weight's are zeros.
DenseElementsAttr packDotPanels(DenseElementsAttr weight, int64_t panel) {
  auto type = cast<RankedTensorType>(weight.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t group = dotGroupSize(type.getElementType());
  int64_t columns = shape.back(), depth = shape[shape.size() - 2];
  int64_t lead = type.getNumElements() / (columns * depth);
  int64_t panels = llvm::divideCeil(columns, panel), groups = llvm::divideCeil(depth, group);
  SmallVector<int64_t> packedShape{panels};
  llvm::append_range(packedShape, shape.drop_back(2));
  packedShape.append({groups, panel, group});
  // The elements as their bit patterns (zero bits are a zero bf16 too).
  unsigned bits = type.getElementTypeBitWidth();
  auto bitsType = IntegerType::get(weight.getContext(), bits);
  auto values = llvm::to_vector(weight.bitcast(bitsType).getValues<APInt>());
  SmallVector<APInt> packed(panels * lead * groups * panel * group, APInt(bits, 0));
  for (int64_t block = 0; block < panels; ++block)
    for (int64_t outer = 0; outer < lead; ++outer)
      for (int64_t k = 0; k < depth; ++k)
        for (int64_t j = 0; j < std::min(panel, columns - block * panel); ++j)
          packed[(((block * lead + outer) * groups + k / group) * panel + j) * group +
                 k % group] = values[(outer * depth + k) * columns + block * panel + j];
  return DenseElementsAttr::get(RankedTensorType::get(packedShape, bitsType), packed)
      .bitcast(type.getElementType());
}

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

/// A kernel argument to pack, its weight, the width of its panels (the
/// last extent of its op's register block), and whether they are dot panels
/// (of 8-bit or bf16 weights).
struct Packing {
  unsigned argument;
  DenseElementsAttr weight;
  int64_t panel;
  bool dot = false;
};

/// How `op`'s constant `weight` packs for its lowering config.
std::optional<Packing> packingFor(linalg::LinalgOp op, std::optional<KernelWeight> weight,
                                  bool dot) {
  std::optional<LoweringConfig> config = loweringConfigOf(op);
  if (!weight || !config)
    return std::nullopt;
  return Packing{weight->argument, weight->value, config->panelWidth(), dot};
}

/// The packing of the right operand of `op`, when it is indexed [k, n] and
/// a constant of `call` that only `op` reads.
std::optional<Packing> contractionPacking(linalg::LinalgOp op, func::FuncOp kernel,
                                          func::CallOp call) {
  std::optional<ContractionLoops> loops = matchContraction(op);
  if (!loops || !loops->batch.empty())
    return std::nullopt;
  OpOperand *right = op.getDpsInputOperand(1);
  AffineMap map = op.getMatchingIndexingMap(right);
  if (map.getNumResults() != 2 || map.getDimPosition(0) != loops->k ||
      map.getDimPosition(1) != loops->n)
    return std::nullopt;
  return packingFor(op, constantWeight(*right, kernel, call), loops->dot);
}

/// The packing of the filter of `op`, an NHWC convolution (an INT8 or bf16
/// one into dot panels), when it is a constant of `call` that only `op`
/// reads.
std::optional<Packing> convolutionPacking(linalg::LinalgOp op, func::FuncOp kernel,
                                          func::CallOp call) {
  bool dot = isDotConvolution(op);
  if ((!isa<linalg::Conv2DNhwcHwcfOp>(op.getOperation()) && !dot) ||
      !matchChannelsLastWindow(op))
    return std::nullopt;
  return packingFor(op, constantWeight(*op.getDpsInputOperand(1), kernel, call), dot);
}

/// A kernel argument that reads a constant weight, and how to pack it.
struct WeightRead {
  func::CallOp call;
  func::FuncOp kernel;
  Packing packing;
};

/// The constant of `packing`'s weight packed, created where `original`
/// (its unpacked constant) is, so that it dominates every reader.
Value packedConstant(RewriterBase &rewriter, Operation *original, const Packing &packing) {
  DenseElementsAttr packed = packing.dot ? packDotPanels(packing.weight, packing.panel)
                                         : packPanels(packing.weight, packing.panel);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(original);
  return arith::ConstantOp::create(rewriter, original->getLoc(), packed);
}

/// Gives argument `read.packing.argument` of `read.kernel` (called only by
/// `read.call`) the `packed` weight and unpacks it at the kernel's entry.
void unpackArgument(RewriterBase &rewriter, const WeightRead &read, Value packed) {
  const Packing &packing = read.packing;
  func::FuncOp kernel = read.kernel;
  unsigned index = packing.argument;
  func::CallOp call = read.call;
  rewriter.modifyOpInPlace(call, [&] { call->setOperand(index, packed); });

  BlockArgument argument = kernel.getArgument(index);
  auto unpackedType = cast<RankedTensorType>(argument.getType());
  setArgumentType(kernel, index, packed.getType());

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&kernel.getBody().front());
  Location loc = argument.getLoc();
  Value empty = tensor::EmptyOp::create(rewriter, loc, unpackedType.getShape(),
                                        unpackedType.getElementType());
  // [N / P, K, P] -> [K, N], or [F / P, KH, KW, C, P] -> [KH, KW, C, F]:
  // the last axis is tiled, and its tiles are the outermost axis. Dot
  // panels tile the axis before it by the group too: [N / P, K / 4, P, 4]
  // -> [K, N].
  int64_t last = unpackedType.getRank() - 1;
  SmallVector<int64_t> innerDims{last};
  SmallVector<OpFoldResult> tiles{rewriter.getIndexAttr(packing.panel)};
  if (packing.dot) {
    innerDims.push_back(last - 1);
    tiles.push_back(rewriter.getIndexAttr(dotGroupSize(unpackedType.getElementType())));
  }
  SmallVector<int64_t> outerPerm{last};
  llvm::append_range(outerPerm, llvm::seq<int64_t>(0, last));
  auto unpack =
      linalg::UnPackOp::create(rewriter, loc, argument, empty, innerDims, tiles, outerPerm);
  rewriter.replaceAllUsesExcept(argument, unpack.getResult(), unpack);
}

/// Whether every reader of one weight packs it alike.
bool packAlike(ArrayRef<WeightRead> reads) {
  const Packing &first = reads.front().packing;
  return llvm::all_of(reads, [&](const WeightRead &read) {
    return read.packing.panel == first.panel && read.packing.dot == first.dot;
  });
}

struct TesselX86PackWeightsPass
    : impl::TesselX86PackWeightsPassBase<TesselX86PackWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    SmallVector<WeightRead> reads;
    KernelCalls calls(module);
    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (kernel.isExternal() || !kernel->hasAttr(kKernelAttrName))
        continue;
      // The kernel's arguments change type: it must have no other caller.
      func::CallOp call = calls.soleCall(kernel);
      if (!call)
        continue;
      kernel.walk([&](linalg::LinalgOp op) {
        if (std::optional<Packing> packing = contractionPacking(op, kernel, call))
          reads.push_back({call, kernel, *packing});
        else if (std::optional<Packing> packing = convolutionPacking(op, kernel, call))
          reads.push_back({call, kernel, *packing});
      });
    }
    // A weight that several kernels read (layers that share weights) is
    // packed once for all of them, if they all pack it alike and nothing
    // else reads it: otherwise it would be stored twice.
    llvm::MapVector<Operation *, SmallVector<WeightRead>> readsOfWeight;
    for (WeightRead read : reads)
      readsOfWeight[read.call.getOperand(read.packing.argument).getDefiningOp()].push_back(read);
    for (auto &[original, weightReads] : readsOfWeight) {
      size_t uses = std::distance(original->getUses().begin(), original->getUses().end());
      if (uses != weightReads.size() || !packAlike(weightReads))
        continue;
      Value packed = packedConstant(rewriter, original, weightReads.front().packing);
      for (const WeightRead &read : weightReads)
        unpackArgument(rewriter, read, packed);
      rewriter.eraseOp(original);
    }
  }
};

} // namespace
} // namespace tessel::x86
