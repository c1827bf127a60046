//===- AmxTiles.cpp - INT8 blocks on AMX tiles ----------------------------===//

#include "targets/x86/AmxTiles.h"
#include "targets/x86/BlockingUtils.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::x86 {

namespace {

/// Marks the stack buffer that a function's blocks stage accumulators in.
constexpr llvm::StringLiteral kStageAttr = "tessel.amx_stage";

Value constantIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// The stack buffer [kMaxAccumulatorTiles, 16, 16] i32 of the function
/// around `b`: in its entry block, so that it is one fixed stack slot and
/// not an allocation per block.
Value stageBuffer(OpBuilder &b, Location loc) {
  auto function = b.getInsertionBlock()->getParentOp()->getParentOfType<func::FuncOp>();
  Block &entry = function.getBody().front();
  for (auto alloca : entry.getOps<memref::AllocaOp>())
    if (alloca->hasAttr(kStageAttr))
      return alloca;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&entry);
  auto type = MemRefType::get({kMaxAccumulatorTiles, kTileRows, kTileColumns}, b.getI32Type());
  auto alloca = memref::AllocaOp::create(b, loc, type, b.getI64IntegerAttr(kTileRowBytes));
  alloca->setAttr(kStageAttr, b.getUnitAttr());
  return alloca;
}

} // namespace

namespace {

/// `extent` itself up to `most`; else its largest divisor from `most` / 2
/// to `most`; else `most`.
int64_t evenStep(int64_t extent, int64_t most) {
  if (extent <= most)
    return extent;
  for (int64_t step = most; step >= most / 2; --step)
    if (extent % step == 0)
      return step;
  return most;
}

} // namespace

int64_t reductionStep(int64_t groups) { return evenStep(groups, kTileColumns); }

int64_t blockRows(int64_t extent) { return evenStep(extent, kTileRows); }

int64_t accumulatorBudget(int64_t rowExtent, int64_t rows, int64_t groups) {
  int64_t rowShapes = rowExtent % rows ? 2 : 1;
  int64_t stepShapes = groups % reductionStep(groups) ? 2 : 1;
  // An activation tile per block and step shape, a weight tile per step
  // shape, and the accumulators of each block shape.
  int64_t operands = rowShapes * stepShapes + stepShapes;
  return std::min(kMaxAccumulatorTiles, (kTileRegisters - operands) / rowShapes);
}

TileSource tileSource(OpBuilder &b, Location loc, Value tensor) {
  SliceOrigin origin = traceSlices(b, loc, tensor);
  auto type = cast<RankedTensorType>(origin.source.getType());
  auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer =
      bufferization::ToBufferOp::create(b, loc, bufferType, origin.source, /*read_only=*/true);
  return {buffer, origin.offsets};
}

SmallVector<Value> zeroAccumulators(OpBuilder &b, Location loc, int64_t count, int64_t rows) {
  auto type = amx::TileType::get({rows, kTileColumns}, b.getI32Type());
  SmallVector<Value> tiles;
  for (int64_t tile = 0; tile < count; ++tile)
    tiles.push_back(amx::TileZeroOp::create(b, loc, type));
  return tiles;
}

Value loadTile(OpBuilder &b, Location loc, Type type, Value buffer, ValueRange indices,
               int64_t rowStride) {
  return amx::TileLoadOp::create(b, loc, type, buffer, indices,
                                 constantIndex(b, loc, rowStride));
}

SmallVector<Value> accumulateTiles(
    OpBuilder &b, Location loc, ValueRange accumulators, int64_t rows, int64_t groups,
    function_ref<Value(OpBuilder &, Location, Value, Type)> activations,
    function_ref<Value(OpBuilder &, Location, Value, int64_t, Type)> weights) {
  Type byte = b.getI8Type();
  // One step of `stepGroups` groups from `firstGroup`.
  auto step = [&](OpBuilder &builder, Location at, Value firstGroup, int64_t stepGroups,
                  ValueRange sums) {
    auto activationType = amx::TileType::get({rows, 4 * stepGroups}, byte);
    auto weightType = amx::TileType::get({stepGroups, kTileRowBytes}, byte);
    Value left = activations(builder, at, firstGroup, activationType);
    SmallVector<Value> updated;
    for (auto [tile, sum] : llvm::enumerate(sums)) {
      Value right = weights(builder, at, firstGroup, tile, weightType);
      // Unsigned activations, signed weights: TDPBUSD.
      updated.push_back(amx::TileMulIOp::create(builder, at, sum.getType(), left, right, sum,
                                                /*isZextLhs=*/true, /*isZextRhs=*/false));
    }
    return updated;
  };
  int64_t stepGroups = reductionStep(groups);
  int64_t fullSteps = groups / stepGroups, tailGroups = groups % stepGroups;
  SmallVector<Value> sums(accumulators);
  if (fullSteps > 0) {
    auto loop = scf::ForOp::create(
        b, loc, constantIndex(b, loc, 0), constantIndex(b, loc, groups - tailGroups),
        constantIndex(b, loc, stepGroups), sums,
        [&](OpBuilder &builder, Location at, Value firstGroup, ValueRange carried) {
          scf::YieldOp::create(builder, at, step(builder, at, firstGroup, stepGroups, carried));
        });
    sums.assign(loop.getResults().begin(), loop.getResults().end());
  }
  if (tailGroups > 0)
    sums = step(b, loc, constantIndex(b, loc, groups - tailGroups), tailGroups, sums);
  return sums;
}

Value stageAccumulators(OpBuilder &b, Location loc, ValueRange accumulators) {
  Value stage = stageBuffer(b, loc);
  Value zero = constantIndex(b, loc, 0);
  for (auto [tile, accumulator] : llvm::enumerate(accumulators))
    amx::TileStoreOp::create(b, loc, stage, ValueRange{constantIndex(b, loc, tile), zero, zero},
                             accumulator);
  return stage;
}

Value accumulatorRow(OpBuilder &b, Location loc, Value stage, int64_t tile, Value row) {
  return vector::LoadOp::create(b, loc, VectorType::get({kTileColumns}, b.getI32Type()), stage,
                                ValueRange{constantIndex(b, loc, tile), row,
                                           constantIndex(b, loc, 0)});
}

} // namespace tessel::x86
