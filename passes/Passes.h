//===- Passes.h - Target-independent passes ---------------------*- C++ -*-===//

#ifndef TESSEL_PASSES_PASSES_H
#define TESSEL_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace tessel {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The patterns of tessel-expand-quantized-ops: quantized ops that mean a
/// float formula become it; with `all`, every quantized op does.
void populateExpandQuantizedOpsPatterns(mlir::RewritePatternSet &patterns, bool all);

/// The name of the unit attribute that marks outlined kernel functions.
inline constexpr llvm::StringLiteral kKernelAttrName = "tessel.kernel";

/// The unit attribute of a function result that its reader takes in
/// whatever layout the graph computes it (quantization watches tensors this
/// way): tessel-channels-last does not transpose it back to NCHW.
inline constexpr llvm::StringLiteral kAnyLayoutAttr = "tessel.any_layout";

/// On @main's arguments and results whose size along one dimension is the
/// varying length (--max-shape): that dimension's index.
inline constexpr llvm::StringLiteral kVaryingAttr = "tessel.varying";
/// On @main's last argument, a tensor<1xi64> holding the varying length.
inline constexpr llvm::StringLiteral kLengthAttr = "tessel.length";
/// On the linalg.generic of a `tessel.where` with `fills_past_length`.
inline constexpr llvm::StringLiteral kFillsPastLengthAttr = "tessel.fills_past_length";
/// On a kernel's result, and on a linalg op in a kernel (its result): the
/// axis along which no position at or past the varying length is ever read
/// (tessel-length-axes), so that a target may leave them uncomputed.
inline constexpr llvm::StringLiteral kLengthAxisAttr = "tessel.length_axis";

/// The elements after `axis` of a statically shaped `type`: its inner
/// stride, which a reshape keeps for every axis it keeps whole, so that
/// tessel-length-axes names a position axis by it.
inline int64_t elementsAfter(mlir::RankedTensorType type, unsigned axis) {
  int64_t elements = 1;
  for (int64_t size : type.getShape().drop_front(axis + 1))
    elements *= size;
  return elements;
}

/// Makes `function` return `values` (not a range of its terminator's own
/// operands): the terminator's operands and the function's type.
inline void setReturnedValues(mlir::func::FuncOp function, mlir::ValueRange values) {
  function.front().getTerminator()->setOperands(values);
  function.setType(mlir::FunctionType::get(function.getContext(), function.getArgumentTypes(),
                                           values.getTypes()));
}

} // namespace tessel

#endif // TESSEL_PASSES_PASSES_H
