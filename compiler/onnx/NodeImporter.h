//===- NodeImporter.h - What an op handler sees of one ONNX node -*- C++ -*-===//
//
// Handlers are registered per op type and since-version (as ONNX versions
// operators) and import one node each through a NodeImporter: typed access
// to inputs, constant inputs and attributes, and a way to say precisely
// what is unsupported. Attributes a handler never reads are reported as
// unsupported, so a new ONNX attribute is never silently ignored.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_NODEIMPORTER_H
#define TESSEL_COMPILER_ONNX_NODEIMPORTER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tessel::onnx_import {

class NodeImporter;

/// Imports one node; returns failure after calling NodeImporter::unsupported.
using OpHandler = std::function<mlir::LogicalResult(NodeImporter &)>;

/// Handlers by ONNX op type and the opset version they apply from.
class OpRegistry {
public:
  /// Registers `handler` for `opType` of the default domain from opset
  /// `sinceVersion` until the next registered version.
  void on(llvm::StringRef opType, int64_t sinceVersion, OpHandler handler);
  /// The same for `opType` of operator set `domain` (ai.onnx.ml, say),
  /// whose versions the model imports apart.
  void on(llvm::StringRef domain, llvm::StringRef opType, int64_t sinceVersion, OpHandler handler);

  /// The handler for `opType` of `domain` ("" for the default one) at
  /// `opset`, that domain's version, or null with `reason` set.
  const OpHandler *lookup(llvm::StringRef domain, llvm::StringRef opType, int64_t opset,
                          std::string &reason) const;

  /// Whether any handler is registered for an op of `domain`.
  bool hasDomain(llvm::StringRef domain) const;

private:
  /// Keyed by op type, "domain::OpType" outside the default domain.
  llvm::StringMap<std::vector<std::pair<int64_t, OpHandler>>> handlers;
  llvm::StringSet<> domains;
};

/// The registry with every handler Tessel has.
const OpRegistry &onnxOpRegistry();

/// The names of the graph inputs (function arguments) that `value` is
/// computed from.
std::vector<std::string> graphInputsFeeding(mlir::Value value);

/// " (computed from graph input 'X': --freeze-input X=VALUE.pb fixes it)"
/// for each graph input `value` is computed from: what a message saying it
/// must be a constant adds.
std::string freezeHint(mlir::Value value);

class NodeImporter {
public:
  NodeImporter(const onnx::NodeProto &node, int64_t opset,
               mlir::OpBuilder &builder, mlir::Location loc,
               llvm::ArrayRef<mlir::Value> inputs,
               llvm::ArrayRef<mlir::ElementsAttr> constantInputs,
               const llvm::StringSet<> &consumedNames,
               llvm::ArrayRef<mlir::RankedTensorType> declaredOutputs = {});

  const onnx::NodeProto &node() const { return nodeProto; }
  int64_t opset() const { return opsetVersion; }
  mlir::OpBuilder &builder() { return b; }
  mlir::Location loc() const { return location; }

  /// Number of inputs, counting empty (omitted optional) ones.
  size_t numInputs() const { return inputValues.size(); }
  /// Input `i`, or null when absent or omitted ("").
  mlir::Value input(size_t i) const;
  /// The value of input `i` if it is known at compile time.
  mlir::ElementsAttr constantInput(size_t i) const;
  /// The least and greatest integer that input `i` may hold, where the
  /// importer knows them though not its value (a loop's iteration number).
  std::optional<std::pair<int64_t, int64_t>> integerRange(size_t i) const;
  using IntegerRanges = llvm::DenseMap<mlir::Value, std::pair<int64_t, int64_t>>;
  void setIntegerRanges(const IntegerRanges *ranges) { integerRanges = ranges; }
  /// Input `i`'s ranked tensor type (the input must be present).
  mlir::RankedTensorType inputType(size_t i) const;
  /// The value of input `i`, which must be known at compile time; otherwise
  /// null, with "`what` must be a constant" recorded and the graph inputs it
  /// is computed from named, with the --freeze-input hint.
  mlir::ElementsAttr requireConstant(size_t i, const llvm::Twine &what);
  /// The integers of input `i`, which must be known at compile time; `role`
  /// names it in the message recorded otherwise ("the axes input must be a
  /// constant", with a hint when it is a graph input that can be frozen).
  std::optional<llvm::SmallVector<int64_t>> constantInts(size_t i,
                                                         llvm::StringRef role);

  size_t numOutputs() const { return nodeProto.output_size(); }
  /// The static type the model states for output `i` (as a graph output or
  /// in value_info), or null.
  mlir::RankedTensorType declaredOutputType(size_t i) const;
  /// True if output `i` exists and is consumed.
  bool outputUsed(size_t i) const;
  void setOutput(size_t i, mlir::Value value);
  /// Sets output `i` to `value`, or fails if it is null (a createInferred
  /// that recorded why).
  mlir::LogicalResult setInferredOutput(size_t i, mlir::Value value);

