//===- TesselOps.cpp - Verifiers and result-type inference ----------------===//
//
// Verifiers state the ONNX typing rule each op relies on; inferReturnTypes
// computes result shapes from operands and attributes, so that the importer
// and rewrites never spell out a result type that could be wrong.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace tessel;

static RankedTensorType rankedType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static Type elementType(Value value) { return rankedType(value).getElementType(); }

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// A quantized constant prints its storage values, then `-> type`.
static ParseResult parseStorageCast(OpAsmParser &parser, ElementsAttr value,
                                    Type &resultType) {
  resultType = value.getType();
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(resultType);
  return success();
}

static void printStorageCast(OpAsmPrinter &printer, Operation *, ElementsAttr value,
                             Type resultType) {
  if (resultType != value.getType())
    printer << "-> " << resultType;
}

LogicalResult ConstantOp::verify() {
  Type valueType = getValue().getType();
  if (valueType != getType() && valueType != storageType(getType()))
    return emitOpError("value of type ")
           << valueType << " is neither the result type " << getType()
           << " nor its storage";
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBroadcastType(std::optional<Location> loc, Value lhs,
                                        Value rhs,
                                        SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhsType = rankedType(lhs), rhsType = rankedType(rhs);
  std::optional<Shape> shape =
      broadcastShapes(lhsType.getShape(), rhsType.getShape());
  if (!shape)
    return emitOptionalError(loc, "operand shapes " +
                                      formatShape(lhsType.getShape()) +
                                      " and " +
                                      formatShape(rhsType.getShape()) +
                                      " do not broadcast");
  inferred.push_back(
      RankedTensorType::get(*shape, inferredElementType(lhsType.getElementType())));
  return success();
}

#define TESSEL_BROADCAST_INFERENCE(OpTy)                                       \
  LogicalResult OpTy::inferReturnTypes(                                        \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferBroadcastType(loc, adaptor.getLhs(), adaptor.getRhs(),         \
                              inferred);                                       \
  }
TESSEL_BROADCAST_INFERENCE(AddOp)
TESSEL_BROADCAST_INFERENCE(SubOp)
TESSEL_BROADCAST_INFERENCE(MulOp)
TESSEL_BROADCAST_INFERENCE(DivOp)
TESSEL_BROADCAST_INFERENCE(MinOp)
TESSEL_BROADCAST_INFERENCE(MaxOp)
TESSEL_BROADCAST_INFERENCE(PowOp)
TESSEL_BROADCAST_INFERENCE(AndOp)
TESSEL_BROADCAST_INFERENCE(OrOp)
TESSEL_BROADCAST_INFERENCE(XorOp)
TESSEL_BROADCAST_INFERENCE(BitShiftOp)
TESSEL_BROADCAST_INFERENCE(ModOp)
#undef TESSEL_BROADCAST_INFERENCE

/// Arithmetic on real numbers: one element type throughout, or quantized
/// per tensor throughout with one expressed type.
static LogicalResult verifyArithmeticTypes(Operation *op) {
  SmallVector<Type> types;
  for (Value value : op->getOperands())
    types.push_back(elementType(value));
  types.push_back(elementType(op->getResult(0)));
  if (llvm::none_of(types, [](Type type) { return isQuantized(type); })) {
    if (!llvm::all_equal(types))
      return op->emitOpError("operands and result must share an element type");
    return success();
  }
  for (Type type : types) {
    quant::QuantizedType quantized = getQuantizedType(type);
    if (!quantized)
      return op->emitOpError("quantized arithmetic needs quantized operands and result");
    if (quantizedAxis(quantized))
      return op->emitOpError("quantized arithmetic needs per-tensor quantization");
    if (quantized.getExpressedType() != expressedType(types.front()))
      return op->emitOpError("quantized types must share the expressed type");
  }
  return success();
}

LogicalResult AddOp::verify() { return verifyArithmeticTypes(*this); }
LogicalResult SubOp::verify() { return verifyArithmeticTypes(*this); }
LogicalResult MulOp::verify() { return verifyArithmeticTypes(*this); }

/// A product may also widen: bf16 operands, an f32 result (products in bf16,
/// accumulated in f32: --precision bf16).
static bool compatibleProductTypes(TypeRange inferred, TypeRange actual) {
  if (compatibleInferredTypes(inferred, actual))
    return true;
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto expected = dyn_cast<RankedTensorType>(inferred.front());
  auto given = dyn_cast<RankedTensorType>(actual.front());
  return expected && given && expected.getShape() == given.getShape() &&
         expected.getElementType().isBF16() && given.getElementType().isF32();
}

#define TESSEL_INFERENCE_CHECKED_BY(OpTy, compatible)                           \
  bool OpTy::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {   \
    return compatible(inferred, actual);                                       \
  }
TESSEL_INFERENCE_CHECKED_BY(AddOp, compatibleInferredTypes)
TESSEL_INFERENCE_CHECKED_BY(SubOp, compatibleInferredTypes)
TESSEL_INFERENCE_CHECKED_BY(MulOp, compatibleInferredTypes)
TESSEL_INFERENCE_CHECKED_BY(MaxPoolOp, compatibleInferredTypes)
TESSEL_INFERENCE_CHECKED_BY(MaxPoolIndicesOp, compatibleInferredTypes)
TESSEL_INFERENCE_CHECKED_BY(AveragePoolOp, compatibleInferredTypes)
TESSEL_INFERENCE_CHECKED_BY(GlobalAveragePoolOp, compatibleInferredTypes)
TESSEL_INFERENCE_CHECKED_BY(MatMulOp, compatibleProductTypes)
TESSEL_INFERENCE_CHECKED_BY(GemmOp, compatibleProductTypes)
TESSEL_INFERENCE_CHECKED_BY(ConvOp, compatibleProductTypes)
#undef TESSEL_INFERENCE_CHECKED_BY

LogicalResult ModOp::verify() {
  if (isa<FloatType>(getType().getElementType()) && !getFmod())
    return emitOpError("needs fmod for floating-point operands");
  return success();
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  if (failed(inferBroadcastType(loc, adaptor.getLhs(), adaptor.getRhs(), inferred)))
    return failure();
  auto type = cast<RankedTensorType>(inferred.back());
  inferred.back() = RankedTensorType::get(type.getShape(), IntegerType::get(context, 1));
  return success();
}

LogicalResult CompareOp::verify() {
  if (!llvm::is_contained({"eq", "lt", "le", "gt", "ge"}, getPredicate()))
    return emitOpError("unknown predicate '")
           << getPredicate() << "' (expected eq, lt, le, gt or ge)";
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  ArrayRef<int64_t> condition = rankedType(adaptor.getCondition()).getShape();
  RankedTensorType onTrue = rankedType(adaptor.getOnTrue());
  ArrayRef<int64_t> onFalse = rankedType(adaptor.getOnFalse()).getShape();
  std::optional<Shape> values = broadcastShapes(onTrue.getShape(), onFalse);
  std::optional<Shape> shape =
      values ? broadcastShapes(condition, *values) : std::nullopt;
  if (!shape)
    return emitOptionalError(loc, "condition " + formatShape(condition) +
                                      " and values " +
                                      formatShape(onTrue.getShape()) + ", " +
                                      formatShape(onFalse) + " do not broadcast");
  inferred.push_back(RankedTensorType::get(*shape, onTrue.getElementType()));
  return success();
}

LogicalResult PowOp::verify() {
  if (!isa<FloatType>(getType().getElementType()))
    return emitOpError("needs a floating-point base, got ")
           << getType().getElementType();
  return success();
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("input and result shapes differ: ")
           << getInput().getType() << " vs " << getType();
  return success();
}

LogicalResult CeluOp::verify() {
  if (getAlpha().isZero())
    return emitOpError("alpha must not be 0 (the input is divided by it)");
  return success();
}

LogicalResult ReluOp::verify() {
  if (quant::QuantizedType quantized = getQuantizedType(getType()))
    if (quantizedAxis(quantized))
      return emitOpError("needs per-tensor quantization");
  return success();
}

LogicalResult ClipOp::verify() {
  Type elementType = getType().getElementType();
  for (Value bound : {getMin(), getMax()}) {
    if (!bound)
      continue;
    RankedTensorType type = rankedType(bound);
    if (type.getNumElements() != 1 || type.getElementType() != elementType)
      return emitOpError("bounds must be single ")
             << elementType << " values, got " << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhsType = rankedType(adaptor.getLhs());
  RankedTensorType rhsType = rankedType(adaptor.getRhs());
  std::optional<Shape> shape =
      matmulShape(lhsType.getShape(), rhsType.getShape());
  if (!shape)
    return emitOptionalError(
        loc, "operand shapes " + formatShape(lhsType.getShape()) +
                 " and " + formatShape(rhsType.getShape()) +
                 " are not compatible for a matrix product");
  inferred.push_back(
      RankedTensorType::get(*shape, inferredElementType(lhsType.getElementType())));
  return success();
}

/// The element types of a matrix product or convolution: one float type,
/// or bf16 operands with an f32 result (and bias), or quantized as
/// verifyQuantizedProduct describes.
static LogicalResult verifyProductTypes(Operation *op, Value input, Value weight,
                                        Value bias, int64_t weightChannelAxis,
                                        int64_t resultChannelAxis) {
  Type result = elementType(op->getResult(0));
  Type biasType = bias ? elementType(bias) : Type();
  if (!isQuantized(elementType(input)) && !isQuantized(elementType(weight)) &&
      !isQuantized(result) && !(biasType && isQuantized(biasType))) {
    bool widening = elementType(input).isBF16() && result.isF32();
    Type operandType = widening ? elementType(input) : result;
    if (elementType(input) != operandType || elementType(weight) != operandType ||
        (biasType && biasType != result))
      return op->emitOpError("operands and result must share an element type, or be bf16 "
                             "operands with an f32 result");
    return success();
  }
  return verifyQuantizedProduct(op, elementType(input), elementType(weight), biasType,
                                result, weightChannelAxis, resultChannelAxis);
}

LogicalResult MatMulOp::verify() {
  return verifyProductTypes(*this, getLhs(), getRhs(), Value(),
                            getRhs().getType().getRank() - 1, getType().getRank() - 1);
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  RankedTensorType aType = rankedType(adaptor.getA());
  RankedTensorType bType = rankedType(adaptor.getB());
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return emitOptionalError(loc, "A and B must be matrices");
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  int64_t m = aType.getDimSize(transA ? 1 : 0);
  int64_t n = bType.getDimSize(transB ? 0 : 1);
  inferred.push_back(
      RankedTensorType::get({m, n}, inferredElementType(aType.getElementType())));
  return success();
}

LogicalResult GemmOp::verify() {
  RankedTensorType aType = getA().getType(), bType = getB().getType();
  int64_t kA = aType.getDimSize(getTransA() ? 0 : 1);
  int64_t kB = bType.getDimSize(getTransB() ? 1 : 0);
  if (kA != kB && !ShapedType::isDynamic(kA) && !ShapedType::isDynamic(kB))
    return emitOpError("reduction extents differ: A has ")
           << kA << ", B has " << kB;
  if (failed(verifyProductTypes(*this, getA(), getB(), getC(), getTransB() ? 0 : 1, 1)))
    return failure();
  bool quantized = isQuantized(aType);
  if (quantized && (getAlpha().convertToDouble() != 1.0 || getBeta().convertToDouble() != 1.0))
    return emitOpError("a quantized product needs alpha and beta 1");
  if (Value c = getC()) {
    RankedTensorType cType = rankedType(c);
    if (quantized && cType.getRank() != 1)
      return emitOpError("the bias of a quantized product must be a vector");
    // C broadcasts to the result, never the other way around.
    std::optional<Shape> shape =
        broadcastShapes(cType.getShape(), getType().getShape());
    if (cType.getRank() > 2 || !shape ||
        llvm::ArrayRef<int64_t>(*shape) != getType().getShape())
      return emitOpError("C of shape ")
             << formatShape(cType.getShape())
             << " does not broadcast to the result shape "
             << formatShape(getType().getShape());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// An activation's spatial extents and channel count: [N, C, spatial...],
/// or [N, spatial..., C] channels last.
struct ActivationShape {
  int64_t batch;
  int64_t channels;
  ArrayRef<int64_t> spatial;
};

static ActivationShape activationShape(RankedTensorType type, bool channelsLast) {
  ArrayRef<int64_t> shape = type.getShape();
  if (channelsLast)
    return {shape.front(), shape.back(), shape.drop_front().drop_back()};
  return {shape[0], shape[1], shape.drop_front(2)};
}

static Shape activationType(int64_t batch, int64_t channels, ArrayRef<int64_t> spatial,
                            bool channelsLast) {
  Shape shape{batch};
  if (!channelsLast)
    shape.push_back(channels);
  shape.append(spatial.begin(), spatial.end());
  if (channelsLast)
    shape.push_back(channels);
  return shape;
}

/// A convolution weight's filter count, channels per group and kernel
/// extents: [F, C / group, k...], or [k..., C / group, F] channels last.
struct WeightShape {
  int64_t filters;
  int64_t channels;
  ArrayRef<int64_t> kernel;
};

static WeightShape weightShape(RankedTensorType type, bool channelsLast) {
  ArrayRef<int64_t> shape = type.getShape();
  if (channelsLast)
    return {shape.back(), shape[shape.size() - 2], shape.drop_back(2)};
  return {shape[0], shape[1], shape.drop_front(2)};
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  RankedTensorType weightType = rankedType(adaptor.getWeight());
  if (inputType.getRank() < 3 || weightType.getRank() != inputType.getRank())
    return emitOptionalError(loc, "input and weight must have the same rank, "
                                  "at least 3 ([N, C, spatial...])");
  bool channelsLast = adaptor.getChannelsLast();
  ActivationShape input = activationShape(inputType, channelsLast);
  WeightShape weight = weightShape(weightType, channelsLast);
  WindowGeometry window{weight.kernel, adaptor.getStrides(), adaptor.getPads(),
                        adaptor.getDilations()};
  if (std::optional<std::string> error = checkWindowGeometry(window, input.spatial.size()))
    return emitOptionalError(loc, *error);
  std::optional<Shape> spatial = windowOutputSizes(input.spatial, window);
  if (!spatial)
    return emitOptionalError(loc, "the kernel is larger than the padded input");
  inferred.push_back(RankedTensorType::get(
      activationType(input.batch, weight.filters, *spatial, channelsLast),
      inferredElementType(inputType.getElementType())));
  return success();
}

LogicalResult ConvOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType weightType = getWeight().getType();
  int64_t group = getGroup();
  int64_t channels = activationShape(inputType, getChannelsLast()).channels;
  WeightShape weight = weightShape(weightType, getChannelsLast());
  int64_t filters = weight.filters;
  if (!ShapedType::isDynamic(channels) && channels != weight.channels * group)
    return emitOpError("input has ")
           << channels << " channels but the weight expects " << weight.channels
           << " per group x " << group << " groups";
  if (!ShapedType::isDynamic(filters) && filters % group != 0)
    return emitOpError("filter count ")
           << filters << " is not a multiple of group " << group;
  if (Value bias = getBias()) {
    RankedTensorType biasType = rankedType(bias);
    if (biasType.getRank() != 1 || biasType.getDimSize(0) != filters)
      return emitOpError("bias must be a vector of ") << filters << " elements";
  }
  int64_t channelAxis = getChannelsLast() ? inputType.getRank() - 1 : 1;
  return verifyProductTypes(*this, getInput(), getWeight(), getBias(),
                            getChannelsLast() ? weightType.getRank() - 1 : 0, channelAxis);
}

/// Max pooling's indices are always computed in NC[spatial] layout.
template <typename Adaptor>
static bool channelsLastOf(Adaptor &adaptor) {
  if constexpr (std::is_same_v<Adaptor, MaxPoolIndicesOp::Adaptor>)
    return false;
  else
    return adaptor.getChannelsLast();
}

template <typename PoolOp>
static LogicalResult inferPoolType(std::optional<Location> loc,
                                   typename PoolOp::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  if (inputType.getRank() < 3)
    return emitOptionalError(loc, "input must have rank 3 or more ([N, C, spatial...])");
  WindowGeometry window{adaptor.getKernelShape(), adaptor.getStrides(),
                        adaptor.getPads(), adaptor.getDilations(),
                        adaptor.getCeilMode()};
  if (std::optional<std::string> error =
          checkWindowGeometry(window, inputType.getRank() - 2))
    return emitOptionalError(loc, *error);
  bool channelsLast = channelsLastOf(adaptor);
  ActivationShape input = activationShape(inputType, channelsLast);
  std::optional<Shape> spatial = windowOutputSizes(input.spatial, window);
  if (!spatial)
    return emitOptionalError(loc, "the window is larger than the padded input");
  // The maximum keeps the input's quantization; averages take their own.
  Type element = std::is_same_v<PoolOp, MaxPoolOp>
                     ? inputType.getElementType()
                     : inferredElementType(inputType.getElementType());
  inferred.push_back(RankedTensorType::get(
      activationType(input.batch, input.channels, *spatial, channelsLast), element));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPoolType<MaxPoolOp>(loc, adaptor, inferred);
}

LogicalResult MaxPoolIndicesOp::inferReturnTypes(MLIRContext *context,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &inferred) {
  if (failed(inferPoolType<MaxPoolIndicesOp>(loc, adaptor, inferred)))
    return failure();
  inferred.back() = cast<RankedTensorType>(inferred.back()).clone(IntegerType::get(context, 64));
  return success();
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  return inferPoolType<AveragePoolOp>(loc, adaptor, inferred);
}

/// Pads must leave every window at least one input element, otherwise the
/// maximum or average of a window would be made of padding alone.
template <typename PoolOp>
static LogicalResult verifyPoolPads(PoolOp op) {
  ArrayRef<int64_t> pads = op.getPads(), kernel = op.getKernelShape();
  size_t rank = kernel.size();
  for (size_t i = 0; i < rank; ++i) {
    int64_t span = (kernel[i] - 1) * op.getDilations()[i] + 1;
    if (pads[i] >= span || pads[rank + i] >= span)
      return op.emitOpError("pads must be smaller than the window on axis ")
             << i;
  }
  return success();
}

LogicalResult MaxPoolOp::verify() { return verifyPoolPads(*this); }
LogicalResult MaxPoolIndicesOp::verify() { return verifyPoolPads(*this); }

/// An average of a quantized tensor is quantized per tensor, like its input.
static LogicalResult verifyAverageTypes(Operation *op) {
  Type input = elementType(op->getOperand(0)), result = elementType(op->getResult(0));
  if (!isQuantized(input) && !isQuantized(result))
    return success();
  quant::QuantizedType inputType = getQuantizedType(input);
  quant::QuantizedType resultType = getQuantizedType(result);
  if (!inputType || !resultType)
    return op->emitOpError("a quantized average needs a quantized input and result");
  if (quantizedAxis(inputType) || quantizedAxis(resultType))
    return op->emitOpError("a quantized average needs per-tensor quantization");
  if (inputType.getExpressedType() != resultType.getExpressedType())
    return op->emitOpError("quantized types must share the expressed type");
  return success();
}

LogicalResult AveragePoolOp::verify() {
  if (failed(verifyAverageTypes(*this)))
    return failure();
  return verifyPoolPads(*this);
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  if (inputType.getRank() < 3)
    return emitOptionalError(loc, "input must have rank 3 or more ([N, C, spatial...])");
  bool channelsLast = adaptor.getChannelsLast();
  ActivationShape input = activationShape(inputType, channelsLast);
  Shape ones(input.spatial.size(), 1);
  inferred.push_back(RankedTensorType::get(
      activationType(input.batch, input.channels, ones, channelsLast),
      inferredElementType(inputType.getElementType())));
  return success();
}

LogicalResult GlobalAveragePoolOp::verify() {
  if (getInput().getType().getRank() < 3)
    return emitOpError("input must have rank 3 or more ([N, C, spatial...])");
  return verifyAverageTypes(*this);
}

LogicalResult BatchNormOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType paramType = getScale().getType();
  if (inputType.getRank() < 2)
    return emitOpError("input must have a channel axis");
  if (paramType.getRank() != 1 ||
      paramType.getDimSize(0) != inputType.getDimSize(1))
    return emitOpError("parameters must be vectors of ")
           << inputType.getDimSize(1) << " elements, one per channel";
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult LayerNormOp::verify() {
  RankedTensorType type = getInput().getType();
  if (type.getRank() < 1)
    return emitOpError("input must have rank 1 or more");
  int64_t features = type.getShape().back();
  for (Value parameter : {getScale(), getBias()}) {
    if (!parameter)
      continue;
    RankedTensorType parameterType = rankedType(parameter);
    if (parameterType.getRank() != 1 || parameterType.getDimSize(0) != features)
      return emitOpError("scale and bias must be vectors of ")
             << features << " elements, the last axis";
  }
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The input shape without the reduced axes, after checking them.
static FailureOr<SmallVector<int64_t>>
reducedShape(std::optional<Location> loc, RankedTensorType input,
             ArrayRef<int64_t> axes) {
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= input.getRank())
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               input.getRank());
    if (!seen.insert(axis).second)
      return emitOptionalError(loc, "axis ", axis, " is reduced twice");
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (!seen.contains(i))
      shape.push_back(input.getDimSize(i));
  return shape;
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = rankedType(adaptor.getInput());
  FailureOr<SmallVector<int64_t>> shape = reducedShape(loc, input, adaptor.getAxes());
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, input.getElementType()));
  return success();
}

