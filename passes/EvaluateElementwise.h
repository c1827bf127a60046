//===- EvaluateElementwise.h - Elementwise ops on one number ----*- C++ -*-===//
//
// Evaluates one elementwise tessel op on scalars at compile time, in f32 as
// ONNX's reference computes: kernel formation of quantized activations
// turns a chain of such ops between a dequantization and a quantization
// into a table of its results (tessel.lookup).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_EVALUATEELEMENTWISE_H
#define TESSEL_PASSES_EVALUATEELEMENTWISE_H

#include "mlir/IR/Operation.h"

#include <optional>

namespace tessel {

/// The result of elementwise op `op` on one element of each operand
/// (`operands`, f32 values, or the storage values of quantized operands),
/// as an f32 value (or a storage value for a quantized result); nullopt for
/// an op it cannot evaluate. Quantized types must be per tensor.
std::optional<float> evaluateElementwise(mlir::Operation *op, llvm::ArrayRef<float> operands);

} // namespace tessel

#endif // TESSEL_PASSES_EVALUATEELEMENTWISE_H
