//===- ConcatenationTiles.cpp - Workgroups of a concatenation kernel ------===//

#include "targets/x86/ConcatenationTiles.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace tessel::x86 {
namespace {

/// The insert_slice ops of a concatenation kernel, first to last, if
/// `function` returns the last of a chain that starts from tensor.empty,
/// each inserting a whole static, unit-stride slice of the same rank.
std::optional<SmallVector<tensor::InsertSliceOp>> matchConcatenation(func::FuncOp function) {
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  if (ret.getNumOperands() != 1)
    return std::nullopt;
  SmallVector<tensor::InsertSliceOp> inserts;
  Value value = ret.getOperand(0);
  while (auto insert = value.getDefiningOp<tensor::InsertSliceOp>()) {
    if (!insert->hasOneUse() && !inserts.empty())
      return std::nullopt;
    if (insert.getSourceType().getRank() != insert.getDestType().getRank() ||
        !insert.hasUnitStride() || !insert.getSourceType().hasStaticShape() ||
        ShapedType::isDynamicShape(insert.getStaticOffsets()))
      return std::nullopt;
    inserts.push_back(insert);
    value = insert.getDest();
  }
  if (inserts.empty() || !value.getDefiningOp<tensor::EmptyOp>() ||
      !cast<RankedTensorType>(value.getType()).hasStaticShape())
    return std::nullopt;
  std::reverse(inserts.begin(), inserts.end());
  return inserts;
}

/// The outermost axis longer than 1 that every insert spans whole, if any.
std::optional<unsigned> wholeAxis(MutableArrayRef<tensor::InsertSliceOp> inserts) {
  ArrayRef<int64_t> shape = inserts.front().getDestType().getShape();
  for (unsigned axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] <= 1)
      continue;
    if (llvm::all_of(inserts, [&](tensor::InsertSliceOp insert) {
          return insert.getSourceType().getDimSize(axis) == shape[axis];
        }))
      return axis;
  }
  return std::nullopt;
}

/// A tile that divides `extent` into at least `parts` tiles (a copy loses
/// nothing to a few more), but no more than `maxParts` where a divisor
/// allows.
int64_t tileFor(int64_t extent, int64_t parts, int64_t maxParts) {
  int64_t tile = llvm::divideCeil(extent, parts);
  while (extent % tile != 0)
    --tile;
  if (extent / tile <= maxParts)
    return tile;
  for (tile = llvm::divideCeil(extent, maxParts); extent % tile != 0;)
    ++tile;
  return tile;
}

} // namespace

bool tileConcatenation(RewriterBase &rewriter, func::FuncOp function, int64_t maxWorkgroups,
                       int64_t minBytes) {
  std::optional<SmallVector<tensor::InsertSliceOp>> inserts = matchConcatenation(function);
  if (!inserts)
    return false;
  std::optional<unsigned> axis = wholeAxis(*inserts);
  if (!axis)
    return false;
  RankedTensorType resultType = inserts->back().getDestType();
  int64_t bytes = resultType.getNumElements() *
                  llvm::divideCeil(resultType.getElementTypeBitWidth(), 8);
  int64_t extent = resultType.getDimSize(*axis);
  int64_t tile = tileFor(extent,
                         std::clamp<int64_t>(bytes / std::max<int64_t>(minBytes, 1), 1,
                                             maxWorkgroups),
                         maxWorkgroups);
  if (tile == extent)
    return false;

  tensor::InsertSliceOp last = inserts->back();
  Location loc = last.getLoc();
  Value empty = inserts->front().getDest();
  rewriter.setInsertionPoint(last);
  int64_t rank = resultType.getRank();
  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(extent)},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(tile)}, ValueRange{empty}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(forall.getBody());
    Value start = forall.getInductionVar(0);
    Value shared = forall.getRegionIterArgs().front();
    // The workgroup's rows of the result, then of each input, which go to
    // the input's place among them (its offsets, 0 along the split axis).
    auto rowsOf = [&](ArrayRef<int64_t> shape) {
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(rewriter.getContext(), shape);
      offsets[*axis] = start;
      sizes[*axis] = rewriter.getIndexAttr(tile);
      return std::pair{offsets, sizes};
    };
    SmallVector<OpFoldResult> unit(rank, rewriter.getIndexAttr(1));
    auto [resultOffsets, resultSizes] = rowsOf(resultType.getShape());
    Value rows = tensor::ExtractSliceOp::create(rewriter, loc, shared, resultOffsets,
                                                resultSizes, unit);
    for (tensor::InsertSliceOp insert : *inserts) {
      auto [sourceOffsets, sourceSizes] = rowsOf(insert.getSourceType().getShape());
      Value part = tensor::ExtractSliceOp::create(rewriter, loc, insert.getSource(),
                                                  sourceOffsets, sourceSizes, unit);
      SmallVector<OpFoldResult> at = insert.getMixedOffsets();
      at[*axis] = rewriter.getIndexAttr(0);
      rows = tensor::InsertSliceOp::create(rewriter, loc, part, rows, at, sourceSizes, unit);
    }
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, rows, shared, resultOffsets,
                                          resultSizes, unit);
  }
  rewriter.replaceOp(last, forall.getResults());
  for (tensor::InsertSliceOp insert : llvm::reverse(ArrayRef(*inserts).drop_back()))
    rewriter.eraseOp(insert);
  return true;
}

} // namespace tessel::x86
