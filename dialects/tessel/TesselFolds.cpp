//===- TesselFolds.cpp - Folders and canonicalizations --------------------===//
//
// Folding evaluates ops whose operands are all constants (shape arithmetic,
// weight preprocessing) and removes identities. Constant evaluation is
// capped in size so that a pathological model cannot stall the compiler.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APSInt.h"

using namespace mlir;
using namespace tessel;

/// Constant evaluation beyond this many elements is left to the kernels.
static constexpr int64_t kMaxFoldedElements = 1 << 24;

/// The type of a folded value of `type`: quantized values fold to their
/// storage, which the constant materializer types back.
static RankedTensorType attributeType(RankedTensorType type) {
  return cast<RankedTensorType>(storageType(type));
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Broadcasting binary ops
//===----------------------------------------------------------------------===//

namespace {
using FloatFn = llvm::function_ref<APFloat(const APFloat &, const APFloat &)>;
/// Returns nullopt when the result is undefined (integer division by zero).
using IntFn = llvm::function_ref<std::optional<APInt>(const APInt &,
                                                      const APInt &, bool)>;
} // namespace

/// Row-major offsets of `operandShape` read at every index of `resultShape`
/// under numpy broadcasting.
static SmallVector<int64_t> broadcastOffsets(ArrayRef<int64_t> operandShape,
                                             ArrayRef<int64_t> resultShape) {
  int64_t count = *elementCount(resultShape);
  size_t rank = resultShape.size(), lead = rank - operandShape.size();
  SmallVector<int64_t> strides(rank, 0);
  for (int64_t i = rank - 1, stride = 1; i >= static_cast<int64_t>(lead); --i) {
    int64_t dim = operandShape[i - lead];
    strides[i] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  SmallVector<int64_t> offsets(count);
  SmallVector<int64_t> index(rank, 0);
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t offset = 0;
    for (size_t i = 0; i < rank; ++i)
      offset += index[i] * strides[i];
    offsets[linear] = offset;
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++index[i] < resultShape[i])
        break;
      index[i] = 0;
    }
  }
  return offsets;
}

static Attribute foldBroadcastBinary(ArrayRef<Attribute> operands,
                                     RankedTensorType resultType,
                                     FloatFn floatFn, IntFn intFn) {
  auto lhs = dyn_cast_if_present<DenseElementsAttr>(operands[0]);
  auto rhs = dyn_cast_if_present<DenseElementsAttr>(operands[1]);
  // Quantized arithmetic is not arithmetic on the storage values.
  if (!lhs || !rhs || !resultType.hasStaticShape() || isQuantized(resultType))
    return {};
  std::optional<int64_t> count = elementCount(resultType.getShape());
  if (!count || *count > kMaxFoldedElements)
    return {};
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<int64_t> lhsAt = broadcastOffsets(lhs.getType().getShape(), shape);
  SmallVector<int64_t> rhsAt = broadcastOffsets(rhs.getType().getShape(), shape);
  Type elementType = resultType.getElementType();
  if (isa<FloatType>(elementType)) {
    auto lhsValues = llvm::to_vector(lhs.getValues<APFloat>());
    auto rhsValues = llvm::to_vector(rhs.getValues<APFloat>());
    SmallVector<APFloat> values;
    values.reserve(*count);
    for (int64_t i = 0; i < *count; ++i)
      values.push_back(floatFn(lhsValues[lhsAt[i]], rhsValues[rhsAt[i]]));
    return DenseElementsAttr::get(resultType, values);
  }
  bool isUnsigned = elementType.isUnsignedInteger();
  auto lhsValues = llvm::to_vector(lhs.getValues<APInt>());
  auto rhsValues = llvm::to_vector(rhs.getValues<APInt>());
  SmallVector<APInt> values;
  values.reserve(*count);
  for (int64_t i = 0; i < *count; ++i) {
    std::optional<APInt> value =
        intFn(lhsValues[lhsAt[i]], rhsValues[rhsAt[i]], isUnsigned);
    if (!value)
      return {};
    values.push_back(*value);
  }
  return DenseElementsAttr::get(resultType, values);
}