LogicalResult ReduceOp::verify() {
  if (!llvm::is_contained({"sum", "prod", "max", "min"}, getKind()))
    return emitOpError("kind must be sum, prod, max or min, not '")
           << getKind() << "'";
  return reducedShape(getLoc(), getInput().getType(), getAxes());
}

LogicalResult ArgReduceOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = rankedType(adaptor.getInput());
  FailureOr<SmallVector<int64_t>> shape =
      reducedShape(loc, input, {static_cast<int64_t>(adaptor.getAxis())});
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, IntegerType::get(context, 64)));
  return success();
}

LogicalResult ArgReduceOp::verify() {
  if (getKind() != "max" && getKind() != "min")
    return emitOpError("kind must be max or min, not '") << getKind() << "'";
  return verifyAxis(*this, getAxis(), getInput().getType().getRank());
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis > inputType.getRank())
    return emitOptionalError(loc, "axis out of range");
  auto product = [](ArrayRef<int64_t> dims) -> int64_t {
    std::optional<int64_t> count = elementCount(dims);
    return count ? *count : ShapedType::kDynamic;
  };
  ArrayRef<int64_t> shape = inputType.getShape();
  inferred.push_back(RankedTensorType::get(
      {product(shape.take_front(axis)), product(shape.drop_front(axis))},
      inputType.getElementType()));
  return success();
}

