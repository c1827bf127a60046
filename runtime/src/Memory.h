//===- Memory.h - Aligned host memory ---------------------------*- C++ -*-===//
//
// Kernels assume every buffer is 64-byte aligned (KernelAbi.h), and the
// verifier checks weight offsets relative to the start of the file, so all
// host memory the runtime hands out goes through here.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_MEMORY_H
#define TESSEL_RUNTIME_SRC_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace tessel::runtime {

/// The alignment kernels rely on (tessel::schema::kAlignment).
inline constexpr size_t kBufferAlignment = 64;

struct FreeDeleter {
  void operator()(void *pointer) const { std::free(pointer); }
};

/// Memory from allocateAligned.
using AlignedBytes = std::unique_ptr<uint8_t[], FreeDeleter>;

/// `size` bytes aligned to `alignment` (a power of two, at least
/// sizeof(void *)), zeroed when `zero` is set. Never null on success, even
/// for zero bytes; null when the allocation fails.
AlignedBytes allocateAligned(size_t size, size_t alignment, bool zero);

/// Whether `pointer` is aligned to kBufferAlignment.
inline bool isBufferAligned(const void *pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % kBufferAlignment == 0;
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_MEMORY_H
