//===- Minifloat.cpp - 8- and 4-bit float conversions ---------------------===//
//
// Both directions work on the f32 bit pattern. A minifloat with M fraction
// bits and smallest normal exponent emin stores the exponent e biased by
// 1 - emin; below 2^emin it is subnormal with quantum 2^(emin - M). Rounding
// to a minifloat divides by the quantum of the value's binade (a power of
// two, so exactly), rounds half to even and multiplies back: every step is
// exact in f32, and a value that rounds up into the next binade or past the
// largest finite value comes out as such.
//
//===----------------------------------------------------------------------===//

#include "passes/TesselToLinalg/Minifloat.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace tessel {
namespace {

/// The fields and special values of a minifloat, from its APFloat semantics.
struct Layout {
  explicit Layout(FloatType type) {
    const llvm::fltSemantics &semantics = type.getFloatSemantics();
    width = llvm::APFloat::semanticsSizeInBits(semantics);
    mantissaBits = llvm::APFloat::semanticsPrecision(semantics) - 1;
    minExponent = llvm::APFloat::semanticsMinExponent(semantics);
    hasInf = llvm::APFloat::semanticsHasInf(semantics);
    hasNaN = llvm::APFloat::semanticsHasNaN(semantics);
    auto bitsOf = [](const llvm::APFloat &value) {
      return static_cast<int64_t>(value.bitcastToAPInt().getZExtValue());
    };
    if (hasInf)
      infBits = bitsOf(llvm::APFloat::getInf(semantics));
    if (hasNaN)
      nanBits = bitsOf(llvm::APFloat::getQNaN(semantics));
    llvm::APFloat largestValue = llvm::APFloat::getLargest(semantics);
    largestBits = bitsOf(largestValue);
    bool losesInfo;
    largestValue.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
                         &losesInfo);
    largest = largestValue.convertToFloat();
  }

  int64_t signBit() const { return int64_t{1} << (width - 1); }
  /// FNUZ formats: NaN takes the pattern of negative zero, which they lack.
  bool nanIsNegativeZero() const { return hasNaN && nanBits == signBit(); }

  unsigned width, mantissaBits;
  int minExponent;
  bool hasInf, hasNaN;
  int64_t infBits = 0, nanBits = 0, largestBits;
  float largest;
};

/// i32 and f32 arithmetic at one location.
class Bits {
public:
  Bits(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value i32(int64_t value) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(static_cast<int32_t>(value)));
  }
  Value f32(double value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(value)));
  }
  Value add(Value lhs, Value rhs) { return arith::AddIOp::create(b, loc, lhs, rhs); }
  Value bitAnd(Value lhs, int64_t mask) { return arith::AndIOp::create(b, loc, lhs, i32(mask)); }
  Value bitOr(Value lhs, Value rhs) { return arith::OrIOp::create(b, loc, lhs, rhs); }
  Value shl(Value lhs, int64_t amount) { return arith::ShLIOp::create(b, loc, lhs, i32(amount)); }
  Value lshr(Value lhs, int64_t amount) {
    return arith::ShRUIOp::create(b, loc, lhs, i32(amount));
  }
  Value equal(Value lhs, int64_t rhs) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lhs, i32(rhs));
  }
  Value select(Value condition, Value onTrue, Value onFalse) {
    return arith::SelectOp::create(b, loc, condition, onTrue, onFalse);
  }
  Value toF32(Value bits) { return arith::BitcastOp::create(b, loc, b.getF32Type(), bits); }
  Value toI32(Value value) { return arith::BitcastOp::create(b, loc, b.getI32Type(), value); }

  OpBuilder &b;
  Location loc;
};

} // namespace

bool isMinifloat(Type type) {
  return isa<FloatType>(type) && type.getIntOrFloatBitWidth() < 16;
}

