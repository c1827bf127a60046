//===- RowReduction.cpp - Reductions along the innermost axis -------------===//
//
// Softmax, LayerNorm and the reductions of ONNX reduce along the last axis:
// a row of 197 or 768 elements becomes one value. linalg's vectorizer turns
// each vector-sized piece of the row into a horizontal reduction; here a
// vector accumulator walks the row (its last, partial vector masked) and
// one horizontal reduction ends it.
//
//===----------------------------------------------------------------------===//

#include "targets/x86/RowReduction.h"
#include "targets/x86/BlockingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::x86 {
namespace {

/// How a row reduction combines: its kind and the value it starts from.
struct Combiner {
  vector::CombiningKind kind;
  double neutral;
};

/// The combiner of a body that yields combine(out, f(inputs)).
std::optional<Combiner> combinerOf(linalg::GenericOp op) {
  Value yielded = op.getBody()->getTerminator()->getOperand(0);
  Operation *combine = yielded.getDefiningOp();
  BlockArgument out = op.getRegionOutputArgs().front();
  if (!combine || combine->getNumOperands() != 2 || !out.hasOneUse() ||
      !llvm::is_contained(combine->getOperands(), Value(out)))
    return std::nullopt;
  double infinity = std::numeric_limits<double>::infinity();
  if (isa<arith::AddFOp>(combine))
    return Combiner{vector::CombiningKind::ADD, 0.0};
  if (isa<arith::MulFOp>(combine))
    return Combiner{vector::CombiningKind::MUL, 1.0};
  if (isa<arith::MaximumFOp>(combine))
    return Combiner{vector::CombiningKind::MAXIMUMF, -infinity};
  if (isa<arith::MinimumFOp>(combine))
    return Combiner{vector::CombiningKind::MINIMUMF, infinity};
  if (isa<arith::MaxNumFOp>(combine))
    return Combiner{vector::CombiningKind::MAXNUMF, -infinity};
  if (isa<arith::MinNumFOp>(combine))
    return Combiner{vector::CombiningKind::MINNUMF, infinity};
  return std::nullopt;
}

/// Whether `op` reduces its last loop alone into an f32 result, with inputs
/// contiguous along that loop or not varying along it.
std::optional<Combiner> matchRowReduction(linalg::LinalgOp linalgOp) {
  auto op = dyn_cast<linalg::GenericOp>(linalgOp.getOperation());
  if (!op || !op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || op.getNumLoops() < 1)
    return std::nullopt;
  unsigned last = op.getNumLoops() - 1;
  if (op.getIteratorTypesArray()[last] != utils::IteratorType::reduction)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
      return std::nullopt;
  }
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  AffineMap resultMap = op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)));
  if (!resultType.getElementType().isF32() || !resultMap.isProjectedPermutation() ||
      resultMap.isFunctionOfDim(last))
    return std::nullopt;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    if (!map.isProjectedPermutation() ||
        (map.isFunctionOfDim(last) &&
         map.getResults().back() != getAffineDimExpr(last, op.getContext())))
      return std::nullopt;
  }
  for (Operation &inner : op.getBody()->without_terminator())
    if (inner.getNumRegions() || !OpTrait::hasElementwiseMappableTraits(&inner))
      return std::nullopt;
  return combinerOf(op);
}

/// Emits the reduction of `tile` (its parallel extents all 1) in place of it.
void emitRow(RewriterBase &rewriter, linalg::GenericOp tile, Combiner combiner,
             int64_t width) {
  Location loc = tile.getLoc();
  rewriter.setInsertionPoint(tile);
  unsigned last = tile.getNumLoops() - 1;
  int64_t length = tile.getStaticLoopRanges()[last];
  auto vectorType = VectorType::get({width}, rewriter.getF32Type());
  auto index = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value zero = index(rewriter, 0);

  // One step over `lanes` lanes of the row from `offset`.
  auto step = [&](OpBuilder &b, Value offset, Value accumulator, bool masked) -> Value {
    SmallVector<Value> arguments;
    for (OpOperand *operand : tile.getDpsInputOperands()) {
      AffineMap map = tile.getMatchingIndexingMap(operand);
      SmallVector<Value> indices;
      for (unsigned result = 0; result < map.getNumResults(); ++result)
        indices.push_back(map.getDimPosition(result) == last ? offset : zero);
      Type elementType = getElementTypeOrSelf(operand->get().getType());
      if (map.isFunctionOfDim(last)) {
        Value padding = ub::PoisonOp::create(b, loc, elementType);
        arguments.push_back(vector::TransferReadOp::create(
            b, loc, VectorType::get({width}, elementType), operand->get(), indices, padding,
            ArrayRef<bool>{!masked}));
        continue;
      }
      Value scalar = tensor::ExtractOp::create(b, loc, operand->get(), indices);
      arguments.push_back(vector::BroadcastOp::create(
          b, loc, VectorType::get({width}, elementType), scalar));
    }
    arguments.push_back(accumulator);
    Value updated = vectorizeBody(b, loc, tile, arguments, width);
    if (!masked)
      return updated;
    // The lanes past the row keep the accumulator as it was.
    Value mask = vector::CreateMaskOp::create(
        b, loc, VectorType::get({width}, b.getI1Type()),
        ValueRange{arith::SubIOp::create(b, loc, index(b, length), offset)});
    return arith::SelectOp::create(b, loc, mask, updated, accumulator);
  };

  Value accumulator = arith::ConstantOp::create(
      rewriter, loc, DenseElementsAttr::get(vectorType, static_cast<float>(combiner.neutral)));
  int64_t whole = length / width * width;
  if (whole > 0) {
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, index(rewriter, whole), index(rewriter, width),
        ValueRange{accumulator},
        [&](OpBuilder &b, Location, Value offset, ValueRange carried) {
          scf::YieldOp::create(b, loc, step(b, offset, carried.front(), false));
        });
    accumulator = loop.getResult(0);
  }
  if (whole < length)
    accumulator = step(rewriter, index(rewriter, whole), accumulator, true);

  // The row's value, combined with what the result held before.
  Value reduced = vector::ReductionOp::create(rewriter, loc, combiner.kind, accumulator);
  Value init = tile.getDpsInitOperand(0)->get();
  auto initType = cast<RankedTensorType>(init.getType());
  SmallVector<Value> origin(initType.getRank(), zero);
  Value initial = tensor::ExtractOp::create(rewriter, loc, init, origin);
  Operation *combine = tile.getBody()->getTerminator()->getOperand(0).getDefiningOp();
  OperationState state(loc, combine->getName(), ValueRange{initial, reduced},
                       TypeRange{rewriter.getF32Type()}, combine->getAttrs());
  Value result = rewriter.create(state)->getResult(0);
  rewriter.replaceOp(tile, tensor::InsertOp::create(rewriter, loc, result, init, origin));
}

} // namespace

LogicalResult vectorizeRowReduction(RewriterBase &rewriter, linalg::LinalgOp op,
                                    int64_t width) {
  std::optional<Combiner> combiner = matchRowReduction(op);
  if (!combiner)
    return failure();
  // One row at a time.
  SmallVector<int64_t> tiles(op.getNumLoops(), 1);
  tiles.back() = 0;
  FailureOr<linalg::LinalgOp> row = tileOp(rewriter, op, tiles);
  if (failed(row))
    return failure();
  emitRow(rewriter, cast<linalg::GenericOp>(row->getOperation()), *combiner, width);
  return success();
}

} // namespace tessel::x86
