//===- BlockingUtils.cpp - What the register-blocking emitters share ------===//

#include "targets/x86/BlockingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace tessel::x86 {

namespace {

/// Whether `slice` is one that traceSlices and sliceRoot look through.
bool isPlainSlice(tensor::ExtractSliceOp slice) {
  return slice.getSourceType().getRank() == slice.getResultType().getRank() &&
         llvm::all_of(slice.getMixedStrides(),
                      [](OpFoldResult s) { return isConstantIntValue(s, 1); });
}

/// The input of `op` that reads `value`, when `op` can be applied to a
/// block of `value` in registers (see BlockedOp).
std::optional<unsigned> epilogueInput(linalg::GenericOp op, Value value) {
  // The result may change the element type (an INT8 accumulator's
  // requantization), not the shape.
  // Nor would a vector of sub-byte results (a comparison's booleans) be
  // stored a byte each.
  if (op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      getElementTypeOrSelf(op->getResult(0).getType()).getIntOrFloatBitWidth() < 8 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      cast<ShapedType>(op->getResult(0).getType()).getShape() !=
          cast<ShapedType>(value.getType()).getShape() ||
      !op.getIndexingMapMatchingResult(op->getResult(0)).isIdentity() ||
      !op.getRegionOutputArgs().front().use_empty())
    return std::nullopt;
  unsigned last = op.getNumLoops() - 1;
  std::optional<unsigned> chained;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    if (operand->get() == value) {
      if (chained || !map.isIdentity())
        return std::nullopt;
      chained = operand->getOperandNumber();
      continue;
    }
    // Other operands are read a vector along the last axis at a time, or
    // one element broadcast when they do not vary along it.
    if (!map.isProjectedPermutation() ||
        (map.isFunctionOfDim(last) &&
         map.getResults().back() != getAffineDimExpr(last, op.getContext())))
      return std::nullopt;
    Type element = getElementTypeOrSelf(operand->get().getType());
    if (!element.isIntOrFloat())
      return std::nullopt;
    // Booleans and 4- and 2-bit types are a byte each in memory, but LLVM
    // loads a vector of them as packed bits: a condition varying along the
    // last axis would be misread.
    if (element.getIntOrFloatBitWidth() < 8 && map.isFunctionOfDim(last))
      return std::nullopt;
  }
  for (Operation &inner : op.getBody()->without_terminator())
    if (inner.getNumRegions() || !OpTrait::hasElementwiseMappableTraits(&inner) ||
        !llvm::all_of(inner.getResultTypes(), [](Type t) { return t.isIntOrFloat(); }))
      return std::nullopt;
  return chained;
}

/// The vector of `value` (a scalar defined outside a body) for a block.
Value broadcastTo(OpBuilder &b, Location loc, Value value, int64_t width) {
  return vector::BroadcastOp::create(b, loc, VectorType::get({width}, value.getType()),
                                     value);
}

} // namespace

int64_t operandBytes(OpOperand &operand) {
  auto type = dyn_cast<RankedTensorType>(operand.get().getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

bool splitsLastAxisFirst(linalg::LinalgOp op) {
  if (isa<linalg::PoolingNhwcMaxOp, linalg::PoolingNhwcMaxUnsignedOp, linalg::PoolingNhwcSumOp>(
          op.getOperation()) ||
      op.getNumDpsInputs() < 2)
    return false;
  return operandBytes(*op.getDpsInputOperand(1)) > operandBytes(*op.getDpsInputOperand(0));
}

namespace {

/// Whether `op` is a generic that yields out + widen(in0) * widen(in1) in
/// `accumulator`, `Add` and `Multiply` the arithmetic, the inputs of type
/// `input` widened by `WidenLeft` and `WidenRight`.
template <typename Add, typename Multiply, typename WidenLeft, typename WidenRight>
bool isWidenedProductSum(linalg::LinalgOp op, Type input, Type accumulator) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1)
    return false;
  Block *body = generic.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto sum = yield.getOperand(0).getDefiningOp<Add>();
  Value out = body->getArgument(2);
  if (!sum || sum.getType() != accumulator || (sum.getLhs() != out && sum.getRhs() != out))
    return false;
  Value product = sum.getLhs() == out ? sum.getRhs() : sum.getLhs();
  auto multiply = product.template getDefiningOp<Multiply>();
  auto widened = [&](auto extension, unsigned argument) {
    return extension && extension->getOperand(0) == body->getArgument(argument) &&
           extension->getOperand(0).getType() == input;
  };
  return multiply && widened(multiply.getLhs().template getDefiningOp<WidenLeft>(), 0) &&
         widened(multiply.getRhs().template getDefiningOp<WidenRight>(), 1) &&
         body->getOperations().size() == 5;
}

} // namespace

