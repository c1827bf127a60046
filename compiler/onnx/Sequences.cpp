//===- Sequences.cpp - ONNX sequences and optionals at import -------------===//
//
// How sequences are held while a graph imports, and the graph inputs and
// outputs that are sequences or optionals: each stands for the tensors it
// holds, @main's arguments or results, which kGraphInputsAttr and
// kGraphOutputsAttr list per graph value.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/Sequences.h"
#include "compiler/onnx/GraphImporter.h"
#include "compiler/onnx/TensorProto.h"
#include "dialects/tessel/ShapeInference.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace tessel::onnx_import {

Value makeSequence(OpBuilder &builder, Location loc, ValueRange elements) {
  auto type = TupleType::get(builder.getContext(), elements.getTypes());
  return UnrealizedConversionCastOp::create(builder, loc, TypeRange{type}, elements).getResult(0);
}

std::optional<SmallVector<Value>> sequenceElements(Value value) {
  if (!value || !isa<TupleType>(value.getType()))
    return std::nullopt;
  auto cast = value.getDefiningOp<UnrealizedConversionCastOp>();
  if (!cast)
    return std::nullopt;
  return SmallVector<Value>(cast.getInputs());
}

Value makeEmptyOptional(OpBuilder &builder, Location loc) {
  return UnrealizedConversionCastOp::create(builder, loc, TypeRange{builder.getNoneType()},
                                            ValueRange{})
      .getResult(0);
}

bool isEmptyOptional(Value value) { return value && isa<NoneType>(value.getType()); }

std::string describeValue(Value value) {
  if (std::optional<SmallVector<Value>> elements = sequenceElements(value))
    return "a sequence of " + std::to_string(elements->size()) +
           (elements->size() == 1 ? " tensor" : " tensors");
  if (isEmptyOptional(value))
    return "an empty optional";
  return "a tensor";
}

bool takesSequences(llvm::StringRef opType) {
  return llvm::StringSwitch<bool>(opType)
      .Cases({"SequenceInsert", "SequenceErase", "SequenceAt", "SequenceLength"}, true)
      .Cases({"ConcatFromSequence", "SequenceMap", "Identity"}, true)
      .Cases({"Optional", "OptionalHasElement", "OptionalGetElement"}, true)
      .Default(false);
}

void eraseUnusedSequences(func::FuncOp function) {
  SmallVector<Operation *> casts;
  function.walk([&](UnrealizedConversionCastOp cast) {
    if (cast->getNumResults() == 1 && isa<TupleType, NoneType>(cast.getResult(0).getType()))
      casts.push_back(cast);
  });
  // A sequence made from another's elements never uses it: each is erased
  // once nothing reads it, latest first.
  for (Operation *cast : llvm::reverse(casts))
    if (cast->use_empty())
      cast->erase();
}

/// What `type` (a graph value's declared type) is, as kGraphInputsAttr
/// and kGraphOutputsAttr name it.
static std::string kindOf(const onnx::TypeProto &type) {
  bool optional = type.has_optional_type();
  const onnx::TypeProto &held = optional ? type.optional_type().elem_type() : type;
  bool sequence = held.has_sequence_type();
  return optional ? (sequence ? "optional_sequence" : "optional")
                  : (sequence ? "sequence" : "tensor");
}

/// "NAME[i]" for the tensors of a sequence, else "NAME".
static std::string tensorName(const std::string &name, llvm::StringRef kind, size_t i) {
  return kind.ends_with("sequence") ? name + "[" + std::to_string(i) + "]" : name;
}

static DictionaryAttr describeGraphValue(OpBuilder &builder, const std::string &name,
                                         const std::string &kind, bool present, size_t first,
                                         size_t count) {
  return builder.getDictionaryAttr({
      builder.getNamedAttr("name", builder.getStringAttr(name)),
      builder.getNamedAttr("kind", builder.getStringAttr(kind)),
      builder.getNamedAttr("present", builder.getBoolAttr(present)),
      builder.getNamedAttr("first", builder.getI64IntegerAttr(first)),
      builder.getNamedAttr("count", builder.getI64IntegerAttr(count)),
  });
}

