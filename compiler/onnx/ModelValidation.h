//===- ModelValidation.h - What must hold before a model is trusted -*- C++ -*-===//
//
// A model file is untrusted input. Before the importer, its op handlers or
// libonnx's shape inference read a node, the node is checked against its
// operator's signature at the model's opset (input and output counts,
// required attributes, attribute types, the values that divide or index:
// strides, dilations, kernel sizes, pads, group), and the graph against the
// rules every later stage relies on (each value produced once, unique
// signature names, a known opset). The importer adds the checks that need
// types (input data types, tensor sizes within the runtime's limits) and
// order (inputs produced before they are read). Every problem is a line
// naming the node, value or graph input it is about.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_MODELVALIDATION_H
#define TESSEL_COMPILER_ONNX_MODELVALIDATION_H

#include "llvm/ADT/ArrayRef.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::onnx_import {

/// The most bytes one tensor may take: the runtime refuses arenas larger
/// than this, so no artifact may need one.
inline constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 40;

/// The newest opset of the default domain the schema table knows.
int64_t newestKnownOpset();

/// How messages name a node: its name, or "OpType#index" when it has none.
std::string nodeLabel(const onnx::NodeProto &node, int index);

/// The attribute's type: its declared one, or for producers that leave
/// `type` unset, the field that holds its value.
onnx::AttributeProto::AttributeType attributeType(const onnx::AttributeProto &attribute);

/// "node 'label' (OpType, opset N): ", the prefix of every node's problem;
/// outside the default domain "(OpType, domain opset N)", or "(OpType,
/// domain)" where the model imports no version of it.
std::string nodeContext(const onnx::NodeProto &node, int index, int64_t opset);

/// The bytes of a tensor of `shape` with elements of `elementBytes` bytes,
/// or nothing if a dimension is negative or the size exceeds
/// kMaxTensorBytes (overflow-checked).
std::optional<uint64_t> tensorBytes(llvm::ArrayRef<int64_t> shape, uint64_t elementBytes);

/// Why `node` does not match its operator's signature at `opset`, one
/// reason per problem (empty when it matches, or when its domain or op type
/// has no ONNX schema: the importer reports those as unsupported).
std::vector<std::string> nodeSignatureProblems(const onnx::NodeProto &node, int64_t opset);

/// Why `node`'s inputs have data types its operator does not take at
/// `opset` (`inputDataTypes[i]`: TensorProto data type of input i, 0 when
/// absent or not a plain tensor).
std::vector<std::string> inputTypeProblems(const onnx::NodeProto &node, int64_t opset,
                                           llvm::ArrayRef<int32_t> inputDataTypes);

/// Graph-level problems: the opset, signature and initializer names,
/// negative input dimensions, values produced more than once. Each message
/// is complete.
std::vector<std::string> graphProblems(const onnx::ModelProto &model, int64_t opset);

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_MODELVALIDATION_H
