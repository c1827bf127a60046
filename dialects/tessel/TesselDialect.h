//===- TesselDialect.h - The tessel graph dialect ---------------*- C++ -*-===//
//
// Include this header to use the tessel dialect and its ops.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECTS_TESSEL_TESSELDIALECT_H
#define TESSEL_DIALECTS_TESSEL_TESSELDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
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

} // namespace tessel

#include "dialects/tessel/TesselDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/tessel/TesselOps.h.inc"

#endif // TESSEL_DIALECTS_TESSEL_TESSELDIALECT_H