LogicalResult FlattenOp::verify() {
  if (static_cast<int64_t>(getAxis()) > getInput().getType().getRank())
    return emitOpError("axis ") << getAxis() << " is out of range";
  return success();
}

LogicalResult ReshapeOp::verify() {
  std::optional<int64_t> from = elementCount(getInput().getType().getShape());
  std::optional<int64_t> to = elementCount(getType().getShape());
  if (from && to && *from != *to)
    return emitOpError("cannot reshape ")
           << *from << " elements into " << *to << " elements";
  return success();
}

static LogicalResult verifyPermutation(std::optional<Location> loc,
                                       ArrayRef<int64_t> perm, int64_t rank) {
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOptionalError(loc, "perm has " + Twine(perm.size()) +
                                      " entries for an operand of rank " +
                                      Twine(rank));
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : perm)
    if (axis < 0 || axis >= rank || !seen.insert(axis).second)
      return emitOptionalError(loc, "perm is not a permutation of the axes");
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType inputType = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (failed(verifyPermutation(loc, perm, inputType.getRank())))
    return failure();
  Shape shape;
  for (int64_t axis : perm)
    shape.push_back(inputType.getDimSize(axis));
  inferred.push_back(
      RankedTensorType::get(shape, transposeQuantizedType(inputType.getElementType(), perm)));
  return success();
}

