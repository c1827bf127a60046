//===- RoundingConversions.cpp - roundeven then fptosi as one lrint -------===//

#include "targets/x86/RoundingConversions.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

namespace tessel::x86 {

namespace {

/// The x86 conversions rounding by MXCSR: f32 or f64 to i32 or i64.
bool hasRoundingConversion(llvm::Type *from, llvm::Type *to) {
  llvm::Type *source = from->getScalarType(), *result = to->getScalarType();
  return (source->isFloatTy() || source->isDoubleTy()) &&
         (result->isIntegerTy(32) || result->isIntegerTy(64));
}

} // namespace

void convertRoundEvenWithLrint(llvm::Module &module) {
  llvm::SmallVector<llvm::FPToSIInst *> conversions;
  for (llvm::Function &function : module)
    for (llvm::Instruction &instruction : llvm::instructions(function))
      if (auto *conversion = llvm::dyn_cast<llvm::FPToSIInst>(&instruction))
        if (auto *round = llvm::dyn_cast<llvm::IntrinsicInst>(conversion->getOperand(0)))
          if (round->getIntrinsicID() == llvm::Intrinsic::roundeven &&
              hasRoundingConversion(round->getType(), conversion->getType()))
            conversions.push_back(conversion);

  for (llvm::FPToSIInst *conversion : conversions) {
    auto *round = llvm::cast<llvm::IntrinsicInst>(conversion->getOperand(0));
    llvm::IRBuilder<> builder(conversion);
    llvm::Value *lrint =
        builder.CreateIntrinsic(llvm::Intrinsic::lrint, {conversion->getType(), round->getType()},
                                {round->getArgOperand(0)});
    conversion->replaceAllUsesWith(lrint);
    conversion->eraseFromParent();
    if (round->use_empty())
      round->eraseFromParent();
  }
}

} // namespace tessel::x86
