//===- OnnxGraphWriter.cpp - Building an ONNX graph from MLIR values ------===//

#include "compiler/onnx/OnnxGraphWriter.h"

#include "compiler/Locations.h"
#include "dialects/tessel/QuantizedTypes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

namespace tessel::onnx_export {

std::optional<int32_t> onnxDataType(Type elementType) {
  if (elementType.isF32())
    return onnx::TensorProto::FLOAT;
  if (elementType.isF16())
    return onnx::TensorProto::FLOAT16;
  if (elementType.isBF16())
    return onnx::TensorProto::BFLOAT16;
  if (elementType.isF64())
    return onnx::TensorProto::DOUBLE;
  auto integer = dyn_cast<IntegerType>(elementType);
  if (!integer)
    return std::nullopt;
  if (integer.getWidth() == 1)
    return onnx::TensorProto::BOOL;
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 8:
    return isUnsigned ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  case 16:
    return isUnsigned ? onnx::TensorProto::UINT16 : onnx::TensorProto::INT16;
  case 32:
    return isUnsigned ? onnx::TensorProto::UINT32 : onnx::TensorProto::INT32;
  case 64:
    return isUnsigned ? onnx::TensorProto::UINT64 : onnx::TensorProto::INT64;
  default:
    return std::nullopt;
  }
}

std::string nodeNameOf(Operation *op) {
  SmallVector<std::string> names;
  nodeNamesOf(op->getLoc(), names);
  return names.empty() ? std::string() : names.front();
}

namespace {

/// The little-endian bytes of `value`'s elements, as ONNX's raw_data holds
/// them (one byte per boolean).
std::string rawBytes(DenseElementsAttr value) {
  int64_t count = value.getNumElements();
  if (value.getElementType().isInteger(1)) {
    std::string bytes;
    bytes.reserve(count);
    for (bool element : value.getValues<bool>())
      bytes.push_back(element ? 1 : 0);
    return bytes;
  }
  ArrayRef<char> data = value.getRawData();
  if (!value.isSplat())
    return std::string(data.begin(), data.end());
  std::string bytes;
  bytes.reserve(data.size() * count);
  for (int64_t i = 0; i < count; ++i)
    bytes.append(data.begin(), data.end());
  return bytes;
}

llvm::Error exportError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

std::string OnnxGraphWriter::nameOf(Value value) const {
  auto found = names.find(value);
  if (found == names.end())
    llvm::report_fatal_error("ONNX export: a value is read before it is defined");
  return found->second;
}

std::string OnnxGraphWriter::define(Value value, llvm::StringRef name) {
  std::string unique = uniqueTensorName(name);
  names[value] = unique;
  return unique;
}

std::string OnnxGraphWriter::nameResult(Value value, llvm::StringRef hint) {
  return isNamed(value) ? nameOf(value) : define(value, hint);
}

void OnnxGraphWriter::defineResults(Operation *op) {
  std::string hint = nodeNameOf(op);
  if (hint.empty())
    hint = op->getName().stripDialect().str();
  for (OpResult result : op->getResults()) {
    if (names.count(result))
      continue;
    define(result,
           op->getNumResults() == 1 ? hint : hint + "_" + std::to_string(result.getResultNumber()));
  }
}

onnx::NodeProto &OnnxGraphWriter::addNode(llvm::StringRef opType, Operation *op,
                                          ArrayRef<std::string> inputs,
                                          ArrayRef<std::string> outputs) {
  std::string name = nodeNameOf(op);
  return addNode(opType, name.empty() ? opType : llvm::StringRef(name), inputs, outputs);
}

onnx::NodeProto &OnnxGraphWriter::addNode(llvm::StringRef opType, llvm::StringRef name,
                                          ArrayRef<std::string> inputs,
                                          ArrayRef<std::string> outputs) {
  onnx::NodeProto &node = *graph.add_node();
  node.set_op_type(opType.str());
  node.set_name(uniqueNodeName(name));
  for (const std::string &input : inputs)
    node.add_input(input);
  for (const std::string &output : outputs)
    node.add_output(output);
  return node;
}

onnx::NodeProto &OnnxGraphWriter::addNode(llvm::StringRef opType, Operation *op,
                                          ArrayRef<std::string> inputs) {
  defineResults(op);
  SmallVector<std::string> outputs;
  for (Value result : op->getResults())
    outputs.push_back(nameOf(result));
  return addNode(opType, op, inputs, outputs);
}

onnx::NodeProto &OnnxGraphWriter::addNode(llvm::StringRef opType, Operation *op,
                                          ValueRange operands) {
  SmallVector<std::string> inputs;
  for (Value operand : operands)
    inputs.push_back(nameOf(operand));
  return addNode(opType, op, ArrayRef<std::string>(inputs));
}

llvm::Expected<std::string> OnnxGraphWriter::addInitializer(llvm::StringRef hint,
                                                            DenseElementsAttr value) {
  std::optional<int32_t> dataType = onnxDataType(value.getElementType());
  if (!dataType) {
    std::string type;
    llvm::raw_string_ostream(type) << value.getElementType();
    return exportError("constant '" + hint + "' has elements of type " + type +
                       ", which ONNX tensors cannot hold");
  }
  onnx::TensorProto &tensor = *graph.add_initializer();
  tensor.set_name(uniqueTensorName(hint));
  tensor.set_data_type(*dataType);
  for (int64_t dim : value.getType().getShape())
    tensor.add_dims(dim);
  tensor.set_raw_data(rawBytes(value));
  return tensor.name();
}

std::string OnnxGraphWriter::addInt64Initializer(llvm::StringRef hint, ArrayRef<int64_t> values) {
  onnx::TensorProto &tensor = *graph.add_initializer();
  tensor.set_name(uniqueTensorName(hint));
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t value : values)
    tensor.add_int64_data(value);
  return tensor.name();
}