LogicalResult TransposeOp::verify() {
  return verifyPermutation(getLoc(), getPerm(), getInput().getType().getRank());
}

/// Storage width in bits (booleans take a byte).
static unsigned storageBits(Type type) {
  return type.isInteger(1) ? 8 : type.getIntOrFloatBitWidth();
}

LogicalResult BitCastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("changes the shape");
  Type from = getInput().getType().getElementType(), to = getType().getElementType();
  if (isQuantized(from) || isQuantized(to)) {
    if (storageType(from) != storageType(to) || (isQuantized(from) && isQuantized(to)))
      return emitOpError("casts between a quantized type and its storage only, got ")
             << from << " and " << to;
    return success();
  }
  if (storageBits(from) != storageBits(to))
    return emitOpError("needs element types of the same width, got ") << from << " and " << to;
  return success();
}

LogicalResult ExpandOp::verify() {
  std::optional<Shape> broadcast =
      broadcastShapes(getInput().getType().getShape(), getType().getShape());
  if (!broadcast || ArrayRef<int64_t>(*broadcast) != getType().getShape())
    return emitOpError("cannot broadcast ")
           << formatShape(getInput().getType().getShape()) << " to "
           << formatShape(getType().getShape());
  return success();
}

LogicalResult SliceOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  int64_t rank = input.getRank();
  if (result.getRank() != rank || static_cast<int64_t>(getStarts().size()) != rank ||
      static_cast<int64_t>(getSteps().size()) != rank)
    return emitOpError("needs a start and a step for each of the ") << rank << " axes";
  for (int64_t i = 0; i < rank; ++i) {
    int64_t start = getStarts()[i], step = getSteps()[i];
    int64_t extent = result.getDimSize(i), size = input.getDimSize(i);
    if (step == 0)
      return emitOpError("step of axis ") << i << " is 0";
    if (extent == 0 || ShapedType::isDynamic(size) || ShapedType::isDynamic(extent))
      continue;
    int64_t last = start + (extent - 1) * step;
    if (start < 0 || start >= size || last < 0 || last >= size)
      return emitOpError("axis ") << i << " reads outside [0, " << size << ")";
  }
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType data = rankedType(adaptor.getData());
  RankedTensorType indices = rankedType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             data.getRank());
  Shape shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::verify() {
  RankedTensorType data = getData().getType(), indices = getIndices().getType();
  if (data.getRank() != indices.getRank())
    return emitOpError("data and indices must have the same rank");
  return verifyAxis(*this, getAxis(), data.getRank());
}

