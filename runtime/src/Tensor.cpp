//===- Tensor.cpp - tsl_tensor --------------------------------------------===//

#include "Tensor.h"

#include "CEnum.h"
#include "Status.h"
#include "TensorType.h"

#include <memory>

using namespace tessel::runtime;

namespace {

/// Refuses a dtype argument outside the enum before anything reads it as a
/// tsl_dtype.
tsl_status checkDType(const char *function, const tsl_dtype &dtype) {
  if (isValidDType(enumBits(dtype)))
    return nullptr;
  return makeError(TSL_INVALID_ARGUMENT, "%s: dtype %d is not a tsl_dtype",
                   function, static_cast<int>(enumBits(dtype)));
}

/// A tensor of a valid `dtype` and `shape` with no memory yet, and its byte
/// size.
tsl_status createTensor(const char *function, tsl_dtype dtype,
                        const int64_t *shape, size_t rank,
                        std::unique_ptr<tsl_tensor_t> &tensor) {
  if (!shape && rank)
    return makeError(TSL_INVALID_ARGUMENT, "%s: shape is NULL but rank is %zu",
                     function, rank);
  size_t bytes;
  if (!tensorByteSize(dtype, shape, rank, bytes))
    return makeError(TSL_INVALID_ARGUMENT,
                     "%s: shape %s has a negative dimension or more bytes "
                     "than memory",
                     function, formatShape(shape, rank).c_str());
  tensor = std::make_unique<tsl_tensor_t>();
  tensor->dtype = dtype;
  tensor->shape.assign(shape, shape + rank);
  tensor->byteSize = bytes;
  return nullptr;
}

} // namespace

namespace tessel::runtime {

tsl_status allocateTensor(tsl_dtype dtype, const int64_t *shape, size_t rank,
                          tsl_tensor *&result) {
  std::unique_ptr<tsl_tensor_t> tensor;
  TSL_RETURN_IF_ERROR(
      createTensor("tsl_tensor_allocate", dtype, shape, rank, tensor));
  tensor->owned = allocateAligned(tensor->byteSize, kBufferAlignment,
                                  /*zero=*/true);
  if (!tensor->owned)
    return makeError(TSL_OUT_OF_MEMORY,
                     "cannot allocate %zu bytes for a %s tensor of shape %s",
                     tensor->byteSize, tsl_dtype_name(dtype),
                     formatShape(shape, rank).c_str());
  tensor->data = tensor->owned.get();
  result = tensor.release();
  return nullptr;
}

} // namespace tessel::runtime

extern "C" {

tsl_status tsl_tensor_allocate(tsl_dtype dtype, const int64_t *shape,
                               size_t rank, tsl_tensor **out_tensor) {
  if (!out_tensor)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_tensor_allocate: out_tensor is NULL");
  TSL_RETURN_IF_ERROR(checkDType("tsl_tensor_allocate", dtype));
  return guard([&] { return allocateTensor(dtype, shape, rank, *out_tensor); });
}

tsl_status tsl_tensor_wrap(tsl_dtype dtype, const int64_t *shape, size_t rank,
                           void *data, size_t byte_size,
                           tsl_tensor **out_tensor) {
  if (!out_tensor)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_tensor_wrap: out_tensor is NULL");
  TSL_RETURN_IF_ERROR(checkDType("tsl_tensor_wrap", dtype));
  return guard([&]() -> tsl_status {
    std::unique_ptr<tsl_tensor_t> tensor;
    TSL_RETURN_IF_ERROR(
        createTensor("tsl_tensor_wrap", dtype, shape, rank, tensor));
    if (byte_size != tensor->byteSize)
      return makeError(TSL_INVALID_ARGUMENT,
                       "tsl_tensor_wrap: byte_size is %zu but a %s tensor of "
                       "shape %s has %zu bytes",
                       byte_size, tsl_dtype_name(dtype),
                       formatShape(shape, rank).c_str(), tensor->byteSize);
    if (!data && byte_size)
      return makeError(TSL_INVALID_ARGUMENT,
                       "tsl_tensor_wrap: data is NULL for %zu bytes",
                       byte_size);
    tensor->data = data;
    *out_tensor = tensor.release();
    return nullptr;
  });
}

void tsl_tensor_retain(tsl_tensor *tensor) {
  if (tensor)
    tensor->references.fetch_add(1, std::memory_order_relaxed);
}

void tsl_tensor_release(tsl_tensor *tensor) {
  if (tensor && tensor->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete tensor;
}

// The accessors answer zeros for NULL rather than crash: errors never abort
// the process.

tsl_dtype tsl_tensor_dtype(const tsl_tensor *tensor) {
  return tensor ? tensor->dtype : TSL_F32;
}

size_t tsl_tensor_rank(const tsl_tensor *tensor) {
  return tensor ? tensor->shape.size() : 0;
}

const int64_t *tsl_tensor_shape(const tsl_tensor *tensor) {
  return tensor ? tensor->shape.data() : nullptr;
}

void *tsl_tensor_data(tsl_tensor *tensor) {
  return tensor ? tensor->data : nullptr;
}

size_t tsl_tensor_byte_size(const tsl_tensor *tensor) {
  return tensor ? tensor->byteSize : 0;
}

} // extern "C"
