//===- Passes.h - Target-independent passes ---------------------*- C++ -*-===//

#ifndef TESSEL_PASSES_PASSES_H
#define TESSEL_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace tessel {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The name of the unit attribute that marks outlined kernel functions.
inline constexpr llvm::StringLiteral kKernelAttrName = "tessel.kernel";

} // namespace tessel

#endif // TESSEL_PASSES_PASSES_H
