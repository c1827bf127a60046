//===- Sequences.cpp - ONNX sequences and optionals at import -------------===//

#include "compiler/onnx/Sequences.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace tessel::onnx_import {

Value makeSequence(OpBuilder &builder, Location loc, ValueRange elements) {
  auto type = TupleType::get(builder.getContext(), elements.getTypes());
  return UnrealizedConversionCastOp::create(builder, loc, TypeRange{type}, elements).getResult(0);
}

std::optional<SmallVector<Value>> sequenceElements(Value value) {
  if (!value || !isa<TupleType>(value.getType()))
    return std::nullopt;
  auto cast = value.getDefiningOp<UnrealizedConversionCastOp>();
  if (!cast)
    return std::nullopt;
  return SmallVector<Value>(cast.getInputs());
}

Value makeEmptyOptional(OpBuilder &builder, Location loc) {
  return UnrealizedConversionCastOp::create(builder, loc, TypeRange{builder.getNoneType()},
                                            ValueRange{})
      .getResult(0);
}

bool isEmptyOptional(Value value) { return value && isa<NoneType>(value.getType()); }

std::string describeValue(Value value) {
  if (std::optional<SmallVector<Value>> elements = sequenceElements(value))
    return "a sequence of " + std::to_string(elements->size()) +
           (elements->size() == 1 ? " tensor" : " tensors");
  if (isEmptyOptional(value))
    return "an empty optional";
  return "a tensor";
}

bool takesSequences(llvm::StringRef opType) {
  return llvm::StringSwitch<bool>(opType)
      .Cases({"SequenceInsert", "SequenceErase", "SequenceAt", "SequenceLength"}, true)
      .Cases({"ConcatFromSequence", "SequenceMap", "Identity"}, true)
      .Cases({"Optional", "OptionalHasElement", "OptionalGetElement"}, true)
      .Default(false);
}

void eraseUnusedSequences(func::FuncOp function) {
  SmallVector<Operation *> casts;
  function.walk([&](UnrealizedConversionCastOp cast) {
    if (cast->getNumResults() == 1 && isa<TupleType, NoneType>(cast.getResult(0).getType()))
      casts.push_back(cast);
  });
  // A sequence made from another's elements never uses it: each is erased
  // once nothing reads it, latest first.
  for (Operation *cast : llvm::reverse(casts))
    if (cast->use_empty())
      cast->erase();
}

} // namespace tessel::onnx_import