bool isDotProductBody(linalg::LinalgOp op) {
  Builder b(op.getContext());
  return isWidenedProductSum<arith::AddIOp, arith::MulIOp, arith::ExtUIOp, arith::ExtSIOp>(
      op, b.getI8Type(), b.getI32Type());
}

bool isBf16DotBody(linalg::LinalgOp op) {
  Builder b(op.getContext());
  return isWidenedProductSum<arith::AddFOp, arith::MulFOp, arith::ExtFOp, arith::ExtFOp>(
      op, b.getBF16Type(), b.getF32Type());
}

Type dotBodyElement(linalg::LinalgOp op) {
  if (isDotProductBody(op))
    return IntegerType::get(op.getContext(), 8);
  if (isBf16DotBody(op))
    return BFloat16Type::get(op.getContext());
  return {};
}

Value vectorizeBody(OpBuilder &b, Location loc, linalg::GenericOp op,
                    ArrayRef<Value> arguments, int64_t width) {
  IRMapping mapping;
  Block *body = op.getBody();
  for (auto [argument, value] : llvm::zip(body->getArguments(), arguments))
    mapping.map(argument, value);
  auto vectorOf = [&](Value scalar) {
    if (Value mapped = mapping.lookupOrNull(scalar))
      return mapped;
    return broadcastTo(b, loc, scalar, width);
  };
  for (Operation &inner : body->without_terminator()) {
    if (inner.getNumOperands() == 0) {
      Operation *clone = b.clone(inner);
      for (auto [result, cloned] : llvm::zip(inner.getResults(), clone->getResults()))
        mapping.map(result, broadcastTo(b, loc, cloned, width));
      continue;
    }
    SmallVector<Value> operands;
    for (Value operand : inner.getOperands())
      operands.push_back(vectorOf(operand));
    SmallVector<Type> types;
    for (Type type : inner.getResultTypes())
      types.push_back(VectorType::get({width}, type));
    OperationState state(loc, inner.getName(), operands, types, inner.getAttrs());
    Operation *vectorized = b.create(state);
    mapping.map(inner.getResults(), vectorized->getResults());
  }
  return vectorOf(body->getTerminator()->getOperand(0));
}

namespace {

/// Tiles `root` by `tiles` in loop order `interchange`, fusing the producer
/// and the epilogue's other ops (or the pieces of them in `fusable`) into
/// each tile.
FailureOr<BlockTile> tileRoot(RewriterBase &rewriter, const BlockedOp &op, Operation *root,
                              ArrayRef<int64_t> tiles, ArrayRef<int64_t> interchange,
                              const llvm::SmallPtrSetImpl<Operation *> &fusable) {
  MLIRContext *context = rewriter.getContext();
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(getAsIndexOpFoldResult(context, tiles)).setInterchange(interchange);
  rewriter.setInsertionPoint(root);
  BlockTile tile;
  tile.chainInputs = op.chainInputs;
  if (op.epilogue.empty()) {
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(root), tiling);
    if (failed(tiled))
      return failure();
    rewriter.replaceOp(root, tiled->replacements);
    tile.producer = cast<linalg::LinalgOp>(tiled->tiledOps.back());
    return tile;
  }

  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer,
          bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (!fusable.contains(producer.getOwner()))
          return std::nullopt;
        return scf::SCFTileAndFuseOptions::ControlFnResult{};
      });
  FailureOr<scf::SCFTileAndFuseResult> fused =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, cast<TilingInterface>(root),
                                               options);
  if (failed(fused))
    return failure();
  for (OpResult value : root->getResults())
    rewriter.replaceAllUsesWith(value, fused->replacements.lookup(value));
  rewriter.eraseOp(root);

  // From the tiled root back along the chained inputs to the producer.
  Operation *current = fused->tiledAndFusedOps.front();
  tile.epilogue.resize(op.epilogue.size());
  for (size_t k = op.epilogue.size(); k-- > 0;) {
    auto generic = dyn_cast_if_present<linalg::GenericOp>(current);
    if (!generic)
      return failure();
    tile.epilogue[k] = generic;
    current = generic->getOperand(op.chainInputs[k]).getDefiningOp();
  }
  tile.producer = dyn_cast_if_present<linalg::LinalgOp>(current);
  if (!tile.producer || tile.producer->getName() != op.producer->getName())
    return failure();
  return tile;
}

