//===- Tensor.h - A dtype, a shape and host memory --------------*- C++ -*-===//

#ifndef TESSEL_RUNTIME_SRC_TENSOR_H
#define TESSEL_RUNTIME_SRC_TENSOR_H

#include "Memory.h"

#include "tessel/runtime.h"

#include <atomic>
#include <vector>

struct tsl_tensor_t {
  std::atomic<size_t> references{1};
  tsl_dtype dtype;
  std::vector<int64_t> shape;
  /// Either `owned` or the caller's memory (tsl_tensor_wrap).
  void *data = nullptr;
  size_t byteSize = 0;
  tessel::runtime::AlignedBytes owned;
};

namespace tessel::runtime {

/// A tensor of a valid `dtype` with zeroed, 64-byte aligned memory: what
/// tsl_tensor_allocate returns and what a session allocates for outputs.
tsl_status allocateTensor(tsl_dtype dtype, const int64_t *shape, size_t rank,
                          tsl_tensor *&tensor);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_TENSOR_H