/// Folds an integer-only broadcasting op (booleans included).
static Attribute foldIntegerBinary(ArrayRef<Attribute> operands,
                                   RankedTensorType resultType, IntFn intFn) {
  if (!isa<IntegerType>(resultType.getElementType()))
    return {};
  return foldBroadcastBinary(
      operands, resultType, [](const APFloat &a, const APFloat &) { return a; },
      intFn);
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldIntegerBinary(adaptor.getOperands(), getType(),
                           [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
                             return a & b;
                           });
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldIntegerBinary(adaptor.getOperands(), getType(),
                           [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
                             return a | b;
                           });
}

OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldIntegerBinary(adaptor.getOperands(), getType(),
                           [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
                             return a ^ b;
                           });
}

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  bool fmod = getFmod();
  return foldIntegerBinary(
      adaptor.getOperands(), getType(),
      [fmod](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        if (isUnsigned)
          return a.urem(b);
        APInt remainder = a.srem(b);
        // Python's %: the remainder takes the divisor's sign.
        if (!fmod && !remainder.isZero() && remainder.isNegative() != b.isNegative())
          remainder += b;
        return remainder;
      });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!dense || dense.getNumElements() > kMaxFoldedElements)
    return {};
  SmallVector<APInt> values;
  for (const APInt &value : dense.getValues<APInt>())
    values.push_back(~value);
  return DenseElementsAttr::get(getType(), values);
}

OpFoldResult CompareOp::fold(FoldAdaptor adaptor) {
  auto lhs = dyn_cast_if_present<DenseElementsAttr>(adaptor.getLhs());
  auto rhs = dyn_cast_if_present<DenseElementsAttr>(adaptor.getRhs());
  if (!lhs || !rhs || !getType().hasStaticShape() ||
      getType().getNumElements() > kMaxFoldedElements)
    return {};
  ArrayRef<int64_t> shape = getType().getShape();
  SmallVector<int64_t> lhsAt = broadcastOffsets(lhs.getType().getShape(), shape);
  SmallVector<int64_t> rhsAt = broadcastOffsets(rhs.getType().getShape(), shape);
  StringRef predicate = getPredicate();
  SmallVector<bool> values;
  if (isa<FloatType>(lhs.getElementType())) {
    auto lhsValues = llvm::to_vector(lhs.getValues<APFloat>());
    auto rhsValues = llvm::to_vector(rhs.getValues<APFloat>());
    for (auto [l, r] : llvm::zip(lhsAt, rhsAt)) {
      APFloat::cmpResult order = lhsValues[l].compare(rhsValues[r]);
      bool less = order == APFloat::cmpLessThan, equal = order == APFloat::cmpEqual;
      bool greater = order == APFloat::cmpGreaterThan;
      values.push_back(predicate == "eq"   ? equal
                       : predicate == "lt" ? less
                       : predicate == "le" ? less || equal
                       : predicate == "gt" ? greater
                                           : greater || equal);
    }
  } else {
    bool isUnsigned = lhs.getElementType().isUnsignedInteger() ||
                      lhs.getElementType().isInteger(1);
    auto lhsValues = llvm::to_vector(lhs.getValues<APInt>());
    auto rhsValues = llvm::to_vector(rhs.getValues<APInt>());
    for (auto [l, r] : llvm::zip(lhsAt, rhsAt)) {
      const APInt &a = lhsValues[l], &b = rhsValues[r];
      bool less = isUnsigned ? a.ult(b) : a.slt(b);
      bool equal = a == b;
      values.push_back(predicate == "eq"   ? equal
                       : predicate == "lt" ? less
                       : predicate == "le" ? less || equal
                       : predicate == "gt" ? !less && !equal
                                           : !less);
    }
  }
  return DenseElementsAttr::get(getType(), values);
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto condition = dyn_cast_if_present<DenseElementsAttr>(adaptor.getCondition());
  auto onTrue = dyn_cast_if_present<DenseElementsAttr>(adaptor.getOnTrue());
  auto onFalse = dyn_cast_if_present<DenseElementsAttr>(adaptor.getOnFalse());
  if (!condition || !onTrue || !onFalse || !getType().hasStaticShape() ||
      getType().getNumElements() > kMaxFoldedElements)
    return {};
  ArrayRef<int64_t> shape = getType().getShape();
  SmallVector<int64_t> conditionAt = broadcastOffsets(condition.getType().getShape(), shape);
  SmallVector<int64_t> trueAt = broadcastOffsets(onTrue.getType().getShape(), shape);
  SmallVector<int64_t> falseAt = broadcastOffsets(onFalse.getType().getShape(), shape);
  auto conditions = llvm::to_vector(condition.getValues<bool>());
  auto trueValues = llvm::to_vector(onTrue.getValues<Attribute>());
  auto falseValues = llvm::to_vector(onFalse.getValues<Attribute>());
  SmallVector<Attribute> values;
  for (size_t i = 0; i < conditionAt.size(); ++i)
    values.push_back(conditions[conditionAt[i]] ? trueValues[trueAt[i]]
                                                : falseValues[falseAt[i]]);
  return DenseElementsAttr::get(getType(), values);
}

