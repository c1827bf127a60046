//===- VaryingLength.cpp - Tensors padded to the varying length's bound ---===//

#include "VaryingLength.h"

#include <cstring>

namespace tessel::runtime {

VaryingRows varyingRows(tsl_dtype dtype, const int64_t *shape, size_t rank, size_t axis) {
  VaryingRows rows;
  rows.rowBytes = tsl_dtype_size(dtype);
  for (size_t d = 0; d < rank; ++d) {
    size_t size = shape[d] < 0 ? 1 : static_cast<size_t>(shape[d]);
    if (d < axis)
      rows.outer *= size;
    else if (d > axis)
      rows.rowBytes *= size;
  }
  return rows;
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