llvm::Expected<SmallVector<RankedTensorType>>
GraphImporter::sequenceInputTypes(const std::string &name, const onnx::TypeProto &element,
                                  bool optional) {
  if (!element.has_tensor_type())
    return importError("graph input '" + name + "' is a sequence of other than tensors, which " +
                       "is not supported");
  auto given = options.sequenceShapes.find(name);
  if (given == options.sequenceShapes.end())
    return importError("graph input '" + name + "' is " +
                       (optional ? "an optional sequence" : "a sequence") +
                       ": give the shapes of the tensors to compile it for with --sequence " +
                       name + "=SHAPE,SHAPE,... (3x4,2x4, say; nothing after = for an empty one)" +
                       (optional ? ", or compile it holding nothing with --absent " + name : ""));
  const onnx::TypeProto_Tensor &tensor = element.tensor_type();
  Type elementType = elementTypeFor(&context, tensor.elem_type());
  if (!elementType)
    return importError("graph input '" + name + "' holds tensors of element type " +
                       dataTypeName(tensor.elem_type()) + ", which is not supported");
  SmallVector<RankedTensorType> types;
  for (const std::vector<int64_t> &shape : given->second) {
    if (tensor.has_shape()) {
      const onnx::TensorShapeProto &declared = tensor.shape();
      bool fits = declared.dim_size() == static_cast<int>(shape.size());
      for (int i = 0; fits && i < declared.dim_size(); ++i)
        fits = !declared.dim(i).has_dim_value() || declared.dim(i).dim_value() == shape[i];
      if (!fits)
        return importError("--sequence " + name + " gives a tensor of shape " + formatShape(shape) +
                           ", which the tensors the model declares for it do not have");
    }
    types.push_back(RankedTensorType::get(shape, elementType));
  }
  return types;
}

llvm::Expected<GraphImporter::GraphInputTensors>
GraphImporter::graphInputTensors(const onnx::ValueInfoProto &info) {
  const std::string &name = info.name();
  const onnx::TypeProto &type = info.type();
  GraphInputTensors tensors{kindOf(type), true, {}};
  if (tensors.kind != "tensor" && (options.dynamicBatch || !options.maxShapes.empty()))
    return importError("graph input '" + name + "' is " +
                       (type.has_optional_type() ? "an optional" : "a sequence") +
                       ", which --dynamic-batch and --max-shape do not support yet");
  if (options.sequenceShapes.count(name) && !llvm::StringRef(tensors.kind).ends_with("sequence"))
    return importError("--sequence names '" + name + "', which is not a sequence");
  if (options.absentInputs.count(name)) {
    if (!type.has_optional_type())
      return importError("--absent names '" + name + "', which is not an optional");
    tensors.present = false;
    return tensors;
  }
  const onnx::TypeProto &held = type.has_optional_type() ? type.optional_type().elem_type() : type;
  if (held.has_sequence_type()) {
    llvm::Expected<SmallVector<RankedTensorType>> types =
        sequenceInputTypes(name, held.sequence_type().elem_type(), type.has_optional_type());
    if (!types)
      return types.takeError();
    tensors.types = std::move(*types);
    return tensors;
  }
  if (!held.has_tensor_type())
    return importError("graph input '" + name + "' is not a tensor, a sequence of tensors or " +
                       "an optional of either");
  onnx::ValueInfoProto element = info;
  *element.mutable_type() = held;
  llvm::Expected<RankedTensorType> tensor = inputType(element);
  if (!tensor)
    return tensor.takeError();
  tensors.types.push_back(*tensor);
  return tensors;
}

