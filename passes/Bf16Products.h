//===- Bf16Products.h - Products computed in bf16 ---------------*- C++ -*-===//
//
// --precision bf16 computes matrix products and convolutions on bf16
// operands, accumulating in f32: half the weight bytes, and with
// AVX512-BF16 two multiply-adds per lane and instruction (faster than f32
// FMAs only where the CPU runs VDPBF16PS as fast: HostBf16Throughput.h).
// Post-training quantization chooses it, instead of f32, for the layers
// that INT8 would spoil.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_BF16PRODUCTS_H
#define TESSEL_PASSES_BF16PRODUCTS_H

#include "mlir/IR/Operation.h"

namespace tessel {

/// The tessel.precision value (kPrecisionAttr) of a product computed in
/// bf16.
inline constexpr llvm::StringLiteral kBf16Precision = "bf16";

/// Whether `op` is marked to compute in bf16 (kPrecisionAttr).
bool isMarkedBf16(mlir::Operation *op);

/// Whether tessel-bf16-products can compute product `op` in bf16: an f32
/// matmul, gemm or convolution (not grouped) of static shapes whose weight
/// is a constant, the gemm's A not transposed.
bool isBf16Product(mlir::Operation *op);

} // namespace tessel

#endif // TESSEL_PASSES_BF16PRODUCTS_H
