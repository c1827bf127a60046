//===- ModelValidation.cpp - What must hold before a model is trusted -----===//

#include "compiler/onnx/ModelValidation.h"
#include "compiler/onnx/TensorProto.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

namespace tessel::onnx_import {
namespace {

/// One version of an operator's signature, as OnnxSchemas.inc lists it.
struct OpSignature {
  const char *opType;
  int64_t sinceVersion;
  int64_t minInputs, maxInputs, minOutputs, maxOutputs;
  /// "OPTION:VARIABLE:MASK" per formal input, space-separated: OPTION '1'
  /// single, '?' optional, '+' variadic; inputs of one type VARIABLE (not
  /// '-') have one type; bit t of MASK set for each TensorProto data type t
  /// the input accepts.
  llvm::StringRef inputs;
  /// One option character per formal output.
  llvm::StringRef outputs;
  /// "name:TYPE" separated by spaces, '!' after required ones.
  llvm::StringRef attributes;
};

constexpr OpSignature kSignatures[] = {
#define ONNX_NEWEST_OPSET(version)
#define ONNX_SCHEMA(op, since, minIn, maxIn, minOut, maxOut, inputs, outputs, attributes)          \
  {op, since, minIn, maxIn, minOut, maxOut, inputs, outputs, attributes},
#include "compiler/onnx/OnnxSchemas.inc"
#undef ONNX_SCHEMA
#undef ONNX_NEWEST_OPSET
};

/// The signature of `opType` at `opset`: its newest version not newer than
/// the opset. The table lists each op's versions in ascending order.
const OpSignature *signatureAt(llvm::StringRef opType, int64_t opset) {
  static const llvm::StringMap<std::vector<const OpSignature *>> byOp = [] {
    llvm::StringMap<std::vector<const OpSignature *>> map;
    for (const OpSignature &signature : kSignatures)
      map[signature.opType].push_back(&signature);
    return map;
  }();
  auto versions = byOp.find(opType);
  if (versions == byOp.end())
    return nullptr;
  const OpSignature *found = nullptr;
  for (const OpSignature *signature : versions->second)
    if (signature->sinceVersion <= opset)
      found = signature;
  return found;
}

/// The signature `node` must match: none for other domains or op types
/// without an ONNX schema, which the importer reports as unsupported.
const OpSignature *signatureOf(const onnx::NodeProto &node, int64_t opset) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nullptr;
  return signatureAt(node.op_type(), opset);
}

struct AttributeRule {
  std::string type;
  bool required;
};

llvm::StringMap<AttributeRule> attributeRules(llvm::StringRef spec) {
  llvm::StringMap<AttributeRule> rules;
  llvm::SmallVector<llvm::StringRef> entries;
  spec.split(entries, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef entry : entries) {
    auto [name, type] = entry.split(':');
    bool required = type.consume_back("!");
    rules[name] = {type.str(), required};
  }
  return rules;
}

std::string formatInts(const google::protobuf::RepeatedField<int64_t> &values) {
  std::string text = "[";
  for (auto [i, value] : llvm::enumerate(values))
    text += (i ? ", " : "") + std::to_string(value);
  return text + "]";
}

/// The window attributes that divide or index (strides, dilations, kernel
/// sizes, pads, group): each in range and of one spatial rank.
void checkWindowAttributes(const onnx::NodeProto &node, std::vector<std::string> &problems) {
  int64_t spatialRank = -1;
  std::string rankSource;
  auto agreeOnRank = [&](const onnx::AttributeProto &attribute, int64_t rank) {
    if (spatialRank < 0) {
      spatialRank = rank;
      rankSource = attribute.name();
    } else if (rank != spatialRank) {
      problems.push_back("attribute '" + attribute.name() + "' " + formatInts(attribute.ints()) +
                         " is for " + std::to_string(rank) + " spatial axes but '" + rankSource +
                         "' is for " + std::to_string(spatialRank));
    }
  };
  for (const onnx::AttributeProto &attribute : node.attribute()) {
    const std::string &name = attribute.name();
    if (attributeType(attribute) == onnx::AttributeProto::INT && name == "group" &&
        attribute.i() < 1)
      problems.push_back("attribute 'group' is " + std::to_string(attribute.i()) +
                         "; it must be at least 1");
    if (attributeType(attribute) != onnx::AttributeProto::INTS)
      continue;
    if (name == "strides" || name == "dilations" || name == "kernel_shape") {
      if (llvm::any_of(attribute.ints(), [](int64_t v) { return v < 1; }))
        problems.push_back("attribute '" + name + "' " + formatInts(attribute.ints()) +
                           " must be at least 1 on every axis");
      agreeOnRank(attribute, attribute.ints_size());
    } else if (name == "pads" && node.op_type() != "Pad") {
      // Pad's own (opset < 11) pads may crop; a window's may not.
      if (llvm::any_of(attribute.ints(), [](int64_t v) { return v < 0; }))
        problems.push_back("attribute 'pads' " + formatInts(attribute.ints()) +
                           " must not be negative");
      if (attribute.ints_size() % 2)
        problems.push_back("attribute 'pads' " + formatInts(attribute.ints()) +
                           " must hold a begin and an end per spatial axis");
      else
        agreeOnRank(attribute, attribute.ints_size() / 2);
    }
  }
}

/// A formal input: whether it may be omitted, and the data types it takes.
struct FormalInput {
  char option;
  llvm::StringRef typeVariable; // "-" when not shared
  uint32_t dataTypes;
};

llvm::SmallVector<FormalInput> formalInputs(const OpSignature &signature) {
  llvm::SmallVector<FormalInput> formals;
  llvm::SmallVector<llvm::StringRef> tokens;
  signature.inputs.split(tokens, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef token : tokens) {
    llvm::SmallVector<llvm::StringRef, 3> fields;
    token.split(fields, ':');
    FormalInput formal{fields[0].front(), fields[1], 0};
    (void)fields[2].getAsInteger(0, formal.dataTypes);
    formals.push_back(formal);
  }
  return formals;
}

/// Formal parameter `i`: the variadic last one stands for all that follow.
template <typename Range> auto formalAt(const Range &formals, int i) {
  return formals[std::min<size_t>(i, formals.size() - 1)];
}

std::string counted(int64_t count, llvm::StringRef noun) {
  return std::to_string(count) + " " + noun.str() + (count == 1 ? "" : "s");
}

std::string countRange(int64_t least, int64_t most) {
  if (least == most)
    return std::to_string(least);
  if (most == std::numeric_limits<int32_t>::max())
    return "at least " + std::to_string(least);
  return std::to_string(least) + " to " + std::to_string(most);
}

} // namespace

