//===- QuantizedGraph.cpp - Shared facts about quantized tessel graphs ----===//

#include "passes/QuantizedGraph.h"

#include "dialects/tessel/TesselDialect.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;

namespace tessel {

bool isProduct(Operation *op) { return isa_and_present<ConvOp, MatMulOp, GemmOp>(op); }

OpOperand *biasOperand(Operation *product) {
  if (isa<ConvOp, GemmOp>(product))
    return product->getNumOperands() > 2 ? &product->getOpOperand(2) : nullptr;
  if (!isa<MatMulOp>(product))
    return nullptr;
  // Calibration may also return the product's result (to watch it).
  SmallVector<Operation *> readers;
  for (Operation *user : product->getUsers())
    if (!isa<func::ReturnOp>(user))
      readers.push_back(user);
  auto add = readers.size() == 1 ? dyn_cast<AddOp>(readers.front()) : AddOp();
  if (!add)
    return nullptr;
  OpOperand &other = add->getOpOperand(add.getLhs() == product->getResult(0) ? 1 : 0);
  return matchPattern(other.get(), m_Constant()) ? &other : nullptr;
}

std::pair<int64_t, int64_t> channelAxes(Operation *op) {
  if (auto conv = dyn_cast<ConvOp>(op))
    return conv.getChannelsLast()
               ? std::pair<int64_t, int64_t>{conv.getType().getRank() - 1,
                                             conv.getType().getRank() - 1}
               : std::pair<int64_t, int64_t>{0, 1};
  if (auto gemm = dyn_cast<GemmOp>(op))
    return {gemm.getTransB() ? 0 : 1, 1};
  auto matmul = cast<MatMulOp>(op);
  return {matmul.getRhs().getType().getRank() - 1, matmul.getType().getRank() - 1};
}

int64_t reductionAxis(Operation *op) {
  // HWCF when channels last, else FCHW; 2-D weights sum along the axis
  // that is not the channels'.
  if (auto conv = dyn_cast<ConvOp>(op))
    return conv.getChannelsLast() ? conv.getType().getRank() - 2 : 1;
  return 1 - channelAxes(op).first;
}

Value quantizedConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                        quant::QuantizedType type, ArrayRef<int64_t> values) {
  IntegerType storage = storageElementType(type);
  SmallVector<APInt> elements;
  for (int64_t value : values)
    elements.push_back(APInt(storage.getWidth(), value, type.isSigned()));
  auto storageTensor = RankedTensorType::get(shape, storage);
  return ConstantOp::create(b, loc, RankedTensorType::get(shape, type),
                            DenseElementsAttr::get(storageTensor, elements));
}

Value quantizedBias(OpBuilder &b, Location loc, Value bias, quant::QuantizedType accumulator) {
  auto dequantize = bias.getDefiningOp<DequantizeOp>();
  Value source = dequantize ? dequantize.getInput() : Value();
  if (source && getQuantizedType(source.getType()) == accumulator)
    return source;
  auto biasType = cast<RankedTensorType>(bias.getType());
  DenseElementsAttr attr;
  Value constant = source ? source : bias;
  if (!matchPattern(constant, m_Constant(&attr)) || biasType.getRank() != 1)
    return {};
  quant::QuantizedType given = source ? getQuantizedType(source.getType()) : nullptr;
  SmallVector<double> reals;
  if (given) {
    for (auto [index, value] : llvm::enumerate(attr.getValues<APInt>())) {
      QuantParams params = quantParams(given, quantChannelCount(given) == 1 ? 0 : index);
      reals.push_back((value.getSExtValue() - params.zeroPoint) * params.scale);
    }
  } else {
    for (const APFloat &value : attr.getValues<APFloat>())
      reals.push_back(value.convertToDouble());
  }
  SmallVector<int64_t> values;
  for (auto [index, real] : llvm::enumerate(reals)) {
    double scale =
        quantParams(accumulator, quantChannelCount(accumulator) == 1 ? 0 : index).scale;
    double rounded = std::nearbyint(real / scale);
    if (!(std::abs(rounded) < 2147483647.0))
      return {};
    values.push_back(static_cast<int64_t>(rounded));
  }
  // The bias is a vector: its channels lie along axis 0.
  quant::QuantizedType vectorType = accumulator;
  if (auto perAxis = dyn_cast<quant::UniformQuantizedPerAxisType>(accumulator))
    vectorType = perAxisType(perAxis.getExpressedType(), true, 32, perAxis.getScales(),
                             perAxis.getZeroPoints(), 0);
  return quantizedConstant(b, loc, biasType.getShape(), vectorType, values);
}

namespace {

bool isF32Tensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getElementType().isF32();
}

} // namespace

bool isQuantizableProduct(Operation *op) {
  if (!isProduct(op) || op->getNumResults() != 1 || op->hasAttr(kPrecisionAttr))
    return false;
  if (auto gemm = dyn_cast<GemmOp>(op))
    if (gemm.getTransA() || gemm.getAlpha().convertToDouble() != 1.0 ||
        (gemm.getC() && gemm.getBeta().convertToDouble() != 1.0))
      return false;
  if (auto matmul = dyn_cast<MatMulOp>(op))
    if (matmul.getRhs().getType().getRank() != 2)
      return false;
  Value input = op->getOperand(0), weight = op->getOperand(1);
  return isF32Tensor(input) && isF32Tensor(op->getResult(0)) && isF32Tensor(weight) &&
         matchPattern(weight, m_Constant());
}

