//===- Scratch.cpp - Temporary buffers from per-thread scratch ------------===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86SCRATCHPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

constexpr int64_t kScratchAlignment = 64;

struct TesselX86ScratchPass
    : impl::TesselX86ScratchPassBase<TesselX86ScratchPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    SmallVector<memref::AllocOp> allocs;
    WalkResult walk = function.walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity()) {
        alloc.emitError("kernel temporaries must have a static shape");
        return WalkResult::interrupt();
      }
      allocs.push_back(alloc);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    // Bump allocation: temporaries are few and tile-sized.
    SmallVector<int64_t> offsets;
    int64_t total = 0;
    for (memref::AllocOp alloc : allocs) {
      MemRefType type = alloc.getType();
      int64_t elementBytes =
          llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      offsets.push_back(total);
      total += llvm::alignTo(type.getNumElements() * elementBytes,
                             kScratchAlignment);
    }

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
                                          ValueRange{});
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
