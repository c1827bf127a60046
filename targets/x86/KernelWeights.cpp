//===- KernelWeights.cpp - Constant weights that kernels read -------------===//

#include "targets/x86/KernelWeights.h"
#include "targets/x86/DotProduct.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace tessel::x86 {

KernelCalls::KernelCalls(ModuleOp module) {
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(&module.getBodyRegion());
  if (!uses)
    return;
  for (const SymbolTable::SymbolUse &use : *uses) {
    auto [entry, first] =
        onlyUser.try_emplace(use.getSymbolRef().getRootReference(), use.getUser());
    if (!first)
      entry->second = nullptr;
  }
}

func::CallOp KernelCalls::soleCall(func::FuncOp kernel) const {
  Operation *user = onlyUser.lookup(kernel.getSymNameAttr());
  return user ? dyn_cast<func::CallOp>(user) : func::CallOp();
}

void setArgumentType(func::FuncOp kernel, unsigned index, Type type) {
  kernel.getArgument(index).setType(type);
  SmallVector<Type> inputs(kernel.getArgumentTypes());
  inputs[index] = type;
  kernel.setType(FunctionType::get(kernel.getContext(), inputs, kernel.getResultTypes()));
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
