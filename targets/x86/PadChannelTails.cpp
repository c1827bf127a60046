//===- PadChannelTails.cpp - Whole panels of output channels --------------===//
//
// Workgroups take whole register blocks (TileAndFuse), all of one static
// shape, so a kernel can split its output channels only where a block's
// channels divide them. SqueezeNet's classifier, a 1x1 convolution of 512 to
// 1000 channels on a 13x13 image, has blocks of 48 channels: 1000 is no
// multiple, so its workgroups split the 13 rows instead and every one of
// them reads the whole 2 MB filter, which no longer stays in L2.
//
// The filter is stored in panels of whole blocks anyway (PackWeights), the
// last one padded with zero channels. Such a kernel computes those channels
// too: its result, and everything between its product and its result, get
// the padded channels (1008), constants along the channels are padded, and
// the kernels that read the result take the first 1000 channels as a slice.
// Nothing reads the padded channels, so what they hold does not matter.
// Where the split matters, when the weight is the larger operand
// (splitsLastAxisFirst), the extra channels cost at most an eighth more
// work and gain whole workgroups of channels.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "targets/x86/BlockingUtils.h"
#include "targets/x86/ChannelsLastBlocking.h"
#include "targets/x86/ContractionBlocking.h"
#include "targets/x86/KernelWeights.h"
#include "targets/x86/LoweringConfig.h"
#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86PADCHANNELTAILSPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// At most this fraction (1 / kMaxPaddingShare) of a kernel's channels may
/// be padding.
constexpr int64_t kMaxPaddingShare = 8;

/// The register-blocked op of `kernel` whose channels would be padded: the
/// only op with a lowering config, a contraction or an NHWC convolution
/// whose weight a linalg.unpack restores from panels (so already padded)
/// and whose input is an argument of the kernel.
linalg::LinalgOp paddableProduct(func::FuncOp kernel) {
  SmallVector<linalg::LinalgOp> blocked;
  kernel.walk([&](linalg::LinalgOp op) {
    if (loweringConfigOf(op))
      blocked.push_back(op);
  });
  if (blocked.size() != 1)
    return {};
  linalg::LinalgOp op = blocked.front();
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !isa<BlockArgument>(op.getDpsInputOperand(0)->get()))
    return {};
  auto unpack = op.getDpsInputOperand(1)->get().getDefiningOp<linalg::UnPackOp>();
  if (!unpack || !isa<BlockArgument>(unpack.getSource()))
    return {};
  if (std::optional<ContractionLoops> loops = matchContraction(op)) {
    AffineMap result = op.getIndexingMapMatchingResult(op->getResult(0));
    if (!loops->batch.empty() || result.getNumResults() == 0 ||
        result.getDimPosition(result.getNumResults() - 1) != loops->n)
      return {};
    return op;
  }
  if ((isa<linalg::Conv2DNhwcHwcfOp>(op.getOperation()) || isDotConvolution(op)) &&
      matchChannelsLastWindow(op))
    return op;
  return {};
}

/// The last loop of `op`: the channels, where keepsChannelsLast holds.
AffineExpr channelLoop(linalg::GenericOp op) {
  return getAffineDimExpr(op.getNumLoops() - 1, op.getContext());
}

