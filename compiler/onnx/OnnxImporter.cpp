//===- OnnxImporter.cpp - ONNX ModelProto to the tessel dialect -----------===//
//
// The importer first validates the model (ModelValidation.h): nothing reads
// a node that does not match its operator's signature. It then walks the
// graph once in order. Every node that cannot be
// imported is recorded and the walk goes on, so that one error lists them
// all; the outputs of such a node become placeholders typed by ONNX's shape
// inference, so that the nodes after it are still checked.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxImporter.h"
#include "compiler/onnx/BatchAxes.h"
#include "compiler/onnx/GraphImporter.h"
#include "compiler/onnx/ModelValidation.h"
#include "compiler/onnx/NodeImporter.h"
#include "compiler/onnx/Sequences.h"
#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/EvaluateElementwise.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <map>
#include <optional>

#include "onnx/shape_inference/implementation.h"

using namespace mlir;

namespace tessel::onnx_import {

llvm::Error importError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {

/// The largest value the importer folds from constant inputs.
constexpr uint64_t kMaxFoldedBytes = uint64_t(1) << 30;

constexpr llvm::StringLiteral kTooLarge =
    "would take more than the 1 TiB one tensor may (the runtime's arena limit)";

/// The bytes a tensor of `type` takes; nothing when it does not fit the
/// runtime's limit (onnx_import::tensorBytes). Types without a static shape
/// or of non-numeric elements count as 0.
std::optional<uint64_t> tensorTypeBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() || !tensor.getElementType().isIntOrFloat())
    return 0;
  return onnx_import::tensorBytes(tensor.getShape(),
                                  llvm::divideCeil(tensor.getElementTypeBitWidth(), 8));
}

/// An elementwise op without a folder (Ceil, Exp, ...) on f32 constants of
/// its result's shape (or splats), evaluated element by element as ONNX's
/// reference computes (evaluateElementwise); null for any other op and for
/// results beyond a few thousand elements.
DenseElementsAttr evaluateElementwiseConstant(Operation *op, ArrayRef<Attribute> operands) {
  constexpr int64_t kMaxEvaluatedElements = 1 << 12;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!op->hasTrait<ElementwiseMap>() || op->getNumResults() != 1 || !type ||
      !type.hasStaticShape() || !type.getElementType().isF32() ||
      type.getNumElements() > kMaxEvaluatedElements)
    return {};
  SmallVector<DenseElementsAttr> inputs;
  for (Attribute operand : operands) {
    auto dense = dyn_cast<DenseElementsAttr>(operand);
    if (!dense || !dense.getElementType().isF32() ||
        (!dense.isSplat() && dense.getType().getShape() != type.getShape()))
      return {};
    inputs.push_back(dense);
  }
  SmallVector<APFloat> results;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    SmallVector<float> elements;
    for (DenseElementsAttr input : inputs)
      elements.push_back((input.isSplat() ? input.getSplatValue<APFloat>()
                                          : input.getValues<APFloat>()[i])
                             .convertToFloat());
    std::optional<float> result = evaluateElementwise(op, elements);
    if (!result)
      return {};
    results.push_back(APFloat(*result));
  }
  return DenseElementsAttr::get(type, results);
}

/// Collects the ops a handler creates so they can be verified together.
struct CreatedOps : OpBuilder::Listener {
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
  std::vector<Operation *> ops;
};

} // namespace


llvm::Error GraphImporter::readOpset() {
  for (const onnx::OperatorSetIdProto &entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
    else
      domainOpsets[entry.domain()] = entry.version();
  }
  // A model of ai.onnx.ml ops alone need not import the default set; its
  // nodes of the default domain, if any, are refused one by one.
  if (opset <= 0 && domainOpsets.empty())
    return importError(path + ": the model imports no version of the default "
                              "ONNX operator set (opset_import)");
  return llvm::Error::success();
}

llvm::StringRef GraphImporter::domainOf(const onnx::NodeProto &node) {
  return node.domain() == "ai.onnx" ? llvm::StringRef() : llvm::StringRef(node.domain());
}

int64_t GraphImporter::opsetOf(const onnx::NodeProto &node) const {
  llvm::StringRef domain = domainOf(node);
  return domain.empty() ? opset : domainOpsets.lookup(domain);
}

/// Records each node's signature problems, and the graph's; false when there
/// are graph-level problems, which make importing unsafe, with every
/// problem recorded.
bool GraphImporter::validate() {
  for (const onnx::NodeProto &node : model.graph().node())
    signatureProblems.push_back(onnx_import::nodeSignatureProblems(node, opset));
  problems = onnx_import::graphProblems(model, opset);
  if (problems.empty())
    return true;
  for (auto [index, node] : llvm::enumerate(model.graph().node()))
    for (const std::string &why : signatureProblems[index])
      problems.push_back(onnx_import::nodeContext(node, index, opset) + why);
  return false;
}