OnnxGraphWriter::QuantizationInputs
OnnxGraphWriter::addQuantizationInputs(llvm::StringRef hint, quant::QuantizedType type) {
  auto cached = quantizationInputs.find(type);
  if (cached != quantizationInputs.end())
    return cached->second;
  std::optional<int32_t> axis = quantizedAxis(type);
  onnx::TensorProto &scale = *graph.add_initializer();
  onnx::TensorProto &zeroPoint = *graph.add_initializer();
  scale.set_name(uniqueTensorName((hint + "_scale").str()));
  zeroPoint.set_name(uniqueTensorName((hint + "_zero_point").str()));
  scale.set_data_type(onnx::TensorProto::FLOAT);
  zeroPoint.set_data_type(*onnxDataType(storageElementType(type)));
  int64_t channels = quantChannelCount(type);
  if (axis) {
    scale.add_dims(channels);
    zeroPoint.add_dims(channels);
  }
  // ONNX holds 8- and 16-bit integers in int32_data, 64-bit ones in
  // int64_data, unsigned 32-bit ones in uint64_data.
  for (int64_t channel = 0; channel < channels; ++channel) {
    QuantParams params = quantParams(type, channel);
    scale.add_float_data(static_cast<float>(params.scale));
    if (zeroPoint.data_type() == onnx::TensorProto::UINT32)
      zeroPoint.add_uint64_data(static_cast<uint64_t>(params.zeroPoint));
    else
      zeroPoint.add_int32_data(static_cast<int32_t>(params.zeroPoint));
  }
  QuantizationInputs inputs{scale.name(), zeroPoint.name(), axis};
  quantizationInputs[type] = inputs;
  return inputs;
}

void OnnxGraphWriter::addQuantizationNode(llvm::StringRef opType, const std::string &input,
                                          const std::string &output, quant::QuantizedType type) {
  QuantizationInputs parameters = addQuantizationInputs(output, type);
  onnx::NodeProto &node = addNode(opType, output + "_" + opType.str(),
                                  {input, parameters.scale, parameters.zeroPoint}, {output});
  if (parameters.axis) {
    onnx::AttributeProto &axis = *node.add_attribute();
    axis.set_name("axis");
    axis.set_type(onnx::AttributeProto::INT);
    axis.set_i(*parameters.axis);
  }
}

std::string OnnxGraphWriter::uniqueTensorName(llvm::StringRef hint) {
  std::string base = hint.empty() ? std::string("tensor") : hint.str();
  std::string name = base;
  for (int suffix = 1; !tensorNames.insert(name).second; ++suffix)
    name = base + "_" + std::to_string(suffix);
  return name;
}

std::string OnnxGraphWriter::uniqueNodeName(llvm::StringRef hint) {
  std::string name = hint.str();
  for (int suffix = 1; !nodeNames.insert(name).second; ++suffix)
    name = hint.str() + "_" + std::to_string(suffix);
  return name;
}

} // namespace tessel::onnx_export
