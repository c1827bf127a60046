//===- FormKernels.cpp - Group ops into kernels and outline them ----------===//
//
// A kernel is the unit a target compiles and the runtime dispatches. Fusing
// elementwise consumers into their producer's kernel lets a target compute
// them on a tile while it is still in registers or cache (Conv+Add+Relu is
// one kernel). For targets that ask, attention (MatMul, Softmax, MatMul) is
// one kernel too, so that a tile of queries goes through all three before
// the next: the score matrix is never stored whole. For a target that
// computes in integers alone (the NPU), a dequantize starts a kernel of its
// own, so that the quantized product before it ends its kernel. The entry
// function keeps what is not computation: constants, which become weights,
// and reshapes, which are views.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace tessel {
#define GEN_PASS_DEF_TESSELFORMKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;
using namespace tessel;

namespace {

/// Whether `op` reinterprets a quantized tensor as its storage integers or
/// back: the same bytes.
bool isStorageCast(Operation *op) {
  auto cast = dyn_cast<BitCastOp>(op);
  return cast && storageType(cast.getInput().getType()) == storageType(cast.getType());
}

/// Ops that stay in the entry function: they compute nothing, or are
/// checks the runtime makes between kernels.
bool staysInEntry(Operation *op) {
  return isa<ConstantOp, ReshapeOp, FlattenOp, CheckZeroOp>(op) || isStorageCast(op);
}

/// Whether `op` rounds f32 to bf16: the input of a bf16 product
/// (tessel-bf16-products).
bool isBf16Rounding(Operation *op) {
  auto cast = dyn_cast<CastOp>(op);
  return cast && cast.getInput().getType().getElementType().isF32() &&
         cast.getType().getElementType().isBF16();
}

/// Ops that only change how elements are represented (quantization, bf16
/// rounding), which join their producer's kernel though their element type
/// differs.
bool changesRepresentation(Operation *op) {
  return isa<QuantizeOp, DequantizeOp, RequantizeOp, LookupOp>(op) || isBf16Rounding(op);
}

/// Ops that may join the kernel of one of their operands.
bool isElementwise(Operation *op) {
  return op->hasTrait<ElementwiseMap>();
}

struct Kernel {
  SmallVector<Operation *> ops; // in program order; the last one is the tail
  Operation *tail() const { return ops.back(); }
};

class KernelFormer {
public:
  KernelFormer(func::FuncOp entry, int64_t maxInlinedConstantElements,
               bool fuseAttention, bool separateDequantize)
      : entry(entry), maxInlinedConstantElements(maxInlinedConstantElements),
        fuseAttention(fuseAttention), separateDequantize(separateDequantize) {}

  LogicalResult run(SymbolTable &symbols) {
    group();
    for (auto [index, kernel] : llvm::enumerate(kernels))
      outline(kernel, index, symbols);
    return success();
  }

private:
  /// Assigns every compute op to a kernel, in program order.
  void group() {
    for (Operation &op : llvm::make_early_inc_range(entry.getOps())) {
      if (!isa<TesselDialect>(op.getDialect()) || staysInEntry(&op))
        continue;
      if (Kernel *producer = fusableProducer(&op)) {
        producer->ops.push_back(&op);
        kernelOf[&op] = producer;
        continue;
      }
      kernels.push_back(std::make_unique<Kernel>());
      kernels.back()->ops.push_back(&op);
      kernelOf[&op] = kernels.back().get();
    }
    mergeElementwiseConsumers();
    if (fuseAttention)
      mergeAttention();
  }

  /// Joins the kernels of scores = Q x K (with its elementwise epilogue:
  /// scaling, masking), softmax(scores) along the keys and softmax x V into
  /// the first, when each feeds only the next.
  void mergeAttention() {
    // A merge erases the kernel at `index` and a later one.
    for (size_t index = 0; index < kernels.size();)
      if (!joinAttention(kernels[index].get()))
        ++index;
  }