int64_t newestKnownOpset() {
#define ONNX_SCHEMA(...)
#define ONNX_NEWEST_OPSET(version) return version;
#include "compiler/onnx/OnnxSchemas.inc"
#undef ONNX_SCHEMA
#undef ONNX_NEWEST_OPSET
}

std::string nodeLabel(const onnx::NodeProto &node, int index) {
  if (!node.name().empty())
    return node.name();
  return node.op_type() + "#" + std::to_string(index);
}

onnx::AttributeProto::AttributeType attributeType(const onnx::AttributeProto &attribute) {
  using onnx::AttributeProto;
  if (attribute.type() != AttributeProto::UNDEFINED)
    return attribute.type();
  if (attribute.has_f())
    return AttributeProto::FLOAT;
  if (attribute.has_i())
    return AttributeProto::INT;
  if (attribute.has_s())
    return AttributeProto::STRING;
  if (attribute.has_t())
    return AttributeProto::TENSOR;
  if (attribute.has_g())
    return AttributeProto::GRAPH;
  if (attribute.floats_size())
    return AttributeProto::FLOATS;
  if (attribute.ints_size())
    return AttributeProto::INTS;
  if (attribute.strings_size())
    return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

std::string nodeContext(const onnx::NodeProto &node, int index, int64_t opset) {
  std::string version = "opset " + std::to_string(opset);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    version = opset > 0 ? node.domain() + " " + version : node.domain();
  return "node '" + nodeLabel(node, index) + "' (" + node.op_type() + ", " + version + "): ";
}

std::optional<uint64_t> tensorBytes(llvm::ArrayRef<int64_t> shape, uint64_t elementBytes) {
  uint64_t bytes = elementBytes;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    bool overflow = false;
    bytes = llvm::SaturatingMultiply(bytes, uint64_t(dim), &overflow);
    if (overflow)
      return std::nullopt;
  }
  if (bytes > kMaxTensorBytes)
    return std::nullopt;
  return bytes;
}

