//===- TensorFiles.h - Tensors from and to .pb and .npy files ---*- C++ -*-===//

#ifndef TESSEL_COMPILER_DATA_TENSORFILES_H
#define TESSEL_COMPILER_DATA_TENSORFILES_H

#include "tessel/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::data {

/// A tensor in host memory, as files hold it.
struct HostTensor {
  std::string name;
  tsl_dtype dtype = TSL_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  size_t elementCount() const;
};

/// "[1, 3, 224, 224]", for messages.
std::string formatShape(const std::vector<int64_t> &shape);

/// Reads a serialized onnx.TensorProto (the backend tests' input_N.pb and
/// output_N.pb). Throws std::runtime_error naming the file on bad input.
HostTensor readTensorProto(const std::string &path);

/// What an ONNX value file holds: a TensorProto, a SequenceProto of
/// tensors, or an OptionalProto of either.
enum class ValueKind { Tensor, Sequence, Optional };

/// The value of such a file: its name, whether it is present (an optional
/// may be empty), and its tensors (one for a tensor).
struct ValueFile {
  std::string name;
  bool present = true;
  std::vector<HostTensor> tensors;
};

/// Reads the serialized ONNX value of `kind` at `path`. Throws
/// std::runtime_error naming the file on bad input.
ValueFile readValueProto(const std::string &path, ValueKind kind);

/// Reads a NumPy .npy file (format 1.0-3.0, little-endian, C order).
HostTensor readNpy(const std::string &path);

/// Whether NumPy has a type for `dtype`; writeNpy throws for the others
/// (bf16, the 8-bit floats, the sub-byte integers).
bool hasNpyType(tsl_dtype dtype);

/// Writes a NumPy .npy file (format 1.0).
void writeNpy(const std::string &path, const HostTensor &tensor);

/// Reads .npy or .pb by extension.
HostTensor readTensorFile(const std::string &path);

} // namespace tessel::data

#endif // TESSEL_COMPILER_DATA_TENSORFILES_H