/// The tensor type `info` gives, if its element type and every dimension
/// are known; else null.
static RankedTensorType staticTypeOf(MLIRContext &context, const onnx::ValueInfoProto &info) {
  const onnx::TypeProto &type = info.type();
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return {};
  Type element = onnx_import::elementTypeFor(&context, type.tensor_type().elem_type());
  if (!element)
    return {};
  SmallVector<int64_t> shape;
  for (const onnx::TensorShapeProto_Dimension &dim : type.tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0)
      return {};
    shape.push_back(dim.dim_value());
  }
  return RankedTensorType::get(shape, element);
}

/// How many leading inputs of an elementwise op share its result's shape
/// (up to broadcasting): 1 for unary ops (CastLike's second input only
/// gives a type), all for the others; 0 for ops that are not elementwise.
static int shapeSharingInputs(const onnx::NodeProto &node) {
  static const llvm::StringSet<> unary = {
      "Abs",   "Acos",     "Acosh", "Asin",  "Asinh", "Atan",    "Atanh",      "Cast",
      "CastLike", "Ceil",  "Cos",   "Cosh",  "Erf",   "Exp",     "Floor",      "Identity",
      "IsInf", "IsNaN",    "Log",   "Neg",   "Not",   "Reciprocal", "Relu",    "Round",
      "Sigmoid", "Sign",   "Sin",   "Sinh",  "Softplus", "Softsign", "Sqrt",   "Tan",
      "Tanh"};
  static const llvm::StringSet<> broadcasting = {
      "Add", "Sub",  "Mul",  "Div", "Pow",  "Mod",     "Max",  "Min",       "Sum",
      "Mean", "And", "Or",   "Xor", "Where", "Equal",  "Less", "Greater",   "LessOrEqual",
      "GreaterOrEqual", "BitShift"};
  if (unary.contains(node.op_type()))
    return 1;
  if (broadcasting.contains(node.op_type()))
    return node.input_size();
  return 0;
}

void GraphImporter::collectDeclaredTypes() {
  const onnx::GraphProto &graph = model.graph();
  // Run-time shape inputs build per-axis position tables: an axis longer
  // than the compute budget is not taken from a file's word.
  auto withinBudget = [](ArrayRef<int64_t> shape) {
    return llvm::all_of(shape,
                        [](int64_t size) { return size <= onnx_import::kMaxComputedElements; });
  };
  for (const auto *infos : {&graph.value_info(), &graph.output()})
    for (const onnx::ValueInfoProto &info : *infos)
      if (RankedTensorType type = staticTypeOf(context, info))
        if (withinBudget(type.getShape()))
          declaredTypes[info.name()] = type;
  // Shapes stated with --value-shape replace the model's; only the shape
  // is read, so a value the model does not type gets f32.
  for (const auto &[name, shape] : options.statedShapes) {
    if (!withinBudget(shape))
      continue;
    RankedTensorType known = declaredTypes.lookup(name);
    declaredTypes[name] =
        RankedTensorType::get(shape, known ? known.getElementType() : builder.getF32Type());
  }
  // The shape stated for an elementwise result is its inputs' as well
  // (expanded functions state only their final result). A broadcast
  // input is smaller: a shape-giving node specialized to the wrong shape
  // fails its run-time check, never computes a wrong result.
  for (const onnx::NodeProto &node : llvm::reverse(graph.node())) {
    RankedTensorType type =
        node.output_size() == 1 ? declaredTypes.lookup(node.output(0)) : RankedTensorType();
    if (!type)
      continue;
    // A malformed node may have fewer inputs than its op takes.
    for (int i = 0, sharing = std::min(shapeSharingInputs(node), node.input_size()); i < sharing;
         ++i)
      if (!node.input(i).empty())
        declaredTypes.try_emplace(node.input(i), type);
  }
}

/// ONNX's own shape inference, on the first `nodeCount` nodes, types the
/// values that placeholders stand for. It is best effort: a model it
/// rejects is still imported.
void GraphImporter::inferShapes(int nodeCount) {
  if (!inferenceModel)
    inferenceModel = model;
  onnx::GraphProto &graph = *inferenceModel->mutable_graph();
  graph.clear_node();
  for (int i = 0; i < nodeCount; ++i)
    *graph.add_node() = model.graph().node(i);
  // What an earlier inference wrote is not an input to this one.
  graph.clear_value_info();
  *graph.mutable_output() = model.graph().output();
  inferredNodes = nodeCount;
  try {
    onnx::shape_inference::InferShapes(*inferenceModel);
  } catch (const std::exception &) {
    return;
  }
  for (const onnx::ValueInfoProto &info : graph.value_info())
    if (RankedTensorType type = staticTypeOf(context, info))
      inferredTypes[info.name()] = type;
}

