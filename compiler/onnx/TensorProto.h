//===- TensorProto.h - ONNX tensors and types as MLIR ones ------*- C++ -*-===//

#ifndef TESSEL_COMPILER_ONNX_TENSORPROTO_H
#define TESSEL_COMPILER_ONNX_TENSORPROTO_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include <string>

namespace tessel::onnx_import {

/// ONNX data types newer than the release whose headers Tessel builds
/// against (Debian's 1.12); the numbers are ONNX's.
enum NewerDataType : int32_t {
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

/// The MLIR element type of an ONNX data type (TensorProto::DataType):
/// signed integers are signless, unsigned ones are unsigned, bool is i1.
/// Null for types Tessel does not handle.
mlir::Type elementTypeFor(mlir::MLIRContext *context, int32_t dataType);

/// The ONNX data type whose MLIR element type is `type`, or 0 (UNDEFINED)
/// for types no ONNX data type maps to (quantized types, say).
int32_t dataTypeOf(mlir::Type type);

/// "FLOAT", "UINT8", ... for messages.
std::string dataTypeName(int32_t dataType);

/// Reads a tensor's contents, inline or from external data files that lie
/// inside `modelDirectory` (paths that leave it are refused).
llvm::Expected<mlir::DenseElementsAttr>
readTensor(mlir::MLIRContext *context, const onnx::TensorProto &tensor,
           llvm::StringRef modelDirectory);

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_TENSORPROTO_H
