//===- ProductEpilogues.cpp - Elementwise ops computed in a product's epilogue ---===//

#include "targets/cuda/ProductEpilogues.h"
#include "targets/cuda/Loops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

/// The nearest op before or after `op` in its block that may touch memory,
/// other than `skipped`.
Operation *nearestComputing(Operation *op, bool after, ArrayRef<Operation *> skipped = {}) {
  Operation *next = after ? op->getNextNode() : op->getPrevNode();
  while (next && (leavesBuffersAlone(next) || llvm::is_contained(skipped, next)))
    next = after ? next->getNextNode() : next->getPrevNode();
  return next;
}

/// Whether `op`, on buffers, computes each element of its one output
/// `output` from the same place of its loops (all parallel, its output
/// indexed by them in order) with a body that has no side effect, so that
/// the body can be evaluated for any one element on its own.
bool isElementwiseInto(linalg::LinalgOp op, Value output) {
  if (!op || !op.hasPureBufferSemantics() || op.hasDynamicShape() || op.getNumDpsInits() != 1 ||
      op.getDpsInits()[0] != output || op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
    return false;
  Block *body = op.getBlock();
  return body && body->getTerminator()->getNumOperands() == 1 &&
         llvm::all_of(body->without_terminator(),
                      [](Operation &inner) { return isMemoryEffectFree(&inner); });
}

/// Whether every use of `buffer`, through its views, is by one of `ops`.
bool isUsedOnlyBy(Value buffer, ArrayRef<Operation *> ops) {
  for (Operation *user : buffer.getUsers()) {
    if (llvm::is_contained(ops, user))
      continue;
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (!view || view.getViewSource() != buffer || !isUsedOnlyBy(view->getResult(0), ops))
      return false;
  }
  return true;
}

/// The fill of `output` just before `product` (but for `unrelated`), if
/// its epilogue can compute it: it reads neither C nor anything the product
/// writes.
linalg::LinalgOp findInit(linalg::LinalgOp product, Value output, ArrayRef<Operation *> unrelated) {
  auto init =
      dyn_cast_or_null<linalg::LinalgOp>(nearestComputing(product, /*after=*/false, unrelated));
  if (!isElementwiseInto(init, output) ||
      init.payloadUsesValueFromOperand(init.getDpsInitOperand(0)))
    return nullptr;
  for (Value input : init.getDpsInputs())
    if (isa<MemRefType>(input.getType()) && rootBuffer(input) == rootBuffer(output))
      return nullptr;
  return init;
}

/// The elementwise op just after `product` that alone reads C, in its
/// loops' order, if its epilogue can compute it: it writes a buffer
/// distinct from the product's operands and its own inputs, so that no
/// block reads what another block's epilogue writes.
std::optional<std::pair<linalg::LinalgOp, unsigned>>
findConsumer(linalg::LinalgOp product, Value output, linalg::LinalgOp init) {
  auto consumer = dyn_cast_or_null<linalg::LinalgOp>(nearestComputing(product, /*after=*/true));
  if (!consumer || consumer.getNumDpsInits() != 1 ||
      !isElementwiseInto(consumer, consumer.getDpsInits()[0]) ||
      consumer.getNumLoops() != cast<MemRefType>(output.getType()).getRank())
    return std::nullopt;
  Value result = rootBuffer(consumer.getDpsInits()[0]);
  std::optional<unsigned> consumed;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    if (input->get() == output) {
      if (consumed || !consumer.getMatchingIndexingMap(input).isIdentity())
        return std::nullopt;
      consumed = input->getOperandNumber();
    } else if (isa<MemRefType>(input->get().getType()) &&
               (rootBuffer(input->get()) == rootBuffer(output) ||
                rootBuffer(input->get()) == result)) {
      return std::nullopt;
    }
  }
  for (Value operand : product->getOperands())
    if (rootBuffer(operand) == result)
      return std::nullopt;
  Value buffer = rootBuffer(output);
  SmallVector<Operation *> users = {product, consumer};
  if (init)
    users.push_back(init);
  if (!consumed || !buffer.getDefiningOp<memref::AllocOp>() || !isUsedOnlyBy(buffer, users))
    return std::nullopt;
  return std::pair{consumer, *consumed};
}

