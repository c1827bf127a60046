//===- Memory.cpp - Aligned host memory -----------------------------------===//

#include "Memory.h"

#include <cstring>

namespace tessel::runtime {

AlignedBytes allocateAligned(size_t size, size_t alignment, bool zero) {
  // aligned_alloc wants a multiple of the alignment; a zero-byte request
  // still gets a real, distinct pointer.
  size_t rounded;
  if (__builtin_add_overflow(size == 0 ? 1 : size, alignment - 1, &rounded))
    return nullptr;
  rounded &= ~(alignment - 1);
  AlignedBytes bytes(
      static_cast<uint8_t *>(std::aligned_alloc(alignment, rounded)));
  if (bytes && zero)
    std::memset(bytes.get(), 0, rounded);
  return bytes;
}

} // namespace tessel::runtime