LogicalResult CountOutOfRangeOp::verify() {
  ArrayRef<int64_t> extents = getExtents();
  if (extents.empty() || llvm::any_of(extents, [](int64_t extent) { return extent < 0; }))
    return emitOpError("extents must be one or more sizes >= 0");
  if (extents.size() == 1)
    return success();
  RankedTensorType indices = getIndices().getType();
  if (indices.getRank() == 0 || indices.getShape().back() != static_cast<int64_t>(extents.size()))
    return emitOpError("several extents need indices whose innermost axis has one entry per "
                       "extent");
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = rankedType(adaptor.getInput());
  ArrayRef<int64_t> pads = adaptor.getPads();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return emitOptionalError(loc, "pads has ", pads.size(), " entries, expected ",
                             2 * rank);
  Shape shape;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t size = input.getDimSize(i);
    int64_t padded = ShapedType::isDynamic(size) ? size : size + pads[i] + pads[rank + i];
    if (!ShapedType::isDynamic(padded) && padded < 0)
      return emitOptionalError(loc, "pads crop axis ", i, " below size 0");
    shape.push_back(padded);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult PadOp::verify() {
  if (!llvm::is_contained({"constant", "reflect", "edge", "wrap"}, getMode()))
    return emitOpError("mode must be constant, reflect, edge or wrap, not '")
           << getMode() << "'";
  if (getValue().getType().getRank() != 0)
    return emitOpError("value must be a scalar tensor");
  if (getMode() == "reflect")
    for (int64_t i = 0, rank = getInput().getType().getRank(); i < rank; ++i)
      if (getInput().getType().getDimSize(i) < 2 &&
          (getPads()[i] > 0 || getPads()[rank + i] > 0))
        return emitOpError("reflect padding needs at least 2 elements on axis ") << i;
  return success();
}

LogicalResult CumSumOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

LogicalResult CumProdOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

static LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return op->emitOpError("reduction must be none, add, mul, max or min, not '")
           << reduction << "'";
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  if (getIndices().getType().getRank() != getData().getType().getRank())
    return emitOpError("indices must have the data's rank");
  if (failed(verifyAxis(*this, getAxis(), getData().getType().getRank())))
    return failure();
  return verifyReduction(*this, getReduction());
}

