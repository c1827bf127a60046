//===- GraphImporter.h - One ONNX graph to the tessel dialect ---*- C++ -*-===//
//
// The importer's state while it walks a graph: the values and constants of
// the names seen so far, the problems found. OnnxImporter.cpp walks the
// graph and imports nodes; ControlFlow.cpp imports the subgraphs of If, Scan
// and Loop in place of their nodes.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_GRAPHIMPORTER_H
#define TESSEL_COMPILER_ONNX_GRAPHIMPORTER_H

#include "compiler/onnx/BatchAxes.h"
#include "compiler/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Path.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace tessel {
class ScanOp;
} // namespace tessel

namespace tessel::onnx_import {

/// An error the import stops at (a graph input it cannot type, say).
llvm::Error importError(const llvm::Twine &message);

/// Imports one model's graph: run() walks its nodes in order, recording
/// every problem and going on past nodes it cannot import.
class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext &context, onnx::ModelProto &model,
                llvm::StringRef path, const ImportOptions &options)
      : context(context), model(model), path(path),
        directory(llvm::sys::path::parent_path(path)), options(options),
        builder(&context) {
    if (directory.empty())
      directory = ".";
  }

  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> run();

  /// What the last run found: every problem, and failing nodes per op type.
  const std::vector<std::string> &allProblems() const { return problems; }
  const std::map<std::string, int64_t> &failingOps() const { return failingOpCounts; }
  int64_t opsetVersion() const { return opset; }

