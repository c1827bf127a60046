//===- UnpackedOperands.cpp - Packed weights read in place by a product ---===//

#include "targets/cuda/UnpackedOperands.h"
#include "targets/cuda/Loops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

/// The indices of a buffer of shape `shape` from `indices` of a reshape of
/// it that joins each of `groups` of its dimensions into one: each index
/// split row-major by its group's extents.
SmallVector<AffineExpr> splitIndices(ArrayRef<AffineExpr> indices,
                                     ArrayRef<ReassociationIndices> groups,
                                     ArrayRef<int64_t> shape) {
  SmallVector<AffineExpr> split;
  for (auto [index, group] : llvm::zip_equal(indices, groups)) {
    int64_t inner = 1;
    for (int64_t dim : group)
      inner *= shape[dim];
    for (auto [position, dim] : llvm::enumerate(group)) {
      inner /= shape[dim];
      AffineExpr part = index.floorDiv(inner);
      split.push_back(position == 0 ? part : part % shape[dim]);
    }
  }
  return split;
}

/// `expr` of `dims` in index arithmetic, its divisions unsigned: the
/// indices are never negative, and an unsigned division by a power of two
/// is a shift where a floor division needs a correction for negative
/// dividends (registers that made ptxas spill).
Value emitIndex(OpBuilder &builder, Location loc, AffineExpr expr, ValueRange dims) {
  auto constant = [&](int64_t value) {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dims[dim.getPosition()];
  if (auto value = dyn_cast<AffineConstantExpr>(expr))
    return constant(value.getValue());
  auto binary = cast<AffineBinaryOpExpr>(expr);
  Value lhs = emitIndex(builder, loc, binary.getLHS(), dims);
  Value rhs = emitIndex(builder, loc, binary.getRHS(), dims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(builder, loc, lhs, rhs);
  case AffineExprKind::Mul:
    return arith::MulIOp::create(builder, loc, lhs, rhs);
  case AffineExprKind::FloorDiv:
    return arith::DivUIOp::create(builder, loc, lhs, rhs);
  case AffineExprKind::Mod:
    return arith::RemUIOp::create(builder, loc, lhs, rhs);
  default:
    llvm_unreachable("reshapes and slices give no ceiling division");
  }
}

/// The unpacked index that `expr`, one of the packed indices, follows:
/// each follows one at most (the reshapes split indices, the transpose
/// permutes them); the innermost for a constant.
unsigned followedIndex(AffineExpr expr, unsigned rank) {
  unsigned dim = rank - 1;
  while (dim > 0 && !expr.isFunctionOfDim(dim))
    --dim;
  return dim;
}

/// Whether `buffer` and its views are only ever read: by loads, or as
/// inputs of linalg ops (a kernel's operands and constants are; its
/// outputs and temporaries are written). Reads inside the launches built
/// so far count too, since a launch uses the buffers it captures directly.
bool isOnlyRead(Value buffer) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *owner = use.getOwner();
    if (auto view = dyn_cast<ViewLikeOpInterface>(owner); view && view.getViewSource() == buffer) {
      if (!isOnlyRead(owner->getResult(0)))
        return false;
      continue;
    }
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(owner)) {
      if (linalgOp.isDpsInit(&use))
        return false;
      continue;
    }
    if (!isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp>(owner))
      return false;
  }
  return true;
}

} // namespace