void GraphImporter::bindGraphInputs(
    func::FuncOp function, llvm::ArrayRef<std::pair<std::string, GraphInputTensors>> graphInputs,
    ArrayRef<Value> arguments) {
  SmallVector<Attribute> described;
  bool tensorsOnly = true;
  size_t first = 0;
  for (const auto &[name, tensors] : graphInputs) {
    ArrayRef<Value> held = arguments.slice(first, tensors.types.size());
    if (!tensors.present)
      values[name] = makeEmptyOptional(builder, function.getLoc());
    else if (llvm::StringRef(tensors.kind).ends_with("sequence"))
      values[name] = makeSequence(builder, function.getLoc(), held);
    else
      values[name] = held.front();
    tensorsOnly &= tensors.kind == "tensor";
    described.push_back(
        describeGraphValue(builder, name, tensors.kind, tensors.present, first, held.size()));
    first += held.size();
  }
  if (!tensorsOnly)
    function->setAttr(kGraphInputsAttr, builder.getArrayAttr(described));
}

std::optional<GraphImporter::GraphOutputTensors>
GraphImporter::graphOutputTensors(const onnx::ValueInfoProto &output, Value value) {
  const onnx::TypeProto &declared = output.type();
  bool optional = declared.has_optional_type();
  std::string kind = kindOf(declared);
  bool sequence = llvm::StringRef(kind).ends_with("sequence");
  auto refuse = [&](const std::string &what) -> std::optional<GraphOutputTensors> {
    problems.push_back("graph output '" + output.name() + "' is " + describeValue(value) +
                       ", but the model declares it " + what);
    return std::nullopt;
  };
  if (isEmptyOptional(value)) {
    if (!optional)
      return refuse(sequence ? "a sequence" : "a tensor");
    return GraphOutputTensors{kind, /*present=*/false, {}};
  }
  std::optional<SmallVector<Value>> elements = onnx_import::sequenceElements(value);
  // A model may leave an output's type out: it is what the graph gives.
  if (!declared.has_optional_type() && !declared.has_sequence_type() && !declared.has_tensor_type())
    kind = elements ? "sequence" : "tensor";
  else if (bool(elements) != sequence)
    return refuse(sequence ? "a sequence" : optional ? "an optional tensor" : "a tensor");
  if (elements)
    return GraphOutputTensors{kind, true, *elements};
  return GraphOutputTensors{kind, true, {value}};
}

bool GraphImporter::returnGraphOutputs(func::FuncOp function) {
  SmallVector<Value> results;
  SmallVector<std::string> resultNames;
  SmallVector<Attribute> described;
  bool tensorsOnly = true;
  for (const onnx::ValueInfoProto &output : model.graph().output()) {
    const std::string &name = output.name();
    Value value = poisoned.contains(name) ? Value() : lookup(name);
    if (!value && !poisoned.contains(name))
      problems.push_back("graph output '" + name +
                         "' is not produced by any node, input or initializer");
    if (!value)
      continue;
    std::optional<GraphOutputTensors> tensors = graphOutputTensors(output, value);
    if (!tensors)
      continue;
    tensorsOnly &= tensors->kind == "tensor";
    // Those mark results per graph output, one tensor each.
    if (tensors->kind != "tensor" && (options.dynamicBatch || lengthAxes))
      problems.push_back("graph output '" + name + "' is " + describeValue(value) +
                         ", which --dynamic-batch and --max-shape do not support yet");
    described.push_back(describeGraphValue(builder, name, tensors->kind, tensors->present,
                                           results.size(), tensors->values.size()));
    for (auto [i, tensor] : llvm::enumerate(tensors->values)) {
      results.push_back(tensor);
      resultNames.push_back(tensorName(name, tensors->kind, i));
    }
  }
  if (!problems.empty())
    return false;

  func::ReturnOp::create(builder, function.getLoc(), results);
  function.setType(
      builder.getFunctionType(function.getArgumentTypes(), TypeRange(ValueRange(results))));
  for (auto [i, name] : llvm::enumerate(resultNames))
    function.setResultAttr(i, kValueNameAttr, builder.getStringAttr(name));
  if (!tensorsOnly)
    function->setAttr(kGraphOutputsAttr, builder.getArrayAttr(described));
  eraseUnusedSequences(function);
  return true;
}

} // namespace tessel::onnx_import