private:
  llvm::Error readOpset();
  bool validate();
  void inferShapes(int nodeCount);
  llvm::Expected<mlir::RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  /// The tensors that stand for a graph input: one for a tensor, or an
  /// optional compiled as holding one; a sequence's, of the shapes
  /// --sequence gives; none for an optional that --absent names.
  struct GraphInputTensors {
    std::string kind; // as in kGraphInputsAttr
    bool present = true;
    llvm::SmallVector<mlir::RankedTensorType> types;
  };
  llvm::Expected<GraphInputTensors> graphInputTensors(const onnx::ValueInfoProto &info);
  /// The types of the tensors of sequence-typed graph input `name` (an
  /// optional one's, with `optional`), whose element type is `element`.
  llvm::Expected<llvm::SmallVector<mlir::RankedTensorType>>
  sequenceInputTypes(const std::string &name, const onnx::TypeProto &element, bool optional);
  mlir::Value lookup(const std::string &name);
  mlir::Value foldConstantInputs(mlir::Value value);
  mlir::Value placeholder(const std::string &name);
  mlir::Location nodeLocation(const onnx::NodeProto &node, int index);
  /// Imports `node`, the graph's node `index`, or with `nested` a node of
  /// a subgraph inlined in place of node `index`.
  void importNode(const onnx::NodeProto &node, int index, bool nested = false);
  /// Control flow (ControlFlow.cpp), imported in place of node `index`:
  /// If as its taken branch or both branches and a select; Scan as one
  /// tessel.scan, or its body unrolled over the scanned axis; Loop as its
  /// body unrolled as many times as its constant trip count and conditions
  /// say.
  void importIf(const onnx::NodeProto &node, int index, const std::string &label);
  void importScan(const onnx::NodeProto &node, int index, const std::string &label);
  void importLoop(const onnx::NodeProto &node, int index, const std::string &label);
  /// What importScan knows of a Scan once its inputs are checked.
  struct ScanShape {
    int64_t states, outputs, length;
    llvm::SmallVector<int64_t> inputAxes, inputDirections, outputAxes, outputDirections;
  };
  enum class ScanImport { Done, Failed, Unroll };
  /// The scan axes and directions of Scan `node` (ControlFlow.cpp), nullopt
  /// if they do not give one entry per scan input and output.
  std::optional<ScanShape> scanAttributes(const onnx::NodeProto &node, int64_t states,
                                          int64_t scanCount, int64_t outputCount) const;
  /// The results of Scan `node` on `inputs` (the states, then the scan
  /// inputs): the final states, then the stacked scan outputs; nullopt once
  /// it has recorded why it cannot be imported.
  std::optional<llvm::SmallVector<mlir::Value>> scanResults(const onnx::NodeProto &node, int index,
                                                            const std::string &label,
                                                            llvm::ArrayRef<mlir::Value> inputs,
                                                            ScanShape shape);
  /// Scan as one tessel.scan (ControlFlow.cpp): Done with its `results`,
  /// Failed once it has recorded why its body cannot be imported, or
  /// Unroll to leave it to be unrolled.
  ScanImport importScanAsLoop(const onnx::NodeProto &node, int index, const std::string &label,
                              llvm::ArrayRef<mlir::Value> inputs, const ScanShape &shape,
                              llvm::SmallVector<mlir::Value> &results);
  /// Loop with a constant trip count as one tessel.scan, as importScanAsLoop.
  bool importLoopAsScan(const onnx::NodeProto &node, int index, const std::string &label,
                        llvm::ArrayRef<mlir::Value> inputs, int64_t tripCount,
                        int64_t scanCount);
  /// Loop without scan outputs whose trip count, initial condition or body
  /// condition is known only at run time, as one tessel.loop (conditional
  /// when the body's condition is not always true), its carried values
  /// packed into one state when their types differ: when each is a static
  /// tensor of integers or floats. Returns false (nothing built) otherwise;
  /// true once it has bound the outputs or recorded why it cannot be
  /// compiled.
  bool importLoopAtRunTime(const onnx::NodeProto &node, int index, const std::string &label,
                           llvm::ArrayRef<mlir::Value> inputs);
  /// Builds a step's body from the block arguments (the states, then one
  /// step of each scanned operand): the next states, or sets the outcome
  /// to Unroll or Failed.
  using LoopBodyBuilder = std::function<llvm::SmallVector<mlir::Value>(
      llvm::ArrayRef<mlir::Value> arguments, ScanImport &outcome)>;
  /// A tessel.scan over `scanned` (each scanned along axis 0) from
  /// `states`, all of one type, its body built by `buildBody`; values the
  /// body reads from the graph become its invariants. On Unroll or Failed
  /// nothing is left behind but what the body recorded.
  ScanImport buildScanLoop(mlir::Location loc, llvm::ArrayRef<mlir::Value> states,
                           llvm::ArrayRef<mlir::Value> scanned, bool reverse,
                           const LoopBodyBuilder &buildBody, tessel::ScanOp &built);
  /// Imports `body` once with its inputs bound to `arguments`, then forgets
  /// the body's own names, so that the next iteration binds them afresh;
  /// its outputs, or nothing after recording why.
  std::optional<llvm::SmallVector<mlir::Value>>
  importBody(const onnx::GraphProto &body, llvm::ArrayRef<mlir::Value> arguments, int index,
             const std::string &label);
  /// A control-flow node's inputs (null where a name is empty), or nothing
  /// when one is poisoned or missing (recorded).
  std::optional<llvm::SmallVector<mlir::Value>> nodeInputs(const onnx::NodeProto &node,
                                                           const std::string &label);
  /// Binds `node`'s outputs to `results`, folded where their inputs are
  /// constants.
  void bindOutputs(const onnx::NodeProto &node, llvm::ArrayRef<mlir::Value> results);
  void poisonOutputs(const onnx::NodeProto &node);
  /// Records `why` `node` cannot be imported and poisons its outputs.
  void refuse(const onnx::NodeProto &node, const std::string &label, const std::string &why);
  llvm::Error problemsError() const;
  /// The tensors that stand for graph output `output`, whose value is
  /// `value` (a sequence's elements; an optional's one element, or none),
  /// and what the model declares it; nullopt after recording that the
  /// value is not what the model declares.
  struct GraphOutputTensors {
    std::string kind;
    bool present;
    llvm::SmallVector<mlir::Value> values;
  };
  std::optional<GraphOutputTensors> graphOutputTensors(const onnx::ValueInfoProto &output,
                                                       mlir::Value value);
  /// Binds each of `graphInputs`, by name, to its tensors among
  /// `arguments` (@main's, in order): a tensor, a sequence of them, or an
  /// empty optional; lists them in kGraphInputsAttr when one is not a
  /// tensor.
  void bindGraphInputs(mlir::func::FuncOp function,
                       llvm::ArrayRef<std::pair<std::string, GraphInputTensors>> graphInputs,
                       llvm::ArrayRef<mlir::Value> arguments);
  /// Returns the graph outputs' tensors from `function` (@main), named
  /// NAME, or NAME[i] for a sequence's, and lists them in kGraphOutputsAttr
  /// when one is not a tensor; false after recording why it cannot.
  bool returnGraphOutputs(mlir::func::FuncOp function);
  /// Fills declaredTypes.
  void collectDeclaredTypes();
  /// --dynamic-batch: records graph input `name` as batched, its dimension
  /// 0 named `symbol`.
  llvm::Error addBatchedInput(const std::string &name, const std::string &symbol);
  /// --dynamic-batch: follows the batch through the imported graph,
  /// recording a problem for each node that may let samples meet, and
  /// marks @main's batched arguments and results (kBatchedAttr).
  void followBatch(mlir::func::FuncOp function);
  /// --max-shape (VaryingLength.cpp): records dimension `axis` of graph
  /// input `name`, named `symbol`, as the varying length.
  llvm::Error addVaryingInput(const std::string &name, int64_t axis, const std::string &symbol);
  /// Adds @main's hidden length argument and starts following the length.
  void startFollowingLength(mlir::func::FuncOp function);
  /// Imports top-level node `index`, following the varying length through
  /// it: a recurrence over it reads the length as its sequence_lens, and
  /// any other node must keep positions apart.
  void importFollowingLength(const onnx::NodeProto &node, int index);
  /// The constant position a Gather picks along the varying length
  /// (y[-1]), if it is such a Gather.
  std::optional<int64_t> positionPicked(const onnx::NodeProto &node);
  /// Whether `position` lies within the bound for Gather `node`; records
  /// why not.
  bool positionWithinBound(const onnx::NodeProto &node, int index, int64_t position);
  /// Imports such a Gather as picking `position` counted from the length
  /// when negative, checked at run time to lie within the length.
  void importPositionAtLength(const onnx::NodeProto &node, int index, int64_t position);
  /// Imports `node` reading its inputs with the padding past the length
  /// filled where BatchAxes::paddingFills says; a mean over the length
  /// rescaled from the bound to it.
  void importFilled(const onnx::NodeProto &node, int index);
  /// `value` with its positions along `fill.axis` from the length on set to
  /// the fill.
  mlir::Value filledPastLength(mlir::Value value, const PaddingFill &fill, mlir::Location loc);
  /// Marks @main's results that vary with the length (kVaryingAttr).
  void markVaryingResults(mlir::func::FuncOp function);

  mlir::MLIRContext &context;
  onnx::ModelProto &model;
  std::string path;
  std::string directory;
  const ImportOptions &options;
  mlir::OpBuilder builder;
  /// The version of the default operator set the model imports (0: none),
  /// and of each other domain it imports (ai.onnx.ml, say).
  int64_t opset = 0;
  llvm::StringMap<int64_t> domainOpsets;
  /// The operator set `node` belongs to ("" for the default one) and the
  /// version of it the model imports (0 when it imports none).
  static llvm::StringRef domainOf(const onnx::NodeProto &node);
  int64_t opsetOf(const onnx::NodeProto &node) const;

  llvm::StringMap<mlir::Value> values;
  llvm::StringMap<mlir::ElementsAttr> constants;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringSet<> consumed;
  llvm::StringSet<> poisoned;
  llvm::StringMap<mlir::RankedTensorType> inferredTypes;
  /// Values whose range the importer knows though not their value: the
  /// iteration number of a loop body being imported.
  llvm::DenseMap<mlir::Value, std::pair<int64_t, int64_t>> integerRanges;
  /// The static types the model states for its outputs and value_info
  /// entries, and for the inputs of elementwise ops (Sqrt, Cast, Mul, ...)
  /// with such a result: what a node whose shape-giving input is known
  /// only at run time is specialized to (shapeGivingInts).
  llvm::StringMap<mlir::RankedTensorType> declaredTypes;
  std::vector<std::string> problems;
  /// Per node, why it does not match its operator's signature.
  std::vector<std::vector<std::string>> signatureProblems;
  /// The node being imported; the leading nodes shape inference has read;
  /// whether every node before the current one was imported or, if its op
  /// is not supported, matched its signature and input types. libonnx's
  /// shape inference trusts what it reads (a zero stride, a bool signal or
  /// an image of the wrong rank for its weights crash it).
  int currentNode = 0;
  int inferredNodes = 0;
  bool trustedPrefix = true;
  /// What shape inference reads and annotates: a copy of the model, made
  /// once (its weights are large), whose nodes are the prefix read last.
  std::optional<onnx::ModelProto> inferenceModel;
  std::map<std::string, int64_t> failingOpCounts;
  /// --dynamic-batch: the batched graph inputs, and the name of their
  /// dimension 0 ("" while none is named).
  std::vector<std::string> batchedInputs;
  std::string batchSymbol;
  /// --max-shape: each varying graph input and the dimension that varies;
  /// the dimensions' one symbol; @main's length argument; where the length
  /// lies in the values imported so far; the length broadcast to each
  /// batch size a recurrence asked for.
  std::vector<std::pair<std::string, int64_t>> varyingInputs;
  std::string lengthSymbol;
  mlir::Value lengthArgument;
  std::unique_ptr<BatchAxes> lengthAxes;
  std::map<int64_t, std::string> lengthsPerBatch;
};

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_GRAPHIMPORTER_H