  /// Merges `softmax`, a kernel of one softmax, with its neighbours when
  /// the three compute attention (see mergeAttention).
  bool joinAttention(Kernel *softmax) {
    auto op = dyn_cast<SoftmaxOp>(softmax->tail());
    if (softmax->ops.size() != 1 || !op ||
        static_cast<int64_t>(op.getAxis()) != op.getType().getRank() - 1 ||
        !op->hasOneUse())
      return false;
    Kernel *scores = kernelOf.lookup(op.getInput().getDefiningOp());
    auto product = dyn_cast<MatMulOp>(*op->user_begin());
    if (!scores || !isa<MatMulOp>(scores->ops.front()) ||
        scores->tail() != op.getInput().getDefiningOp() ||
        !onlyFeeds(*scores, *softmax) || !product ||
        product.getLhs() != op.getResult())
      return false;
    Kernel *output = kernelOf.lookup(product);
    if (output->ops.front() != product)
      return false;
    for (Kernel *joining : {softmax, output})
      for (Operation *member : joining->ops) {
        scores->ops.push_back(member);
        kernelOf[member] = scores;
      }
    llvm::erase_if(kernels, [&](const std::unique_ptr<Kernel> &kernel) {
      return kernel.get() == softmax || kernel.get() == output;
    });
    return true;
  }

  /// Whether every value `kernel` computes is used inside it or by `next`.
  bool onlyFeeds(const Kernel &kernel, const Kernel &next) {
    for (Operation *op : kernel.ops)
      for (Operation *user : op->getUsers()) {
        Kernel *userKernel = kernelOf.lookup(user);
        if (userKernel != &kernel && userKernel != &next)
          return false;
      }
    return true;
  }

  /// An activation that reads its input twice, x * sigmoid(x) (SiLU) or
  /// x * (1 + erf(x / sqrt 2)) / 2 (GELU), starts a kernel of its own, as its
  /// first op shares x with the last one. Such a kernel of elementwise ops
  /// joins the kernel that produces x when x, and whatever else that kernel
  /// computes, is needed by the two kernels alone.
  void mergeElementwiseConsumers() {
    for (size_t index = 0; index < kernels.size();) {
      Kernel *consumer = kernels[index].get();
      Kernel *producer = elementwiseProducerKernel(*consumer);
      if (!producer) {
        ++index;
        continue;
      }
      for (Operation *op : consumer->ops) {
        producer->ops.push_back(op);
        kernelOf[op] = producer;
      }
      kernels.erase(kernels.begin() + index);
    }
  }

  /// The kernel that `consumer` can join (see mergeElementwiseConsumers).
  Kernel *elementwiseProducerKernel(const Kernel &consumer) {
    Type resultType = consumer.tail()->getResult(0).getType();
    Kernel *producer = nullptr;
    for (Operation *op : consumer.ops) {
      if (!isElementwise(op) || op->getResult(0).getType() != resultType)
        return nullptr;
      for (Value operand : op->getOperands()) {
        auto it = kernelOf.find(operand.getDefiningOp());
        if (it == kernelOf.end() || it->second == &consumer)
          continue;
        if (producer && producer != it->second)
          return nullptr;
        producer = it->second;
      }
    }
    if (!producer || producer->tail()->getResult(0).getType() != resultType ||
        !producer->tail()->isBeforeInBlock(consumer.ops.front()))
      return nullptr;
    // Nothing the producer computes may be needed outside the two.
    return onlyFeeds(*producer, consumer) ? producer : nullptr;
  }

  /// The kernel an elementwise op can join: one whose tail produces an
  /// operand of the same shape as the op's result, used by this op alone.
  Kernel *fusableProducer(Operation *op) {
    if (!isElementwise(op) || (separateDequantize && isa<DequantizeOp>(op)))
      return nullptr;
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      auto it = kernelOf.find(producer);
      if (it == kernelOf.end() || it->second->tail() != producer)
        continue;
      auto operandType = cast<RankedTensorType>(operand.getType());
      bool sameShape = changesRepresentation(op)
                           ? operandType.getShape() == resultType.getShape()
                           : operandType == resultType;
      if (operand.hasOneUse() && sameShape)
        return it->second;
    }
    return nullptr;
  }

