//===- ObjectCode.h - LLVM-dialect kernels to x86 object files --*- C++ -*-===//
//
// LLVM's optimizer and code generator take most of the time of a compile
// and run on one thread per module. The kernels are therefore split into
// one module per entry point (with private copies of what each calls),
// and the modules are optimized and emitted in parallel, each in its own
// LLVMContext; the linker joins the objects.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_OBJECTCODE_H
#define TESSEL_TARGETS_X86_OBJECTCODE_H

#include "targets/LLVMOptimization.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <functional>
#include <memory>
#include <vector>

namespace tessel::x86 {

/// LLVM's pipeline for x86 kernels: their register blocks are unrolled
/// already (LLVMTuning::unrollLoops).
inline constexpr LLVMTuning kLLVMTuning{/*unrollLoops=*/false};

inline constexpr llvm::StringLiteral kTriple = "x86_64-unknown-linux-gnu";

/// A target machine for the kernels' CPU; every thread needs its own.
using MachineFactory = std::function<std::unique_ptr<llvm::TargetMachine>()>;

/// `module` as an object file or assembly text, its masked stores of one
/// lane made scalar (SingleLaneStores.h) and its rounding conversions one
/// instruction (RoundingConversions.h) first.
mlir::LogicalResult emitModule(llvm::Module &module, llvm::TargetMachine &machine,
                               llvm::CodeGenFileType kind, llvm::SmallVectorImpl<char> &out);

/// `kernels` (LLVM dialect) translated to LLVM IR and prepared for
/// `machine`: its triple and data layout set, not yet optimized.
std::unique_ptr<llvm::Module> translateKernels(mlir::ModuleOp kernels,
                                               llvm::LLVMContext &context,
                                               const llvm::TargetMachine &machine);

/// One optimized object file per entry point of `kernels` (functions that
/// carry kBindingBytesAttr), compiled on the context's threads.
mlir::FailureOr<std::vector<llvm::SmallVector<char>>>
compileObjects(mlir::ModuleOp kernels, const MachineFactory &machines, int optLevel);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_OBJECTCODE_H
