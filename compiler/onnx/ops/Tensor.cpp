//===- Tensor.cpp - Constants, generated tensors, data movement -----------===//

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

LogicalResult importConstant(NodeImporter &node) {
  OpBuilder &b = node.builder();
  DenseElementsAttr value;
  if (const onnx::TensorProto *tensor = node.tensorAttr("value")) {
    // Constant nodes cannot reference external data relative to anything
    // but the model; the importer passes no directory, so refuse it.
    if (tensor->data_location() == onnx::TensorProto::EXTERNAL)
      return node.unsupported("external data in a Constant node is not supported");
    llvm::Expected<DenseElementsAttr> data =
        readTensor(b.getContext(), *tensor, ".");
    if (!data)
      return node.unsupported(llvm::toString(data.takeError()));
    value = *data;
  } else if (std::optional<float> scalar = node.floatAttr("value_float")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()), *scalar);
  } else if (std::optional<std::vector<float>> list = node.floatsAttr("value_floats")) {
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(list->size())}, b.getF32Type()),
        ArrayRef<float>(*list));
  } else if (std::optional<int64_t> scalar = node.intAttr("value_int")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()), *scalar);
  } else if (std::optional<std::vector<int64_t>> list = node.intsAttr("value_ints")) {
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(list->size())}, b.getI64Type()),
        ArrayRef<int64_t>(*list));
  } else {
    return node.unsupported("only value, value_float(s) and value_int(s) "
                            "constants are supported");
  }
  node.setOutput(0, ConstantOp::create(b, node.loc(), value));
  return success();
}

LogicalResult importIdentity(NodeImporter &node) {
  node.setOutput(0, node.input(0));
  return success();
}

} // namespace

Value convertElements(NodeImporter &node, Value value, Type element) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == element)
    return value;
  return CastOp::create(node.builder(), node.loc(), type.clone(element), value);
}

namespace {

LogicalResult castTo(NodeImporter &node, Type elementType) {
  // ONNX saturates 8- and 4-bit float targets unless told not to; others
  // ignore it.
  bool saturate = node.intAttr("saturate", 1) != 0;
  node.ignoreAttr("round_mode"); // only for FLOAT8E8M0, which is refused
  RankedTensorType type = node.inputType(0);
  auto resultType = RankedTensorType::get(type.getShape(), elementType);
  bool toFloat8 = isa<FloatType>(elementType) && elementType.getIntOrFloatBitWidth() <= 8;
  node.setOutput(0, CastOp::create(node.builder(), node.loc(), resultType, node.input(0),
                                   saturate && toFloat8));
  return success();
}

LogicalResult importCast(NodeImporter &node) {
  std::optional<int64_t> to = node.intAttr("to");
  if (!to)
    return node.unsupported("the 'to' attribute is required");
  Type elementType = elementTypeFor(node.builder().getContext(),
                                    static_cast<int32_t>(*to));
  if (!elementType)
    return node.unsupported("casting to ONNX data type " + Twine(*to) +
                            " is not supported");
  return castTo(node, elementType);
}

LogicalResult importCastLike(NodeImporter &node) {
  return castTo(node, node.inputType(1).getElementType());
}

LogicalResult importFlatten(NodeImporter &node) {
  int64_t rank = node.inputType(0).getRank();
  std::optional<int64_t> axis =
      normalizeAxis(node.intAttr("axis", 1), rank, /*inclusive=*/true);
  if (!axis)
    return node.unsupported("axis is out of range");
  Value result = node.createInferred<FlattenOp>(
      node.input(0), node.builder().getI64IntegerAttr(*axis));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

/// ONNX Reshape: the shape is a constant input where 0 copies the input's
/// dimension (unless allowzero) and one -1 takes what is left.
LogicalResult importReshape(NodeImporter &node) {
  RankedTensorType inputType = node.inputType(0);
  bool allowZero = node.opset() >= 14 && node.intAttr("allowzero", 0) != 0;
  std::optional<SmallVector<int64_t>> constantShape =
      shapeGivingInts(node, 1, "shape", [&]() -> std::optional<ImpliedInts> {
        RankedTensorType stated = node.declaredOutputType(0);
        if (!stated || stated.getNumElements() != inputType.getNumElements())
          return std::nullopt;
        // An entry may also be -1 (what is left), or 0 where it copies
        // the input's equal dimension.
        ImpliedInts implied = exactly(stated.getShape());
        for (auto [i, accepted] : llvm::enumerate(implied.accepted)) {
          accepted.push_back(-1);
          if (!allowZero && static_cast<int64_t>(i) < inputType.getRank() &&
              inputType.getDimSize(i) == accepted.front())
            accepted.push_back(0);
        }
        return implied;
      });
  if (!constantShape)
    return failure();
  SmallVector<int64_t> shape = *constantShape;
  std::optional<int64_t> total = elementCount(inputType.getShape());
  if (!total)
    return node.unsupported("the input must have a static shape");
  int64_t known = 1;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= inputType.getRank())
        return node.unsupported("shape entry " + Twine(i) +
                                " copies a dimension the input lacks");
      shape[i] = inputType.getDimSize(i);
    }
    if (shape[i] == -1) {
      if (inferred)
        return node.unsupported("shape has more than one -1");
      inferred = i;
      continue;
    }
    if (shape[i] < 0)
      return node.unsupported("shape entry " + Twine(i) + " is " + Twine(shape[i]));
    known *= shape[i];
  }
  if (inferred) {
    if (known == 0 || *total % known != 0)
      return node.unsupported("cannot infer the -1 entry of shape " +
                              formatShape(shape) + " for " + Twine(*total) +
                              " elements");
    shape[*inferred] = *total / known;
  } else if (known != *total) {
    return node.unsupported("shape " + formatShape(shape) + " holds " +
                            Twine(known) + " elements, the input " + Twine(*total));
  }
  auto type = RankedTensorType::get(shape, inputType.getElementType());
  node.setOutput(0, ReshapeOp::create(node.builder(), node.loc(), type, node.input(0)));
  return success();
}

