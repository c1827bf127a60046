//===- DotProduct.h - 4-way u8 x s8 dot products into i32 lanes -*- C++ -*-===//
//
// INT8 register blocks accumulate, per i32 lane, the dot product of four
// unsigned activation bytes with four signed weight bytes: VPDPBUSD where
// the CPU has VNNI; otherwise VPMADDUBSW, which sums adjacent u8 x s8
// products into i16, then VPMADDWD by ones into i32, where the weights of
// every adjacent pair are small enough that the i16 sum cannot saturate
// (Tessel's own quantization makes them so); otherwise two VPMADDWD of the
// even and odd bytes widened to i16. All three are exact.
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
};

/// Whether u8 x s8 products of every pair of weights (k, k + 1), k even, of
/// `weights` (row-major, k the second-to-last axis of `shape`) sum into i16
/// without saturating: VPMADDUBSW is exact for them.
bool bytePairsFitI16(llvm::ArrayRef<int8_t> weights, llvm::ArrayRef<int64_t> shape);

/// The dot product a block uses on an ISA whose general one is `isa`:
/// VPMADDUBSW instead of widened VPMADDWD pairs when the weights' byte
/// pairs fit.
DotProductKind dotProductFor(DotProductKind isa, bool bytePairsFit);

/// The option spelling ("vnni", "pmaddwd") and back.
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

/// The operands of the dot products of one k step (four k) as a block uses
/// them: VNNI reads the bytes as they are, the pairwise form their even and
/// odd bytes as i16.
struct DotOperand {
  mlir::Value even, odd;
};

/// Weights: vector<4 * lanes x i8>, lane l's four weights in bytes 4l..4l+3.
DotOperand prepareWeights(mlir::OpBuilder &b, mlir::Location loc, DotProductKind kind,
                          mlir::Value bytes);
/// Activations: vector<lanes x i32>, every lane the same four u8 bytes.
DotOperand prepareActivations(mlir::OpBuilder &b, mlir::Location loc, DotProductKind kind,
                              mlir::Value broadcast);

/// accumulator (vector<lanes x i32>) + the 4-way dot products of the
/// prepared activations and weights, lane by lane.
mlir::Value accumulateDot(mlir::OpBuilder &b, mlir::Location loc, DotProductKind kind,
                          mlir::Value accumulator, const DotOperand &activations,
                          const DotOperand &weights);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_DOTPRODUCT_H
