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

/// Makes `function` return `values` (not a range of its terminator's own
/// operands): the terminator's operands and the function's type.
inline void setReturnedValues(mlir::func::FuncOp function, mlir::ValueRange values) {
  function.front().getTerminator()->setOperands(values);
  function.setType(mlir::FunctionType::get(function.getContext(), function.getArgumentTypes(),
                                           values.getTypes()));
}

} // namespace tessel

#endif // TESSEL_PASSES_PASSES_H
