//===- Minifloat.h - 8- and 4-bit float conversions -------------*- C++ -*-===//
//
// LLVM has no arithmetic on the OCP/ONNX 8-bit floats (f8E4M3FN, f8E4M3FNUZ,
// f8E5M2, f8E5M2FNUZ) or FP4 E2M1; its type converter stores them as
// integers of their width. These build the conversions to and from f32 from
// integer and f32 arithmetic, so they vectorize like any elementwise body.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_TESSELTOLINALG_MINIFLOAT_H
#define TESSEL_PASSES_TESSELTOLINALG_MINIFLOAT_H

#include "mlir/IR/Builders.h"

namespace tessel {

/// Floats narrower than 16 bits, which need these conversions.
bool isMinifloat(mlir::Type type);

/// The f32 value of `x`, a scalar of minifloat type (exact).
mlir::Value minifloatToF32(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);

/// `x` (f32) rounded to nearest, ties to even, in the minifloat `format`.
/// Beyond the largest finite value: that value if `saturate` (or the format
/// has neither infinity nor NaN), else infinity where the format has one and
/// NaN where it does not.
mlir::Value f32ToMinifloat(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                           mlir::FloatType format, bool saturate);

} // namespace tessel

#endif // TESSEL_PASSES_TESSELTOLINALG_MINIFLOAT_H