/// The inputs of `op` at the place `loops` of its loops: each shaped input
/// loaded there, each scalar as it is, and `skipped` null.
SmallVector<Value> inputsAt(OpBuilder &builder, Location loc, linalg::LinalgOp op, ValueRange loops,
                            OpOperand *skipped = nullptr) {
  SmallVector<Value> values;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (input == skipped) {
      values.push_back(Value());
      continue;
    }
    if (!isa<MemRefType>(input->get().getType())) {
      values.push_back(input->get());
      continue;
    }
    SmallVector<Value> indices = indicesAt(builder, loc, op.getMatchingIndexingMap(input), loops);
    values.push_back(memref::LoadOp::create(builder, loc, input->get(), indices));
  }
  return values;
}

/// `op`'s body evaluated on `arguments` (one per block argument; the
/// output's may be null when the body does not read it).
Value inlineBody(OpBuilder &builder, linalg::LinalgOp op, ArrayRef<Value> arguments) {
  Block *body = op.getBlock();
  IRMapping mapping;
  for (auto [argument, value] : llvm::zip(body->getArguments(), arguments))
    if (value)
      mapping.map(argument, value);
  for (Operation &inner : body->without_terminator())
    builder.clone(inner, mapping);
  return mapping.lookupOrDefault(body->getTerminator()->getOperand(0));
}

/// Moves the ops between `product` and `consumer` that define what the
/// consumer uses (its output's allocation, views: address computations
/// only) before the product, where the epilogue uses them.
void hoistBefore(linalg::LinalgOp product, Operation *consumer) {
  for (Value operand : consumer->getOperands()) {
    Operation *definition = operand.getDefiningOp();
    if (!definition || definition->getBlock() != product->getBlock() ||
        !product->isBeforeInBlock(definition))
      continue;
    hoistBefore(product, definition);
    definition->moveBefore(product);
  }
}

} // namespace

ProductEpilogue findEpilogue(linalg::LinalgOp product, ArrayRef<Operation *> unrelated) {
  ProductEpilogue epilogue;
  Value output = product.getDpsInits()[0];
  epilogue.init = findInit(product, output, unrelated);
  if (auto consumer = findConsumer(product, output, epilogue.init)) {
    std::tie(epilogue.consumer, epilogue.consumedOperand) = *consumer;
    hoistBefore(product, epilogue.consumer);
  }
  return epilogue;
}

Value emitInitValue(OpBuilder &builder, Location loc, linalg::LinalgOp init, ValueRange indices) {
  SmallVector<Value> arguments = inputsAt(builder, loc, init, indices);
  arguments.push_back(Value()); // the output, which the body does not read
  return inlineBody(builder, init, arguments);
}

void emitConsumer(OpBuilder &builder, Location loc, const ProductEpilogue &epilogue,
                  ValueRange indices, Value value) {
  linalg::LinalgOp consumer = epilogue.consumer;
  OpOperand *consumed = &consumer->getOpOperand(epilogue.consumedOperand);
  SmallVector<Value> arguments = inputsAt(builder, loc, consumer, indices, consumed);
  arguments[consumed->getOperandNumber()] = value;
  OpOperand *result = consumer.getDpsInitOperand(0);
  if (consumer.payloadUsesValueFromOperand(result))
    arguments.push_back(memref::LoadOp::create(builder, loc, result->get(), indices));
  else
    arguments.push_back(Value());
  Value computed = inlineBody(builder, consumer, arguments);
  memref::StoreOp::create(builder, loc, computed, result->get(), indices);
}

void eraseFused(const ProductEpilogue &epilogue, Value output) {
  if (epilogue.init)
    epilogue.init->erase();
  if (!epilogue.consumer)
    return;
  epilogue.consumer->erase();
  // C's buffer, now unused, and its views.
  while (output.use_empty()) {
    Operation *definition = output.getDefiningOp();
    if (!definition)
      return;
    auto view = dyn_cast<ViewLikeOpInterface>(definition);
    Value source = view ? view.getViewSource() : Value();
    definition->erase();
    if (!source)
      return;
    output = source;
  }
}

} // namespace tessel::cuda