llvm::Expected<RankedTensorType>
GraphImporter::inputType(const onnx::ValueInfoProto &info) {
  const std::string &name = info.name();
  if (!info.type().has_tensor_type())
    return importError("graph input '" + name + "' is not a tensor");
  const onnx::TypeProto_Tensor &tensor = info.type().tensor_type();
  Type element = onnx_import::elementTypeFor(&context, tensor.elem_type());
  if (!element)
    return importError("graph input '" + name + "' has element type " +
                       onnx_import::dataTypeName(tensor.elem_type()) +
                       ", which is not supported");
  if (!tensor.has_shape())
    return importError("graph input '" + name + "' has no shape; give one with "
                       "--shape " + name + "=DIMSxDIMS...");
  auto given = options.inputShapes.find(name);
  auto bounded = options.maxShapes.find(name);
  SmallVector<int64_t> shape;
  int rank = tensor.shape().dim_size();
  if (given != options.inputShapes.end() &&
      static_cast<int>(given->second.size()) != rank)
    return importError("--shape " + name + " has " +
                       llvm::Twine(given->second.size()) +
                       " dimensions but the input has rank " + llvm::Twine(rank));
  if (bounded != options.maxShapes.end()) {
    if (given != options.inputShapes.end())
      return importError("graph input '" + name + "' is given both --shape and --max-shape");
    if (static_cast<int>(bounded->second.size()) != rank)
      return importError("--max-shape " + name + " has " + llvm::Twine(bounded->second.size()) +
                         " dimensions but the input has rank " + llvm::Twine(rank));
  }
  for (int i = 0; i < rank; ++i) {
    const onnx::TensorShapeProto_Dimension &dim = tensor.shape().dim(i);
    bool symbolic = !dim.has_dim_value() || dim.dim_value() < 0;
    // The batch: imported for one sample, whatever --shape says.
    if (i == 0 && symbolic && options.dynamicBatch) {
      if (given != options.inputShapes.end() && given->second[0] != 1)
        return importError("--shape " + name + " gives dimension 0 as " +
                           llvm::Twine(given->second[0]) +
                           ", but with --dynamic-batch it is the batch: give 1 (one sample)");
      if (llvm::Error error = addBatchedInput(name, dim.dim_param()))
        return std::move(error);
      shape.push_back(1);
      continue;
    }
    if (bounded != options.maxShapes.end()) {
      int64_t bound = bounded->second[i];
      if (!symbolic && dim.dim_value() != bound)
        return importError("--max-shape " + name + " sets dimension " + llvm::Twine(i) + " to " +
                           llvm::Twine(bound) + " but the model fixes it to " +
                           llvm::Twine(dim.dim_value()));
      if (symbolic) {
        if (bound < 1)
          return importError("--max-shape " + name + " bounds dimension " + llvm::Twine(i) +
                             " by " + llvm::Twine(bound) + "; a bound is at least 1");
        if (llvm::Error error = addVaryingInput(name, i, dim.dim_param()))
          return std::move(error);
      }
      shape.push_back(bound);
      continue;
    }
    if (given != options.inputShapes.end()) {
      int64_t wanted = given->second[i];
      if (dim.has_dim_value() && dim.dim_value() != wanted)
        return importError("--shape " + name + " sets dimension " +
                           llvm::Twine(i) + " to " + llvm::Twine(wanted) +
                           " but the model fixes it to " +
                           llvm::Twine(dim.dim_value()));
      shape.push_back(wanted);
    } else if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
    } else {
      std::string symbol = dim.has_dim_param() ? "'" + dim.dim_param() + "'"
                                               : "(unnamed)";
      return importError("graph input '" + name + "' dimension " +
                         llvm::Twine(i) + " is symbolic " + symbol +
                         "; give a static shape with --shape " + name +
                         "=1x...");
    }
  }
  auto type = RankedTensorType::get(shape, element);
  if (!tensorTypeBytes(type))
    return importError("graph input '" + name + "' of shape " + formatShape(shape) + " " +
                       kTooLarge);
  return type;
}

llvm::Error GraphImporter::addBatchedInput(const std::string &name, const std::string &symbol) {
  if (!batchedInputs.empty() && !symbol.empty() && !batchSymbol.empty() && symbol != batchSymbol)
    return importError("--dynamic-batch: graph inputs '" + batchedInputs.front() + "' and '" +
                       name + "' have different symbolic dimensions 0 ('" + batchSymbol +
                       "' and '" + symbol + "'); the batch must be one dimension");
  if (batchSymbol.empty())
    batchSymbol = symbol;
  batchedInputs.push_back(name);
  return llvm::Error::success();
}

