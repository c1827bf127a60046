//===- LengthAxes.cpp - Positions past the varying length that nothing reads ===//
//
// A model compiled with --max-shape computes at the bound of its varying
// length, and a run trims its outputs to the length. Where a node combines
// positions the importer fills them past the length first (a `tessel.where`
// with fills_past_length, which reads its value only below the length), so
// most positions past the length are never read: this pass finds them,
// walking back from @main's results, and marks each kernel whose result's
// positions past the length along an axis nothing reads (kLengthAxisAttr).
// A target may leave those positions uncomputed.
//
// An axis is named by its inner stride, the number of elements after it.
// Reshapes keep the order of elements, so a position axis keeps its stride
// through any chain of them, even one that flattens it away and back.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace tessel {
#define GEN_PASS_DEF_TESSELLENGTHAXESPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

using Strides = SmallVector<int64_t, 2>;

/// Whether `op` is exactly `select(condition, on_true, on_false)` of its
/// three inputs: the form of a fill past the length.
bool selectsItsInputs(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (op.getNumDpsInputs() != 3 || body.getOperations().size() != 2)
    return false;
  auto select = dyn_cast<arith::SelectOp>(body.front());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return select && yield.getNumOperands() == 1 && yield.getOperand(0) == select.getResult() &&
         select.getCondition() == body.getArgument(0) &&
         select.getTrueValue() == body.getArgument(1) &&
         select.getFalseValue() == body.getArgument(2);
}

class LengthAxes {
public:
  explicit LengthAxes(int64_t bound) : bound(bound) {}

  /// Walks @main back from its results, and each kernel when its call is
  /// reached; then marks what nothing reads.
  void run(func::FuncOp main, ModuleOp module);

private:
  /// Whether positions past the length along the axis of inner stride
  /// `stride` of `value` are never read; true of a value nothing reads.
  bool isFree(Value value, int64_t stride) const {
    auto it = free.find(value);
    return it == free.end() || llvm::is_contained(it->second, stride);
  }

  /// Records a reader of `value` that leaves only the `allowed` axes free.
  void restrict(Value value, ArrayRef<int64_t> allowed) {
    if (!isa<RankedTensorType>(value.getType()))
      return;
    auto [it, inserted] = free.try_emplace(value, Strides(allowed));
    if (!inserted)
      llvm::erase_if(it->second, [&](int64_t s) { return !llvm::is_contained(allowed, s); });
  }

  /// A reader of every position of each tensor that `op` (or its regions)
  /// reads: an op this pass does not follow.
  void readsEverything(Operation *op) {
    for (Value operand : op->getOperands())
      restrict(operand, {});
    readsCapturedWhole(op);
  }

  /// A reader of every position of each tensor that ops nested in `op`
  /// read from outside it (a gather's table).
  void readsCapturedWhole(Operation *op) {
    op->walk([&](Operation *inner) {
      if (inner == op)
        return;
      for (Value value : inner->getOperands())
        if (!op->isAncestor(value.getParentRegion()->getParentOp()))
          restrict(value, {});
    });
  }

  void visitBlock(Block &block);
  void visit(Operation *op);
  void visitLinalg(linalg::LinalgOp op);
  void visitExtractSlice(tensor::ExtractSliceOp op);
  void visitCall(func::CallOp call);
  void mark(func::FuncOp kernel, Value result);

  int64_t bound;
  DenseMap<Value, Strides> free;
  /// Kernels called exactly once, which can be followed into.
  DenseMap<StringAttr, func::FuncOp> soleCallees;
};

void LengthAxes::visitBlock(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block.without_terminator())))
    visit(&op);
}

void LengthAxes::visit(Operation *op) {
  if (op->getNumOperands() == 0 && op->getNumRegions() == 0)
    return;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op); linalgOp && linalgOp.hasPureTensorSemantics())
    return visitLinalg(linalgOp);
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return visitExtractSlice(slice);
  if (auto call = dyn_cast<func::CallOp>(op))
    return visitCall(call);
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
    // Same elements in the same order: same strides.
    auto it = free.find(op->getResult(0));
    if (it != free.end())
      restrict(op->getOperand(0), Strides(it->second));
    return;
  }
  readsEverything(op);
}

void LengthAxes::visitLinalg(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // A loop is free when it is parallel and every result leaves the axis it
  // indexes free: its iterations past the length write nothing read.
  auto loopIsFree = [&](unsigned loop) {
    if (iterators[loop] != utils::IteratorType::parallel)
      return false;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      Value result = op->getResult(init.getOperandNumber() - op.getNumDpsInputs());
      auto type = dyn_cast<RankedTensorType>(result.getType());
      AffineMap map = op.getMatchingIndexingMap(&init);
      std::optional<unsigned> axis = map.getResultPosition(getAffineDimExpr(loop, op.getContext()));
      if (!type || !axis || type.getDimSize(*axis) != bound ||
          !isFree(result, elementsAfter(type, *axis)))
        return false;
    }
    return true;
  };
  // A fill past the length reads its value only below the length along the
  // loops its condition varies on.
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  bool fills = generic && generic->hasAttr(kFillsPastLengthAttr) && selectsItsInputs(generic);
  auto filtersLoop = [&](unsigned loop) {
    if (!fills)
      return false;
    OpOperand *condition = op.getDpsInputOperand(0);
    auto type = cast<RankedTensorType>(condition->get().getType());
    AffineMap map = op.getMatchingIndexingMap(condition);
    std::optional<unsigned> axis = map.getResultPosition(getAffineDimExpr(loop, op.getContext()));
    return axis && type.getDimSize(*axis) > 1;
  };

  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    bool filled = fills && operand.getOperandNumber() == 1;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    Strides allowed;
    for (unsigned axis = 0; axis < type.getRank() && type.hasStaticShape(); ++axis) {
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(axis));
      if (type.getDimSize(axis) != bound || !dim)
        continue;
      if (loopIsFree(dim.getPosition()) || (filled && filtersLoop(dim.getPosition())))
        allowed.push_back(elementsAfter(type, axis));
    }
    restrict(operand.get(), allowed);
  }
  readsCapturedWhole(op);
}

