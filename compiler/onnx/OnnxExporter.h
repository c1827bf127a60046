//===- OnnxExporter.h - The tessel dialect as an ONNX model -----*- C++ -*-===//
//
// tessel-compile --emit qdq-onnx: the graph as Tessel quantized it, written
// as a standard QDQ ONNX model that onnxruntime and other tools run and
// inspect. Quantized tensors are QuantizeLinear/DequantizeLinear pairs with
// Tessel's scales and zero points, quantized weights are integer
// initializers read through DequantizeLinear, and the biases of quantized
// products are the i32 values Tessel's kernels add, so that a QDQ runtime
// that fuses the pairs computes what Tessel computes.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_ONNXEXPORTER_H
#define TESSEL_COMPILER_ONNX_ONNXEXPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace tessel {

struct OnnxExportInfo {
  std::string producerVersion;
  /// The model's doc_string: how it was made.
  std::string description;
};

/// Writes the `main` function of `module` (the tessel dialect before the
/// graph pipeline: ONNX layouts, quantization as quantize/dequantize ops
/// around float ops) to `out` as a serialized ONNX ModelProto (opset 21).
/// Fails, writing nothing, on an op that has no ONNX form, naming it and
/// its node.
llvm::Error exportOnnxModel(mlir::ModuleOp module, const OnnxExportInfo &info,
                            llvm::raw_ostream &out);

} // namespace tessel

#endif // TESSEL_COMPILER_ONNX_ONNXEXPORTER_H