std::optional<UnpackedOperand> findUnpacking(linalg::LinalgOp product, OpOperand *operand) {
  UnpackedOperand unpacking;
  unpacking.unpacked = operand->get();
  if (!unpacking.unpacked.getDefiningOp<memref::AllocOp>() ||
      !isPlainStatic(unpacking.unpacked.getType()) ||
      llvm::count(product->getOperands(), unpacking.unpacked) != 1)
    return std::nullopt;
  MLIRContext *context = product.getContext();
  int64_t rank = cast<MemRefType>(unpacking.unpacked.getType()).getRank();
  SmallVector<AffineExpr> indices;
  for (int64_t dim = 0; dim < rank; ++dim)
    indices.push_back(getAffineDimExpr(dim, context));

  // The copy writes the buffer, or a view of it that splits dimensions.
  Value written;
  for (Operation *user : unpacking.unpacked.getUsers()) {
    if (user == product.getOperation())
      continue;
    if (written)
      return std::nullopt;
    written = unpacking.unpacked;
    unpacking.copying = user;
    if (auto split = dyn_cast<memref::ExpandShapeOp>(user)) {
      if (!split->hasOneUse())
        return std::nullopt;
      indices =
          splitIndices(indices, split.getReassociationIndices(), split.getResultType().getShape());
      unpacking.views.push_back(split);
      written = split.getResult();
      unpacking.copying = *split->getUsers().begin();
    }
  }
  Value source = copiedBuffer(unpacking.copying);
  if (!source || cast<linalg::LinalgOp>(unpacking.copying).getDpsInits()[0] != written)
    return std::nullopt;

  // It reads the transposed temporary, perhaps through a slice (of the
  // padding the packing added) of a view that joins dimensions.
  if (auto slice = source.getDefiningOp<memref::SubViewOp>()) {
    if (!slice->hasOneUse() || !slice.hasUnitStride() ||
        ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
        slice.getSourceType().getRank() != slice.getType().getRank())
      return std::nullopt;
    for (auto [index, offset] : llvm::zip_equal(indices, slice.getStaticOffsets()))
      index = index + offset;
    unpacking.views.push_back(slice);
    source = slice.getSource();
  }
  if (auto join = source.getDefiningOp<memref::CollapseShapeOp>()) {
    if (!join->hasOneUse())
      return std::nullopt;
    indices = splitIndices(indices, join.getReassociationIndices(), join.getSrcType().getShape());
    unpacking.views.push_back(join);
    source = join.getSrc();
  }
  if (!source.getDefiningOp<memref::AllocOp>() || !isPlainStatic(source.getType()))
    return std::nullopt;
  linalg::TransposeOp transpose;
  for (Operation *user : source.getUsers()) {
    if (user == unpacking.copying || llvm::is_contained(unpacking.views, user))
      continue;
    auto candidate = dyn_cast<linalg::TransposeOp>(user);
    if (transpose || !candidate || candidate.getInit() != source)
      return std::nullopt;
    transpose = candidate;
  }
  if (!transpose)
    return std::nullopt;
  unpacking.transposing = transpose;
  unpacking.packed = transpose.getInput();
  if (!isPlainStatic(unpacking.packed.getType()) ||
      getElementTypeOrSelf(unpacking.packed.getType()) !=
          getElementTypeOrSelf(unpacking.unpacked.getType()))
    return std::nullopt;

  // The temporary's dimension i is the packed weight's permutation[i].
  SmallVector<AffineExpr> packedIndices(indices.size());
  for (auto [index, dim] : llvm::zip_equal(indices, transpose.getPermutation()))
    packedIndices[dim] = index;
  unpacking.packedIndices = simplifyAffineMap(AffineMap::get(rank, 0, packedIndices, context));
  unpacking.contiguousDim = followedIndex(unpacking.packedIndices.getResults().back(), rank);

  Block *block = product->getBlock();
  if (transpose->getBlock() != block || unpacking.copying->getBlock() != block ||
      !transpose->isBeforeInBlock(unpacking.copying) ||
      !unpacking.copying->isBeforeInBlock(product) || !isOnlyRead(rootBuffer(unpacking.packed)))
    return std::nullopt;
  return unpacking;
}

bool packedVectorsContiguous(const UnpackedOperand &unpacking, int64_t width) {
  ArrayRef<int64_t> unpackedShape = cast<MemRefType>(unpacking.unpacked.getType()).getShape();
  ArrayRef<int64_t> packedShape = cast<MemRefType>(unpacking.packed.getType()).getShape();
  unsigned dim = unpacking.contiguousDim;
  if (width == 1)
    return true;
  if (unpackedShape[dim] % width || packedShape.back() % width)
    return false;
  // Each packed index follows one unpacked index at most (followedIndex),
  // so the vectors along `dim` may be checked with the other indices at
  // zero.
  SmallVector<int64_t> at(unpackedShape.size(), 0);
  for (int64_t start = 0; start < unpackedShape[dim]; start += width) {
    at[dim] = start;
    SmallVector<int64_t, 4> expected = unpacking.packedIndices.compose(at);
    if (expected.back() % width)
      return false;
    for (int64_t element = 1; element < width; ++element) {
      at[dim] = start + element;
      ++expected.back();
      if (unpacking.packedIndices.compose(at) != expected)
        return false;
    }
  }
  return true;
}

