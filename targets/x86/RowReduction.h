//===- RowReduction.h - Reductions along the innermost axis ------*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_ROWREDUCTION_H
#define TESSEL_TARGETS_X86_ROWREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace tessel::x86 {

/// Rewrites a generic that reduces its innermost loop alone (sum, product,
/// maximum or minimum of an elementwise function of its inputs) into, per
/// row, a loop of `width`-lane steps into a vector accumulator, the last
/// partial step masked, and one horizontal reduction:
///
///   acc = splat(neutral)
///   for j in steps of width:  acc = combine(acc, f(inputs[row, j ...]))
///   out[row] = combine(out[row], reduce(acc))
mlir::LogicalResult vectorizeRowReduction(mlir::RewriterBase &rewriter,
                                          mlir::linalg::LinalgOp op, int64_t width);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_ROWREDUCTION_H
