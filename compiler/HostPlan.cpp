//===- HostPlan.cpp - Host schedule, memory plan and weights --------------===//

#include "compiler/HostPlan.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tessel {
namespace {

constexpr uint64_t kAlignment = 64;

uint64_t byteSize(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Type element = tensor.getElementType();
  uint64_t elementBytes =
      element.isInteger(1) ? 1 : llvm::divideCeil(element.getIntOrFloatBitWidth(), 8);
  return static_cast<uint64_t>(tensor.getNumElements()) * elementBytes;
}

/// Appends a constant's elements in the layout kernels read: dense,
/// row-major, little-endian, one byte per bool, splats expanded.
void appendConstant(DenseElementsAttr value, std::vector<uint8_t> &weights) {
  Type element = value.getElementType();
  int64_t count = value.getNumElements();
  if (element.isInteger(1)) {
    for (bool bit : value.getValues<bool>())
      weights.push_back(bit ? 1 : 0);
    return;
  }
  ArrayRef<char> raw = value.getRawData();
  if (value.isSplat()) {
    for (int64_t i = 0; i < count; ++i)
      weights.insert(weights.end(), raw.begin(), raw.end());
    return;
  }
  weights.insert(weights.end(), raw.begin(), raw.end());
}

class Planner {
public:
  FailureOr<HostPlan> run(func::FuncOp main);

private:
  uint32_t newBuffer(PlannedBuffer buffer) {
    plan.buffers.push_back(buffer);
    return plan.buffers.size() - 1;
  }
  FailureOr<uint32_t> bufferOf(Value value, Operation *user);
  /// The step about to be appended reads `buffer`: if it is in the arena,
  /// it lives at least until then.
  void noteRead(uint32_t buffer) {
    auto it = lifetimes.find(buffer);
    if (it != lifetimes.end())
      it->second.second = plan.steps.size();
  }
  void placeArena();

  HostPlan plan;
  DenseMap<Value, uint32_t> bufferOfValue;
  DenseMap<Attribute, uint32_t> bufferOfConstant;
  // Arena buffers: the steps where each is first written and last read.
  DenseMap<uint32_t, std::pair<size_t, size_t>> lifetimes;
};

FailureOr<uint32_t> Planner::bufferOf(Value value, Operation *user) {
  auto it = bufferOfValue.find(value);
  if (it != bufferOfValue.end())
    return it->second;
  if (auto constant = value.getDefiningOp<arith::ConstantOp>()) {
    auto data = cast<DenseElementsAttr>(constant.getValue());
    auto [entry, inserted] = bufferOfConstant.try_emplace(data, 0);
    if (inserted) {
      plan.weights.resize(llvm::alignTo(plan.weights.size(), kAlignment));
      uint64_t offset = plan.weights.size();
      appendConstant(data, plan.weights);
      entry->second = newBuffer(
          {BufferKind::Constant, 0, offset, plan.weights.size() - offset});
    }
    bufferOfValue[value] = entry->second;
    return entry->second;
  }
  return user->emitError("host planning: operand has no buffer");
}

FailureOr<HostPlan> Planner::run(func::FuncOp main) {
  for (BlockArgument argument : main.getArguments())
    bufferOfValue[argument] =
        newBuffer({BufferKind::Input, argument.getArgNumber(), 0,
                   byteSize(argument.getType())});

  for (Operation &op : main.getBody().front()) {
    size_t step = plan.steps.size();
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      // Weights are placed when first used, so that dead constants (left
      // over at -O0) cost nothing.
      if (!isa<DenseElementsAttr>(constant.getValue()))
        return constant.emitError("host planning: unsupported constant");
    } else if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
      // A view: same bytes, same buffer.
      FailureOr<uint32_t> source = bufferOf(op.getOperand(0), &op);
      if (failed(source))
        return failure();
      bufferOfValue[op.getResult(0)] = *source;
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      if (call.getNumResults() != 1)
        return call.emitError("host planning: kernels have one result");
      DispatchPlan dispatch;
      dispatch.kernel = call.getCallee().str();
      for (Value operand : call.getOperands()) {
        FailureOr<uint32_t> buffer = bufferOf(operand, call);
        if (failed(buffer))
          return failure();
        dispatch.bindings.push_back(*buffer);
        noteRead(*buffer);
      }
      uint32_t result = newBuffer(
          {BufferKind::Arena, 0, 0, byteSize(call.getResult(0).getType())});
      lifetimes[result] = {step, step};
      bufferOfValue[call.getResult(0)] = result;
      dispatch.bindings.push_back(result);
      plan.steps.push_back(std::move(dispatch));
    } else if (auto check = dyn_cast<CheckZeroOp>(op)) {
      FailureOr<uint32_t> count = bufferOf(check.getCount(), check);
      if (failed(count))
        return failure();
      noteRead(*count);
      plan.steps.push_back(CheckPlan{*count, check.getNode().str(), check.getProblem().str()});
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        FailureOr<uint32_t> buffer = bufferOf(value, ret);
        if (failed(buffer))
          return failure();
        PlannedBuffer &planned = plan.buffers[*buffer];
        if (planned.kind == BufferKind::Arena) {
          // The producing kernel writes the caller's tensor directly.
          planned.kind = BufferKind::Output;
          planned.index = index;
          lifetimes.erase(*buffer);
          continue;
        }
        uint32_t output = newBuffer({BufferKind::Output,
                                     static_cast<uint32_t>(index), 0,
                                     byteSize(value.getType())});
        noteRead(*buffer);
        plan.steps.push_back(CopyPlan{*buffer, output});
      }
    } else {
      return op.emitError("host planning: unexpected operation in the entry function");
    }
  }
  placeArena();
  return std::move(plan);
}

/// Greedy offset assignment: largest buffers first, each at the lowest
/// offset that overlaps no already placed buffer whose lifetime intersects.
void Planner::placeArena() {
  std::vector<uint32_t> order;
  for (auto &entry : lifetimes)
    order.push_back(entry.first);
  llvm::sort(order, [&](uint32_t a, uint32_t b) {
    if (plan.buffers[a].size != plan.buffers[b].size)
      return plan.buffers[a].size > plan.buffers[b].size;
    return a < b;
  });
  std::vector<uint32_t> placed;
  for (uint32_t buffer : order) {
    auto [begin, end] = lifetimes[buffer];
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (uint32_t other : placed) {
      auto [otherBegin, otherEnd] = lifetimes[other];
      if (otherBegin <= end && begin <= otherEnd)
        taken.push_back({plan.buffers[other].offset,
                         plan.buffers[other].offset + plan.buffers[other].size});
    }
    llvm::sort(taken);
    uint64_t offset = 0, size = plan.buffers[buffer].size;
    for (auto [takenBegin, takenEnd] : taken) {
      if (offset + size <= takenBegin)
        break;
      offset = std::max(offset, llvm::alignTo(takenEnd, kAlignment));
    }
    plan.buffers[buffer].offset = offset;
    plan.arenaSize = std::max(plan.arenaSize, offset + size);
    placed.push_back(buffer);
  }
  plan.arenaSize = llvm::alignTo(plan.arenaSize, kAlignment);
}

} // namespace

FailureOr<HostPlan> planHost(func::FuncOp main) { return Planner().run(main); }

} // namespace tessel