  /// A constant tensor of `shape` filled with `value` in `elementType` (for
  /// a per-tensor quantized type, the storage integer nearest `value`).
  mlir::Value splatConstant(mlir::Type elementType, double value,
                            llvm::ArrayRef<int64_t> shape = {});
  /// A constant tensor of `shape` holding `values` rounded to the float
  /// type `elementType` (to nearest, ties to even).
  mlir::Value floatConstant(mlir::Type elementType, llvm::ArrayRef<double> values,
                            llvm::ArrayRef<int64_t> shape);
  /// A constant i64 tensor of `shape` holding `values`.
  mlir::Value int64Constant(llvm::ArrayRef<int64_t> values,
                            llvm::ArrayRef<int64_t> shape);
  llvm::ArrayRef<mlir::Value> outputs() const { return outputValues; }

  // Attributes. Each getter marks the attribute as understood.
  bool hasAttr(llvm::StringRef name) const;
  std::optional<int64_t> intAttr(llvm::StringRef name);
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue);
  std::optional<float> floatAttr(llvm::StringRef name);
  float floatAttr(llvm::StringRef name, float defaultValue);
  std::optional<std::string> stringAttr(llvm::StringRef name);
  std::optional<std::vector<int64_t>> intsAttr(llvm::StringRef name);
  std::optional<std::vector<float>> floatsAttr(llvm::StringRef name);
  std::optional<std::vector<std::string>> stringsAttr(llvm::StringRef name);
  const onnx::TensorProto *tensorAttr(llvm::StringRef name);
  /// Marks an attribute as understood without reading it.
  void ignoreAttr(llvm::StringRef name);

  /// Imports a graph (a node's graph attribute) with its inputs bound to
  /// `arguments`: its outputs, or nothing after recording why.
  using GraphCaller = std::function<std::optional<llvm::SmallVector<mlir::Value>>(
      const onnx::GraphProto &, llvm::ArrayRef<mlir::Value>)>;
  void setGraphCaller(GraphCaller caller) { graphCaller = std::move(caller); }
  /// The outputs of graph attribute `name` (FlexAttention's score_mod, say)
  /// applied to `arguments`, or nothing after recording why.
  std::optional<llvm::SmallVector<mlir::Value>>
  callGraphAttr(llvm::StringRef name, llvm::ArrayRef<mlir::Value> arguments);

  /// Creates an op whose result type it infers (InferTypeOpInterface).
  /// Returns null, with the reason recorded, when inference rejects the
  /// operands: ONNX models are input, so this must not assert.
  /// For an op whose operands are all required, a null one (an earlier
  /// createInferred that failed, with its reason recorded) gives null
  /// without creating anything, so that handlers may chain calls.
  template <typename OpTy, typename... Args>
  mlir::Value createInferred(Args &&...args) {
    if constexpr (hasOnlyRequiredOperands<OpTy>())
      if ((isMissingOperand(args) || ...))
        return {};
    auto op = OpTy::create(b, location, mlir::NoneType::get(b.getContext()),
                           std::forward<Args>(args)...);
    return inferResultType(op.getOperation());
  }

  /// Records why the node cannot be imported; returns failure for
  /// convenience (`return importer.unsupported("...")`).
  mlir::LogicalResult unsupported(const llvm::Twine &reason);
  const std::vector<std::string> &problems() const { return reasons; }

  /// Attributes present on the node that no getter read.
  std::vector<std::string> unreadAttributes() const;

private:
  /// Ops with optional operands (a convolution's bias) take null for an
  /// absent one; the others have a fixed operand count.
  template <typename OpTy> static constexpr bool hasOnlyRequiredOperands() {
    using namespace mlir::OpTrait;
    return OpTy::template hasTrait<OneOperand>() || OpTy::template hasTrait<NOperands<2>::Impl>() ||
           OpTy::template hasTrait<NOperands<3>::Impl>() ||
           OpTy::template hasTrait<NOperands<4>::Impl>();
  }
  template <typename T> static bool isMissingOperand(const T &argument) {
    if constexpr (std::is_convertible_v<const T &, mlir::Value>)
      return !static_cast<mlir::Value>(argument);
    else
      return false;
  }

  const onnx::AttributeProto *findAttr(llvm::StringRef name);
  mlir::Value inferResultType(mlir::Operation *op);

  const onnx::NodeProto &nodeProto;
  int64_t opsetVersion;
  mlir::OpBuilder &b;
  mlir::Location location;
  std::vector<mlir::Value> inputValues;
  std::vector<mlir::ElementsAttr> constants;
  std::vector<mlir::Value> outputValues;
  const llvm::StringSet<> &consumed;
  llvm::SmallVector<mlir::RankedTensorType> declaredOutputs;
  llvm::StringSet<> readAttributes;
  std::vector<std::string> reasons;
  GraphCaller graphCaller;
  const IntegerRanges *integerRanges = nullptr;
};

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_NODEIMPORTER_H
