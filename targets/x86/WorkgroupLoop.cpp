//===- WorkgroupLoop.cpp - Run a range of workgroups per call -------------===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86WORKGROUPLOOPPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// The kernel's only unit of work: a top-level forall with everything else
/// in the body being free of side effects or an allocation (on the stack:
/// AMX blocks' staging buffer).
scf::ForallOp findWorkgroupForall(func::FuncOp function) {
  scf::ForallOp found;
  for (Operation &op : function.front().without_terminator()) {
    if (auto forall = dyn_cast<scf::ForallOp>(op)) {
      if (found)
        return {};
      found = forall;
      continue;
    }
    if (!isMemoryEffectFree(&op) && !isa<memref::AllocOp, memref::AllocaOp>(op))
      return {};
  }
  return found;
}

/// Static trip counts of the forall's loops, or nullopt if any is dynamic.
std::optional<SmallVector<int64_t>> tripCounts(scf::ForallOp forall) {
  SmallVector<int64_t> counts;
  for (auto [lb, ub, step] :
       llvm::zip(forall.getMixedLowerBound(), forall.getMixedUpperBound(),
                 forall.getMixedStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return std::nullopt;
    counts.push_back(llvm::divideCeil(*u - *l, *s));
  }
  return counts;
}

/// The forall's loop along the kernel's length axis (kLengthLoopAttr), if
/// the forall still has the loops it was marked with and that one starts at
/// 0: its workgroups' positions are its index times its step.
std::optional<unsigned> lengthLoop(scf::ForallOp forall) {
  auto attr = forall->getAttrOfType<DenseI64ArrayAttr>(kLengthLoopAttr);
  if (!attr || attr.size() != 2 || attr[1] != forall.getRank() || attr[0] < 0 ||
      attr[0] >= forall.getRank())
    return std::nullopt;
  unsigned loop = attr[0];
  std::optional<int64_t> lower = getConstantIntValue(forall.getMixedLowerBound()[loop]);
  if (!lower || *lower != 0)
    return std::nullopt;
  return loop;
}

/// The byte size of each of `function`'s buffer arguments, which the entry
/// checks its call against; nullopt (after an error) for one that is not a
/// statically shaped memref with the identity layout.
std::optional<SmallVector<int64_t>> bindingSizes(func::FuncOp function) {
  SmallVector<int64_t> sizes;
  for (BlockArgument argument : function.getArguments()) {
    auto type = dyn_cast<MemRefType>(argument.getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity()) {
      function.emitError() << "kernel argument " << argument.getArgNumber()
                           << " is not a statically shaped buffer: " << argument.getType();
      return std::nullopt;
    }
    // One element per byte at least, as the artifact stores small types.
    int64_t elementBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    sizes.push_back(type.getNumElements() * elementBytes);
  }
  return sizes;
}

struct TesselX86WorkgroupLoopPass
    : impl::TesselX86WorkgroupLoopPassBase<TesselX86WorkgroupLoopPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    if (function.getNumResults() != 0) {
      function.emitError("kernels must return their results through output "
                         "arguments before workgroup loops are formed");
      return signalPassFailure();
    }
    MLIRContext *context = &getContext();
    Location loc = function.getLoc();
    std::optional<SmallVector<int64_t>> bindingBytes = bindingSizes(function);
    if (!bindingBytes)
      return signalPassFailure();
    function->setAttr(kBindingBytesAttr, DenseI64ArrayAttr::get(context, *bindingBytes));
    IndexType index = IndexType::get(context);
    unsigned beginPos = function.getNumArguments();
    if (failed(function.insertArguments({beginPos, beginPos}, {index, index},
                                        {DictionaryAttr{}, DictionaryAttr{}},
                                        {loc, loc})))
      return signalPassFailure();
    Value begin = function.getArgument(beginPos);
    Value end = function.getArgument(beginPos + 1);

    Block &body = function.front();
    OpBuilder builder(context);
    scf::ForallOp forall = findWorkgroupForall(function);
    std::optional<SmallVector<int64_t>> counts;
    if (forall)
      counts = tripCounts(forall);
    int64_t workgroups = 1;

    if (forall && counts) {
      for (int64_t count : *counts)
        workgroups *= count;
      // The loop along the length axis outermost: the workgroups past a
      // length are then the last ones, which a run may leave out.
      SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(0, counts->size()));
      std::optional<unsigned> length = lengthLoop(forall);
      if (length) {
        order.erase(order.begin() + *length);
        order.insert(order.begin(), *length);
        function->setAttr(kLengthRowPositionsAttr, builder.getI64IntegerAttr(*getConstantIntValue(
                                                       forall.getMixedStep()[*length])));
        function->setAttr(kLengthRowWorkgroupsAttr,
                          builder.getI64IntegerAttr(workgroups / (*counts)[*length]));
      }
      SmallVector<int64_t> basis;
      for (unsigned loop : order)
        basis.push_back((*counts)[loop]);
      builder.setInsertionPoint(forall);
      Value one = arith::ConstantIndexOp::create(builder, loc, 1);
      auto loop = scf::ForOp::create(builder, loc, begin, end, one);
      builder.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> delinearized{loop.getInductionVar()};
      if (counts->size() > 1)
        delinearized =
            affine::AffineDelinearizeIndexOp::create(builder, loc, loop.getInductionVar(), basis)
                .getResults();
      SmallVector<Value> indices(counts->size());
      for (auto [position, loop] : llvm::enumerate(order))
        indices[loop] = delinearized[position];
      IRMapping mapping;
      for (auto [iv, idx, lb, step] :
           llvm::zip(forall.getInductionVars(), indices,
                     forall.getMixedLowerBound(), forall.getMixedStep())) {
        Value lower = getValueOrCreateConstantIndexOp(builder, loc, lb);
        Value stride = getValueOrCreateConstantIndexOp(builder, loc, step);
        Value scaled = builder.createOrFold<arith::MulIOp>(loc, idx, stride);
        mapping.map(iv, builder.createOrFold<arith::AddIOp>(loc, lower, scaled));
      }
      for (Operation &op : forall.getBody()->without_terminator())
        builder.clone(op, mapping);
      forall.erase();
    } else {
      // One workgroup: the whole body runs when 0 is in [begin, end).
      SmallVector<Operation *> work;
      for (Operation &op : body.without_terminator())
        work.push_back(&op);
      builder.setInsertionPoint(body.getTerminator());
      Value one = arith::ConstantIndexOp::create(builder, loc, 1);
      auto loop = scf::ForOp::create(builder, loc, begin, end, one);
      for (Operation *op : work)
        op->moveBefore(loop.getBody()->getTerminator());
    }
    function->setAttr(kWorkgroupCountAttr,
                      builder.getI64IntegerAttr(workgroups));
  }
};

} // namespace
} // namespace tessel::x86
