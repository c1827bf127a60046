//===- SingleLaneStores.cpp - Masked stores of one lane as scalars --------===//

#include "targets/x86/SingleLaneStores.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"

#include <optional>

namespace tessel::x86 {

namespace {

/// The one lane `mask` sets, if it is a constant that sets exactly one.
std::optional<unsigned> soleSetLane(llvm::Value *mask) {
  auto *constant = llvm::dyn_cast<llvm::Constant>(mask);
  auto *type = llvm::dyn_cast<llvm::FixedVectorType>(mask->getType());
  if (!constant || !type)
    return std::nullopt;
  std::optional<unsigned> set;
  for (unsigned lane = 0; lane < type->getNumElements(); ++lane) {
    auto *bit = llvm::dyn_cast_or_null<llvm::ConstantInt>(constant->getAggregateElement(lane));
    if (!bit)
      return std::nullopt; // undef or poison lanes: leave the store to LLVM
    if (bit->isZero())
      continue;
    if (set)
      return std::nullopt;
    set = lane;
  }
  return set;
}

} // namespace

void storeSingleLanesAsScalars(llvm::Module &module) {
  llvm::SmallVector<llvm::IntrinsicInst *> singleLane;
  for (llvm::Function &function : module)
    for (llvm::Instruction &instruction : llvm::instructions(function))
      if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction))
        if (call->getIntrinsicID() == llvm::Intrinsic::masked_store &&
            soleSetLane(call->getArgOperand(2)))
          singleLane.push_back(call);

  for (llvm::IntrinsicInst *store : singleLane) {
    llvm::Value *vector = store->getArgOperand(0);
    llvm::Value *address = store->getArgOperand(1);
    unsigned lane = *soleSetLane(store->getArgOperand(2));
    llvm::Type *element = llvm::cast<llvm::FixedVectorType>(vector->getType())->getElementType();
    const llvm::DataLayout &layout = module.getDataLayout();
    llvm::Align vectorAlign = store->getParamAlign(1).valueOrOne();
    llvm::Align laneAlign =
        llvm::commonAlignment(vectorAlign, lane * layout.getTypeStoreSize(element));

    llvm::IRBuilder<> builder(store);
    llvm::Value *value = builder.CreateExtractElement(vector, builder.getInt64(lane));
    llvm::Value *laneAddress = builder.CreateInBoundsGEP(element, address, builder.getInt64(lane));
    builder.CreateAlignedStore(value, laneAddress, laneAlign);
    store->eraseFromParent();
  }
}

} // namespace tessel::x86