/// Whether every operand of `op` that its last loop indexes has that loop
/// as its last axis, the result with the identity map: the last loop is
/// the channels of every operand that has them.
bool keepsChannelsLast(linalg::GenericOp op) {
  if (op.getNumParallelLoops() != op.getNumLoops() || op.getNumDpsInits() != 1 ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
    return false;
  return llvm::all_of(op.getIndexingMapsArray(), [&](AffineMap map) {
    if (!map.isProjectedPermutation())
      return false;
    std::optional<unsigned> position = map.getResultPosition(channelLoop(op));
    return !position || *position == map.getNumResults() - 1;
  });
}

/// The values of `kernel` that get the padded channels: its result, and
/// back from it every value it is computed from along the channels, up to
/// `product`'s weight panels and input (which keep their shape). Fails on
/// anything else on the way (a kernel argument, an op that moves the
/// channels), or on a value that an op also reads unpadded.
FailureOr<SetVector<Value>> channelValues(func::FuncOp kernel, linalg::LinalgOp product,
                                         int64_t channels) {
  SetVector<Value> values;
  SmallVector<Value> worklist{kernel.getBody().front().getTerminator()->getOperand(0)};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape() || type.getRank() == 0 ||
        type.getShape().back() != channels)
      return failure();
    if (!values.insert(value))
      continue;
    Operation *op = value.getDefiningOp();
    if (!op)
      return failure();
    if (op == product.getOperation()) {
      worklist.push_back(product.getDpsInputOperand(1)->get());
      worklist.push_back(product.getDpsInitOperand(0)->get());
    } else if (auto unpack = dyn_cast<linalg::UnPackOp>(op)) {
      worklist.push_back(unpack.getDest());
    } else if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      worklist.push_back(fill.getDpsInitOperand(0)->get());
    } else if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (!keepsChannelsLast(generic))
        return failure();
      for (OpOperand &operand : generic->getOpOperands())
        if (generic.getMatchingIndexingMap(&operand).getResultPosition(channelLoop(generic)))
          worklist.push_back(operand.get());
    } else if (!isa<tensor::EmptyOp, arith::ConstantOp>(op)) {
      return failure();
    }
  }
  // Each padded value is read padded: by an op that computes a padded
  // value, in a position along the channels, or by the return.
  for (Value value : values)
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user))
        continue;
      if (user->getNumResults() != 1 || !values.contains(user->getResult(0)))
        return failure();
      if (auto generic = dyn_cast<linalg::GenericOp>(user))
        if (!generic.getMatchingIndexingMap(&use).getResultPosition(channelLoop(generic)))
          return failure();
    }
  return values;
}

/// `type` with `channels` as its last extent.
RankedTensorType withChannels(RankedTensorType type, int64_t channels) {
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = channels;
  return type.clone(shape);
}

/// `value` padded along its last axis to `channels`: with zeros, or a
/// splat with its value.
DenseElementsAttr padChannels(DenseElementsAttr value, int64_t channels) {
  auto type = withChannels(cast<RankedTensorType>(value.getType()), channels);
  if (value.isSplat())
    return value.resizeSplat(type);
  int64_t old = value.getType().getShape().back();
  Attribute zero = Builder(value.getContext()).getZeroAttr(type.getElementType());
  auto elements = llvm::to_vector(value.getValues<Attribute>());
  SmallVector<Attribute> padded;
  padded.reserve(type.getNumElements());
  for (size_t start = 0; start < elements.size(); start += old) {
    padded.append(elements.begin() + start, elements.begin() + start + old);
    padded.append(channels - old, zero);
  }
  return DenseElementsAttr::get(type, padded);
}

/// A kernel whose channels can be padded, and the kernels that read its
/// result (each called once, by the host's call of them).
struct ChannelTail {
  func::FuncOp kernel;
  func::CallOp call;
  int64_t paddedChannels;
  SetVector<Value> values;
  SmallVector<std::pair<func::FuncOp, unsigned>> readers;
};

/// Whether argument `index` of `reader` can take the padded result: only
/// elementwise generics without register blocks read it, which read a slice
/// as well as a whole tensor.
bool readsThroughSlice(func::FuncOp reader, unsigned index) {
  return llvm::all_of(reader.getArgument(index).getUsers(), [](Operation *user) {
    return isa<linalg::GenericOp>(user) && !loweringConfigOf(user);
  });
}

