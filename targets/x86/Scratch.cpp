//===- Scratch.cpp - Temporary buffers from per-thread scratch ------------===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86SCRATCHPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

constexpr int64_t kScratchAlignment = 64;

/// The largest value `size` takes, or none known. The value bounds of an
/// affine.max hold only below it (its upper bound is a disjunction), so
/// its results are bounded one by one: a tile clipped at both ends is
/// max(0, min(...)).
std::optional<int64_t> upperBound(Value size) {
  auto bound = [](const ValueBoundsConstraintSet::Variable &variable) -> std::optional<int64_t> {
    FailureOr<int64_t> value = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB, variable, /*stopCondition=*/nullptr, /*closedUB=*/true);
    return succeeded(value) ? std::optional<int64_t>(*value) : std::nullopt;
  };
  auto max = size.getDefiningOp<affine::AffineMaxOp>();
  if (!max)
    return bound(size);
  std::optional<int64_t> largest;
  AffineMap map = max.getAffineMap();
  for (unsigned result = 0; result < map.getNumResults(); ++result) {
    std::optional<int64_t> each = bound({map.getSubMap({result}), max.getMapOperands()});
    if (!each)
      return std::nullopt;
    largest = std::max(largest.value_or(*each), *each);
  }
  return largest;
}

/// The elements `alloc` holds at most: its static sizes times the constant
/// upper bounds of its dynamic ones (a tile clipped at the edge of its
/// tensor or of the padding fused into it is at most the whole tile); none
/// when a size has no constant bound.
std::optional<int64_t> elementBound(memref::AllocOp alloc) {
  int64_t elements = 1;
  unsigned dynamic = 0;
  for (int64_t size : alloc.getType().getShape()) {
    if (ShapedType::isDynamic(size)) {
      std::optional<int64_t> bound = upperBound(alloc.getDynamicSizes()[dynamic++]);
      if (!bound || *bound < 0)
        return std::nullopt;
      size = *bound;
    }
    elements *= size;
  }
  return elements;
}

struct TesselX86ScratchPass
    : impl::TesselX86ScratchPassBase<TesselX86ScratchPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    // Bump allocation: temporaries are few and tile-sized; one whose size
    // varies (a tile at an edge) gets the most it may need.
    SmallVector<memref::AllocOp> allocs;
    SmallVector<int64_t> offsets;
    int64_t total = 0;
    WalkResult walk = function.walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      std::optional<int64_t> elements = elementBound(alloc);
      if (!elements || !type.getLayout().isIdentity()) {
        alloc.emitError("kernel temporaries must have a bounded shape");
        return WalkResult::interrupt();
      }
      int64_t elementBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      allocs.push_back(alloc);
      offsets.push_back(total);
      total += llvm::alignTo(*elements * elementBytes, kScratchAlignment);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    MLIRContext *context = &getContext();
    auto scratchType =
        MemRefType::get({std::max<int64_t>(total, 1)}, IntegerType::get(context, 8));
    unsigned position = function.getNumArguments();
    if (failed(function.insertArgument(position, scratchType, DictionaryAttr{},
                                       function.getLoc())))
      return signalPassFailure();
    Value scratch = function.getArgument(position);

    OpBuilder builder(context);
    for (auto [alloc, offset] : llvm::zip(allocs, offsets)) {
      builder.setInsertionPoint(alloc);
      Value byteShift =
          arith::ConstantIndexOp::create(builder, alloc.getLoc(), offset);
      Value view = memref::ViewOp::create(builder, alloc.getLoc(),
                                          alloc.getType(), scratch, byteShift,
                                          alloc.getDynamicSizes());
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
    function->setAttr(kScratchBytesAttr, builder.getI64IntegerAttr(total));
  }
};

} // namespace
} // namespace tessel::x86
