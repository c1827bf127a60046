//===- KernelWeights.cpp - Constant weights that kernels read -------------===//

#include "targets/x86/KernelWeights.h"
#include "targets/x86/DotProduct.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace tessel::x86 {

func::CallOp soleCall(func::FuncOp kernel, ModuleOp module) {
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(kernel, module);
  if (!uses || !llvm::hasSingleElement(*uses))
    return {};
  return dyn_cast<func::CallOp>(uses->begin()->getUser());
}

std::optional<KernelWeight> constantWeight(OpOperand &operand, func::FuncOp kernel,
                                           func::CallOp call) {
  auto argument = dyn_cast<BlockArgument>(operand.get());
  if (!call || !argument || argument.getOwner()->getParentOp() != kernel ||
      !argument.hasOneUse())
    return std::nullopt;
  DenseElementsAttr value;
  if (!matchPattern(call.getOperand(argument.getArgNumber()), m_Constant(&value)))
    return std::nullopt;
  return KernelWeight{argument.getArgNumber(), value};
}

bool bytePairsFit(DenseElementsAttr weight) {
  if (!weight.getElementType().isInteger(8))
    return false;
  auto values = llvm::to_vector(weight.getValues<int8_t>());
  return bytePairsFitI16(values, cast<ShapedType>(weight.getType()).getShape());
}

} // namespace tessel::x86
