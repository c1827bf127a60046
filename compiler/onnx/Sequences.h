//===- Sequences.h - ONNX sequences and optionals at import -----*- C++ -*-===//
//
// ONNX's sequence and optional values have no run-time form here: their
// structure (a sequence's length, whether an optional holds an element) is
// resolved at import, and only their tensors reach the compiled model.
// While a graph is imported, a sequence is a value of tuple type made by an
// unrealized_conversion_cast from its elements, so that it flows through
// the importer's names, subgraph arguments and unrolled loops as a tensor
// does; an optional holding an element is that element, and an empty one
// a value of none type made the same way from nothing. No such value is
// left once the import ends: the graph's outputs are given as their
// tensors (OnnxImporter.cpp), and the casts erased.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_SEQUENCES_H
#define TESSEL_COMPILER_ONNX_SEQUENCES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>
#include <string>

namespace tessel::onnx_import {

/// A sequence of `elements` (tensors).
mlir::Value makeSequence(mlir::OpBuilder &builder, mlir::Location loc, mlir::ValueRange elements);
/// The elements of `value` if it is a sequence.
std::optional<llvm::SmallVector<mlir::Value>> sequenceElements(mlir::Value value);
/// An optional that holds no element.
mlir::Value makeEmptyOptional(mlir::OpBuilder &builder, mlir::Location loc);
bool isEmptyOptional(mlir::Value value);
/// "a sequence of 3 tensors", "an empty optional" or "a tensor": what a
/// message says `value` is.
std::string describeValue(mlir::Value value);
/// Whether ONNX op `opType` of the default domain takes sequences or
/// optionals as inputs; no other op is given one.
bool takesSequences(llvm::StringRef opType);
/// Erases the sequences and empty optionals left unused in `function`.
void eraseUnusedSequences(mlir::func::FuncOp function);

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_SEQUENCES_H
