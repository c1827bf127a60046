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

/// Reads a serialized onnx.SequenceProto of tensors: its tensors in order.
std::vector<HostTensor> readSequenceProto(const std::string &path);

/// Reads a serialized onnx.OptionalProto of a tensor or a sequence of
/// tensors: its tensors (one for a tensor), or nullopt when it is empty.
std::optional<std::vector<HostTensor>> readOptionalProto(const std::string &path);

/// Reads a NumPy .npy file (format 1.0-3.0, little-endian, C order).
HostTensor readNpy(const std::string &path);

/// Writes a NumPy .npy file (format 1.0).
void writeNpy(const std::string &path, const HostTensor &tensor);

/// Reads .npy or .pb by extension.
HostTensor readTensorFile(const std::string &path);

} // namespace tessel::data

#endif // TESSEL_COMPILER_DATA_TENSORFILES_H
