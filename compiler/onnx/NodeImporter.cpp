//===- NodeImporter.cpp - What an op handler sees of one ONNX node --------===//

#include "compiler/onnx/NodeImporter.h"
#include "compiler/onnx/ModelValidation.h"

#include "compiler/onnx/OnnxImporter.h"
#include "dialects/tessel/QuantizedTypes.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"


using namespace mlir;

namespace tessel::onnx_import {

namespace {

/// The registry's key for `opType` of `domain`.
std::string registryKey(llvm::StringRef domain, llvm::StringRef opType) {
  if (domain.empty())
    return opType.str();
  return (domain + "::" + opType).str();
}

} // namespace

void OpRegistry::on(llvm::StringRef opType, int64_t sinceVersion, OpHandler handler) {
  on("", opType, sinceVersion, std::move(handler));
}

void OpRegistry::on(llvm::StringRef domain, llvm::StringRef opType, int64_t sinceVersion,
                    OpHandler handler) {
  if (!domain.empty())
    domains.insert(domain);
  auto &versions = handlers[registryKey(domain, opType)];
  versions.emplace_back(sinceVersion, std::move(handler));
  llvm::sort(versions, [](const auto &a, const auto &b) { return a.first < b.first; });
}

const OpHandler *OpRegistry::lookup(llvm::StringRef domain, llvm::StringRef opType, int64_t opset,
                                    std::string &reason) const {
  std::string described =
      domain.empty() ? opType.str() : (opType + " of domain '" + domain + "'").str();
  auto it = handlers.find(registryKey(domain, opType));
  if (it == handlers.end()) {
    reason = "operator " + described + " is not supported";
    return nullptr;
  }
  const OpHandler *found = nullptr;
  for (const auto &[since, handler] : it->second)
    if (since <= opset)
      found = &handler;
  if (!found)
    reason = "opset " + std::to_string(opset) + " is older than the oldest " + described +
             " version supported (" + std::to_string(it->second.front().first) + ")";
  return found;
}

bool OpRegistry::hasDomain(llvm::StringRef domain) const { return domains.contains(domain); }

NodeImporter::NodeImporter(const onnx::NodeProto &node, int64_t opset,
                           OpBuilder &builder, Location loc,
                           ArrayRef<Value> inputs,
                           ArrayRef<ElementsAttr> constantInputs,
                           const llvm::StringSet<> &consumedNames,
                           ArrayRef<RankedTensorType> declaredOutputs)
    : nodeProto(node), opsetVersion(opset), b(builder), location(loc),
      inputValues(inputs.begin(), inputs.end()),
      constants(constantInputs.begin(), constantInputs.end()),
      outputValues(node.output_size()), consumed(consumedNames),
      declaredOutputs(declaredOutputs) {}

RankedTensorType NodeImporter::declaredOutputType(size_t i) const {
  return i < declaredOutputs.size() ? declaredOutputs[i] : RankedTensorType();
}

Value NodeImporter::input(size_t i) const {
  return i < inputValues.size() ? inputValues[i] : Value();
}

ElementsAttr NodeImporter::constantInput(size_t i) const {
  return i < constants.size() ? constants[i] : ElementsAttr();
}

std::optional<std::pair<int64_t, int64_t>> NodeImporter::integerRange(size_t i) const {
  if (!integerRanges || !input(i))
    return std::nullopt;
  auto found = integerRanges->find(input(i));
  if (found == integerRanges->end())
    return std::nullopt;
  return found->second;
}

RankedTensorType NodeImporter::inputType(size_t i) const {
  return cast<RankedTensorType>(input(i).getType());
}

std::vector<std::string> graphInputsFeeding(Value value) {
  std::vector<std::string> names;
  SmallVector<Value> worklist{value};
  llvm::SmallPtrSet<Operation *, 16> visited;
  while (!worklist.empty() && visited.size() < 1000) {
    Value next = worklist.pop_back_val();
    if (!next)
      continue;
    if (auto argument = dyn_cast<BlockArgument>(next)) {
      auto function = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
      if (auto name = function ? function.getArgAttrOfType<StringAttr>(
                                     argument.getArgNumber(), kValueNameAttr)
                               : StringAttr())
        if (!llvm::is_contained(names, name.str()))
          names.push_back(name.str());
      continue;
    }
    Operation *op = next.getDefiningOp();
    if (op && visited.insert(op).second)
      llvm::append_range(worklist, op->getOperands());
  }
  return names;
}

std::string freezeHint(Value value) {
  // The graph inputs it is computed from can be given their values at
  // compile time.
  std::string hint;
  for (const std::string &name : graphInputsFeeding(value))
    hint += " (computed from graph input '" + name + "': --freeze-input " + name +
            "=VALUE.pb fixes it)";
  return hint;
}

ElementsAttr NodeImporter::requireConstant(size_t i, const llvm::Twine &what) {
  if (ElementsAttr constant = constantInput(i))
    return constant;
  (void)unsupported(what.str() + " must be a constant" + freezeHint(input(i)));
  return {};
}

std::optional<SmallVector<int64_t>>
NodeImporter::constantInts(size_t i, llvm::StringRef role) {
  ElementsAttr constant = requireConstant(i, "the " + role + " input");
  if (!constant)
    return std::nullopt;
  if (!isa<IntegerType>(constant.getElementType())) {
    (void)unsupported("the " + role + " input must hold integers");
    return std::nullopt;
  }
  SmallVector<int64_t> values;
  for (const APInt &value : constant.getValues<APInt>())
    values.push_back(value.getSExtValue());
  return values;
}

bool NodeImporter::outputUsed(size_t i) const {
  return i < static_cast<size_t>(nodeProto.output_size()) &&
         !nodeProto.output(i).empty() && consumed.contains(nodeProto.output(i));
}

void NodeImporter::setOutput(size_t i, Value value) { outputValues[i] = value; }

const onnx::AttributeProto *NodeImporter::findAttr(llvm::StringRef name) {
  readAttributes.insert(name);
  for (const onnx::AttributeProto &attr : nodeProto.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool NodeImporter::hasAttr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &attr : nodeProto.attribute())
    if (attr.name() == name)
      return true;
  return false;
}

std::optional<int64_t> NodeImporter::intAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  if (attributeType(*attr) != onnx::AttributeProto::INT) {
    (void)unsupported("attribute " + name + " is not an integer");
    return std::nullopt;
  }
  return attr->i();
}

