//===- Registration.h - Dialects and interfaces Tessel uses -----*- C++ -*-===//

#ifndef TESSEL_COMPILER_REGISTRATION_H
#define TESSEL_COMPILER_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace tessel {

/// Adds every dialect the compiler goes through, from tessel to LLVM, with
/// the external interface models (bufferization, tiling, value bounds,
/// conversion to LLVM) that its pipelines rely on.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Registers all of Tessel's passes and pipelines (for tessel-opt).
void registerCompilerPasses();

} // namespace tessel

#endif // TESSEL_COMPILER_REGISTRATION_H
