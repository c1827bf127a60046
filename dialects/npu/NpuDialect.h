//===- NpuDialect.h - The npu dialect ---------------------------*- C++ -*-===//
//
// Include this header to use the npu dialect, its ops and the conversion
// between an instruction op and the ISA's instruction record.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECTS_NPU_NPUDIALECT_H
#define TESSEL_DIALECTS_NPU_NPUDIALECT_H

#include "runtime/schema/NpuIsa.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/npu/NpuDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/npu/NpuOps.h.inc"

namespace tessel::npu {

/// The ISA's encoding records (runtime/schema/NpuIsa.h).
namespace encoding = tessel::schema::npu;

/// The instruction an instruction op stands for; failure, after a
/// diagnostic on `op`, when an attribute is not one of the instruction's
/// fields or its value does not fit the field.
mlir::FailureOr<encoding::Instruction> instructionOf(mlir::Operation *op);

/// Builds the op of `instruction`: each field that differs from its
/// default becomes an attribute.
mlir::Operation *createInstruction(mlir::OpBuilder &builder, mlir::Location loc,
                                   const encoding::Instruction &instruction);

} // namespace tessel::npu

#endif // TESSEL_DIALECTS_NPU_NPUDIALECT_H