int64_t NodeImporter::intAttr(llvm::StringRef name, int64_t defaultValue) {
  return intAttr(name).value_or(defaultValue);
}

std::optional<float> NodeImporter::floatAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  if (attributeType(*attr) != onnx::AttributeProto::FLOAT) {
    (void)unsupported("attribute " + name + " is not a float");
    return std::nullopt;
  }
  return attr->f();
}

float NodeImporter::floatAttr(llvm::StringRef name, float defaultValue) {
  return floatAttr(name).value_or(defaultValue);
}

std::optional<std::string> NodeImporter::stringAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  if (attributeType(*attr) != onnx::AttributeProto::STRING) {
    (void)unsupported("attribute " + name + " is not a string");
    return std::nullopt;
  }
  return attr->s();
}

std::optional<std::vector<int64_t>>
NodeImporter::intsAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  if (attributeType(*attr) != onnx::AttributeProto::INTS) {
    (void)unsupported("attribute " + name + " is not a list of integers");
    return std::nullopt;
  }
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::optional<std::vector<float>>
NodeImporter::floatsAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  if (attributeType(*attr) != onnx::AttributeProto::FLOATS) {
    (void)unsupported("attribute " + name + " is not a list of floats");
    return std::nullopt;
  }
  return std::vector<float>(attr->floats().begin(), attr->floats().end());
}