  bool isInlinedConstant(Value value) {
    auto constant = value.getDefiningOp<ConstantOp>();
    if (!constant)
      return false;
    auto type = cast<ShapedType>(constant.getType());
    return type.getNumElements() <= maxInlinedConstantElements ||
           isa<SplatElementsAttr>(constant.getValue());
  }

  std::string kernelName(const Kernel &kernel, size_t index) {
    std::string name = "k" + std::to_string(index);
    for (Operation *op : kernel.ops)
      name += "_" + op->getName().stripDialect().str();
    return name;
  }

  void outline(std::unique_ptr<Kernel> &kernel, size_t index,
               SymbolTable &symbols) {
    llvm::SmallPtrSet<Operation *, 8> members(kernel->ops.begin(),
                                              kernel->ops.end());
    // Operands from outside the kernel, in order of first use.
    llvm::SetVector<Value> arguments;
    llvm::SetVector<Operation *> inlinedConstants;
    for (Operation *op : kernel->ops)
      for (Value operand : op->getOperands()) {
        if (members.contains(operand.getDefiningOp()))
          continue;
        if (isInlinedConstant(operand))
          inlinedConstants.insert(operand.getDefiningOp());
        else
          arguments.insert(operand);
      }

    Operation *tail = kernel->tail();
    Location loc = tail->getLoc();
    SmallVector<Location> locations;
    for (Operation *op : kernel->ops)
      locations.push_back(op->getLoc());
    OpBuilder builder(entry);
    auto function = func::FuncOp::create(
        builder, FusedLoc::get(entry.getContext(), locations),
        kernelName(*kernel, index),
        builder.getFunctionType(TypeRange(arguments.getArrayRef()),
                                tail->getResultTypes()));
    function.setPrivate();
    function->setAttr(kKernelAttrName, builder.getUnitAttr());
    symbols.insert(function);

    Block *body = function.addEntryBlock();
    IRMapping mapping;
    mapping.map(arguments.getArrayRef(), body->getArguments());
    builder.setInsertionPointToStart(body);
    for (Operation *constant : inlinedConstants)
      builder.clone(*constant, mapping);
    for (Operation *op : kernel->ops)
      builder.clone(*op, mapping);
    func::ReturnOp::create(builder, loc,
                           mapping.lookup(tail->getResult(0)));

    builder.setInsertionPoint(tail);
    auto call = func::CallOp::create(builder, loc, function,
                                     arguments.getArrayRef());
    tail->getResult(0).replaceAllUsesWith(call.getResult(0));
    for (Operation *op : llvm::reverse(kernel->ops))
      op->erase();
    for (Operation *constant : inlinedConstants)
      if (constant->use_empty())
        constant->erase();
  }

  func::FuncOp entry;
  int64_t maxInlinedConstantElements;
  bool fuseAttention, separateDequantize;
  SmallVector<std::unique_ptr<Kernel>> kernels;
  DenseMap<Operation *, Kernel *> kernelOf;
};

struct TesselFormKernelsPass
    : tessel::impl::TesselFormKernelsPassBase<TesselFormKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> entries;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function->hasAttr(kKernelAttrName) && !function.isExternal())
        entries.push_back(function);
    for (func::FuncOp entry : entries) {
      if (!llvm::hasSingleElement(entry.getBody())) {
        entry.emitError("kernel formation expects a single-block function");
        return signalPassFailure();
      }
      KernelFormer former(entry, maxInlinedConstantElements, fuseAttention,
                          separateDequantize);
      if (failed(former.run(symbols)))
        return signalPassFailure();
    }
  }
};

} // namespace