std::vector<std::string> nodeSignatureProblems(const onnx::NodeProto &node, int64_t opset) {
  std::vector<std::string> problems;
  const OpSignature *signature = signatureOf(node, opset);
  if (!signature)
    return problems;

  if (node.input_size() < signature->minInputs || node.input_size() > signature->maxInputs)
    problems.push_back("has " + counted(node.input_size(), "input") + "; " + node.op_type() +
                       " takes " + countRange(signature->minInputs, signature->maxInputs));
  llvm::SmallVector<FormalInput> inputs = formalInputs(*signature);
  for (int i = 0; i < node.input_size() && !inputs.empty(); ++i)
    if (node.input(i).empty() && formalAt(inputs, i).option == '1')
      problems.push_back("input " + std::to_string(i) + " is required but has no name");
  if (node.output_size() < signature->minOutputs || node.output_size() > signature->maxOutputs)
    problems.push_back("has " + counted(node.output_size(), "output") + "; " + node.op_type() +
                       " has " + countRange(signature->minOutputs, signature->maxOutputs));
  for (int i = 0; i < node.output_size(); ++i)
    if (node.output(i).empty() && !signature->outputs.empty() &&
        formalAt(signature->outputs, i) == '1')
      problems.push_back("output " + std::to_string(i) + " is required but has no name");

  llvm::StringMap<AttributeRule> rules = attributeRules(signature->attributes);
  llvm::StringSet<> seen;
  for (const onnx::AttributeProto &attribute : node.attribute()) {
    const std::string &name = attribute.name();
    if (!seen.insert(name).second) {
      problems.push_back("attribute '" + name + "' is given twice");
      continue;
    }
    // One the schema does not declare is left to the handler, which refuses
    // it unless it knowingly ignores it (Dropout's 'ratio' before opset 12,
    // which exporters still write).
    auto rule = rules.find(name);
    if (rule == rules.end())
      continue;
    std::string type = onnx::AttributeProto::AttributeType_Name(attributeType(attribute));
    if (type != rule->second.type)
      problems.push_back("attribute '" + name + "' is " + (type.empty() ? "UNDEFINED" : type) +
                         " but must be " + rule->second.type);
  }
  for (const auto &rule : rules)
    if (rule.second.required && !seen.contains(rule.getKey()))
      problems.push_back("required attribute '" + rule.getKey().str() + "' is missing");
  if (problems.empty())
    checkWindowAttributes(node, problems);
  return problems;
}

