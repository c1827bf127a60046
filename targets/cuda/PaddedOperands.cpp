//===- PaddedOperands.cpp - Padded images read in place by a product ------===//

#include "targets/cuda/PaddedOperands.h"
#include "targets/cuda/Loops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

/// The value `op` writes to every element of its one output, when it
/// reads no buffer: a scalar input it yields, or a value from outside its
/// body.
Value fillValue(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity() || !op.getBlock())
    return Value();
  for (Value input : op.getDpsInputs())
    if (isa<ShapedType>(input.getType()))
      return Value();
  Value yielded = op.getBlock()->getTerminator()->getOperand(0);
  if (auto argument = dyn_cast<BlockArgument>(yielded)) {
    if (argument.getOwner() == op.getBlock() && argument.getArgNumber() < op.getNumDpsInputs())
      return op.getDpsInputs()[argument.getArgNumber()];
    return Value();
  }
  return op->isAncestor(yielded.getDefiningOp()) ? Value() : yielded;
}

/// Whether any op strictly between `first` and `last` (in one block) may
/// write the buffer `root`.
bool mayWriteBetween(Operation *first, Operation *last, Value root) {
  for (Operation *op = first->getNextNode(); op && op != last; op = op->getNextNode()) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      for (Value init : linalgOp.getDpsInits())
        if (rootBuffer(init) == root)
          return true;
      continue;
    }
    if (isa<memref::AllocOp, memref::AllocaOp, ViewLikeOpInterface>(op))
      continue;
    for (Value operand : op->getOperands())
      if (isa<MemRefType>(operand.getType()) && rootBuffer(operand) == root)
        return true;
  }
  return false;
}

} // namespace

std::optional<PaddedOperand> findPadding(linalg::LinalgOp product, OpOperand *operand) {
  PaddedOperand padding;
  padding.padded = operand->get();
  auto allocation = padding.padded.getDefiningOp<memref::AllocOp>();
  if (!allocation || !isPlainStatic(padding.padded.getType()))
    return std::nullopt;
  memref::SubViewOp interior;
  for (Operation *user : padding.padded.getUsers()) {
    if (user == product.getOperation())
      continue;
    if (auto subview = dyn_cast<memref::SubViewOp>(user)) {
      if (interior || !subview->hasOneUse())
        return std::nullopt;
      interior = subview;
      padding.copying = *subview->getUsers().begin();
      continue;
    }
    auto filling = dyn_cast<linalg::LinalgOp>(user);
    if (padding.filling || !filling || filling.getDpsInits()[0] != padding.padded ||
        !(padding.fill = fillValue(filling)))
      return std::nullopt;
    padding.filling = filling;
  }
  if (!interior || !padding.filling || llvm::count_if(product->getOperands(), [&](Value value) {
                                         return value == padding.padded;
                                       }) != 1)
    return std::nullopt;
  auto copying = dyn_cast<linalg::LinalgOp>(padding.copying);
  if (!copying || copying.getDpsInits()[0] != interior.getResult())
    return std::nullopt;
  padding.source = copiedBuffer(padding.copying);
  if (!padding.source || !isPlainStatic(padding.source.getType()) ||
      getElementTypeOrSelf(padding.source.getType()) !=
          getElementTypeOrSelf(padding.padded.getType()) ||
      !interior.hasUnitStride() ||
      interior.getStaticSizes() != cast<MemRefType>(padding.source.getType()).getShape() ||
      ShapedType::isDynamicShape(interior.getStaticOffsets()))
    return std::nullopt;
  padding.offsets.assign(interior.getStaticOffsets().begin(), interior.getStaticOffsets().end());
  Block *block = product->getBlock();
  if (padding.filling->getBlock() != block || padding.copying->getBlock() != block ||
      !padding.filling->isBeforeInBlock(padding.copying) ||
      !padding.copying->isBeforeInBlock(product) ||
      mayWriteBetween(padding.copying, product, rootBuffer(padding.source)))
    return std::nullopt;
  return padding;
}

bool innermostUnpadded(const PaddedOperand &padding) {
  return padding.offsets.back() == 0 &&
         cast<MemRefType>(padding.source.getType()).getShape().back() ==
             cast<MemRefType>(padding.padded.getType()).getShape().back();
}

Value loadPadded(OpBuilder &builder, Location loc, const PaddedOperand &padding,
                 VectorType vectorType, ValueRange indices, llvm::MaybeAlign alignment) {
  ArrayRef<int64_t> sourceShape = cast<MemRefType>(padding.source.getType()).getShape();
  ArrayRef<int64_t> paddedShape = cast<MemRefType>(padding.padded.getType()).getShape();
  auto index = [&](int64_t value) { return arith::ConstantIndexOp::create(builder, loc, value); };
  Value inside;
  SmallVector<Value> sourceIndices;
  for (auto [d, paddedIndex] : llvm::enumerate(indices)) {
    int64_t offset = padding.offsets[d], size = sourceShape[d];
    if (offset == 0 && size == paddedShape[d]) {
      sourceIndices.push_back(paddedIndex);
      continue;
    }
    // Inside the interior along d, and the nearest index of the source.
    Value low = index(offset), high = index(offset + size);
    Value within = arith::AndIOp::create(
        builder, loc,
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, paddedIndex, low),
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, paddedIndex, high));
    inside = inside ? arith::AndIOp::create(builder, loc, inside, within).getResult() : within;
    Value nearest =
        arith::MinSIOp::create(builder, loc, arith::MaxSIOp::create(builder, loc, paddedIndex, low),
                               index(offset + size - 1));
    sourceIndices.push_back(arith::SubIOp::create(builder, loc, nearest, low));
  }
  Value value = vector::LoadOp::create(builder, loc, vectorType, padding.source, sourceIndices,
                                       /*nontemporal=*/false, alignment);
  if (!inside)
    return value;
  Value fill = vector::BroadcastOp::create(builder, loc, vectorType, padding.fill);
  return arith::SelectOp::create(builder, loc, inside, value, fill);
}

void erasePadding(const PaddedOperand &padding) {
  Operation *interior = cast<linalg::LinalgOp>(padding.copying).getDpsInits()[0].getDefiningOp();
  padding.copying->erase();
  interior->erase();
  padding.filling->erase();
  if (padding.padded.use_empty())
    padding.padded.getDefiningOp()->erase();
}

} // namespace tessel::cuda
