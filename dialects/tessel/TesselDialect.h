//===- TesselDialect.h - The tessel graph dialect ---------------*- C++ -*-===//
//
// Include this header to use the tessel dialect and its ops.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECTS_TESSEL_TESSELDIALECT_H
#define TESSEL_DIALECTS_TESSEL_TESSELDIALECT_H

#include "dialects/tessel/QuantizedTypes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Quant/IR/Quant.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessel {

/// Marks ops that compute each result element from the operand elements at
/// the same (broadcast) index; kernel formation fuses them into producers.
template <typename ConcreteType>
class ElementwiseMap
    : public mlir::OpTrait::TraitBase<ConcreteType, ElementwiseMap> {};

/// Checks the quantized types of an op's operands and results
/// (verifyQuantizedTypes); every tessel op has it.
template <typename ConcreteType>
class QuantizedTypesConsistent
    : public mlir::OpTrait::TraitBase<ConcreteType, QuantizedTypesConsistent> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyQuantizedTypes(op);
  }
};

} // namespace tessel

#include "dialects/tessel/TesselDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/tessel/TesselOps.h.inc"

namespace tessel {

/// Whether operand `index` of an ElementwiseMap op is read at the result's
/// (broadcast) index: every operand but a lookup's table.
inline bool readsElementwise(mlir::Operation *op, unsigned index) {
  return !(mlir::isa<LookupOp>(op) && index == 1);
}

} // namespace tessel

#endif // TESSEL_DIALECTS_TESSEL_TESSELDIALECT_H