std::vector<std::string> inputTypeProblems(const onnx::NodeProto &node, int64_t opset,
                                           llvm::ArrayRef<int32_t> inputDataTypes) {
  std::vector<std::string> problems;
  const OpSignature *signature = signatureOf(node, opset);
  if (!signature)
    return problems;
  llvm::SmallVector<FormalInput> inputs = formalInputs(*signature);
  // The first input bound to each type variable, which the others match.
  llvm::StringMap<size_t> bound;
  for (auto [i, dataType] : llvm::enumerate(inputDataTypes)) {
    if (inputs.empty() || dataType <= 0 || dataType >= 32)
      continue;
    const FormalInput &formal = formalAt(inputs, i);
    uint32_t allowed = formal.dataTypes;
    if (!allowed || (allowed >> dataType) & 1) {
      if (formal.typeVariable == "-")
        continue;
      auto [first, inserted] = bound.try_emplace(formal.typeVariable, i);
      if (!inserted && inputDataTypes[first->second] != dataType)
        problems.push_back("input " + std::to_string(i) + " ('" + node.input(i) + "') is " +
                           dataTypeName(dataType) + " but input " + std::to_string(first->second) +
                           " ('" + node.input(first->second) + "') is " +
                           dataTypeName(inputDataTypes[first->second]) + "; " + node.op_type() +
                           " needs them to be of one type");
      continue;
    }
    std::string accepted;
    for (int t = 1; t < 32; ++t)
      if ((allowed >> t) & 1)
        accepted += (accepted.empty() ? "" : ", ") + dataTypeName(t);
    problems.push_back("input " + std::to_string(i) + " ('" + node.input(i) + "') is " +
                       dataTypeName(dataType) + ", which " + node.op_type() +
                       " does not take there (it takes " + accepted + ")");
  }
  return problems;
}

std::vector<std::string> graphProblems(const onnx::ModelProto &model, int64_t opset) {
  std::vector<std::string> problems;
  if (opset > newestKnownOpset())
    problems.push_back("the model imports ONNX opset " + std::to_string(opset) +
                       "; the newest this compiler knows is " + std::to_string(newestKnownOpset()));
  const onnx::GraphProto &graph = model.graph();

  // What produces each value, for messages about a second producer.
  llvm::StringMap<std::string> producers;
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    if (!initializerNames.insert(tensor.name()).second)
      problems.push_back("initializer '" + tensor.name() + "' is defined twice");
    producers[tensor.name()] = "initializer '" + tensor.name() + "'";
  }
  llvm::StringSet<> inputNames;
  for (auto [i, input] : llvm::enumerate(graph.input())) {
    const std::string &name = input.name();
    if (name.empty()) {
      problems.push_back("graph input " + std::to_string(i) + " has no name");
      continue;
    }
    if (name.find('\0') != std::string::npos)
      problems.push_back("graph input " + std::to_string(i) + "'s name contains a NUL byte");
    if (!inputNames.insert(name).second)
      problems.push_back("graph input '" + name + "' is listed twice");
    producers[name] = "graph input '" + name + "'";
    if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape())
      continue; // the importer says what it needs
    // Its size is checked once --shape has given every dimension.
    for (const onnx::TensorShapeProto_Dimension &dim : input.type().tensor_type().shape().dim())
      if (dim.has_dim_value() && dim.dim_value() < 0)
        problems.push_back("graph input '" + name + "' has a negative dimension (" +
                           std::to_string(dim.dim_value()) + ")");
  }
  llvm::StringSet<> outputNames;
  for (auto [i, output] : llvm::enumerate(graph.output())) {
    if (output.name().empty())
      problems.push_back("graph output " + std::to_string(i) + " has no name");
    else if (output.name().find('\0') != std::string::npos)
      problems.push_back("graph output " + std::to_string(i) + "'s name contains a NUL byte");
    else if (!outputNames.insert(output.name()).second)
      problems.push_back("graph output '" + output.name() + "' is listed twice");
  }

  for (auto [index, node] : llvm::enumerate(graph.node())) {
    std::string label = nodeContext(node, index, opset);
    for (const std::string &output : node.output()) {
      if (output.empty())
        continue;
      auto [existing, inserted] =
          producers.try_emplace(output, "node '" + nodeLabel(node, index) + "'");
      if (!inserted)
        problems.push_back(label + "output '" + output + "' is already produced by " +
                           existing->second);
    }
  }
  return problems;
}

} // namespace tessel::onnx_import
