//===- DotProduct.h - Dot products of 4-byte groups into lanes --*- C++ -*-===//
//
// Dot-product register blocks step the reduction a group of four bytes at
// a time: each accumulator lane gains the dot product of one group of
// activations (broadcast) with one group of weights.
//
// INT8 blocks accumulate, per i32 lane, four unsigned activation bytes
// times four signed weight bytes: VPDPBUSD where the CPU has VNNI;
// otherwise VPMADDUBSW, which sums adjacent u8 x s8 products into i16, then
// VPMADDWD by ones into i32, where the weights of every adjacent pair are
// small enough that the i16 sum cannot saturate (Tessel's own quantization
// makes them so); otherwise two VPMADDWD of the even and odd bytes widened
// to i16. All three are exact.
//
// BF16 blocks (--precision bf16) accumulate, per f32 lane, two bf16
// activations times two bf16 weights: VDPBF16PS where the CPU has
// AVX512-BF16, otherwise the same sums as two FMAs of the odd and then the
// even halves widened to f32. A bf16 product is exact in f32, so both round
// alike: once per FMA, odd first, as VDPBF16PS specifies (which also
// flushes denormals).
//
// AMX blocks (AMX-INT8) multiply whole tiles instead of vectors: TDPBUSD
// adds to a tile of 16 x 16 i32 sums the u8 x s8 dot products of up to 16
// rows of 64 activation bytes with 16 groups of k of a dot panel's 16
// columns. Its sums are VPDPBUSD's, bit for bit; AmxTiles.h builds them.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_DOTPRODUCT_H
#define TESSEL_TARGETS_X86_DOTPRODUCT_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace tessel::x86 {

enum class DotProductKind {
  /// VPDPBUSD (AVX512-VNNI, or AVX-VNNI for 256-bit vectors).
  Vnni,
  /// VPMADDWD of the even and odd bytes, widened to i16 (AVX2, AVX-512BW).
  PairwiseMultiplyAdd,
  /// VPMADDUBSW, then VPMADDWD by ones (AVX2, AVX-512BW): for weights whose
  /// pairs fit (bytePairsFitI16).
  MultiplyAddBytes,
  /// VDPBF16PS (AVX512-BF16): bf16 pairs into f32.
  Bf16Dot,
  /// Two FMAs of the odd and the even bf16 halves widened to f32.
  Bf16Fma,
  /// TDPBUSD (AMX-INT8) on tiles: blocks of their own (AmxTiles.h), which
  /// accumulateDot and the vector register budget do not apply to.
  Amx,
};

/// Whether `kind` multiplies bf16 pairs (into f32) rather than bytes (into
/// i32).
bool isBf16(DotProductKind kind);

/// Elements of one group (four bytes): 4 for 8-bit, 2 for bf16 elements.
int64_t dotGroupSize(mlir::Type element);
int64_t dotGroupSize(DotProductKind kind);

/// The element type of the groups, and of the accumulators.
mlir::Type dotElementType(mlir::MLIRContext *context, DotProductKind kind);
mlir::Type dotAccumulatorType(mlir::MLIRContext *context, DotProductKind kind);

/// Whether u8 x s8 products of every pair of weights (k, k + 1), k even, of
/// `weights` (row-major, k the second-to-last axis of `shape`) sum into i16
/// without saturating: VPMADDUBSW is exact for them.
bool bytePairsFitI16(llvm::ArrayRef<int8_t> weights, llvm::ArrayRef<int64_t> shape);

/// The dot product a block uses on an ISA whose general one is `isa`:
/// VPMADDUBSW instead of widened VPMADDWD pairs when the weights' byte
/// pairs fit.
DotProductKind dotProductFor(DotProductKind isa, bool bytePairsFit);

/// The option spelling ("vnni", "pmaddwd", "dpbf16ps", ...) and back.
llvm::StringRef dotProductName(DotProductKind kind);
std::optional<DotProductKind> parseDotProduct(llvm::StringRef name);

/// Vector registers a block holds per weight vector and per activation
/// broadcast while it steps: the prepared operands of one k step.
int64_t weightRegisters(DotProductKind kind);
int64_t activationRegisters(DotProductKind kind);

/// Vector instructions of one dot product of an accumulator, and of
/// preparing one weight vector or one broadcast activation.
int64_t dotInstructions(DotProductKind kind);
int64_t preparationInstructions(DotProductKind kind);

/// The operands of the dot products of one k step (one group) as a block
/// uses them: VNNI and VDPBF16PS read the groups as they are, the pairwise
/// forms their even and odd elements widened.
struct DotOperand {
  mlir::Value even, odd;
};

/// Weights: vector<group * lanes x element>, lane l's group in elements
/// group * l onwards.
DotOperand prepareWeights(mlir::OpBuilder &b, mlir::Location loc, DotProductKind kind,
                          mlir::Value bytes);
/// Activations: one group (vector<group x element>, four u8 bytes or two
/// bf16), broadcast to every one of `lanes` lanes.
DotOperand prepareActivations(mlir::OpBuilder &b, mlir::Location loc, DotProductKind kind,
                              mlir::Value group, int64_t lanes);

/// accumulator (vector<lanes x i32>, or f32 for bf16) + the dot products of
/// the prepared activations and weights, lane by lane.
mlir::Value accumulateDot(mlir::OpBuilder &b, mlir::Location loc, DotProductKind kind,
                          mlir::Value accumulator, const DotOperand &activations,
                          const DotOperand &weights);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_DOTPRODUCT_H