LogicalResult importTranspose(NodeImporter &node) {
  int64_t rank = node.inputType(0).getRank();
  std::optional<std::vector<int64_t>> perm = node.intsAttr("perm");
  SmallVector<int64_t> permutation;
  if (perm)
    permutation.assign(perm->begin(), perm->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      permutation.push_back(i);
  Value result = node.createInferred<TransposeOp>(
      node.input(0), node.builder().getDenseI64ArrayAttr(permutation));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

LogicalResult importConcat(NodeImporter &node) {
  SmallVector<Value> inputs;
  for (size_t i = 0; i < node.numInputs(); ++i)
    if (Value input = node.input(i))
      inputs.push_back(input);
  if (inputs.empty())
    return node.unsupported("needs at least one input");
  std::optional<int64_t> axisAttr = node.intAttr("axis");
  if (!axisAttr)
    return node.unsupported("axis is required");
  int64_t rank = cast<RankedTensorType>(inputs.front().getType()).getRank();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return node.unsupported("axis is out of range");
  Value result = node.createInferred<ConcatOp>(
      inputs, node.builder().getI64IntegerAttr(*axis));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

LogicalResult importBitCast(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> to = node.intAttr("to");
  Type target = to ? elementTypeFor(node.builder().getContext(), *to) : Type();
  if (!target)
    return node.unsupported("the target type is not supported");
  Value result = BitCastOp::create(node.builder(), node.loc(), type.clone(target),
                                   node.input(0));
  node.setOutput(0, result);
  return success();
}

/// ConstantOfShape: the shape must be known, the value defaults to 0.f.
LogicalResult importConstantOfShape(NodeImporter &node) {
  std::optional<SmallVector<int64_t>> shape =
      shapeGivingInts(node, 0, "shape", [&] { return statedShape(node); });
  if (!shape)
    return failure();
  OpBuilder &b = node.builder();
  auto type = RankedTensorType::get(*shape, b.getF32Type());
  Attribute element = b.getF32FloatAttr(0.0f);
  if (const onnx::TensorProto *value = node.tensorAttr("value")) {
    Type elementType = elementTypeFor(b.getContext(), value->data_type());
    if (!elementType)
      return node.unsupported("the value's element type is not supported");
    llvm::Expected<DenseElementsAttr> decoded = readTensor(b.getContext(), *value, "");
    if (!decoded)
      return node.unsupported(llvm::toString(decoded.takeError()));
    if (decoded->getNumElements() != 1)
      return node.unsupported("value must hold one element");
    type = RankedTensorType::get(*shape, elementType);
    element = *decoded->getValues<Attribute>().begin();
  }
  node.setOutput(0, ConstantOp::create(b, node.loc(), DenseElementsAttr::get(type, element)));
  return success();
}

/// Range whose start, limit or delta is known only at run time, with the
/// length the model states: start + i * delta, after a run-time check that
/// max(ceil((limit - start) / delta), 0) is that length.
LogicalResult importRuntimeRange(NodeImporter &node) {
  RankedTensorType stated = node.declaredOutputType(0);
  if (!stated || stated.getRank() != 1) {
    for (size_t i = 0; i < 3; ++i)
      if (!node.constantInput(i))
        (void)refuseRunTimeShapeInput(node, i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
    return failure();
  }
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = node.inputType(0).getElementType();
  int64_t length = stated.getDimSize(0);
  auto scalar = [&](size_t i, Type type) -> Value {
    Value value = ReshapeOp::create(b, loc, RankedTensorType::get({}, elementType), node.input(i));
    return type == elementType ? value
                               : CastOp::create(b, loc, RankedTensorType::get({}, type), value);
  };
  // Half-precision values are computed in f32 and rounded once.
  Type computeType = isa<FloatType>(elementType) && elementType.getIntOrFloatBitWidth() < 32
                         ? b.getF32Type()
                         : elementType;
  SmallVector<int64_t> positions(length);
  std::iota(positions.begin(), positions.end(), 0);
  auto positionType = RankedTensorType::get({length}, computeType);
  Value position = CastOp::create(b, loc, positionType, node.int64Constant(positions, {length}));
  Value range = node.createInferred<AddOp>(
      node.createInferred<MulOp>(position, scalar(2, computeType)), scalar(0, computeType));
  if (computeType != elementType)
    range = CastOp::create(b, loc, positionType.clone(elementType), range);
  // The length, computed in f64 as ONNX's reference does.
  Type f64 = b.getF64Type();
  Value steps = CeilOp::create(
      b, loc, RankedTensorType::get({}, f64),
      node.createInferred<DivOp>(node.createInferred<SubOp>(scalar(1, f64), scalar(0, f64)),
                                 scalar(2, f64)));
  Value count = node.createInferred<MaxOp>(steps, node.splatConstant(f64, 0.0));
  Value wrong = node.createInferred<NotOp>(node.createInferred<CompareOp>(
      b.getStringAttr("eq"), count, node.splatConstant(f64, double(length))));
  stopUnlessZero(node, CastOp::create(b, loc, RankedTensorType::get({}, b.getI64Type()), wrong),
                 "Range whose start, limit and delta give another length than the " +
                     Twine(length) + " the model states");
  return node.setInferredOutput(0, range);
}

/// Range with constant start, limit and delta is a constant.
LogicalResult importRange(NodeImporter &node) {
  ElementsAttr start = node.constantInput(0), limit = node.constantInput(1),
               delta = node.constantInput(2);
  if (!start || !limit || !delta)
    return importRuntimeRange(node);
  Type elementType = start.getElementType();
  auto scalar = [](ElementsAttr attr) -> double {
    Attribute value = *attr.getValues<Attribute>().begin();
    if (auto number = dyn_cast<FloatAttr>(value))
      return number.getValueAsDouble();
    return double(cast<IntegerAttr>(value).getValue().getSExtValue());
  };
  double first = scalar(start), last = scalar(limit), step = scalar(delta);
  if (step == 0)
    return node.unsupported("delta is 0");
  double length = std::max(0.0, std::ceil((last - first) / step));
  if (failed(checkComputeBudget(node, length, "range elements")))
    return failure();
  int64_t count = int64_t(length);
  OpBuilder &b = node.builder();
  auto type = RankedTensorType::get({count}, elementType);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < count; ++i) {
    if (auto floatType = dyn_cast<FloatType>(elementType))
      values.push_back(b.getFloatAttr(floatType, first + i * step));
    else
      values.push_back(b.getIntegerAttr(elementType, int64_t(first) + i * int64_t(step)));
  }
  node.setOutput(0, ConstantOp::create(b, node.loc(), DenseElementsAttr::get(type, values)));
  return success();
}

/// EyeLike: ones on diagonal k of a matrix shaped like the input.
LogicalResult importEyeLike(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() != 2 || !type.hasStaticShape())
    return node.unsupported("the input must be a static matrix");
  OpBuilder &b = node.builder();
  Type elementType = type.getElementType();
  if (std::optional<int64_t> dtype = node.intAttr("dtype"))
    elementType = elementTypeFor(b.getContext(), *dtype);
  if (!elementType)
    return node.unsupported("dtype is not supported");
  int64_t k = node.intAttr("k", 0);
  if (failed(checkComputeBudget(node, double(type.getNumElements()), "matrix elements")))
    return failure();
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < type.getDimSize(0); ++i)
    for (int64_t j = 0; j < type.getDimSize(1); ++j) {
      double value = j - i == k ? 1.0 : 0.0;
      values.push_back(isa<FloatType>(elementType)
                           ? Attribute(b.getFloatAttr(elementType, value))
                           : Attribute(b.getIntegerAttr(elementType, int64_t(value))));
    }
  node.setOutput(0, ConstantOp::create(b, node.loc(),
                                       DenseElementsAttr::get(type.clone(elementType), values)));
  return success();
}

/// HannWindow, HammingWindow, BlackmanWindow: constants of the given size,
/// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) with N = size (periodic) or
/// size - 1 (symmetric).
LogicalResult importWindow(NodeImporter &node, double a0, double a1, double a2) {
  std::optional<SmallVector<int64_t>> size =
      shapeGivingInts(node, 0, "size", [&]() -> std::optional<ImpliedInts> {
        RankedTensorType stated = node.declaredOutputType(0);
        if (!stated || stated.getRank() != 1)
          return std::nullopt;
        return exactly({stated.getDimSize(0)});
      });
  if (!size)
    return failure();
  int64_t count = size->front();
  if (count <= 0)
    return node.unsupported("size must be positive");
  if (failed(checkComputeBudget(node, double(count), "window elements")))
    return failure();
  OpBuilder &b = node.builder();
  Type elementType = elementTypeFor(b.getContext(), node.intAttr("output_datatype", 1));
  if (!elementType)
    return node.unsupported("output_datatype is not supported");
  bool periodic = node.intAttr("periodic", 1) != 0;
  double period = periodic ? count : count - 1;
  SmallVector<Attribute> values;
  for (int64_t n = 0; n < count; ++n) {
    double angle = period > 0 ? 2 * M_PI * n / period : 0.0;
    double value = a0 - a1 * std::cos(angle) + a2 * std::cos(2 * angle);
    values.push_back(isa<FloatType>(elementType)
                         ? Attribute(b.getFloatAttr(elementType, value))
                         : Attribute(b.getIntegerAttr(elementType, int64_t(value))));
  }
  node.setOutput(0, ConstantOp::create(
                        b, node.loc(),
                        DenseElementsAttr::get(RankedTensorType::get({count}, elementType),
                                               values)));
  return success();
}

} // namespace

void registerTensorHandlers(OpRegistry &registry) {
  registry.on("BitCast", 26, importBitCast);
  registry.on("Constant", 1, importConstant);
  registry.on("Identity", 1, importIdentity);
  registry.on("Cast", 6, importCast);
  registry.on("CastLike", 15, importCastLike);
  registry.on("Flatten", 1, importFlatten);
  registry.on("Reshape", 5, importReshape);
  registry.on("Transpose", 1, importTranspose);
  registry.on("Concat", 4, importConcat);
  registry.on("ConstantOfShape", 9, importConstantOfShape);
  registry.on("Range", 11, importRange);
  registry.on("EyeLike", 9, importEyeLike);
  registry.on("HannWindow", 17,
              [](NodeImporter &node) { return importWindow(node, 0.5, 0.5, 0.0); });
  registry.on("HammingWindow", 17, [](NodeImporter &node) {
    return importWindow(node, 25.0 / 46.0, 21.0 / 46.0, 0.0);
  });
  registry.on("BlackmanWindow", 17,
              [](NodeImporter &node) { return importWindow(node, 0.42, 0.5, 0.08); });
}

} // namespace tessel::onnx_import