void GraphImporter::followBatch(func::FuncOp function) {
  const onnx::GraphProto &graph = model.graph();
  if (batchedInputs.empty()) {
    problems.push_back("--dynamic-batch: no graph input has a symbolic dimension 0 to be the "
                       "batch");
    return;
  }
  BatchAxes batch(opset, [&](const std::string &name) { return lookup(name); });
  for (const std::string &name : batchedInputs)
    batch.addBatchedInput(name);
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (std::optional<std::string> why = batch.follow(node)) {
      problems.push_back(onnx_import::nodeContext(node, index, opset) + "--dynamic-batch: " +
                         *why);
      ++failingOpCounts[node.op_type()];
    }
  for (auto [i, output] : llvm::enumerate(graph.output())) {
    std::optional<onnx_import::BatchLayout> layout = batch.layoutOf(output.name());
    if (batch.holdsBatchSize(output.name()))
      problems.push_back("graph output '" + output.name() + "' holds the batch size, which "
                         "--dynamic-batch computes per sample");
    if (layout && layout->axis != 0)
      problems.push_back("graph output '" + output.name() + "' holds the batch in dimension " +
                         std::to_string(layout->axis) +
                         "; --dynamic-batch needs it in dimension 0");
    else if (layout && (layout->outer != 1 || layout->inner != 1))
      problems.push_back("graph output '" + output.name() + "' merges the batch with other "
                         "dimensions in dimension 0; --dynamic-batch needs it alone there");
    if (layout)
      function.setResultAttr(i, kBatchedAttr, builder.getUnitAttr());
  }
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    if (llvm::is_contained(batchedInputs,
                           function.getArgAttrOfType<StringAttr>(i, kValueNameAttr).str()))
      function.setArgAttr(i, kBatchedAttr, builder.getUnitAttr());
}

/// A value computed from constants only becomes a constant, so that shape
/// subgraphs (Shape -> Concat -> Reshape) give later nodes the constant
/// inputs they need.
Value GraphImporter::foldConstantInputs(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || op->hasTrait<OpTrait::ConstantLike>() || op->getNumOperands() == 0)
    return value;
  // Folding holds the whole result in memory: past the budget, the value
  // stays a run-time computation.
  std::optional<uint64_t> bytes = tensorTypeBytes(value.getType());
  if (!bytes || *bytes > kMaxFoldedBytes)
    return value;
  SmallVector<Attribute> operands;
  for (Value operand : op->getOperands()) {
    Attribute constant;
    if (!matchPattern(operand, m_Constant(&constant)))
      return value;
    operands.push_back(constant);
  }
  SmallVector<OpFoldResult> results;
  if (failed(op->fold(operands, results)) || results.size() != op->getNumResults()) {
    DenseElementsAttr evaluated = evaluateElementwiseConstant(op, operands);
    if (!evaluated)
      return value;
    results.assign({evaluated});
  }
  OpFoldResult result = results[cast<OpResult>(value).getResultNumber()];
  // A fold to an existing value (a no-op cast of a constant) is that value.
  if (auto existing = dyn_cast<Value>(result)) {
    if (existing.getType() != value.getType())
      return value;
    value.replaceAllUsesWith(existing);
    if (op->use_empty())
      op->erase();
    return existing;
  }
  auto folded = dyn_cast_if_present<ElementsAttr>(dyn_cast<Attribute>(result));
  if (!folded || folded.getType() != value.getType())
    return value;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfter(op);
  Value constant = ConstantOp::create(builder, op->getLoc(), folded);
  value.replaceAllUsesWith(constant);
  if (op->use_empty())
    op->erase();
  return constant;
}

/// The value of `name`, materializing initializers as constants on first use.
Value GraphImporter::lookup(const std::string &name) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto init = initializers.find(name);
  if (init == initializers.end())
    return {};
  llvm::Expected<DenseElementsAttr> data =
      onnx_import::readTensor(&context, *init->second, directory);
  if (!data) {
    problems.push_back("initializer '" + name + "': " +
                       llvm::toString(data.takeError()));
    poisoned.insert(name);
    return {};
  }
  // An initializer is the graph's: first read inside a loop's body (a
  // tessel.scan's region), it is still created in the function, before the
  // loop, so that later nodes may read it too.
  OpBuilder::InsertionGuard guard(builder);
  Operation *outermost = nullptr;
  for (Operation *parent = builder.getInsertionBlock()->getParentOp();
       parent && !isa<func::FuncOp>(parent); parent = parent->getParentOp())
    outermost = parent;
  if (outermost)
    builder.setInsertionPoint(outermost);
  Value constant = ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(name)),
                                      *data);
  values[name] = constant;
  constants[name] = *data;
  return constant;
}

