//===- LoweringUtils.cpp - Helpers shared by the tessel lowerings ---------===//

#include "passes/TesselToLinalg/LoweringUtils.h"
#include "dialects/tessel/QuantizedTypes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;

namespace tessel {

Value ScalarBuilder::add(Value lhs, Value rhs) {
  if (isFloat())
    return arith::AddFOp::create(b, loc, lhs, rhs);
  return arith::AddIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::sub(Value lhs, Value rhs) {
  if (isFloat())
    return arith::SubFOp::create(b, loc, lhs, rhs);
  return arith::SubIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::mul(Value lhs, Value rhs) {
  if (isFloat())
    return arith::MulFOp::create(b, loc, lhs, rhs);
  return arith::MulIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::div(Value lhs, Value rhs) {
  if (isFloat())
    return arith::DivFOp::create(b, loc, lhs, rhs);
  if (isUnsigned)
    return arith::DivUIOp::create(b, loc, lhs, rhs);
  return arith::DivSIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::max(Value lhs, Value rhs) {
  if (isFloat())
    return arith::MaximumFOp::create(b, loc, lhs, rhs);
  if (isUnsigned)
    return arith::MaxUIOp::create(b, loc, lhs, rhs);
  return arith::MaxSIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::pow(Value base, Value exponent) {
  return math::PowFOp::create(b, loc, base, exponent);
}

Value ScalarBuilder::bitAnd(Value lhs, Value rhs) {
  return arith::AndIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::bitOr(Value lhs, Value rhs) {
  return arith::OrIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::bitXor(Value lhs, Value rhs) {
  return arith::XOrIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::min(Value lhs, Value rhs) {
  if (isFloat())
    return arith::MinimumFOp::create(b, loc, lhs, rhs);
  if (isUnsigned)
    return arith::MinUIOp::create(b, loc, lhs, rhs);
  return arith::MinSIOp::create(b, loc, lhs, rhs);
}

Value ScalarBuilder::constant(double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value ScalarBuilder::extreme(bool largest) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/!largest)));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value = isUnsigned ? (largest ? APInt::getMaxValue(width) : APInt::getMinValue(width))
                           : (largest ? APInt::getSignedMaxValue(width)
                                      : APInt::getSignedMinValue(width));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
}

bool hasUnsignedElements(Type tesselType) {
  if (quant::QuantizedType quantized = getQuantizedType(tesselType))
    return !quantized.isSigned();
  Type element = getElementTypeOrSelf(tesselType);
  return element.isUnsignedInteger() || element.isInteger(1);
}

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value) {
  Value empty = emptyTensor(b, loc, type);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

BroadcastOperand indexOperand(OpBuilder &b, Location loc, Value operand,
                              ArrayRef<int64_t> axisDims,
                              ArrayRef<int64_t> iterationExtents) {
  auto type = cast<RankedTensorType>(operand.getType());
  // Axes of the operand that index the iteration space one to one.
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (!(type.getDimSize(i) == 1 && iterationExtents[axisDims[i]] != 1))
      kept.push_back(i);

  SmallVector<AffineExpr> exprs;
  for (int64_t axis : kept)
    exprs.push_back(b.getAffineDimExpr(axisDims[axis]));
  AffineMap map =
      AffineMap::get(iterationExtents.size(), 0, exprs, b.getContext());
  if (static_cast<int64_t>(kept.size()) == type.getRank())
    return {operand, map};

  // Each kept axis absorbs the unit axes before it; trailing unit axes join
  // the last group.
  SmallVector<ReassociationIndices> groups;
  SmallVector<int64_t> collapsedShape;
  ReassociationIndices pending;
  size_t next = 0;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    pending.push_back(i);
    if (next < kept.size() && kept[next] == i) {
      groups.push_back(pending);
      collapsedShape.push_back(type.getDimSize(i));
      pending.clear();
      ++next;
    }
  }
  if (!groups.empty())
    llvm::append_range(groups.back(), pending);
  auto collapsedType =
      RankedTensorType::get(collapsedShape, type.getElementType());
  Value collapsed =
      tensor::CollapseShapeOp::create(b, loc, collapsedType, operand, groups);
  return {collapsed, map};
}

BroadcastOperand broadcastOperand(OpBuilder &b, Location loc, Value operand,
                                  ArrayRef<int64_t> resultShape) {
  int64_t rank = cast<RankedTensorType>(operand.getType()).getRank();
  int64_t lead = resultShape.size() - rank;
  auto axisDims = llvm::to_vector(llvm::seq<int64_t>(lead, lead + rank));
  return indexOperand(b, loc, operand, axisDims, resultShape);
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, ScalarBodyFn body) {
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (Value operand : operands) {
    BroadcastOperand broadcast =
        broadcastOperand(b, loc, operand, resultType.getShape());
    inputs.push_back(broadcast.value);
    maps.push_back(broadcast.map);
  }
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, inputs, emptyTensor(b, loc, resultType), maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

RankedTensorType productSumType(RankedTensorType resultType) {
  if (!resultType.getElementType().isF16())
    return resultType;
  return resultType.clone(Float32Type::get(resultType.getContext()));
}

Value roundProductSum(OpBuilder &b, Location loc, Value sum, RankedTensorType resultType) {
  if (sum.getType() == resultType)
    return sum;
  return buildElementwise(b, loc, resultType, {sum},
                          [&](OpBuilder &nested, Location at, ValueRange args) -> Value {
                            return arith::TruncFOp::create(nested, at,
                                                           resultType.getElementType(), args[0]);
                          });
}

std::optional<SmallVector<ReassociationIndices>>
reshapeReassociation(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() < to.size())
    return reshapeReassociation(to, from);
  SmallVector<ReassociationIndices> groups;
  if (to.empty()) {
    // Collapsing into a rank-0 tensor takes no groups, only unit axes.
    if (llvm::all_of(from, [](int64_t dim) { return dim == 1; }))
      return groups;
    return std::nullopt;
  }
  size_t i = 0;
  for (int64_t target : to) {
    ReassociationIndices group;
    int64_t product = 1;
    while (i < from.size() && (group.empty() || product < target)) {
      product *= from[i];
      group.push_back(i++);
    }
    if (product != target || group.empty())
      return std::nullopt;
    groups.push_back(group);
  }
  // Trailing unit axes belong to the last group.
  for (; i < from.size(); ++i) {
    if (from[i] != 1 || groups.empty())
      return std::nullopt;
    groups.back().push_back(i);
  }
  return groups;
}

Value reshapeTensor(OpBuilder &b, Location loc, Value source,
                    RankedTensorType resultType) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  if (sourceType == resultType)
    return source;
  ArrayRef<int64_t> from = sourceType.getShape(), to = resultType.getShape();
  if (auto groups = reshapeReassociation(from, to)) {
    if (from.size() > to.size())
      return tensor::CollapseShapeOp::create(b, loc, resultType, source, *groups);
    if (from.size() < to.size())
      return tensor::ExpandShapeOp::create(b, loc, resultType, source, *groups);
  }
  // Go through the flat vector: every reshape is a collapse then an expand.
  auto flatType = RankedTensorType::get({sourceType.getNumElements()},
                                        sourceType.getElementType());
  Value flat = reshapeTensor(b, loc, source, flatType);
  return reshapeTensor(b, loc, flat, resultType);
}

} // namespace tessel