/// True if `attr` is a splat equal to `value` in the tensor's element type.
static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type elementType = splat.getElementType();
  if (isa<FloatType>(elementType))
    return splat.getSplatValue<APFloat>().isExactlyValue(value);
  return splat.getSplatValue<APInt>().getSExtValue() == static_cast<int64_t>(value);
}

/// `x op c` is `x` when c is the op's right identity and broadcasting does
/// not change x's type.
static OpFoldResult foldRightIdentity(Value lhs, Attribute rhs, Type resultType,
                                      double identity) {
  if (lhs.getType() == resultType && !isQuantized(resultType) && isSplatOf(rhs, identity))
    return lhs;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  // x + 0 is x only for integers: -0.0 + 0.0 is +0.0.
  if (isa<IntegerType>(getType().getElementType()))
    for (auto [value, other] : {std::pair(getLhs(), adaptor.getRhs()),
                                std::pair(getRhs(), adaptor.getLhs())})
      if (OpFoldResult folded = foldRightIdentity(value, other, getType(), 0))
        return folded;
  return foldBroadcastBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return a + b; },
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a + b;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded =
          foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return folded;
  return foldBroadcastBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return a - b; },
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a - b;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  for (auto [value, other] : {std::pair(getLhs(), adaptor.getRhs()),
                              std::pair(getRhs(), adaptor.getLhs())})
    if (OpFoldResult folded = foldRightIdentity(value, other, getType(), 1))
      return folded;
  return foldBroadcastBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return a * b; },
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a * b;
      });
}

// Shape arithmetic (CenterCropPad's pads, a Max of shapes) folds through
// these; NaN propagates as in ONNX.
OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return llvm::minimum(a, b); },
      [](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        return isUnsigned ? llvm::APIntOps::umin(a, b) : llvm::APIntOps::smin(a, b);
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return llvm::maximum(a, b); },
      [](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
        return isUnsigned ? llvm::APIntOps::umax(a, b) : llvm::APIntOps::smax(a, b);
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded =
          foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 1))
    return folded;
  return foldBroadcastBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return a / b; },
      [](const APInt &a, const APInt &b,
         bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero() || (!isUnsigned && a.isMinSignedValue() && b.isAllOnes()))
          return std::nullopt;
        return isUnsigned ? a.udiv(b) : a.sdiv(b);
      });
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

