//===- Bf16MaskedAccesses.cpp - Masked bf16 loads and stores as i16 -------===//

#include "targets/x86/Bf16MaskedAccesses.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"

namespace tessel::x86 {

namespace {

/// The i16 vector type of the same lanes as `type`, when it is a bf16
/// vector.
llvm::FixedVectorType *integerCounterpart(llvm::Type *type) {
  auto *vector = llvm::dyn_cast<llvm::FixedVectorType>(type);
  if (!vector || !vector->getElementType()->isBFloatTy())
    return nullptr;
  return llvm::FixedVectorType::get(llvm::Type::getInt16Ty(type->getContext()),
                                    vector->getNumElements());
}

/// `value` (a bf16 vector) as `integerType`. A constant (a load's
/// passthru) becomes an i16 constant lane by lane: a bitcast of a bf16
/// constant with poison lanes does not fold, and would be materialized as
/// bf16 conversions.
llvm::Value *asIntegers(llvm::IRBuilder<> &builder, llvm::Value *value,
                        llvm::FixedVectorType *integerType) {
  if (auto *cast = llvm::dyn_cast<llvm::BitCastInst>(value))
    return builder.CreateBitCast(cast->getOperand(0), integerType);
  auto *constant = llvm::dyn_cast<llvm::Constant>(value);
  if (!constant)
    return builder.CreateBitCast(value, integerType);
  llvm::SmallVector<llvm::Constant *> lanes;
  for (unsigned lane = 0; lane < integerType->getNumElements(); ++lane) {
    llvm::Constant *element = constant->getAggregateElement(lane);
    if (auto *number = llvm::dyn_cast_or_null<llvm::ConstantFP>(element))
      lanes.push_back(builder.getInt16(number->getValueAPF().bitcastToAPInt().getZExtValue()));
    else
      lanes.push_back(llvm::PoisonValue::get(builder.getInt16Ty()));
  }
  return llvm::ConstantVector::get(lanes);
}

/// The bf16 vector that a masked load returns or a masked store writes.
llvm::Type *accessedType(llvm::IntrinsicInst *call) {
  if (call->getIntrinsicID() == llvm::Intrinsic::masked_load)
    return call->getType();
  return call->getArgOperand(0)->getType();
}

} // namespace

void accessBf16MasksAsIntegers(llvm::Module &module) {
  llvm::SmallVector<llvm::IntrinsicInst *> accesses;
  for (llvm::Function &function : module)
    for (llvm::Instruction &instruction : llvm::instructions(function))
      if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction))
        if ((call->getIntrinsicID() == llvm::Intrinsic::masked_load ||
             call->getIntrinsicID() == llvm::Intrinsic::masked_store) &&
            integerCounterpart(accessedType(call)))
          accesses.push_back(call);

  for (llvm::IntrinsicInst *access : accesses) {
    llvm::Type *bf16Type = accessedType(access);
    llvm::FixedVectorType *integerType = integerCounterpart(bf16Type);
    llvm::IRBuilder<> builder(access);
    if (access->getIntrinsicID() == llvm::Intrinsic::masked_load) {
      // (address, mask, passthru)
      llvm::Value *passthru = asIntegers(builder, access->getArgOperand(2), integerType);
      llvm::Value *loaded = builder.CreateMaskedLoad(
          integerType, access->getArgOperand(0), access->getParamAlign(0).valueOrOne(),
          access->getArgOperand(1), passthru);
      auto *restored = llvm::cast<llvm::BitCastInst>(builder.CreateBitCast(loaded, bf16Type));
      access->replaceAllUsesWith(restored);
      // The bf16 vector is mostly bitcast on at once (a group of activations
      // to an i32 to broadcast): that bitcast reads the integers instead.
      for (llvm::User *reader : llvm::make_early_inc_range(restored->users()))
        if (auto *onward = llvm::dyn_cast<llvm::BitCastInst>(reader)) {
          llvm::IRBuilder<> after(onward);
          onward->replaceAllUsesWith(after.CreateBitCast(loaded, onward->getType()));
          onward->eraseFromParent();
        }
      if (restored->use_empty())
        restored->eraseFromParent();
    } else {
      // (value, address, mask)
      builder.CreateMaskedStore(asIntegers(builder, access->getArgOperand(0), integerType),
                                access->getArgOperand(1), access->getParamAlign(1).valueOrOne(),
                                access->getArgOperand(2));
    }
    access->eraseFromParent();
  }
}

} // namespace tessel::x86
