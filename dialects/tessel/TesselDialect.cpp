//===- TesselDialect.cpp - The tessel graph dialect -----------------------===//

#include "dialects/tessel/TesselDialect.h"

using namespace mlir;
using namespace tessel;

#include "dialects/tessel/TesselDialect.cpp.inc"

void TesselDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/tessel/TesselOps.cpp.inc"
      >();
}

Operation *TesselDialect::materializeConstant(OpBuilder &builder,
                                              Attribute value, Type type,
                                              Location loc) {
  // Folding a quantized op gives its storage values.
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != storageType(type))
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