/// Stands in for a value whose producer could not be imported, so that its
/// consumers can still be checked. Never reaches code generation.
Value GraphImporter::placeholder(const std::string &name) {
  // Only when a node fails to import are its consumers typed this way:
  // inference then reads the nodes before the consumer, all checked.
  if (!inferredTypes.contains(name) && trustedPrefix && inferredNodes < currentNode)
    inferShapes(currentNode);
  auto type = inferredTypes.find(name);
  if (type == inferredTypes.end())
    return {};
  return UnrealizedConversionCastOp::create(builder, builder.getUnknownLoc(),
                                            TypeRange{type->second}, ValueRange{})
      .getResult(0);
}

Location GraphImporter::nodeLocation(const onnx::NodeProto &node, int index) {
  return NameLoc::get(builder.getStringAttr(onnx_import::nodeLabel(node, index)),
                      FileLineColLoc::get(&context, path, 0, 0));
}

/// The reason to refuse `ops` if one of them makes a tensor larger than
/// one may be (a Range or Expand whose size comes from the model's data).
static std::optional<std::string> oversizedResult(ArrayRef<Operation *> ops) {
  for (Operation *op : ops)
    for (Type type : op->getResultTypes())
      if (isa<RankedTensorType>(type) && !tensorTypeBytes(type))
        return "a result of shape " + formatShape(cast<RankedTensorType>(type).getShape()) + " " +
               kTooLarge.str();
  return std::nullopt;
}

/// `value` if it has elements (or is a constant already); else an empty
/// constant that replaces its uses.
static Value replaceIfEmpty(OpBuilder &builder, Value value) {
  auto type = value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
  if (!type || !type.hasStaticShape() || type.getNumElements() != 0 ||
      matchPattern(value, m_Constant()))
    return value;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(value);
  Value constant = ConstantOp::create(builder, value.getLoc(),
                                      DenseElementsAttr::get(type, ArrayRef<Attribute>{}));
  value.replaceAllUsesWith(constant);
  return constant;
}

/// The names that `nodes` read, those of their subgraphs included: a value
/// that only a branch of an If reads is still used.
static void collectConsumed(const google::protobuf::RepeatedPtrField<onnx::NodeProto> &nodes,
                            llvm::StringSet<> &consumed) {
  for (const onnx::NodeProto &node : nodes) {
    for (const std::string &name : node.input())
      consumed.insert(name);
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.has_g()) {
        collectConsumed(attribute.g().node(), consumed);
        for (const onnx::ValueInfoProto &output : attribute.g().output())
          consumed.insert(output.name());
      }
      for (const onnx::GraphProto &graph : attribute.graphs())
        collectConsumed(graph.node(), consumed);
    }
  }
}

