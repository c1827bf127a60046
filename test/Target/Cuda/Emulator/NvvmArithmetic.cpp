//===- NvvmArithmetic.cpp - NVVM's arithmetic intrinsics as host LLVM IR --===//

#include "NvvmArithmetic.h"

#include "HostCalls.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

#include <optional>

namespace tessel::cuda::emulator {

namespace {

/// A floating-point operation of PTX that the emulator computes, named by
/// its instruction without the rounding and type suffixes.
struct FloatOperation {
  llvm::StringLiteral name;
  unsigned arity;
  /// The LLVM intrinsic that computes it, rounded to the nearest; none
  /// where floatOperation builds it from other IR.
  llvm::Intrinsic::ID intrinsic;
  /// What tessel_emu_rounded_f32/f64 compute for its directed roundings
  /// (.rm, .rp, .rz), where PTX has them.
  std::optional<RoundedOperation> rounded;
};

constexpr llvm::Intrinsic::ID kBuilt = llvm::Intrinsic::not_intrinsic;

const FloatOperation kFloatOperations[] = {
    {"add", 2, kBuilt, RoundedOperation::Add},
    {"mul", 2, kBuilt, RoundedOperation::Multiply},
    {"div", 2, kBuilt, RoundedOperation::Divide},
    {"rcp", 1, kBuilt, RoundedOperation::Reciprocal},
    {"fma", 3, llvm::Intrinsic::fma, RoundedOperation::MultiplyAdd},
    {"sqrt", 1, llvm::Intrinsic::sqrt, RoundedOperation::SquareRoot},
    {"rsqrt", 1, kBuilt, std::nullopt},
    {"ex2", 1, llvm::Intrinsic::exp2, std::nullopt},
    {"lg2", 1, llvm::Intrinsic::log2, std::nullopt},
    {"sin", 1, llvm::Intrinsic::sin, std::nullopt},
    {"cos", 1, llvm::Intrinsic::cos, std::nullopt},
    {"fabs", 1, llvm::Intrinsic::fabs, std::nullopt},
    // PTX's min and max return the operand that is not NaN, as minnum and
    // maxnum do.
    {"fmin", 2, llvm::Intrinsic::minnum, std::nullopt},
    {"fmax", 2, llvm::Intrinsic::maxnum, std::nullopt},
    {"floor", 1, llvm::Intrinsic::floor, std::nullopt},
    {"ceil", 1, llvm::Intrinsic::ceil, std::nullopt},
    {"trunc", 1, llvm::Intrinsic::trunc, std::nullopt},
    // (cvt.rni: to the nearest integer, ties to even.)
    {"round", 1, llvm::Intrinsic::roundeven, std::nullopt},
    {"saturate", 1, kBuilt, std::nullopt},
};

const FloatOperation *findFloatOperation(llvm::StringRef name) {
  for (const FloatOperation &operation : kFloatOperations)
    if (operation.name == name)
      return &operation;
  return nullptr;
}

/// `operation` on `x`, rounded to the nearest.
llvm::Value *floatOperation(llvm::IRBuilder<> &builder, const FloatOperation &operation,
                            llvm::ArrayRef<llvm::Value *> x) {
  llvm::Type *type = x[0]->getType();
  if (operation.intrinsic != kBuilt)
    return builder.CreateIntrinsic(operation.intrinsic, {type}, x);
  llvm::Value *zero = llvm::ConstantFP::get(type, 0.0), *one = llvm::ConstantFP::get(type, 1.0);
  if (operation.name == "add")
    return builder.CreateFAdd(x[0], x[1]);
  if (operation.name == "mul")
    return builder.CreateFMul(x[0], x[1]);
  if (operation.name == "div")
    return builder.CreateFDiv(x[0], x[1]);
  if (operation.name == "rcp")
    return builder.CreateFDiv(one, x[0]);
  if (operation.name == "rsqrt")
    return builder.CreateFDiv(one, builder.CreateIntrinsic(llvm::Intrinsic::sqrt, {type}, x));
  // saturate: clamped to [0, 1], +0 for -0 and NaN.
  llvm::Value *low = builder.CreateSelect(builder.CreateFCmpOGT(x[0], zero), x[0], zero);
  return builder.CreateSelect(builder.CreateFCmpOLE(low, one), low, one);
}

/// The rounding modes of PTX's .rm, .rp and .rz, as HostCalls.h numbers
/// them.
std::optional<DirectedRounding> directedRounding(llvm::StringRef suffix) {
  return llvm::StringSwitch<std::optional<DirectedRounding>>(suffix)
      .Case("rm", DirectedRounding::Down)
      .Case("rp", DirectedRounding::Up)
      .Case("rz", DirectedRounding::TowardZero)
      .Default(std::nullopt);
}

/// `operation` (f32 or f64) on `x`, rounded other than to the nearest, by
/// the host's FPU in that rounding mode (tessel_emu_rounded_f32/f64).
llvm::Value *roundedOperation(llvm::IRBuilder<> &builder, RoundedOperation operation,
                              DirectedRounding rounding, llvm::ArrayRef<llvm::Value *> x) {
  llvm::Type *type = x[0]->getType();
  llvm::SmallVector<llvm::Value *> arguments = {builder.getInt32(int32_t(operation)),
                                                builder.getInt32(int32_t(rounding))};
  for (size_t i = 0; i < 3; ++i)
    arguments.push_back(i < x.size() ? x[i] : llvm::ConstantFP::get(type, 0.0));
  llvm::Module &module = *builder.GetInsertBlock()->getModule();
  llvm::FunctionCallee function = module.getOrInsertFunction(
      type->isFloatTy() ? "tessel_emu_rounded_f32" : "tessel_emu_rounded_f64",
      llvm::FunctionType::get(type, {builder.getInt32Ty(), builder.getInt32Ty(), type, type, type},
                              false));
  return builder.CreateCall(function, arguments);
}

/// `x`, or a zero of its sign where it is subnormal (.ftz's flush of
/// operands and results).
llvm::Value *flushSubnormal(llvm::IRBuilder<> &builder, llvm::Value *x) {
  llvm::Type *type = x->getType();
  const llvm::fltSemantics &semantics = type->getFltSemantics();
  llvm::Value *smallestNormal =
      llvm::ConstantFP::get(type, llvm::APFloat::getSmallestNormalized(semantics));
  llvm::Value *magnitude = builder.CreateIntrinsic(llvm::Intrinsic::fabs, {type}, {x});
  llvm::Value *zero = builder.CreateIntrinsic(llvm::Intrinsic::copysign, {type},
                                              {llvm::ConstantFP::get(type, 0.0), x});
  return builder.CreateSelect(builder.CreateFCmpOLT(magnitude, smallestNormal), zero, x);
}

/// The high half of the product of two integers, signed or not.
llvm::Value *multiplyHigh(llvm::IRBuilder<> &builder, llvm::ArrayRef<llvm::Value *> x,
                          bool isSigned) {
  unsigned width = x[0]->getType()->getIntegerBitWidth();
  llvm::Type *wide = builder.getIntNTy(2 * width);
  auto extend = [&](llvm::Value *value) {
    return isSigned ? builder.CreateSExt(value, wide) : builder.CreateZExt(value, wide);
  };
  llvm::Value *product = builder.CreateMul(extend(x[0]), extend(x[1]));
  return builder.CreateTrunc(builder.CreateLShr(product, width), x[0]->getType());
}

} // namespace

llvm::Value *hostArithmetic(llvm::IRBuilder<> &builder, llvm::StringRef name,
                            llvm::ArrayRef<llvm::Value *> operands, llvm::Type *result) {
  // The bit moves between a double and its two 32-bit words.
  if (name == "d2i.lo" || name == "d2i.hi") {
    llvm::Value *bits = builder.CreateBitCast(operands[0], builder.getInt64Ty());
    if (name == "d2i.hi")
      bits = builder.CreateLShr(bits, 32);
    return builder.CreateTrunc(bits, builder.getInt32Ty());
  }
  if (name == "lohi.i2d") {
    llvm::Value *low = builder.CreateZExt(operands[0], builder.getInt64Ty());
    llvm::Value *high =
        builder.CreateShl(builder.CreateZExt(operands[1], builder.getInt64Ty()), 32);
    return builder.CreateBitCast(builder.CreateOr(low, high), builder.getDoubleTy());
  }
  if (name == "mulhi.i" || name == "mulhi.ll")
    return multiplyHigh(builder, operands, /*isSigned=*/true);
  if (name == "mulhi.ui" || name == "mulhi.ull")
    return multiplyHigh(builder, operands, /*isSigned=*/false);
  // Conversions to the nearest, or towards zero.
  llvm::StringRef conversion = name;
  bool nearest = conversion.consume_back(".rn"), towardZero = conversion.consume_back(".rz");
  if (nearest || towardZero) {
    auto [from, to] = conversion.split('2');
    auto isInteger = [](llvm::StringRef type) {
      return type == "i" || type == "ui" || type == "ll" || type == "ull";
    };
    auto isFloat = [](llvm::StringRef type) { return type == "f" || type == "d"; };
    if (isFloat(from) && isInteger(to)) {
      llvm::Value *x = operands[0];
      llvm::Value *rounded = builder.CreateIntrinsic(
          nearest ? llvm::Intrinsic::roundeven : llvm::Intrinsic::trunc, {x->getType()}, {x});
      // Out of range saturates, as cvt does. NaN gives 0 from an f32 to a
      // 32-bit integer, and the sign bit alone otherwise (LLVM's
      // NVVMIntrinsicUtils.h, after the PTX ISA).
      llvm::Value *saturated = builder.CreateIntrinsic(
          to.starts_with("u") ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat,
          {result, rounded->getType()}, {rounded});
      unsigned width = result->getIntegerBitWidth();
      bool nanIsZero = from == "f" && width == 32;
      llvm::Value *forNan = llvm::ConstantInt::get(
          result, nanIsZero ? llvm::APInt::getZero(width) : llvm::APInt::getSignMask(width));
      return builder.CreateSelect(builder.CreateFCmpUNO(x, x), forNan, saturated);
    }
    if (isInteger(from) && isFloat(to) && nearest)
      return from.starts_with("u") ? builder.CreateUIToFP(operands[0], result)
                                   : builder.CreateSIToFP(operands[0], result);
    if (from == "d" && to == "f" && nearest)
      return builder.CreateFPTrunc(operands[0], result);
  }
  // The f32 and f64 operations: `op[.rn|.rm|.rp|.rz|.approx][.ftz].type`,
  // the rounding left out by those that do not round.
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '.');
  bool flushToZero = llvm::is_contained(parts, "ftz");
  if (flushToZero)
    llvm::erase(parts, "ftz");
  if (parts.size() < 2 || parts.size() > 3 ||
      !llvm::is_contained({"f", "d", "f32", "f64"}, parts.back()))
    return nullptr;
  auto isScalarFloat = [](llvm::Type *type) { return type->isFloatTy() || type->isDoubleTy(); };
  const FloatOperation *operation = findFloatOperation(parts[0]);
  if (!operation || operands.size() != operation->arity || !isScalarFloat(result) ||
      !llvm::all_of(operands, [&](llvm::Value *x) { return x->getType() == result; }))
    return nullptr;
  std::optional<DirectedRounding> directed;
  if (parts.size() == 3) {
    directed = directedRounding(parts[1]);
    if (!directed && parts[1] != "rn" && parts[1] != "approx")
      return nullptr;
    if (directed && !operation->rounded)
      return nullptr;
  }
  llvm::SmallVector<llvm::Value *> inputs(operands);
  if (flushToZero)
    for (llvm::Value *&input : inputs)
      input = flushSubnormal(builder, input);
  llvm::Value *value = directed ? roundedOperation(builder, *operation->rounded, *directed, inputs)
                                : floatOperation(builder, *operation, inputs);
  return flushToZero ? flushSubnormal(builder, value) : value;
}

} // namespace tessel::cuda::emulator