/// After a split, a piece of the epilogue's k-th op reads a slice of the
/// previous op's result. Fusion only fuses ops that produce the sliced value
/// themselves, so the slice is replaced by a piece of the previous op
/// computing just that slice, down to the producer; the pieces join
/// `fusable`.
void pullProducers(RewriterBase &rewriter, const BlockedOp &op, Operation *piece, size_t k,
                   llvm::SmallPtrSetImpl<Operation *> &fusable) {
  auto slice = piece->getOperand(op.chainInputs[k]).getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return;
  auto source = dyn_cast<OpResult>(slice.getSource());
  if (!source || !fusable.contains(source.getOwner()))
    return;
  rewriter.setInsertionPoint(slice);
  FailureOr<TilingResult> tiled =
      tensor::replaceExtractSliceWithTiledProducer(rewriter, slice, source);
  if (failed(tiled) || tiled->tiledOps.empty())
    return;
  rewriter.replaceOp(slice, tiled->tiledValues.front());
  Operation *previous = tiled->tiledOps.back();
  fusable.insert(previous);
  if (k > 0)
    pullProducers(rewriter, op, previous, k - 1, fusable);
}

LogicalResult blockPiecesImpl(RewriterBase &rewriter, const BlockedOp &op, Operation *root,
                              SmallVector<int64_t> sizes, ArrayRef<unsigned> splitAxes,
                              ArrayRef<unsigned> order,
                              function_ref<void(const BlockTile &, ArrayRef<int64_t>)> emit,
                              llvm::SmallPtrSetImpl<Operation *> &fusable) {
  auto linalgRoot = cast<linalg::LinalgOp>(root);
  SmallVector<int64_t> extents = linalgRoot.getStaticLoopRanges();
  if (splitAxes.empty()) {
    SmallVector<int64_t> tiles(extents.size(), 0);
    for (auto [axis, size] : llvm::enumerate(sizes))
      tiles[op.rootLoop(root, axis)] = size;
    SmallVector<int64_t> interchange;
    for (unsigned axis : order)
      interchange.push_back(op.rootLoop(root, axis));
    for (int64_t loop = 0; loop < static_cast<int64_t>(extents.size()); ++loop)
      if (!llvm::is_contained(interchange, loop))
        interchange.push_back(loop);
    FailureOr<BlockTile> tile = tileRoot(rewriter, op, root, tiles, interchange, fusable);
    if (failed(tile))
      return failure();
    emit(*tile, sizes);
    return success();
  }

  unsigned axis = splitAxes.front();
  int64_t extent = extents[op.rootLoop(root, axis)];
  sizes[axis] = std::min(sizes[axis], extent);
  int64_t tail = extent % sizes[axis];
  if (tail == 0)
    return blockPiecesImpl(rewriter, op, root, sizes, splitAxes.drop_front(), order, emit,
                           fusable);
  // The partial last block along `axis` is a piece of its own.
  rewriter.setInsertionPoint(root);
  auto [head, rest] =
      linalg::splitOp(rewriter, cast<TilingInterface>(root), op.rootLoop(root, axis),
                      rewriter.getIndexAttr(extent - tail));
  if (!op.epilogue.empty()) {
    pullProducers(rewriter, op, head, op.epilogue.size() - 1, fusable);
    pullProducers(rewriter, op, rest, op.epilogue.size() - 1, fusable);
  }
  if (failed(blockPiecesImpl(rewriter, op, head, sizes, splitAxes.drop_front(), order, emit,
                             fusable)))
    return failure();
  sizes[axis] = tail;
  return blockPiecesImpl(rewriter, op, rest, sizes, splitAxes.drop_front(), order, emit,
                         fusable);
}

} // namespace