void GraphImporter::importNode(const onnx::NodeProto &node, int index, bool nested) {
  currentNode = index;
  int64_t nodeOpset = opsetOf(node);
  std::string label = onnx_import::nodeContext(node, index, nodeOpset);
  size_t problemsBefore = problems.size();
  auto poison = [&] {
    // A branch's node fails its If, which --check counts.
    if (!nested)
      ++failingOpCounts[node.op_type()];
    for (const std::string &output : node.output())
      poisoned.insert(output);
  };

  llvm::StringRef domain = domainOf(node);
  if (!domain.empty() && !onnx_import::onnxOpRegistry().hasDomain(domain)) {
    problems.push_back(label + "operator domain '" + node.domain() +
                       "' is not supported");
    return poison();
  }
  if (nodeOpset <= 0) {
    std::string set = domain.empty() ? std::string("the default ONNX operator set")
                                     : "operator domain '" + domain.str() + "'";
    problems.push_back(label + "the model imports no version of " + set + " (opset_import)");
    return poison();
  }
  std::vector<std::string> nestedSignature;
  if (nested)
    nestedSignature = onnx_import::nodeSignatureProblems(node, opset);
  const std::vector<std::string> &signature = nested ? nestedSignature : signatureProblems[index];
  if (!signature.empty()) {
    trustedPrefix = false;
    for (const std::string &why : signature)
      problems.push_back(label + why);
    return poison();
  }
  // Control flow has no handler: its subgraphs are imported in its place
  // (ControlFlow.cpp).
  if (node.op_type() == "If" || node.op_type() == "Scan" || node.op_type() == "Loop") {
    size_t before = problems.size();
    if (node.op_type() == "If")
      importIf(node, index, label);
    else if (node.op_type() == "Scan")
      importScan(node, index, label);
    else
      importLoop(node, index, label);
    if (problems.size() > before) {
      trustedPrefix = false;
      if (!nested)
        ++failingOpCounts[node.op_type()];
    }
    return;
  }

  std::string reason;
  const onnx_import::OpHandler *handler =
      onnx_import::onnxOpRegistry().lookup(domain, node.op_type(), nodeOpset, reason);

  SmallVector<Value> inputs;
  SmallVector<ElementsAttr> inputConstants;
  bool checkable = true;
  for (const std::string &name : node.input()) {
    if (name.empty()) {
      inputs.push_back({});
      inputConstants.push_back({});
      continue;
    }
    Value value = poisoned.contains(name) ? placeholder(name) : lookup(name);
    if (!value) {
      if (!poisoned.contains(name))
        problems.push_back(label + "input '" + name +
                           "' is not produced by any earlier node, input or "
                           "initializer");
      checkable = false;
      break;
    }
    inputs.push_back(value);
    auto constant = constants.find(name);
    inputConstants.push_back(constant == constants.end() ? ElementsAttr()
                                                         : constant->second);
  }
  if (!checkable) {
    // Its input types were never checked: inference must not read it.
    trustedPrefix = false;
    if (!handler)
      problems.push_back(label + reason);
    return poison();
  }
  // Sequences and optionals reach only the ops made for them.
  if (!onnx_import::takesSequences(node.op_type()))
    for (auto [name, input] : llvm::zip(node.input(), inputs))
      if (input && !isa<RankedTensorType>(input.getType())) {
        trustedPrefix = false;
        problems.push_back(label + "input '" + name + "' is " + onnx_import::describeValue(input) +
                           ", but " + node.op_type() + " takes tensors");
        return poison();
      }
  SmallVector<int32_t> inputDataTypes;
  for (Value input : inputs) {
    auto type = input ? dyn_cast<RankedTensorType>(input.getType()) : nullptr;
    inputDataTypes.push_back(type ? onnx_import::dataTypeOf(type.getElementType()) : 0);
  }
  std::vector<std::string> typeProblems =
      onnx_import::inputTypeProblems(node, opset, inputDataTypes);
  if (!typeProblems.empty()) {
    trustedPrefix = false;
    for (const std::string &why : typeProblems)
      problems.push_back(label + why);
    return poison();
  }
  // Reported only now: shape inference may read an unsupported node later,
  // so its input types are checked too.
  if (!handler) {
    problems.push_back(label + reason);
    return poison();
  }

  CreatedOps created;
  builder.setListener(&created);
  SmallVector<RankedTensorType> declaredOutputs;
  for (const std::string &name : node.output())
    declaredOutputs.push_back(declaredTypes.lookup(name));
  NodeImporter importer(node, nodeOpset, builder, nodeLocation(node, index), inputs, inputConstants,
                        consumed, declaredOutputs);
  importer.setIntegerRanges(&integerRanges);
  importer.setGraphCaller([&](const onnx::GraphProto &body, ArrayRef<Value> arguments) {
    std::optional<SmallVector<Value>> outputs = importBody(body, arguments, index, label);
    // The body's nodes listened for their own ops.
    builder.setListener(&created);
    return outputs;
  });
  LogicalResult imported = (*handler)(importer);
  builder.setListener(nullptr);
  std::vector<std::string> reasons = importer.problems();
  // A handler that gave up early has not read the rest of the attributes;
  // its own reason is the one to report.
  if (succeeded(imported))
    for (const std::string &attr : importer.unreadAttributes())
      reasons.push_back("attribute '" + attr + "' is not supported");
  if (succeeded(imported))
    for (int i = 0; i < node.output_size(); ++i)
      if (importer.outputUsed(i) && !importer.outputs()[i])
        reasons.push_back("output " + std::to_string(i) + " ('" + node.output(i) +
                          "') is not supported");
  // The ops' verifiers state the remaining typing rules.
  if (reasons.empty()) {
    ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
      reasons.push_back(diag.str());
      return success();
    });
    for (Operation *op : created.ops)
      if (op->getBlock() && failed(verify(op, /*verifyRecursively=*/false)))
        break;
  }
  if (reasons.empty())
    if (std::optional<std::string> why = oversizedResult(created.ops))
      reasons.push_back(*why);
  if (failed(imported) && reasons.empty())
    reasons.push_back("cannot be imported");
  if (!reasons.empty()) {
    // A node its handler refuses may be malformed beyond what validation
    // sees (an image of the wrong rank for its weights, say).
    trustedPrefix = false;
    for (const std::string &why : reasons)
      problems.push_back(label + why);
    return poison();
  }

  SmallVector<Value> results;
  for (int i = 0; i < node.output_size(); ++i) {
    Value value = importer.outputs()[i];
    results.push_back(value && !node.output(i).empty() ? foldConstantInputs(value)
                                                       : Value());
  }
  // A result without elements is known whatever computes it: it becomes a
  // constant, so that no kernel ever writes an empty tensor. The node's
  // outputs first, then what its handler computed on the way.
  for (Value &value : results)
    value = replaceIfEmpty(builder, value);
  for (Operation *op : created.ops)
    if (op->getBlock() && !op->hasTrait<OpTrait::ConstantLike>())
      for (OpResult result : op->getResults())
        if (!result.use_empty())
          (void)replaceIfEmpty(builder, result);
  if (problems.size() > problemsBefore)
    return poison();
  for (auto [i, value] : llvm::enumerate(results)) {
    if (!value)
      continue;
    values[node.output(i)] = value;
    ElementsAttr constant;
    if (matchPattern(value, m_Constant(&constant)))
      constants[node.output(i)] = constant;
  }
}