/// One element converted by tessel.cast's rules; null if unsupported.
static Attribute castElement(Attribute element, Type from, Type to) {
  bool fromUnsigned = from.isUnsignedInteger() || from.isInteger(1);
  if (auto value = dyn_cast<IntegerAttr>(element)) {
    APInt bits = value.getValue();
    if (auto toInt = dyn_cast<IntegerType>(to)) {
      unsigned width = toInt.getWidth();
      if (width == 1)
        return IntegerAttr::get(to, APInt(1, !bits.isZero()));
      return IntegerAttr::get(to, fromUnsigned ? bits.zextOrTrunc(width)
                                               : bits.sextOrTrunc(width));
    }
    if (auto toFloat = dyn_cast<FloatType>(to)) {
      APFloat result(toFloat.getFloatSemantics());
      result.convertFromAPInt(bits, !fromUnsigned, APFloat::rmNearestTiesToEven);
      return FloatAttr::get(to, result);
    }
    return {};
  }
  auto value = dyn_cast<FloatAttr>(element);
  if (!value)
    return {};
  APFloat number = value.getValue();
  if (auto toInt = dyn_cast<IntegerType>(to)) {
    if (toInt.getWidth() == 1)
      return IntegerAttr::get(to, APInt(1, !number.isZero()));
    APSInt result(toInt.getWidth(), toInt.isUnsigned());
    bool exact;
    number.convertToInteger(result, APFloat::rmTowardZero, &exact);
    return IntegerAttr::get(to, result);
  }
  if (auto toFloat = dyn_cast<FloatType>(to)) {
    bool losesInfo;
    number.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                   &losesInfo);
    return FloatAttr::get(to, number);
  }
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!dense || !getType().hasStaticShape() ||
      dense.getNumElements() > kMaxFoldedElements)
    return {};
  Type from = getInput().getType().getElementType();
  Type to = getType().getElementType();
  // APFloat's overflow and float-to-integer rules differ from tessel.cast's
  // for 8- and 4-bit floats and narrow integers; the lowering computes those.
  if (to.getIntOrFloatBitWidth() < 8 && !to.isInteger(1) && isa<FloatType>(from))
    return {};
  if (isa<FloatType>(to) && to.getIntOrFloatBitWidth() <= 8)
    return {};
  if (dense.isSplat()) {
    Attribute element = castElement(dense.getSplatValue<Attribute>(), from, to);
    return element ? DenseElementsAttr::get(getType(), element) : Attribute();
  }
  SmallVector<Attribute> elements;
  for (Attribute element : dense.getValues<Attribute>()) {
    elements.push_back(castElement(element, from, to));
    if (!elements.back())
      return {};
  }
  return DenseElementsAttr::get(getType(), elements);
}

OpFoldResult ReluOp::fold(FoldAdaptor) {
  // relu is idempotent.
  if (getInput().getDefiningOp<ReluOp>())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult FlattenOp::canonicalize(FlattenOp op, PatternRewriter &rewriter) {
  rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    if (getType().hasStaticShape())
      return dense.reshape(attributeType(getType()));
  return {};
}

/// Strides of a row-major tensor of `shape`, in elements.
static SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// The constant of `resultType` whose element at each index is `source`'s
/// element at offset `sourceOffset(index)`: moves raw element bytes (bit-packed
/// booleans go through attributes). A splat stays a splat: its raw data holds
/// one element, whatever the offsets.
static DenseElementsAttr
rearrange(DenseElementsAttr source, RankedTensorType resultType,
          function_ref<int64_t(ArrayRef<int64_t>)> sourceOffset) {
  if (source.isSplat())
    return source.resizeSplat(resultType);
  ArrayRef<int64_t> shape = resultType.getShape();
  int64_t count = resultType.getNumElements();
  SmallVector<int64_t> offsets;
  offsets.reserve(count);
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < count; ++linear) {
    offsets.push_back(sourceOffset(index));
    for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
      if (++index[i] < shape[i])
        break;
      index[i] = 0;
    }
  }
  unsigned bitWidth = getElementTypeOrSelf(source.getType()).getIntOrFloatBitWidth();
  if (bitWidth % 8 == 0) {
    size_t elementBytes = bitWidth / 8;
    ArrayRef<char> raw = source.getRawData();
    std::vector<char> bytes;
    bytes.reserve(count * elementBytes);
    for (int64_t offset : offsets) {
      auto element = raw.slice(offset * elementBytes, elementBytes);
      bytes.insert(bytes.end(), element.begin(), element.end());
    }
    return DenseElementsAttr::getFromRawBuffer(resultType, bytes);
  }
  auto values = llvm::to_vector(source.getValues<Attribute>());
  SmallVector<Attribute> picked;
  picked.reserve(count);
  for (int64_t offset : offsets)
    picked.push_back(values[offset]);
  return DenseElementsAttr::get(resultType, picked);
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p), q) is transpose(x, p o q).
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t axis : perm)
      composed.push_back(inner.getPerm()[axis]);
    getInputMutable().assign(inner.getInput());
    setPerm(composed);
    return getResult();
  }
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!dense || !getType().hasStaticShape() ||
      dense.getNumElements() > kMaxFoldedElements)
    return {};
  SmallVector<int64_t> strides = rowMajorStrides(getInput().getType().getShape());
  return rearrange(dense, attributeType(getType()), [&](ArrayRef<int64_t> index) {
    int64_t offset = 0;
    for (auto [i, axis] : llvm::enumerate(perm))
      offset += index[i] * strides[axis];
    return offset;
  });
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getStarts(), [](int64_t start) { return start == 0; }) &&
      llvm::all_of(getSteps(), [](int64_t step) { return step == 1; }))
    return getInput();
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!dense || !getType().hasStaticShape() ||
      getType().getNumElements() > kMaxFoldedElements)
    return {};
  SmallVector<int64_t> strides = rowMajorStrides(getInput().getType().getShape());
  return rearrange(dense, attributeType(getType()), [&](ArrayRef<int64_t> index) {
    int64_t offset = 0;
    for (auto [i, position] : llvm::enumerate(index))
      offset += (getStarts()[i] + position * getSteps()[i]) * strides[i];
    return offset;
  });
}

