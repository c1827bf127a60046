//===- Locations.h - ONNX node names from MLIR locations --------*- C++ -*-===//

#ifndef TESSEL_COMPILER_LOCATIONS_H
#define TESSEL_COMPILER_LOCATIONS_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace tessel {

/// The names of the ONNX nodes `loc` comes from (the importer gives each op
/// its node's name; fusion fuses them).
inline void nodeNamesOf(mlir::Location loc, llvm::SmallVectorImpl<std::string> &names) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    names.push_back(name.getName().str());
  } else if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location inner : fused.getLocations())
      nodeNamesOf(inner, names);
  } else if (auto callSite = llvm::dyn_cast<mlir::CallSiteLoc>(loc)) {
    nodeNamesOf(callSite.getCallee(), names);
  }
}

} // namespace tessel

#endif // TESSEL_COMPILER_LOCATIONS_H
