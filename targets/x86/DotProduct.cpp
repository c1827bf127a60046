//===- DotProduct.cpp - Dot products of 4-byte groups into lanes ----------===//

#include "targets/x86/DotProduct.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::x86 {

bool bytePairsFitI16(llvm::ArrayRef<int8_t> weights, llvm::ArrayRef<int64_t> shape) {
  int64_t columns = shape.back(), depth = shape[shape.size() - 2];
  for (int64_t base = 0; base < static_cast<int64_t>(weights.size()); base += depth * columns)
    for (int64_t k = 0; k + 1 < depth; k += 2)
      for (int64_t n = 0; n < columns; ++n) {
        int64_t first = weights[base + k * columns + n];
        int64_t second = weights[base + (k + 1) * columns + n];
        // 255 * (positive parts) <= 32767 and 255 * (negative parts) >= -32768.
        if (std::max<int64_t>(first, 0) + std::max<int64_t>(second, 0) > 128 ||
            std::min<int64_t>(first, 0) + std::min<int64_t>(second, 0) < -128)
          return false;
      }
  return true;
}

DotProductKind dotProductFor(DotProductKind isa, bool bytePairsFit) {
  if (isa == DotProductKind::PairwiseMultiplyAdd && bytePairsFit)
    return DotProductKind::MultiplyAddBytes;
  return isa;
}

llvm::StringRef dotProductName(DotProductKind kind) {
  switch (kind) {
  case DotProductKind::Vnni:
    return "vnni";
  case DotProductKind::PairwiseMultiplyAdd:
    return "pmaddwd";
  case DotProductKind::MultiplyAddBytes:
    return "pmaddubsw";
  case DotProductKind::Bf16Dot:
    return "dpbf16ps";
  case DotProductKind::Bf16Fma:
    return "bf16-fma";
  case DotProductKind::Amx:
    return "amx";
  }
  llvm_unreachable("dot product kind");
}

std::optional<DotProductKind> parseDotProduct(llvm::StringRef name) {
  for (DotProductKind kind : {DotProductKind::Vnni, DotProductKind::PairwiseMultiplyAdd,
                              DotProductKind::MultiplyAddBytes, DotProductKind::Bf16Dot,
                              DotProductKind::Bf16Fma, DotProductKind::Amx})
    if (name == dotProductName(kind))
      return kind;
  return std::nullopt;
}

bool isBf16(DotProductKind kind) {
  return kind == DotProductKind::Bf16Dot || kind == DotProductKind::Bf16Fma;
}

int64_t dotGroupSize(Type element) { return 32 / element.getIntOrFloatBitWidth(); }

int64_t dotGroupSize(DotProductKind kind) { return isBf16(kind) ? 2 : 4; }

Type dotElementType(MLIRContext *context, DotProductKind kind) {
  return isBf16(kind) ? Type(BFloat16Type::get(context)) : Type(IntegerType::get(context, 8));
}

Type dotAccumulatorType(MLIRContext *context, DotProductKind kind) {
  return isBf16(kind) ? Type(Float32Type::get(context)) : Type(IntegerType::get(context, 32));
}

int64_t weightRegisters(DotProductKind kind) {
  return kind == DotProductKind::PairwiseMultiplyAdd || kind == DotProductKind::Bf16Fma ? 2
                                                                                          : 1;
}

int64_t activationRegisters(DotProductKind kind) {
  // The pairwise forms' even and odd halves; VPMADDUBSW's broadcast and the
  // ones it multiplies its pair sums by.
  return kind == DotProductKind::Vnni || kind == DotProductKind::Bf16Dot ||
                 kind == DotProductKind::Amx
             ? 1
             : 2;
}

int64_t dotInstructions(DotProductKind kind) {
  switch (kind) {
  case DotProductKind::Vnni: // VPDPBUSD
    return 1;
  case DotProductKind::PairwiseMultiplyAdd: // two VPMADDWD, two VPADDD
    return 4;
  case DotProductKind::MultiplyAddBytes: // VPMADDUBSW, VPMADDWD, VPADDD
    return 3;
  case DotProductKind::Bf16Dot: // VDPBF16PS
    return 1;
  case DotProductKind::Bf16Fma: // two VFMADD
    return 2;
  case DotProductKind::Amx: // one TDPBUSD per tile, not per vector
    return 1;
  }
  llvm_unreachable("dot product kind");
}

int64_t preparationInstructions(DotProductKind kind) {
  // Even and odd bytes: a shift pair and a shift (weights), a mask and a
  // shift (activations); even and odd bf16: a shift and a mask.
  return kind == DotProductKind::PairwiseMultiplyAdd || kind == DotProductKind::Bf16Fma ? 2
                                                                                          : 0;
}

namespace {

int64_t laneCount(Value vector) { return cast<VectorType>(vector.getType()).getNumElements(); }

/// `vector` reinterpreted as `count` i16 lanes.
Value asI16(OpBuilder &b, Location loc, Value vector, int64_t count) {
  return vector::BitCastOp::create(b, loc, VectorType::get({count}, b.getI16Type()), vector);
}

Value splatI16(OpBuilder &b, Location loc, int64_t count, int64_t value) {
  auto type = VectorType::get({count}, b.getI16Type());
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getI16IntegerAttr(value)));
}

Value splatI32(OpBuilder &b, Location loc, int64_t count, uint32_t value) {
  auto type = VectorType::get({count}, b.getI32Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getI32IntegerAttr(static_cast<int32_t>(value))));
}