OpFoldResult CountOutOfRangeOp::fold(FoldAdaptor adaptor) {
  auto indices = dyn_cast_if_present<DenseElementsAttr>(adaptor.getIndices());
  if (!indices)
    return {};
  ArrayRef<int64_t> extents = getExtents();
  int64_t count = 0;
  for (auto [position, value] : llvm::enumerate(indices.getValues<APInt>())) {
    int64_t index = value.getSExtValue(), extent = extents[position % extents.size()];
    count += index < -extent || index >= extent;
  }
  return DenseElementsAttr::get(getType(), APInt(64, count));
}

/// A check whose count is known to be zero at compile time has nothing to
/// check; one known not to be zero stays, and fails every run.
LogicalResult CheckZeroOp::canonicalize(CheckZeroOp op, PatternRewriter &rewriter) {
  DenseElementsAttr count;
  if (!matchPattern(op.getCount(), m_Constant(&count)) || !count.getSplatValue<APInt>().isZero())
    return failure();
  rewriter.eraseOp(op);
  return success();
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getData());
  auto indices = dyn_cast_if_present<DenseElementsAttr>(adaptor.getIndices());
  if (!dense || !indices || !getType().hasStaticShape() ||
      getType().getNumElements() > kMaxFoldedElements)
    return {};
  int64_t axis = getAxis();
  ArrayRef<int64_t> dataShape = getData().getType().getShape();
  SmallVector<int64_t> strides = rowMajorStrides(dataShape);
  SmallVector<int64_t> positions;
  for (const APInt &value : indices.getValues<APInt>()) {
    int64_t position = value.getSExtValue();
    if (position < 0)
      position += dataShape[axis];
    if (position < 0 || position >= dataShape[axis])
      return {}; // the run-time lowering clamps; leave bad indices to it
    positions.push_back(position);
  }
  int64_t indexRank = getIndices().getType().getRank();
  SmallVector<int64_t> indexStrides = rowMajorStrides(getIndices().getType().getShape());
  return rearrange(dense, attributeType(getType()), [&](ArrayRef<int64_t> index) {
    int64_t offset = 0, indexOffset = 0;
    for (int64_t i = 0; i < axis; ++i)
      offset += index[i] * strides[i];
    for (int64_t i = 0; i < indexRank; ++i)
      indexOffset += index[axis + i] * indexStrides[i];
    offset += positions[indexOffset] * strides[axis];
    for (int64_t i = axis + 1; i < static_cast<int64_t>(dataShape.size()); ++i)
      offset += index[i - 1 + indexRank] * strides[i];
    return offset;
  });
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!dense || getType().getNumElements() > kMaxFoldedElements)
    return {};
  ArrayRef<int64_t> inputShape = getInput().getType().getShape();
  SmallVector<int64_t> strides = rowMajorStrides(inputShape);
  int64_t lead = getType().getRank() - inputShape.size();
  return rearrange(dense, attributeType(getType()), [&](ArrayRef<int64_t> index) {
    int64_t offset = 0;
    for (auto [i, size] : llvm::enumerate(inputShape))
      offset += (size == 1 ? 0 : index[lead + i]) * strides[i];
    return offset;
  });
}