/// The value a tiling loop's iteration argument starts from: tiles are
/// disjoint, so a tile of the argument still holds the start value's
/// elements until the tile itself is written.
Value loopInit(Value value) {
  auto argument = dyn_cast<BlockArgument>(value);
  if (!argument)
    return {};
  auto loop = dyn_cast<scf::ForOp>(argument.getOwner()->getParentOp());
  if (!loop || !loop.getTiedLoopInit(argument))
    return {};
  return loop.getTiedLoopInit(argument)->get();
}

Value sliceRoot(Value value) {
  for (;;) {
    if (Value init = loopInit(value)) {
      value = init;
      continue;
    }
    auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !isPlainSlice(slice))
      return value;
    value = slice.getSource();
  }
}

/// Whether the region at `offsets` (constants) of `sizes` lies outside what
/// `insert` writes into its destination, so that it reads the destination.
bool outsideInserted(tensor::InsertSliceOp insert, ArrayRef<Value> offsets,
                     ArrayRef<int64_t> sizes) {
  if (insert.getSourceType().getRank() != insert.getDestType().getRank() ||
      !llvm::all_of(insert.getMixedStrides(),
                    [](OpFoldResult s) { return isConstantIntValue(s, 1); }))
    return false;
  for (auto [offset, size, insertedOffset, insertedSize] :
       llvm::zip(offsets, sizes, insert.getMixedOffsets(), insert.getMixedSizes())) {
    std::optional<int64_t> begin = getConstantIntValue(offset);
    std::optional<int64_t> insertedBegin = getConstantIntValue(insertedOffset);
    std::optional<int64_t> insertedExtent = getConstantIntValue(insertedSize);
    if (!begin || !insertedBegin || !insertedExtent)
      continue;
    // Disjoint along one axis is disjoint.
    if (*begin + size <= *insertedBegin || *insertedBegin + *insertedExtent <= *begin)
      return true;
  }
  return false;
}

SliceOrigin traceSlices(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SliceOrigin origin{value, SmallVector<Value>(type.getRank(), zero)};
  for (;;) {
    if (Value init = loopInit(origin.source)) {
      origin.source = init;
      continue;
    }
    // The last rows or columns of a split op read the destination beside
    // what the first part inserted.
    if (auto insert = origin.source.getDefiningOp<tensor::InsertSliceOp>()) {
      if (!type.hasStaticShape() || !outsideInserted(insert, origin.offsets, type.getShape()))
        return origin;
      origin.source = insert.getDest();
      continue;
    }
    auto slice = origin.source.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !isPlainSlice(slice))
      return origin;
    for (auto [total, offset] : llvm::zip(origin.offsets, slice.getMixedOffsets()))
      total = b.createOrFold<arith::AddIOp>(
          loc, total, getValueOrCreateConstantIndexOp(b, loc, offset));
    origin.source = slice.getSource();
  }
}

FailureOr<linalg::LinalgOp> tileOp(RewriterBase &rewriter, linalg::LinalgOp op,
                                   ArrayRef<int64_t> tiles) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tiles));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  return cast<linalg::LinalgOp>(tiled->tiledOps.back());
}

BlockedOp::BlockedOp(linalg::LinalgOp producer) : producer(producer) {
  if (producer->getNumResults() != 1)
    return;
  Value current = producer->getResult(0);
  while (current.hasOneUse()) {
    auto next = dyn_cast<linalg::GenericOp>(current.getUses().begin()->getOwner());
    if (!next)
      break;
    std::optional<unsigned> input = epilogueInput(next, current);
    if (!input)
      break;
    epilogue.push_back(next);
    chainInputs.push_back(*input);
    current = next->getResult(0);
  }
}

