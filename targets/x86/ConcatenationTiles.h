//===- ConcatenationTiles.h - Workgroups of a concatenation kernel -*- C++ -*-===//
//
// A Concat node's kernel is a chain of tensor.insert_slice ops that copy its
// inputs into an empty tensor. insert_slice has no tiling interface, so
// tessel-x86-tile-and-fuse splits such a kernel itself: along an axis that
// every input spans whole (the pixel rows of a channel concatenation), each
// workgroup copies its rows of every input into its rows of the result, so
// that the cores share the copy instead of one core doing it all.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_CONCATENATIONTILES_H
#define TESSEL_TARGETS_X86_CONCATENATIONTILES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace tessel::x86 {

/// Splits `function` into workgroups if it is a concatenation kernel (an
/// insert_slice chain into tensor.empty, returned) whose result has at
/// least twice `minBytes`: at least one workgroup per `minBytes`, at most
/// `maxWorkgroups` where the extent's divisors allow. Returns whether it
/// did.
bool tileConcatenation(mlir::RewriterBase &rewriter, mlir::func::FuncOp function,
                       int64_t maxWorkgroups, int64_t minBytes);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_CONCATENATIONTILES_H