std::optional<ChannelTail> channelTailOf(func::FuncOp kernel, const KernelCalls &calls) {
  func::CallOp call = calls.soleCall(kernel);
  if (!call || kernel.getNumResults() != 1)
    return std::nullopt;
  linalg::LinalgOp product = paddableProduct(kernel);
  if (!product || !splitsLastAxisFirst(product))
    return std::nullopt;
  int64_t channels = cast<RankedTensorType>(product->getResult(0).getType()).getShape().back();
  int64_t panel = loweringConfigOf(product)->panelWidth();
  int64_t padded = llvm::alignTo(channels, panel);
  if (padded == channels || (padded - channels) * kMaxPaddingShare > channels)
    return std::nullopt;
  FailureOr<SetVector<Value>> values = channelValues(kernel, product, channels);
  if (failed(values))
    return std::nullopt;
  ChannelTail tail{kernel, call, padded, std::move(*values), {}};
  for (OpOperand &use : call->getResult(0).getUses()) {
    auto readerCall = dyn_cast<func::CallOp>(use.getOwner());
    if (!readerCall)
      return std::nullopt;
    auto reader = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(readerCall,
                                                                     readerCall.getCalleeAttr());
    if (!reader || reader.isExternal() || !reader->hasAttr(kKernelAttrName) ||
        calls.soleCall(reader) != readerCall ||
        !readsThroughSlice(reader, use.getOperandNumber()))
      return std::nullopt;
    tail.readers.push_back({reader, use.getOperandNumber()});
  }
  return tail;
}

void padKernel(RewriterBase &rewriter, ChannelTail &tail) {
  for (Value value : tail.values) {
    auto type = withChannels(cast<RankedTensorType>(value.getType()), tail.paddedChannels);
    auto constant = value.getDefiningOp<arith::ConstantOp>();
    if (!constant) {
      value.setType(type);
      continue;
    }
    rewriter.setInsertionPoint(constant);
    auto padded = arith::ConstantOp::create(
        rewriter, constant.getLoc(),
        padChannels(cast<DenseElementsAttr>(constant.getValue()), tail.paddedChannels));
    rewriter.replaceOp(constant, padded);
  }
  func::FuncOp kernel = tail.kernel;
  Type result = kernel.getBody().front().getTerminator()->getOperand(0).getType();
  kernel.setType(FunctionType::get(kernel.getContext(), kernel.getArgumentTypes(), result));
  tail.call->getResult(0).setType(result);
}

/// Gives argument `index` of `reader` the padded result, of which the
/// reader's ops read the first `type`'s channels as a slice.
void sliceArgument(RewriterBase &rewriter, func::FuncOp reader, unsigned index,
                   RankedTensorType padded) {
  BlockArgument argument = reader.getArgument(index);
  auto type = cast<RankedTensorType>(argument.getType());
  setArgumentType(reader, index, padded);
  rewriter.setInsertionPointToStart(&reader.getBody().front());
  int64_t rank = type.getRank();
  auto slice = tensor::ExtractSliceOp::create(
      rewriter, argument.getLoc(), type, argument,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)),
      getAsIndexOpFoldResult(rewriter.getContext(), type.getShape()),
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
  rewriter.replaceAllUsesExcept(argument, slice.getResult(), slice);
}

struct TesselX86PadChannelTailsPass
    : impl::TesselX86PadChannelTailsPassBase<TesselX86PadChannelTailsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    KernelCalls calls(module);
    SmallVector<ChannelTail> tails;
    for (auto kernel : module.getOps<func::FuncOp>())
      if (!kernel.isExternal() && kernel->hasAttr(kKernelAttrName))
        if (std::optional<ChannelTail> tail = channelTailOf(kernel, calls))
          tails.push_back(std::move(*tail));
    IRRewriter rewriter(&getContext());
    for (ChannelTail &tail : tails) {
      padKernel(rewriter, tail);
      auto padded = cast<RankedTensorType>(tail.call->getResult(0).getType());
      for (auto [reader, index] : tail.readers)
        sliceArgument(rewriter, reader, index, padded);
    }
  }
};

} // namespace
} // namespace tessel::x86
