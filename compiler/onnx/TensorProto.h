//===- TensorProto.h - ONNX tensors and types as MLIR ones ------*- C++ -*-===//

#ifndef TESSEL_COMPILER_ONNX_TENSORPROTO_H
#define TESSEL_COMPILER_ONNX_TENSORPROTO_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include <string>

namespace tessel::onnx_import {

/// The MLIR element type of an ONNX data type (TensorProto::DataType):
/// signed integers are signless, unsigned ones are unsigned, bool is i1.
/// Null for types Tessel does not handle.
mlir::Type elementTypeFor(mlir::MLIRContext *context, int32_t dataType);

/// "FLOAT", "UINT8", ... for messages.
std::string dataTypeName(int32_t dataType);

/// Reads a tensor's contents, inline or from external data files that lie
/// inside `modelDirectory` (paths that leave it are refused).
llvm::Expected<mlir::DenseElementsAttr>
readTensor(mlir::MLIRContext *context, const onnx::TensorProto &tensor,
           llvm::StringRef modelDirectory);

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_TENSORPROTO_H
