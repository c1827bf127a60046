//===- VaryingLength.h - Tensors padded to the varying length's bound -*- C++ -*-===//
//
// A model compiled with --max-shape computes at the bound of its varying
// length. A run copies each varying input into a buffer of the bound's
// size, zero past the length, and copies each varying output back trimmed
// to the length: both are copies of `outer` blocks of rows, one row per
// position along the varying dimension.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_VARYINGLENGTH_H
#define TESSEL_RUNTIME_SRC_VARYINGLENGTH_H

#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>

namespace tessel::runtime {

/// A tensor split around its varying dimension: `outer` blocks, each of as
/// many rows as the dimension's size, each row `rowBytes` bytes.
struct VaryingRows {
  size_t outer = 1;
  size_t rowBytes = 0;
};

/// The split of a signature tensor of `dtype` and `shape` around its
/// varying dimension `axis` (whatever `shape` holds there), for one run:
/// another dynamic dimension is the batch, of which a run computes one
/// sample (tessel-compile --dynamic-batch with --max-shape). Elements take
/// whole bytes (sub-byte ones one each), and the verifier checked that the
/// tensor fits in memory at the bound, so nothing overflows.
VaryingRows varyingRows(tsl_dtype dtype, const int64_t *shape, size_t rank, size_t axis);

/// Copies `length` positions of each block of `from` into `to`, whose
/// blocks hold `bound` positions, and zeroes the rest of `to`'s.
void padToBound(const VaryingRows &rows, const void *from, int64_t length, void *to, int64_t bound);

/// Copies the first `length` positions of each block of `from`, whose
/// blocks hold `bound` positions, into `to`.
void trimToLength(const VaryingRows &rows, const void *from, int64_t bound, void *to,
                  int64_t length);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_VARYINGLENGTH_H