LogicalResult ScatterNDOp::verify() {
  RankedTensorType data = getData().getType(), indices = getIndices().getType();
  RankedTensorType updates = getUpdates().getType();
  if (indices.getRank() < 1 || indices.isDynamicDim(indices.getRank() - 1))
    return emitOpError("indices need a static last axis");
  int64_t depth = indices.getShape().back();
  if (depth > data.getRank())
    return emitOpError("index tuples are longer than the data's rank");
  Shape expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(depth));
  if (ArrayRef<int64_t>(expected) != updates.getShape())
    return emitOpError("updates must have shape ") << formatShape(expected);
  return verifyReduction(*this, getReduction());
}

LogicalResult EinsumOp::verify() {
  std::optional<EinsumEquation> parsed = parseEinsumEquation(getEquation());
  if (!parsed)
    return emitOpError("equation must be explicit letters, as \"ij,jk->ik\"");
  const auto &operands = parsed->operands;
  StringRef output = parsed->output;
  if (operands.size() != getInputs().size())
    return emitOpError("equation names ") << operands.size() << " operands, not "
                                          << getInputs().size();
  llvm::StringMap<int64_t> extents;
  for (auto [letters, input] : llvm::zip(operands, getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (static_cast<int64_t>(letters.size()) != type.getRank())
      return emitOpError("operand '") << letters << "' has rank " << type.getRank();
    for (auto [letter, size] : llvm::zip(letters, type.getShape())) {
      auto [it, inserted] = extents.try_emplace(StringRef(&letter, 1), size);
      if (!inserted && it->second != size)
        return emitOpError("axis '") << letter << "' has sizes " << it->second
                                     << " and " << size;
    }
  }
  if (static_cast<int64_t>(output.size()) != getType().getRank())
    return emitOpError("the result must have rank ") << output.size();
  for (auto [letter, size] : llvm::zip(output, getType().getShape())) {
    auto it = extents.find(StringRef(&letter, 1));
    if (it == extents.end() || it->second != size)
      return emitOpError("output axis '") << letter << "' does not match the operands";
  }
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  RankedTensorType first = rankedType(adaptor.getInputs().front());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitOptionalError(loc, "axis out of range");
  Shape shape(first.getShape());
  for (Value input : adaptor.getInputs().drop_front()) {
    RankedTensorType type = rankedType(input);
    if (type.getRank() != first.getRank() ||
        type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "inputs must share rank and element type");
    for (int64_t i = 0; i < first.getRank(); ++i) {
      if (i == axis)
        continue;
      if (type.getDimSize(i) != shape[i])
        return emitOptionalError(loc, "inputs differ on axis " + Twine(i) +
                                          ", which is not the concat axis");
    }
    shape[axis] = ShapedType::isDynamic(shape[axis]) ||
                          type.isDynamicDim(axis)
                      ? ShapedType::kDynamic
                      : shape[axis] + type.getDimSize(axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult ConcatOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

//===----------------------------------------------------------------------===//
// Recurrence
//===----------------------------------------------------------------------===//

/// The one type of a scan's or loop's `states`, which its result stacks;
/// failure (after an error) when there is none or they differ.
static FailureOr<RankedTensorType> sharedStateType(Operation *op, ValueRange states) {
  if (states.empty())
    return op->emitOpError("needs at least one state");
  auto stateType = cast<RankedTensorType>(states.front().getType());
  for (Value state : states)
    if (state.getType() != stateType)
      return op->emitOpError("states must share one type, got ")
             << state.getType() << " and " << stateType;
  return stateType;
}

/// Checks that `count` (a step count: a scan's length, a loop's trip
/// count) is a 0-d i64 tensor.
static LogicalResult verifyCount(Operation *op, Value count, StringRef what) {
  auto type = cast<RankedTensorType>(count.getType());
  if (type.getRank() != 0 || !type.getElementType().isInteger(64))
    return op->emitOpError(what) << " must be a 0-d i64 tensor, got " << type;
  return success();
}

LogicalResult ScanOp::verify() {
  FailureOr<RankedTensorType> stateType = sharedStateType(*this, getStates());
  if (failed(stateType))
    return failure();
  RankedTensorType resultType = getType();
  SmallVector<int64_t> stacked = {resultType.getDimSize(0),
                                  static_cast<int64_t>(getStates().size())};
  llvm::append_range(stacked, stateType->getShape());
  if (resultType != stateType->clone(stacked))
    return emitOpError("result must stack the states of every step as [steps, states, ...], "
                       "expected ")
           << stateType->clone(stacked) << ", got " << resultType;
  if (getLength() && failed(verifyCount(*this, getLength(), "length")))
    return failure();

  SmallVector<Type> arguments(getInvariants().getTypes());
  llvm::append_range(arguments, getStates().getTypes());
  for (Value scanned : getScanned()) {
    auto type = cast<RankedTensorType>(scanned.getType());
    if (type.getRank() == 0 || type.getDimSize(0) != getSteps())
      return emitOpError("scanned operand ") << type << " must have " << getSteps()
                                             << " steps along its leading axis";
    arguments.push_back(type.clone(type.getShape().drop_front()));
  }
  Block &body = getBody().front();
  if (TypeRange(body.getArgumentTypes()) != TypeRange(arguments))
    return emitOpError("body arguments must be the invariants, the states and one step of "
                       "each scanned operand");
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || TypeRange(yield.getStates().getTypes()) != TypeRange(getStates().getTypes()))
    return emitOpError("body must yield the next value of every state");
  return success();
}

LogicalResult LoopOp::verify() {
  if (failed(verifyCount(*this, getTripCount(), "trip count")))
    return failure();
  FailureOr<RankedTensorType> stateType = sharedStateType(*this, getStates());
  if (failed(stateType))
    return failure();
  SmallVector<int64_t> stacked = {static_cast<int64_t>(getStates().size())};
  llvm::append_range(stacked, stateType->getShape());
  if (getType() != stateType->clone(stacked))
    return emitOpError("result must stack the final states as [states, ...], expected ")
           << stateType->clone(stacked) << ", got " << getType();
  SmallVector<Type> arguments = {getTripCount().getType()};
  llvm::append_range(arguments, getInvariants().getTypes());
  llvm::append_range(arguments, getStates().getTypes());
  Block &body = getBody().front();
  if (TypeRange(body.getArgumentTypes()) != TypeRange(arguments))
    return emitOpError("body arguments must be the iteration number, the invariants and the "
                       "states");
  SmallVector<Type> yielded;
  if (getConditional())
    yielded.push_back(RankedTensorType::get({}, IntegerType::get(getContext(), 1)));
  llvm::append_range(yielded, getStates().getTypes());
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || TypeRange(yield.getStates().getTypes()) != TypeRange(yielded))
    return emitOpError(getConditional() ? "body must yield the condition (a 0-d i1 tensor) and "
                                          "the next value of every state"
                                        : "body must yield the next value of every state");
  return success();
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

LogicalResult QuantizeOp::verify() {
  if (getInput().getType().getElementType() != expressedType(getType()))
    return emitOpError("quantizes ")
           << expressedType(getType()) << " values, not "
           << getInput().getType().getElementType();
  return success();
}

LogicalResult DequantizeOp::verify() {
  if (getType().getElementType() != expressedType(getInput().getType()))
    return emitOpError("dequantizes to ")
           << expressedType(getInput().getType()) << ", not " << getType().getElementType();
  return success();
}

LogicalResult RequantizeOp::verify() {
  if (expressedType(getInput().getType()) != expressedType(getType()))
    return emitOpError("quantized types must share the expressed type");
  return success();
}

LogicalResult LookupOp::verify() {
  quant::QuantizedType input = getQuantizedType(getInput().getType());
  if (input.getStorageTypeIntegralWidth() != 8 || quantizedAxis(input))
    return emitOpError("looks up 8-bit values quantized per tensor");
  RankedTensorType table = getTable().getType();
  if (table.getRank() != 1 || table.getDimSize(0) != 256)
    return emitOpError("needs a table of 256 entries, got ") << table;
  if (table.getElementType() != getType().getElementType())
    return emitOpError("table and result must share an element type");
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("changes the shape");
  if (quantizedAxis(getQuantizedType(getType())))
    return emitOpError("needs a result quantized per tensor");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/tessel/TesselOps.cpp.inc"
