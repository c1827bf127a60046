//===- TensorType.h - Element types and shapes ------------------*- C++ -*-===//
//
// Byte sizes computed without overflow and shapes printed for messages,
// shared by tensors, the verifier and the session's input checks.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_TENSORTYPE_H
#define TESSEL_RUNTIME_SRC_TENSORTYPE_H

#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessel::runtime {

/// Whether `dtype` is one of tsl_dtype's values.
bool isValidDType(uint32_t dtype);

/// Kernels store 4- and 2-bit elements in a byte each without defining the
/// bits above them; this zero- or sign-extends every element of an output.
void canonicalizeSubByteElements(tsl_dtype dtype, void *data, size_t bytes);

/// Bytes of a tensor of `dtype` and `shape`; false when a dimension is
/// negative, the dtype is invalid or the size does not fit in size_t.
bool tensorByteSize(uint32_t dtype, const int64_t *shape, size_t rank,
                    size_t &bytes);

/// The values an integer dtype holds (2- to 32-bit, either signedness):
/// the ones a quantized tensor's zero point may take. False for others.
bool integerRange(uint32_t dtype, int64_t &low, int64_t &high);

/// "[1, 3, 224, 224]".
std::string formatShape(const int64_t *shape, size_t rank);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_TENSORTYPE_H