void LengthAxes::visitExtractSlice(tensor::ExtractSliceOp op) {
  RankedTensorType source = op.getSourceType(), result = op.getResultType();
  Strides allowed;
  // An axis the slice keeps whole, from its start, keeps its positions.
  if (source.getRank() == result.getRank() && source.hasStaticShape() && result.hasStaticShape() &&
      op.hasUnitStride()) {
    for (unsigned axis = 0; axis < source.getRank(); ++axis) {
      std::optional<int64_t> offset = getConstantIntValue(op.getMixedOffsets()[axis]);
      if (source.getDimSize(axis) == bound && result.getDimSize(axis) == bound && offset &&
          *offset == 0 && isFree(op.getResult(), elementsAfter(result, axis)))
        allowed.push_back(elementsAfter(source, axis));
    }
  }
  restrict(op.getSource(), allowed);
  for (Value index : op->getOperands().drop_front())
    restrict(index, {});
}

void LengthAxes::visitCall(func::CallOp call) {
  func::FuncOp kernel = soleCallees.lookup(call.getCalleeAttr().getAttr());
  if (!kernel) {
    readsEverything(call);
    return;
  }
  auto ret = cast<func::ReturnOp>(kernel.front().getTerminator());
  for (auto [result, returned] : llvm::zip(call.getResults(), ret.getOperands())) {
    auto it = free.find(result);
    if (it != free.end())
      restrict(returned, Strides(it->second));
  }
  visitBlock(kernel.front());
  for (auto [operand, argument] : llvm::zip(call.getOperands(), kernel.getArguments())) {
    auto it = free.find(argument);
    if (it != free.end())
      restrict(operand, Strides(it->second));
  }
  if (call.getNumResults() == 1)
    mark(kernel, call.getResult(0));
}

/// Marks `kernel`'s result and the linalg ops in it with the outermost axis
/// whose positions past the length nothing reads.
void LengthAxes::mark(func::FuncOp kernel, Value result) {
  auto outermostFree = [&](Value value) -> std::optional<int64_t> {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape() || !free.count(value))
      return std::nullopt;
    for (unsigned axis = 0; axis < type.getRank(); ++axis)
      if (type.getDimSize(axis) == bound && isFree(value, elementsAfter(type, axis)))
        return axis;
    return std::nullopt;
  };
  Builder builder(kernel.getContext());
  if (std::optional<int64_t> axis = outermostFree(result))
    kernel.setResultAttr(0, kLengthAxisAttr, builder.getI64IntegerAttr(*axis));
  kernel.walk([&](linalg::LinalgOp op) {
    if (op->getNumResults() == 1)
      if (std::optional<int64_t> axis = outermostFree(op->getResult(0)))
        op->setAttr(kLengthAxisAttr, builder.getI64IntegerAttr(*axis));
  });
}

void LengthAxes::run(func::FuncOp main, ModuleOp module) {
  DenseMap<StringAttr, int> calls;
  main.walk([&](func::CallOp call) { ++calls[call.getCalleeAttr().getAttr()]; });
  for (auto [name, count] : calls) {
    auto kernel = module.lookupSymbol<func::FuncOp>(name);
    if (count == 1 && kernel && !kernel.isExternal() && kernel->hasAttr(kKernelAttrName))
      soleCallees[name] = kernel;
  }
  // The runtime trims each varying result to the length.
  auto ret = cast<func::ReturnOp>(main.front().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto varying = main.getResultAttrOfType<IntegerAttr>(i, kVaryingAttr);
    auto type = dyn_cast<RankedTensorType>(value.getType());
    Strides allowed;
    if (varying && type && type.hasStaticShape() && varying.getInt() < type.getRank() &&
        type.getDimSize(varying.getInt()) == bound)
      allowed.push_back(elementsAfter(type, varying.getInt()));
    restrict(value, allowed);
  }
  visitBlock(main.front());
}

struct TesselLengthAxesPass : tessel::impl::TesselLengthAxesPassBase<TesselLengthAxesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal() || !main.getBody().hasOneBlock())
      return;
    // The bound: the size of the varying axis of any input.
    int64_t bound = 0;
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto varying = main.getArgAttrOfType<IntegerAttr>(i, kVaryingAttr);
      auto type = dyn_cast<RankedTensorType>(main.getArgument(i).getType());
      if (varying && type && varying.getInt() < type.getRank())
        bound = type.getDimSize(varying.getInt());
    }
    if (bound > 1 && !ShapedType::isDynamic(bound))
      LengthAxes(bound).run(main, module);
  }
};

} // namespace