Value activatedResult(Operation *op) {
  Value result = op->getResult(0);
  while (result.hasOneUse()) {
    Operation *user = *result.user_begin();
    if (auto clip = dyn_cast<ClipOp>(user)) {
      if ((clip.getMin() && !matchPattern(clip.getMin(), m_Constant())) ||
          (clip.getMax() && !matchPattern(clip.getMax(), m_Constant())))
        break;
    } else if (!isa<ReluOp>(user)) {
      break;
    }
    result = user->getResult(0);
  }
  return result;
}

SmallVector<Value> productPoints(func::FuncOp function,
                                 llvm::function_ref<bool(Operation *)> selected) {
  llvm::SetVector<Value> points;
  function.walk([&](Operation *op) {
    if (!selected(op))
      return;
    points.insert(op->getOperand(0));
    points.insert(activatedResult(op));
  });
  return points.takeVector();
}

SmallVector<Value> quantizationPoints(func::FuncOp function) {
  return productPoints(function, isQuantizableProduct);
}

bool setCalibratedRange(Value value, double lo, double hi) {
  auto range = DenseF64ArrayAttr::get(value.getContext(), {lo, hi});
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    auto function = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
    if (!function)
      return false;
    function.setArgAttr(argument.getArgNumber(), kCalibratedRangeAttr, range);
    return true;
  }
  Operation *op = value.getDefiningOp();
  if (op->getNumResults() != 1)
    return false;
  op->setAttr(kCalibratedRangeAttr, range);
  return true;
}

std::optional<std::pair<double, double>> calibratedRange(Value value) {
  DenseF64ArrayAttr range;
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    if (auto function = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp()))
      range = function.getArgAttrOfType<DenseF64ArrayAttr>(argument.getArgNumber(),
                                                           kCalibratedRangeAttr);
  } else {
    range = value.getDefiningOp()->getAttrOfType<DenseF64ArrayAttr>(kCalibratedRangeAttr);
  }
  if (!range || range.size() != 2)
    return std::nullopt;
  return std::pair<double, double>{range[0], range[1]};
}

namespace {

bool isQuantizedTensor(Value value) { return isQuantized(getElementTypeOrSelf(value.getType())); }

/// Converts between precisions or storage types, or computes nothing.
bool isBoundaryOrConstant(Operation *op) {
  return isa<QuantizeOp, DequantizeOp, RequantizeOp, BitCastOp, func::ReturnOp>(op) ||
         op->hasTrait<OpTrait::ConstantLike>();
}

/// An op computing in float: a float tensor among its results, nothing
/// quantized among its operands or results.
bool computesInFloat(Operation *op) {
  if (isBoundaryOrConstant(op) || llvm::any_of(op->getOperands(), isQuantizedTensor) ||
      llvm::any_of(op->getResults(), isQuantizedTensor))
    return false;
  return llvm::any_of(op->getResultTypes(), [](Type type) {
    return isa<FloatType>(getElementTypeOrSelf(type));
  });
}

} // namespace

SmallVector<FloatIsland> floatIslands(func::FuncOp function) {
  llvm::EquivalenceClasses<Operation *> groups;
  llvm::DenseSet<Operation *> touchesQuantized;
  SmallVector<Operation *> floatOps;
  function.walk([&](Operation *op) {
    if (op == function || !computesInFloat(op))
      return;
    floatOps.push_back(op);
    groups.insert(op);
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (isa_and_present<DequantizeOp>(producer))
        touchesQuantized.insert(op);
      else if (producer && groups.contains(producer))
        groups.unionSets(producer, op);
    }
    for (Operation *user : op->getUsers())
      if (isa<QuantizeOp>(user))
        touchesQuantized.insert(op);
  });
  llvm::DenseSet<Operation *> islandLeaders;
  for (Operation *op : touchesQuantized)
    islandLeaders.insert(groups.getLeaderValue(op));
  // Islands in the program order of their first op.
  SmallVector<FloatIsland> islands;
  llvm::DenseMap<Operation *, size_t> islandOfLeader;
  for (Operation *op : floatOps) {
    Operation *leader = groups.getLeaderValue(op);
    if (!islandLeaders.contains(leader))
      continue;
    auto [it, inserted] = islandOfLeader.try_emplace(leader, islands.size());
    if (inserted)
      islands.emplace_back();
    islands[it->second].ops.push_back(op);
  }
  return islands;
}

int64_t integerOpCount(func::FuncOp function) {
  int64_t count = 0;
  function.walk([&](Operation *op) {
    if (op != function && !isBoundaryOrConstant(op) &&
        (llvm::any_of(op->getOperands(), isQuantizedTensor) ||
         llvm::any_of(op->getResults(), isQuantizedTensor)))
      ++count;
  });
  return count;
}

} // namespace tessel