Operation *BlockedOp::root() const {
  // Op handles' accessors are not const.
  if (epilogue.empty())
    return linalg::LinalgOp(producer).getOperation();
  return linalg::GenericOp(epilogue.back()).getOperation();
}

unsigned BlockedOp::rootLoop(Operation *root, unsigned axis) const {
  if (!epilogue.empty())
    return axis;
  // A piece of the producer (the producer itself is gone once split).
  auto op = cast<linalg::LinalgOp>(root);
  return op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0))).getDimPosition(axis);
}

LogicalResult blockPieces(RewriterBase &rewriter, const BlockedOp &op, Operation *root,
                          SmallVector<int64_t> sizes, ArrayRef<unsigned> splitAxes,
                          ArrayRef<unsigned> order,
                          function_ref<void(const BlockTile &, ArrayRef<int64_t>)> emit) {
  linalg::LinalgOp producer = op.producer;
  llvm::SmallPtrSet<Operation *, 8> fusable{producer.getOperation()};
  for (linalg::GenericOp epilogue : op.epilogue)
    if (epilogue.getOperation() != root)
      fusable.insert(epilogue);
  return blockPiecesImpl(rewriter, op, root, std::move(sizes), splitAxes, order, emit,
                         fusable);
}

/// Whether `op` broadcasts a vector along the last axis of its result (a
/// bias) and does nothing else.
bool isLastAxisBroadcast(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1)
    return false;
  int64_t rank = op.getNumLoops();
  return op.getNumParallelLoops() == rank &&
         op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0))).isIdentity() &&
         op.getMatchingIndexingMap(op.getDpsInputOperand(0)) ==
             AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, op.getContext())) &&
         op.getBody()->getTerminator()->getOperand(0) == op.getBody()->getArgument(0);
}

Operation *initComputation(linalg::LinalgOp producer) {
  Value init = producer.getDpsInitOperand(0)->get();
  Operation *op = init.getDefiningOp();
  if (!op || !init.hasOneUse())
    return nullptr;
  auto broadcast = dyn_cast<linalg::GenericOp>(op);
  if (isa<linalg::FillOp>(op) || (broadcast && isLastAxisBroadcast(broadcast)))
    return op;
  return nullptr;
}

void dropInitComputation(RewriterBase &rewriter, Operation *init) {
  if (!init)
    return;
  Value destination = cast<DestinationStyleOpInterface>(init).getDpsInitOperand(0)->get();
  rewriter.replaceAllUsesWith(init->getResult(0), destination);
  rewriter.eraseOp(init);
}

Value initialAccumulator(OpBuilder &b, Location loc, Value init, ValueRange indices,
                         bool inBounds, VectorType type, bool &readsInit) {
  SliceOrigin origin = traceSlices(b, loc, init);
  if (auto fill = origin.source.getDefiningOp<linalg::FillOp>())
    return vector::BroadcastOp::create(b, loc, type, fill.getInputs().front());
  Value padding = ub::PoisonOp::create(b, loc, type.getElementType());
  auto broadcast = origin.source.getDefiningOp<linalg::GenericOp>();
  if (broadcast && isLastAxisBroadcast(broadcast) &&
      getElementTypeOrSelf(broadcast.getDpsInputOperand(0)->get().getType()) ==
          type.getElementType()) {
    Value column = b.createOrFold<arith::AddIOp>(loc, origin.offsets.back(), indices.back());
    return vector::TransferReadOp::create(b, loc, type,
                                          broadcast.getDpsInputOperand(0)->get(),
                                          ValueRange{column}, padding,
                                          ArrayRef<bool>{inBounds});
  }
  readsInit = true;
  return vector::TransferReadOp::create(b, loc, type, init, indices, padding,
                                        ArrayRef<bool>{inBounds});
}