Value minifloatToF32(OpBuilder &b, Location loc, Value x) {
  Layout layout(cast<FloatType>(x.getType()));
  Bits bits(b, loc);
  unsigned m = layout.mantissaBits;
  Value stored = arith::BitcastOp::create(b, loc, b.getIntegerType(layout.width), x);
  Value u = arith::ExtUIOp::create(b, loc, b.getI32Type(), stored);
  Value magnitudeBits = bits.bitAnd(u, layout.signBit() - 1);
  Value exponent = bits.lshr(magnitudeBits, m);
  Value fraction = bits.bitAnd(magnitudeBits, (int64_t{1} << m) - 1);

  // Normal: rebias the exponent to f32's and left-align the fraction.
  Value normal = bits.toF32(bits.bitOr(
      bits.shl(bits.add(exponent, bits.i32(layout.minExponent - 1 + 127)), 23),
      bits.shl(fraction, 23 - m)));
  Value subnormal = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), fraction),
      bits.f32(std::ldexp(1.0, layout.minExponent - static_cast<int>(m))));
  Value magnitude = bits.select(bits.equal(exponent, 0), subnormal, normal);
  if (layout.hasInf) {
    int64_t allOnes = (int64_t{1} << (layout.width - 1 - m)) - 1;
    magnitude = bits.select(bits.equal(exponent, allOnes), bits.f32(INFINITY), magnitude);
  }
  Value sign = bits.shl(bits.bitAnd(u, layout.signBit()), 32 - layout.width);
  Value result = bits.toF32(bits.bitOr(bits.toI32(magnitude), sign));

  if (!layout.hasNaN)
    return result;
  Value isNaN;
  if (layout.nanIsNegativeZero())
    isNaN = bits.equal(u, layout.nanBits);
  else if (layout.hasInf) // IEEE-like: all-ones exponent, nonzero fraction
    isNaN = arith::AndIOp::create(
        b, loc, bits.equal(exponent, (int64_t{1} << (layout.width - 1 - m)) - 1),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, fraction, bits.i32(0)));
  else // FN: all magnitude bits set
    isNaN = bits.equal(magnitudeBits, layout.nanBits);
  return bits.select(isNaN, bits.f32(NAN), result);
}

Value f32ToMinifloat(OpBuilder &b, Location loc, Value x, FloatType format,
                     bool saturate) {
  Layout layout(format);
  Bits bits(b, loc);
  int m = static_cast<int>(layout.mantissaBits);
  Value xBits = bits.toI32(x);
  Value sign = bits.lshr(xBits, 31);
  Value magnitude = bits.toF32(bits.bitAnd(xBits, 0x7fffffff));

  // The quantum of the magnitude's binade, never finer than the subnormals'.
  Value exponent = arith::MaxSIOp::create(
      b, loc, bits.add(bits.lshr(bits.toI32(magnitude), 23), bits.i32(-127)),
      bits.i32(layout.minExponent));
  Value quantum = bits.toF32(bits.shl(bits.add(exponent, bits.i32(127 - m)), 23));
  Value rounded = arith::MulFOp::create(
      b, loc, math::RoundEvenOp::create(b, loc, arith::DivFOp::create(b, loc, magnitude, quantum)),
      quantum);

  Value roundedBits = bits.toI32(rounded);
  Value roundedExponent = bits.add(bits.lshr(roundedBits, 23), bits.i32(-127));
  Value normalCode = bits.bitOr(
      bits.shl(bits.add(roundedExponent, bits.i32(1 - layout.minExponent)), m),
      bits.bitAnd(bits.lshr(roundedBits, 23 - m), (int64_t{1} << m) - 1));
  // Below the smallest normal, the code is the count of subnormal quanta.
  Value subnormalCode = arith::FPToUIOp::create(
      b, loc, b.getI32Type(),
      arith::DivFOp::create(b, loc, rounded, bits.f32(std::ldexp(1.0, layout.minExponent - m))));
  Value isNormal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, roundedExponent,
                                         bits.i32(layout.minExponent));
  Value code = bits.select(isNormal, normalCode, subnormalCode);

  Value overflows = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, rounded,
                                          bits.f32(layout.largest));
  int64_t overflowCode = layout.largestBits;
  if (!saturate && layout.hasInf)
    overflowCode = layout.infBits;
  else if (!saturate && layout.hasNaN && !layout.nanIsNegativeZero())
    overflowCode = layout.nanBits;
  code = bits.select(overflows, bits.i32(overflowCode), code);

  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  Value signed_ = bits.bitOr(code, bits.shl(sign, layout.width - 1));
  if (layout.nanIsNegativeZero()) {
    // No negative zero; NaN, and overflow without saturation, is 0x80.
    signed_ = bits.select(bits.equal(code, 0), bits.i32(0), signed_);
    Value toNaN = isNaN;
    if (!saturate)
      toNaN = arith::OrIOp::create(b, loc, isNaN, overflows);
    signed_ = bits.select(toNaN, bits.i32(layout.nanBits), signed_);
  } else if (layout.hasNaN) {
    signed_ = bits.select(isNaN, bits.bitOr(bits.i32(layout.nanBits), bits.shl(sign, layout.width - 1)),
                          signed_);
  } else {
    signed_ = bits.select(isNaN, bits.i32(0), signed_); // E2M1 has no NaN
  }
  Value stored = arith::TruncIOp::create(b, loc, b.getIntegerType(layout.width), signed_);
  return arith::BitcastOp::create(b, loc, format, stored);
}

} // namespace tessel