llvm::Error GraphImporter::problemsError() const {
  std::string message = path + ": " + std::to_string(problems.size()) +
                        (problems.size() == 1 ? " problem prevents" : " problems prevent") +
                        " compiling this model:";
  for (const std::string &problem : problems)
    message += "\n  " + problem;
  return importError(message);
}

llvm::Expected<OwningOpRef<ModuleOp>> GraphImporter::run() {
  context.getOrLoadDialect<TesselDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  if (llvm::Error error = readOpset())
    return std::move(error);
  const onnx::GraphProto &graph = model.graph();
  if (!validate())
    return problemsError();
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers[tensor.name()] = &tensor;
  if (graph.sparse_initializer_size() > 0)
    return importError(path + ": sparse initializers are not supported");
  collectConsumed(graph.node(), consumed);
  for (const onnx::ValueInfoProto &output : graph.output())
    consumed.insert(output.name());
  collectDeclaredTypes();

  // The graph inputs, and the tensors that stand for each: @main's
  // arguments.
  SmallVector<Type> argumentTypes;
  SmallVector<std::string> argumentNames;
  std::vector<std::pair<std::string, GraphInputTensors>> graphInputs;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.contains(input.name()))
      continue; // IR < 4 lists initializers among the inputs
    llvm::Expected<GraphInputTensors> tensors = graphInputTensors(input);
    if (!tensors)
      return importError(path + ": " + llvm::toString(tensors.takeError()));
    bool sequence = tensors->kind == "sequence" || tensors->kind == "optional_sequence";
    for (auto [i, type] : llvm::enumerate(tensors->types)) {
      argumentTypes.push_back(type);
      argumentNames.push_back(sequence ? input.name() + "[" + std::to_string(i) + "]"
                                       : input.name());
    }
    graphInputs.emplace_back(input.name(), std::move(*tensors));
  }
  auto isGraphInput = [&](const std::string &name) {
    return llvm::any_of(graphInputs, [&](const auto &input) { return input.first == name; });
  };
  for (const auto &[name, shapes] : options.sequenceShapes)
    if (!isGraphInput(name))
      return importError(path + ": --sequence names '" + name + "', which is not a graph input");
  for (const std::string &name : options.absentInputs)
    if (!isGraphInput(name))
      return importError(path + ": --absent names '" + name + "', which is not a graph input");
  for (const auto &[name, shape] : options.inputShapes)
    if (!isGraphInput(name))
      return importError(path + ": --shape names '" + name +
                         "', which is not a graph input");
  for (const auto &bounded : options.maxShapes) {
    const std::string &name = bounded.first;
    if (!isGraphInput(name))
      return importError(path + ": --max-shape names '" + name + "', which is not a graph input");
    if (llvm::none_of(varyingInputs, [&](const auto &input) { return input.first == name; }))
      return importError(path + ": --max-shape names '" + name +
                         "', which has no symbolic dimension to bound (give its shape with "
                         "--shape, or leave it out)");
  }
  for (const auto &stated : options.statedShapes)
    if (llvm::none_of(graph.node(), [&](const onnx::NodeProto &node) {
          return llvm::is_contained(node.output(), stated.first);
        }))
      return importError(path + ": --value-shape names '" + stated.first +
                         "', which no node gives");

  Location moduleLoc = FileLineColLoc::get(&context, path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(moduleLoc);
  builder.setInsertionPointToEnd(module->getBody());
  auto function = func::FuncOp::create(builder, moduleLoc, "main",
                                       builder.getFunctionType(argumentTypes, {}));
  Block *body = function.addEntryBlock();
  builder.setInsertionPointToStart(body);
  SmallVector<Value> arguments;
  for (auto [i, name] : llvm::enumerate(argumentNames)) {
    function.setArgAttr(i, kValueNameAttr, builder.getStringAttr(name));
    arguments.push_back(body->getArgument(i));
    // An input without elements has no data to wait for: it is known at
    // compile time, and the nodes reading it fold.
    auto type = cast<RankedTensorType>(argumentTypes[i]);
    if (type.hasStaticShape() && type.getNumElements() == 0) {
      auto empty = DenseElementsAttr::get(type, ArrayRef<Attribute>{});
      arguments.back() =
          ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(name)), empty);
      constants[name] = empty;
    }
  }
  bindGraphInputs(function, graphInputs, arguments);

  if (!varyingInputs.empty())
    startFollowingLength(function);
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    if (lengthAxes)
      importFollowingLength(node, index);
    else
      importNode(node, index);
  }

  if (!returnGraphOutputs(function))
    return problemsError();
  if (lengthAxes) {
    markVaryingResults(function);
    if (!problems.empty())
      return problemsError();
  }
  if (options.dynamicBatch) {
    followBatch(function);
    if (!problems.empty())
      return problemsError();
  }
  return module;
}