/// Concatenating constants along axis 0 appends their row-major values,
/// which covers the shape vectors that Reshape consumes.
static Attribute concatenateConstants(ConcatOp op, ArrayRef<Attribute> inputs) {
  if (op.getAxis() != 0 || !op.getType().hasStaticShape())
    return {};
  SmallVector<Attribute> values;
  for (Attribute operand : inputs) {
    auto dense = dyn_cast_if_present<DenseElementsAttr>(operand);
    if (!dense || dense.getNumElements() > kMaxFoldedElements)
      return {};
    llvm::append_range(values, dense.getValues<Attribute>());
  }
  return DenseElementsAttr::get(attributeType(op.getType()), values);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  if (Attribute constant = concatenateConstants(*this, adaptor.getInputs()))
    return constant;
  // Inputs without elements add nothing.
  auto isEmpty = [](Value input) {
    auto type = cast<RankedTensorType>(input.getType());
    return type.hasStaticShape() && type.getNumElements() == 0;
  };
  if (getInputs().size() > 1 && llvm::any_of(getInputs(), isEmpty) &&
      !llvm::all_of(getInputs(), isEmpty)) {
    SmallVector<Value> kept = llvm::filter_to_vector(getInputs(), [&](Value input) {
      return !isEmpty(input);
    });
    getInputsMutable().assign(kept);
    return getResult();
  }
  return {};
}

namespace {

/// gemm(a, constant b, trans_b) -> gemm(a, transpose(b)): the transpose folds
/// into the constant, and B's rows become the contiguous, vectorized axis.
struct PretransposeConstantB : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GemmOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getB().getType());
    if (!op.getTransB() || !type || !type.hasStaticShape() ||
        type.getNumElements() > kMaxFoldedElements ||
        !matchPattern(op.getB(), m_Constant()))
      return failure();
    Value transposed = TransposeOp::create(rewriter, op.getLoc(), op.getB(),
                                           rewriter.getDenseI64ArrayAttr({1, 0}));
    rewriter.modifyOpInPlace(op, [&] {
      op.getBMutable().assign(transposed);
      op.setTransB(false);
    });
    return success();
  }
};

/// A transpose that only moves axes of extent 1 is a reshape, which costs
/// nothing (a view) and lets elementwise ops sink reshapes past it.
struct TransposeOfUnitAxes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getInput().getType();
    // A reshape has no axis to carry per-axis quantization along.
    if (!type.hasStaticShape() || (isQuantized(type) && quantizedAxis(getQuantizedType(type))))
      return failure();
    int64_t previous = -1;
    for (int64_t axis : op.getPerm()) {
      if (type.getDimSize(axis) == 1)
        continue;
      if (axis < previous)
        return failure();
      previous = axis;
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

} // namespace

void GemmOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *context) {
  patterns.add<PretransposeConstantB>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<TransposeOfUnitAxes>(context);
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

OpFoldResult QuantizeOp::fold(FoldAdaptor) {
  // quantize(dequantize(q)) is q when the two agree on the parameters.
  if (auto dequantize = getInput().getDefiningOp<DequantizeOp>())
    if (dequantize.getInput().getType() == getType())
      return dequantize.getInput();
  return {};
}

OpFoldResult RequantizeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult BitCastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<BitCastOp>())
    if (inner.getInput().getType() == getType())
      return inner.getInput();
  // Between a quantized type and its storage the stored values stay.
  if (storageType(getInput().getType()) == storageType(getType()))
    if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
      return dense;
  return {};
}