std::optional<std::vector<std::string>>
NodeImporter::stringsAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  if (attributeType(*attr) != onnx::AttributeProto::STRINGS) {
    (void)unsupported("attribute " + name + " is not a list of strings");
    return std::nullopt;
  }
  return std::vector<std::string>(attr->strings().begin(), attr->strings().end());
}

const onnx::TensorProto *NodeImporter::tensorAttr(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return nullptr;
  if (attributeType(*attr) != onnx::AttributeProto::TENSOR) {
    (void)unsupported("attribute " + name + " is not a tensor");
    return nullptr;
  }
  return &attr->t();
}

void NodeImporter::ignoreAttr(llvm::StringRef name) {
  readAttributes.insert(name);
}

std::optional<SmallVector<Value>> NodeImporter::callGraphAttr(llvm::StringRef name,
                                                              ArrayRef<Value> arguments) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr || !attr->has_g()) {
    (void)unsupported("attribute '" + name + "' must be a graph");
    return std::nullopt;
  }
  std::optional<SmallVector<Value>> outputs;
  if (graphCaller)
    outputs = graphCaller(attr->g(), arguments);
  if (!outputs)
    (void)unsupported("its graph '" + name + "' cannot be imported");
  return outputs;
}

Value NodeImporter::inferResultType(Operation *op) {
  auto inference = cast<InferTypeOpInterface>(op);
  SmallVector<Type> types;
  std::string message;
  {
    // The op's own inference explains what is wrong; keep its words.
    ScopedDiagnosticHandler capture(op->getContext(), [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    if (failed(inference.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types))) {
      op->erase();
      (void)unsupported(message.empty() ? "operand shapes are not supported"
                                  : message);
      return {};
    }
  }
  op->getResult(0).setType(types.front());
  return op->getResult(0);
}

LogicalResult NodeImporter::setInferredOutput(size_t i, Value value) {
  if (!value)
    return failure();
  setOutput(i, value);
  return success();
}

Value NodeImporter::splatConstant(Type elementType, double value,
                                  ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, elementType);
  if (auto quantized = dyn_cast<quant::UniformQuantizedType>(elementType)) {
    // The storage integer `value` quantizes to, held as the quantized constant.
    auto storage = cast<RankedTensorType>(storageType(type));
    APInt level(quantized.getStorageTypeIntegralWidth(), quantizeScalar(value, quantized),
                /*isSigned=*/true);
    return ConstantOp::create(
        b, location, type,
        DenseElementsAttr::get(storage, b.getIntegerAttr(storage.getElementType(), level)));
  }
  Attribute element;
  if (auto floatType = dyn_cast<FloatType>(elementType))
    element = b.getFloatAttr(floatType, value);
  else
    element = b.getIntegerAttr(elementType, APInt(elementType.getIntOrFloatBitWidth(),
                                                  int64_t(value), /*isSigned=*/true));
  return ConstantOp::create(b, location, DenseElementsAttr::get(type, element));
}

Value NodeImporter::floatConstant(Type elementType, ArrayRef<double> values,
                                  ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, elementType);
  const llvm::fltSemantics &semantics = cast<FloatType>(elementType).getFloatSemantics();
  SmallVector<APFloat> entries;
  for (double value : values) {
    APFloat entry(value);
    bool lost;
    entry.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
    entries.push_back(entry);
  }
  return ConstantOp::create(b, location, type, DenseElementsAttr::get(type, entries));
}

Value NodeImporter::int64Constant(ArrayRef<int64_t> values,
                                  ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return ConstantOp::create(b, location, DenseElementsAttr::get(type, values));
}

LogicalResult NodeImporter::unsupported(const llvm::Twine &reason) {
  reasons.push_back(reason.str());
  return failure();
}

std::vector<std::string> NodeImporter::unreadAttributes() const {
  std::vector<std::string> unread;
  for (const onnx::AttributeProto &attr : nodeProto.attribute())
    if (!readAttributes.contains(attr.name()))
      unread.push_back(attr.name());
  return unread;
}

} // namespace tessel::onnx_import
