//===- OnnxImporter.h - ONNX ModelProto to the tessel dialect ---*- C++ -*-===//

#ifndef TESSEL_COMPILER_ONNX_ONNXIMPORTER_H
#define TESSEL_COMPILER_ONNX_ONNXIMPORTER_H

#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tessel {

struct ImportOptions {
  /// Shapes for graph inputs, replacing symbolic (dim_param) dimensions:
  /// input name -> full shape.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Shapes of values (graph outputs or intermediate results) stated on the
  /// command line, as if the model's value_info held them: value name ->
  /// full shape. A node whose shape-giving input is a graph input compiles
  /// for its stated result shape, checked at run time.
  std::map<std::string, std::vector<int64_t>> statedShapes;
  /// Graph inputs given their value at compile time: input name -> path of
  /// a TensorProto file. Such an input becomes a constant and leaves the
  /// compiled signature (shape tensors and axes that ops need statically).
  std::map<std::string, std::string> frozenInputs;
  /// --dynamic-batch: dimension 0 of every graph input where it is symbolic
  /// is the batch. The model is imported for one sample (that dimension 1),
  /// and refused unless every node keeps the samples apart; the batched
  /// arguments and results of @main carry `tessel.batched`.
  bool dynamicBatch = false;
  /// --max-shape: graph input name -> its shape with a bound in place of
  /// each symbolic dimension. Such a dimension is the model's varying
  /// length (one symbol for all inputs): the model is imported at the
  /// bound, @main takes the length as a last, hidden argument (kLengthAttr),
  /// and the inputs and results along which positions vary carry
  /// kVaryingAttr. A run pads the inputs to the bound and trims the
  /// results, which is right only where no node lets positions meet; the
  /// recurrences (LSTM, GRU, RNN) read the length as their sequence_lens.
  std::map<std::string, std::vector<int64_t>> maxShapes;
  /// --sequence: sequence-typed graph input name -> the shapes of the
  /// tensors it is compiled for. The sequence's structure is resolved at
  /// compile time: each tensor is an input of @main (NAME[i]).
  std::map<std::string, std::vector<std::vector<int64_t>>> sequenceShapes;
  /// --absent: optional-typed graph inputs compiled as holding nothing (the
  /// others are compiled as holding their element).
  std::set<std::string> absentInputs;
};

/// Imports the ONNX model at `path` into a module holding one public
/// function, @main, whose arguments and results carry the graph's input and
/// output names (`tessel.name`). Ops are located at their node names.
///
/// On failure the error lists every node that cannot be imported (name, op
/// type, opset, what is missing), not just the first.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxModel(mlir::MLIRContext &context, llvm::StringRef path,
                const ImportOptions &options = {});

/// What `tessel-compile --check` reports: every node that cannot be
/// compiled, and how many failing nodes each op type has.
struct SupportReport {
  int64_t nodeCount = 0;
  int64_t opset = 0;
  std::vector<std::string> problems;
  std::map<std::string, int64_t> failingNodesByOp;
  /// For a model that imports: how many ops compute on quantized tensors,
  /// and each island of ops that stays float between a dequantize and a
  /// quantize (its ops and ONNX nodes).
  int64_t integerOps = 0;
  std::vector<std::string> floatIslands;
};

/// Imports the model only to find what cannot be compiled; `imported`, if
/// given, receives the module when every node imports. Fails only when
/// the model cannot be read at all.
llvm::Expected<SupportReport>
checkOnnxModel(mlir::MLIRContext &context, llvm::StringRef path,
               const ImportOptions &options = {},
               mlir::OwningOpRef<mlir::ModuleOp> *imported = nullptr);

/// Name of the argument/result attribute holding ONNX value names.
inline constexpr llvm::StringLiteral kValueNameAttr = "tessel.name";
/// On @main's arguments and results whose dimension 0 is the batch
/// (--dynamic-batch).
inline constexpr llvm::StringLiteral kBatchedAttr = "tessel.batched";
/// On @main when a graph output is a sequence or an optional: per graph
/// output, a dictionary of its `name`, `kind` ("tensor", "sequence",
/// "optional" or "optional_sequence"), whether it is `present` (an
/// optional's element), and the `first` of @main's results that hold its
/// tensors and their `count` (a sequence's length, or one).
inline constexpr llvm::StringLiteral kGraphOutputsAttr = "tessel.graph_outputs";
/// The same for the graph inputs and @main's arguments.
inline constexpr llvm::StringLiteral kGraphInputsAttr = "tessel.graph_inputs";

} // namespace tessel

#endif // TESSEL_COMPILER_ONNX_ONNXIMPORTER_H