namespace {

/// The block's last op: its epilogue's last, or the producer. Every operand
/// of the epilogue's tiles is defined before it.
Operation *lastOfBlock(const BlockTile &tile) {
  if (!tile.epilogue.empty())
    return linalg::GenericOp(tile.epilogue.back()).getOperation();
  return linalg::LinalgOp(tile.producer).getOperation();
}

/// `written` with the block's epilogue applied to `values` and the results
/// stored where they go.
Value writeValues(OpBuilder &rewriter, Location loc, const BlockTile &tile,
                  ArrayRef<BlockValue> values, Value written) {
  for (const BlockValue &value : values) {
    Value vector = value.vector;
    int64_t width = cast<VectorType>(vector.getType()).getDimSize(0);
    for (auto [epilogueOp, chained] : llvm::zip(tile.epilogue, tile.chainInputs)) {
      linalg::GenericOp op = epilogueOp;
      unsigned lastLoop = op.getNumLoops() - 1;
      SmallVector<Value> arguments;
      for (OpOperand *operand : op.getDpsInputOperands()) {
        if (operand->getOperandNumber() == chained) {
          arguments.push_back(vector);
          continue;
        }
        AffineMap map = op.getMatchingIndexingMap(operand);
        SmallVector<Value> indices;
        for (unsigned result = 0; result < map.getNumResults(); ++result)
          indices.push_back(value.indices[map.getDimPosition(result)]);
        Type elementType = getElementTypeOrSelf(operand->get().getType());
        if (map.isFunctionOfDim(lastLoop)) {
          Value padding = ub::PoisonOp::create(rewriter, loc, elementType);
          arguments.push_back(vector::TransferReadOp::create(
              rewriter, loc, VectorType::get({width}, elementType), operand->get(), indices,
              padding, ArrayRef<bool>{value.inBounds}));
          continue;
        }
        Value scalar = tensor::ExtractOp::create(rewriter, loc, operand->get(), indices);
        arguments.push_back(broadcastTo(rewriter, loc, scalar, width));
      }
      arguments.push_back(vector); // the unused output argument
      vector = vectorizeBody(rewriter, loc, op, arguments, width);
    }
    written = vector::TransferWriteOp::create(rewriter, loc, vector, written, value.indices,
                                              ArrayRef<bool>{value.inBounds})
                  .getResult();
  }
  return written;
}

/// Replaces the block's tiles by `written`, the last one's result.
void replaceBlock(RewriterBase &rewriter, const BlockTile &tile, Value written) {
  rewriter.replaceOp(lastOfBlock(tile), written);
  if (tile.epilogue.empty())
    return;
  for (linalg::GenericOp op : llvm::reverse(ArrayRef(tile.epilogue).drop_back()))
    rewriter.eraseOp(op);
  rewriter.eraseOp(tile.producer);
}

} // namespace

void storeBlock(RewriterBase &rewriter, Location loc, const BlockTile &tile,
                ArrayRef<BlockValue> values) {
  Operation *last = lastOfBlock(tile);
  rewriter.setInsertionPoint(last);
  Value written = cast<DestinationStyleOpInterface>(last).getDpsInitOperand(0)->get();
  replaceBlock(rewriter, tile, writeValues(rewriter, loc, tile, values, written));
}

void storeBlockRows(RewriterBase &rewriter, Location loc, const BlockTile &tile, int64_t rows,
                    function_ref<SmallVector<BlockValue>(OpBuilder &, Location, Value)> rowValues) {
  Operation *last = lastOfBlock(tile);
  rewriter.setInsertionPoint(last);
  Value written = cast<DestinationStyleOpInterface>(last).getDpsInitOperand(0)->get();
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, value);
  };
  auto loop = scf::ForOp::create(
      rewriter, loc, index(0), index(rows), index(1), ValueRange{written},
      [&](OpBuilder &b, Location at, Value row, ValueRange carried) {
        scf::YieldOp::create(b, at,
                             writeValues(b, at, tile, rowValues(b, at, row), carried.front()));
      });
  replaceBlock(rewriter, tile, loop.getResult(0));
}

} // namespace tessel::x86