/// The bf16 pairs of `pairs` (vector<lanes x i32>) widened to f32: the even
/// (low) halves shifted up, the odd (high) halves with the low bits
/// cleared.
DotOperand widenBf16Pairs(OpBuilder &b, Location loc, Value pairs) {
  int64_t count = laneCount(pairs);
  auto floats = VectorType::get({count}, b.getF32Type());
  Value even = arith::ShLIOp::create(b, loc, pairs, splatI32(b, loc, count, 16));
  Value odd = arith::AndIOp::create(b, loc, pairs, splatI32(b, loc, count, 0xffff0000u));
  return {vector::BitCastOp::create(b, loc, floats, even),
          vector::BitCastOp::create(b, loc, floats, odd)};
}

} // namespace

DotOperand prepareWeights(OpBuilder &b, Location loc, DotProductKind kind, Value bytes) {
  if (kind == DotProductKind::Bf16Fma)
    return widenBf16Pairs(
        b, loc,
        vector::BitCastOp::create(b, loc, VectorType::get({laneCount(bytes) / 2}, b.getI32Type()),
                                  bytes));
  if (kind != DotProductKind::PairwiseMultiplyAdd)
    return {bytes, Value()};
  // Each i16 lane holds two weights; the even one sign-extended is the
  // lane shifted left then arithmetically right by 8, the odd one the lane
  // shifted arithmetically right by 8.
  int64_t count = laneCount(bytes) / 2;
  Value pairs = asI16(b, loc, bytes, count);
  Value eight = splatI16(b, loc, count, 8);
  Value even = arith::ShRSIOp::create(b, loc, arith::ShLIOp::create(b, loc, pairs, eight), eight);
  Value odd = arith::ShRSIOp::create(b, loc, pairs, eight);
  return {even, odd};
}

DotOperand prepareActivations(OpBuilder &b, Location loc, DotProductKind kind, Value group,
                              int64_t lanes) {
  // The group's four bytes as one i32 in every lane.
  Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), group);
  Value broadcast =
      vector::BroadcastOp::create(b, loc, VectorType::get({lanes}, b.getI32Type()),
                                  vector::ExtractOp::create(b, loc, word, int64_t(0)));
  if (kind == DotProductKind::Bf16Fma)
    return widenBf16Pairs(b, loc, broadcast);
  if (kind != DotProductKind::PairwiseMultiplyAdd) {
    int64_t group = dotGroupSize(kind);
    auto groups =
        VectorType::get({laneCount(broadcast) * group}, dotElementType(b.getContext(), kind));
    return {vector::BitCastOp::create(b, loc, groups, broadcast), Value()};
  }
  // Unsigned bytes: the even one masked, the odd one shifted logically.
  int64_t count = laneCount(broadcast) * 2;
  Value pairs = asI16(b, loc, broadcast, count);
  Value even = arith::AndIOp::create(b, loc, pairs, splatI16(b, loc, count, 0xff));
  Value odd = arith::ShRUIOp::create(b, loc, pairs, splatI16(b, loc, count, 8));
  return {even, odd};
}

Value accumulateDot(OpBuilder &b, Location loc, DotProductKind kind, Value accumulator,
                    const DotOperand &activations, const DotOperand &weights) {
  assert(kind != DotProductKind::Amx && "AMX multiplies tiles, not vectors");
  Type type = accumulator.getType();
  int64_t lanes = laneCount(accumulator);
  if (kind == DotProductKind::Bf16Dot) {
    llvm::StringRef name = lanes == 16 ? "llvm.x86.avx512bf16.dpbf16ps.512"
                                       : "llvm.x86.avx512bf16.dpbf16ps.256";
    return LLVM::CallIntrinsicOp::create(
               b, loc, type, b.getStringAttr(name),
               ValueRange{accumulator, activations.even, weights.even})
        .getResult(0);
  }
  if (kind == DotProductKind::Bf16Fma) {
    Value odd = vector::FMAOp::create(b, loc, activations.odd, weights.odd, accumulator);
    return vector::FMAOp::create(b, loc, activations.even, weights.even, odd);
  }
  if (kind == DotProductKind::Vnni) {
    // The first source holds the unsigned bytes, the second the signed.
    llvm::StringRef name =
        lanes == 16 ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256";
    return LLVM::CallIntrinsicOp::create(
               b, loc, type, b.getStringAttr(name),
               ValueRange{accumulator, activations.even, weights.even})
        .getResult(0);
  }
  llvm::StringRef name =
      lanes == 16 ? "llvm.x86.avx512.pmaddw.d.512" : "llvm.x86.avx2.pmadd.wd";
  auto multiplyAdd = [&](Value x, Value w) {
    return LLVM::CallIntrinsicOp::create(b, loc, type, b.getStringAttr(name), ValueRange{x, w})
        .getResult(0);
  };
  if (kind == DotProductKind::MultiplyAddBytes) {
    // u8 x s8 pairs summed into i16 (exact: the weights' pairs fit), then
    // pairs of those into i32.
    auto pairs = VectorType::get({lanes * 2}, b.getI16Type());
    llvm::StringRef bytes =
        lanes == 16 ? "llvm.x86.avx512.pmaddubs.w.512" : "llvm.x86.avx2.pmadd.ub.sw";
    Value sums = LLVM::CallIntrinsicOp::create(b, loc, pairs, b.getStringAttr(bytes),
                                               ValueRange{activations.even, weights.even})
                     .getResult(0);
    Value ones = splatI16(b, loc, lanes * 2, 1);
    return arith::AddIOp::create(b, loc, accumulator, multiplyAdd(sums, ones));
  }
  Value sum = arith::AddIOp::create(b, loc, multiplyAdd(activations.even, weights.even),
                                    multiplyAdd(activations.odd, weights.odd));
  return arith::AddIOp::create(b, loc, accumulator, sum);
}

} // namespace tessel::x86
