//===- KernelWeights.h - Constant weights that kernels read -----*- C++ -*-===//
//
// Kernels are functions that the host function calls; a weight is a
// constant of the host function passed as an argument. What is decided for
// a weight at compile time (its packing, whether its byte pairs fit 16-bit
// sums) needs the constant behind a kernel's operand.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_KERNELWEIGHTS_H
#define TESSEL_TARGETS_X86_KERNELWEIGHTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace tessel::x86 {

/// The calls of a module's kernels, found in one walk of the module:
/// asking the symbol table for each kernel's uses walks the whole module
/// per kernel, which took seconds on a graph of a thousand kernels.
class KernelCalls {
public:
  explicit KernelCalls(mlir::ModuleOp module);

  /// The one call of `kernel`, when it has exactly one use and that is a
  /// call (a kernel whose arguments change type must have no other).
  mlir::func::CallOp soleCall(mlir::func::FuncOp kernel) const;

private:
  /// Per symbol used in the module, its only user, or null for several.
  llvm::DenseMap<mlir::StringAttr, mlir::Operation *> onlyUser;
};

/// Gives argument `index` of `kernel` the type `type`, in its block and in
/// its function type (the caller passes a value of that type).
void setArgumentType(mlir::func::FuncOp kernel, unsigned index, mlir::Type type);

/// A kernel argument that one op reads, and the constant its call passes.
struct KernelWeight {
  unsigned argument;
  mlir::DenseElementsAttr value;
};

/// The weight `operand` reads, when it is an argument of `kernel` that only
/// its op reads and `call` passes a constant to it.
std::optional<KernelWeight> constantWeight(mlir::OpOperand &operand, mlir::func::FuncOp kernel,
                                           mlir::func::CallOp call);

/// Whether an 8-bit weight [..., K, N] has byte pairs along K that sum into
/// 16 bits exactly with any u8 activations (bytePairsFitI16).
bool bytePairsFit(mlir::DenseElementsAttr weight);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_KERNELWEIGHTS_H
