//===- BlockingUtils.h - What the register-blocking emitters share -*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_BLOCKINGUTILS_H
#define TESSEL_TARGETS_X86_BLOCKINGUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <algorithm>
#include <cstdint>

namespace tessel::x86 {

/// Issue slots that one reduction step of a register block takes, in FMAs:
/// its `fmas` FMAs (or other vector arithmetic), its `loads` loads and
/// broadcasts (two of each issue per cycle), or the FMA latency when too
/// few accumulators are independent to hide it.
inline int64_t stepCost(int64_t fmas, int64_t loads) {
  constexpr int64_t kLatencySlots = 8;
  return std::max({fmas, loads, kLatencySlots});
}

/// The value that `value` is a (chain of) unit-stride, rank-preserving
/// slice(s) of, with the offsets of `value` within it.
struct SliceOrigin {
  mlir::Value source;
  llvm::SmallVector<mlir::Value> offsets;
};

SliceOrigin traceSlices(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value);

/// The value at the root of the unit-stride, rank-preserving slices that
/// `value` is (`value` itself if it is no slice); creates nothing.
mlir::Value sliceRoot(mlir::Value value);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_BLOCKINGUTILS_H
