//===- OnnxGraphWriter.h - Building an ONNX graph from MLIR values -*- C++ -*-===//
//
// The bookkeeping of the ONNX export: each MLIR value gets one unique ONNX
// tensor name, constants become initializers, quantized tensors become the
// integers and a DequantizeLinear, and nodes take their names from the
// locations the importer gave the ops (the original ONNX node names).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_ONNXGRAPHWRITER_H
#define TESSEL_COMPILER_ONNX_ONNXGRAPHWRITER_H

#include "mlir/Dialect/Quant/IR/QuantTypes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include <optional>
#include <string>

namespace tessel::onnx_export {

/// The ONNX data type (TensorProto::DataType) of an MLIR element type:
/// signless and signed integers are signed, i1 is BOOL; nullopt for types
/// ONNX has no tensor of.
std::optional<int32_t> onnxDataType(mlir::Type elementType);

class OnnxGraphWriter {
public:
  explicit OnnxGraphWriter(onnx::GraphProto &graph) : graph(graph) {}

  /// The name of `value`, which a graph input, an initializer or an
  /// exported node has produced.
  std::string nameOf(mlir::Value value) const;
  /// Names `value` `name` (made unique); its producer is added next.
  std::string define(mlir::Value value, llvm::StringRef name);
  bool isNamed(mlir::Value value) const { return names.count(value); }
  /// Gives `value` the name of a tensor already in the graph.
  void bind(mlir::Value value, const std::string &name) { names[value] = name; }
  /// The name of result `value`: the one it already has (a graph output's),
  /// else `hint` made unique.
  std::string nameResult(mlir::Value value, llvm::StringRef hint);

  /// A node named `name` (made unique) reading and writing tensor names;
  /// "" stands for an absent optional input.
  onnx::NodeProto &addNode(llvm::StringRef opType, llvm::StringRef name,
                           llvm::ArrayRef<std::string> inputs, llvm::ArrayRef<std::string> outputs);
  /// addNode named after `op`'s ONNX node.
  onnx::NodeProto &addNode(llvm::StringRef opType, mlir::Operation *op,
                           llvm::ArrayRef<std::string> inputs, llvm::ArrayRef<std::string> outputs);
  /// addNode reading tensors `inputs` and writing `op`'s results (named
  /// here unless already named).
  onnx::NodeProto &addNode(llvm::StringRef opType, mlir::Operation *op,
                           llvm::ArrayRef<std::string> inputs);
  /// addNode reading `operands` and writing `op`'s results.
  onnx::NodeProto &addNode(llvm::StringRef opType, mlir::Operation *op, mlir::ValueRange operands);

  /// An initializer holding `value` (of an element type ONNX has); the
  /// name is `hint` made unique.
  llvm::Expected<std::string> addInitializer(llvm::StringRef hint, mlir::DenseElementsAttr value);
  /// A 1-d INT64 initializer (shapes, pads, axes, ...).
  std::string addInt64Initializer(llvm::StringRef hint, llvm::ArrayRef<int64_t> values);

  /// The scale and zero point initializers of `type`: rank-0 per tensor,
  /// 1-d along the axis per axis; the axis, if any. Tensors of one type (a
  /// QuantizeLinear and the DequantizeLinear after it) share them.
  struct QuantizationInputs {
    std::string scale, zeroPoint;
    std::optional<int32_t> axis;
  };
  QuantizationInputs addQuantizationInputs(llvm::StringRef hint, mlir::quant::QuantizedType type);
  /// A QuantizeLinear or DequantizeLinear node at `type`'s parameters,
  /// named after its output.
  void addQuantizationNode(llvm::StringRef opType, const std::string &input,
                           const std::string &output, mlir::quant::QuantizedType type);

  /// A name no tensor has yet, from `hint`.
  std::string uniqueTensorName(llvm::StringRef hint);

private:
  /// Names each result of `op` after its ONNX node, unless already named.
  void defineResults(mlir::Operation *op);
  std::string uniqueNodeName(llvm::StringRef hint);

  onnx::GraphProto &graph;
  llvm::DenseMap<mlir::Value, std::string> names;
  llvm::DenseMap<mlir::Type, QuantizationInputs> quantizationInputs;
  llvm::StringSet<> tensorNames, nodeNames;
};

/// The name of the ONNX node `op` comes from, or "" if none.
std::string nodeNameOf(mlir::Operation *op);

} // namespace tessel::onnx_export

#endif // TESSEL_COMPILER_ONNX_ONNXGRAPHWRITER_H
