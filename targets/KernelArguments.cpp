//===- KernelArguments.cpp - Kernels read their operands, never write them ===//

#include "targets/KernelArguments.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace tessel {

void markKernelArgumentsReadOnly(ModuleOp kernels) {
  Builder b(kernels.getContext());
  for (func::FuncOp function : kernels.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      if (isa<TensorType>(function.getArgument(i).getType()))
        function.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                            b.getBoolAttr(false));
  }
}

} // namespace tessel