/// Turns each frozen graph input into an initializer holding the value read
/// from its file, after checking that the value fits the declared input.
static llvm::Error freezeInputs(onnx::ModelProto &model, const std::string &path,
                         const std::map<std::string, std::string> &frozen) {
  onnx::GraphProto &graph = *model.mutable_graph();
  for (const auto &entry : frozen) {
    const std::string &name = entry.first, &file = entry.second;
    auto declared = llvm::find_if(graph.input(), [&](const onnx::ValueInfoProto &input) {
      return input.name() == name;
    });
    if (declared == graph.input().end())
      return importError(path + ": --freeze-input names '" + name +
                         "', which is not a graph input");
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> bytes =
        llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!bytes)
      return importError(file + ": cannot read: " + bytes.getError().message());
    onnx::TensorProto value;
    llvm::StringRef data = (*bytes)->getBuffer();
    if (!value.ParseFromArray(data.data(), data.size()))
      return importError(file + ": not an ONNX TensorProto");
    const onnx::TypeProto_Tensor &type = declared->type().tensor_type();
    if (type.elem_type() != value.data_type())
      return importError(file + ": holds " +
                         onnx_import::dataTypeName(value.data_type()) +
                         " but graph input '" + name + "' is " +
                         onnx_import::dataTypeName(type.elem_type()));
    if (type.has_shape()) {
      bool fits = type.shape().dim_size() == value.dims_size();
      for (int i = 0; fits && i < value.dims_size(); ++i)
        fits = !type.shape().dim(i).has_dim_value() ||
               type.shape().dim(i).dim_value() == value.dims(i);
      if (!fits)
        return importError(file + ": its shape does not fit graph input '" +
                           name + "'");
    }
    value.set_name(name);
    *graph.add_initializer() = std::move(value);
  }
  return llvm::Error::success();
}

/// Parses the model file into `model`.
static llvm::Error readModel(llvm::StringRef path, onnx::ModelProto &model) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return importError(path + ": cannot read: " + file.getError().message());
  llvm::StringRef bytes = (*file)->getBuffer();
  if (bytes.empty() || !model.ParseFromArray(bytes.data(), bytes.size()))
    return importError(path + ": not an ONNX model (the protobuf does not parse)");
  if (!model.has_graph())
    return importError(path + ": the model has no graph");
  return llvm::Error::success();
}

} // namespace tessel::onnx_import

namespace tessel {

using onnx_import::GraphImporter;

llvm::Expected<SupportReport> checkOnnxModel(MLIRContext &context, llvm::StringRef path,
                                             const ImportOptions &options,
                                             OwningOpRef<ModuleOp> *imported) {
  onnx::ModelProto model;
  if (llvm::Error error = onnx_import::readModel(path, model))
    return std::move(error);
  if (llvm::Error error = onnx_import::freezeInputs(model, path.str(), options.frozenInputs))
    return std::move(error);
  GraphImporter importer(context, model, path, options);
  llvm::Expected<OwningOpRef<ModuleOp>> module = importer.run();
  // Problems in the graph's nodes are the report; anything else (an
  // unreadable input type, say) stops the check as it stops a compile.
  if (!module && importer.allProblems().empty())
    return module.takeError();
  if (module && imported)
    *imported = std::move(*module);
  else
    llvm::consumeError(module.takeError());
  SupportReport report;
  report.nodeCount = model.graph().node_size();
  report.opset = importer.opsetVersion();
  report.problems = importer.allProblems();
  report.failingNodesByOp = importer.failingOps();
  return report;
}

llvm::Expected<OwningOpRef<ModuleOp>>
importOnnxModel(MLIRContext &context, llvm::StringRef path,
                const ImportOptions &options) {
  onnx::ModelProto model;
  if (llvm::Error error = onnx_import::readModel(path, model))
    return std::move(error);
  if (llvm::Error error = onnx_import::freezeInputs(model, path.str(), options.frozenInputs))
    return std::move(error);
  GraphImporter importer(context, model, path, options);
  return importer.run();
}

} // namespace tessel
