//===- Tensor.cpp - Constants, identity and data movement -----------------===//

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include "dialects/tessel/ShapeInference.h"

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
  std::optional<SmallVector<int64_t>> constantShape = node.constantInts(1, "shape");
  if (!constantShape)
    return failure();
  bool allowZero = node.opset() >= 14 && node.intAttr("allowzero", 0) != 0;
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
}

} // namespace tessel::onnx_import