Value loadUnpacked(OpBuilder &builder, Location loc, const UnpackedOperand &unpacking,
                   VectorType vectorType, ValueRange indices, llvm::MaybeAlign alignment) {
  // The element's offset in the packed weight, summed per unpacked index
  // from the innermost: a product's staging keeps its rows' share (the
  // columns of a weight [k][n]) from one step to the next, and as one
  // partial sum it is one register, where the packed indices apart would
  // keep several (ptxas spilled).
  auto packedType = cast<MemRefType>(unpacking.packed.getType());
  SmallVector<int64_t> strides = computeSuffixProduct(packedType.getShape());
  SmallVector<AffineExpr> offsetPerIndex(indices.size(),
                                         getAffineConstantExpr(0, builder.getContext()));
  for (auto [expr, stride] : llvm::zip_equal(unpacking.packedIndices.getResults(), strides)) {
    unsigned dim = followedIndex(expr, indices.size());
    offsetPerIndex[dim] = offsetPerIndex[dim] + expr * stride;
  }
  Value offset;
  for (AffineExpr part : llvm::reverse(offsetPerIndex)) {
    Value term = emitIndex(builder, loc, part, indices);
    offset = offset ? arith::AddIOp::create(builder, loc, offset, term).getResult() : term;
  }
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, packedType.getRank()));
  Value flat = memref::CollapseShapeOp::create(builder, loc, unpacking.packed,
                                               ArrayRef<ReassociationIndices>{all});
  return vector::LoadOp::create(builder, loc, vectorType, flat, ValueRange{offset},
                                /*nontemporal=*/false, alignment);
}

void eraseUnpacking(const UnpackedOperand &unpacking) {
  Value temporary = cast<linalg::TransposeOp>(unpacking.transposing).getInit();
  unpacking.copying->erase();
  // Each view's one user is the copy or the view before it.
  for (Operation *view : unpacking.views)
    view->erase();
  unpacking.transposing->erase();
  temporary.getDefiningOp()->erase();
  if (unpacking.unpacked.use_empty())
    unpacking.unpacked.getDefiningOp()->erase();
}

void transposeInPlaceOfCopies(ModuleOp kernels) {
  SmallVector<linalg::TransposeOp> transposes;
  kernels.walk([&](linalg::TransposeOp transpose) {
    if (transpose.hasPureBufferSemantics())
      transposes.push_back(transpose);
  });
  for (linalg::TransposeOp transpose : transposes) {
    Value temporary = transpose.getInit();
    if (!temporary.getDefiningOp<memref::AllocOp>() || !llvm::hasNItems(temporary.getUsers(), 2))
      continue;
    Operation *copy = nullptr;
    for (Operation *user : temporary.getUsers())
      if (user != transpose.getOperation())
        copy = user;
    if (copiedBuffer(copy) != temporary || copy->getBlock() != transpose->getBlock() ||
        !transpose->isBeforeInBlock(copy))
      continue;
    Value destination = cast<linalg::LinalgOp>(copy).getDpsInits()[0];
    // Nothing but views comes between, so nothing reads or writes the
    // destination before the copy would.
    Operation *between = transpose->getNextNode();
    while (between != copy && leavesBuffersAlone(between))
      between = between->getNextNode();
    // A transpose cannot write the buffer it reads.
    if (between != copy || destination.getType() != temporary.getType() ||
        rootBuffer(destination) == rootBuffer(transpose.getInput()))
      continue;
    // The destination's view must exist before the transpose writes it.
    Operation *view = destination.getDefiningOp<memref::ExpandShapeOp>();
    if (view) {
      auto definedBefore = [&](Value operand) {
        Operation *definition = operand.getDefiningOp();
        return !definition || definition->getBlock() != transpose->getBlock() ||
               definition->isBeforeInBlock(transpose);
      };
      if (!llvm::all_of(view->getOperands(), definedBefore))
        continue;
      if (transpose->isBeforeInBlock(view))
        view->moveBefore(transpose);
    } else if (auto result = dyn_cast<OpResult>(destination);
               result && result.getOwner()->getBlock() == transpose->getBlock() &&
               transpose->isBeforeInBlock(result.getOwner())) {
      continue;
    }
    transpose.getInitMutable().assign(destination);
    copy->erase();
    temporary.getDefiningOp()->erase();
  }
}

} // namespace tessel::cuda
