//===- VaryingLength.cpp - Tensors padded to the varying length's bound ---===//

#include "VaryingLength.h"

#include "TensorType.h"

#include <cstring>
#include <vector>

namespace tessel::runtime {

bool varyingRows(tsl_dtype dtype, const int64_t *shape, size_t rank, size_t axis,
                 VaryingRows &rows) {
  rows.outer = 1;
  for (size_t d = 0; d < axis; ++d)
    if (__builtin_mul_overflow(rows.outer, static_cast<size_t>(shape[d]), &rows.outer))
      return false;
  // One row of the tensor is its dimensions after `axis`; rows of sub-byte
  // elements must fill whole bytes to be copied apart.
  std::vector<int64_t> row(shape + axis + 1, shape + rank);
  row.insert(row.begin(), 2);
  size_t twoRows, total;
  if (!tensorByteSize(dtype, row.data(), row.size(), twoRows) ||
      !tensorByteSize(dtype, shape, rank, total) || twoRows % 2 != 0)
    return false;
  rows.rowBytes = twoRows / 2;
  size_t expected;
  return !__builtin_mul_overflow(rows.outer * rows.rowBytes, static_cast<size_t>(shape[axis]),
                                 &expected) &&
         expected == total;
}

void padToBound(const VaryingRows &rows, const void *from, int64_t length, void *to,
                int64_t bound) {
  size_t kept = rows.rowBytes * static_cast<size_t>(length);
  size_t padding = rows.rowBytes * static_cast<size_t>(bound - length);
  auto *source = static_cast<const uint8_t *>(from);
  auto *target = static_cast<uint8_t *>(to);
  for (size_t block = 0; block < rows.outer; ++block) {
    if (kept)
      std::memcpy(target, source, kept);
    std::memset(target + kept, 0, padding);
    source += kept;
    target += kept + padding;
  }
}

void trimToLength(const VaryingRows &rows, const void *from, int64_t bound, void *to,
                  int64_t length) {
  size_t kept = rows.rowBytes * static_cast<size_t>(length);
  auto *source = static_cast<const uint8_t *>(from);
  auto *target = static_cast<uint8_t *>(to);
  for (size_t block = 0; block < rows.outer; ++block) {
    if (kept)
      std::memcpy(target, source, kept);
    source += rows.rowBytes * static_cast<size_t>(bound);
    target += kept;
  }
}

} // namespace tessel::runtime
