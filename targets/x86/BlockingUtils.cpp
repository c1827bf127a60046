//===- BlockingUtils.cpp - What the register-blocking emitters share ------===//

#include "targets/x86/BlockingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace tessel::x86 {

namespace {

/// Whether `slice` is one that traceSlices and sliceRoot look through.
bool isPlainSlice(tensor::ExtractSliceOp slice) {
  return slice.getSourceType().getRank() == slice.getResultType().getRank() &&
         llvm::all_of(slice.getMixedStrides(),
                      [](OpFoldResult s) { return isConstantIntValue(s, 1); });
}

} // namespace

Value sliceRoot(Value value) {
  while (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!isPlainSlice(slice))
      break;
    value = slice.getSource();
  }
  return value;
}

SliceOrigin traceSlices(OpBuilder &b, Location loc, Value value) {
  auto rank = cast<RankedTensorType>(value.getType()).getRank();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SliceOrigin origin{value, SmallVector<Value>(rank, zero)};
  while (auto slice = origin.source.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!isPlainSlice(slice))
      break;
    for (auto [total, offset] : llvm::zip(origin.offsets, slice.getMixedOffsets()))
      total = b.createOrFold<arith::AddIOp>(
          loc, total, getValueOrCreateConstantIndexOp(b, loc, offset));
    origin.source = slice.getSource();
  }
  return origin;
}

} // namespace tessel::x86
