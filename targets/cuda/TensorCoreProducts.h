//===- TensorCoreProducts.h - Matrix products on tensor cores ----*- C++ -*-===//
//
// The CUDA target's matrix products (matmul, batched, named or generic
// contractions, and convolutions as implicit GEMMs) as kernels of their
// own: each block stages a tile of both operands in shared memory, in half
// precision, and its warps multiply the tiles with mma.sync, accumulating
// in f32; an INT8 model's products stage 8-bit integers and sum in i32.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_TENSORCOREPRODUCTS_H
#define TESSEL_TARGETS_CUDA_TENSORCOREPRODUCTS_H

#include "targets/Target.h"

#include "mlir/IR/BuiltinOps.h"

namespace tessel::cuda {

/// Whether `op` is a product the tensor cores take at `precision`: a
/// plain multiply-accumulate, static, with one reduction loop or a
/// convolution with input and output channels, at least one warp's mma
/// tiles in M and N; either summing in f32, its operands f32 or already of
/// the precision's type (an fp16 model at fp16), never at F32; or an
/// integer product of 8-bit operands summing in i32, at any precision. On
/// tensors or buffers alike.
bool takesTensorCores(mlir::Operation *op, ProductPrecision precision);

/// The type the tensor cores read a product's operands as at `precision`
/// (fp16 or bf16).
mlir::Type operandTypeOf(mlir::MLIRContext *context, ProductPrecision precision);

/// Replaces every matrix product of `kernels` (bufferized, its ops at the
/// top level of their kernel function) that takesTensorCores by a
/// gpu.launch that computes it on tensor cores: a float product's operands
/// rounded to `precision` (F16 or BF16) and its sums kept in f32, an
/// integer product's summed in i32.
/// What does not qualify stays for the loop lowering.
mlir::LogicalResult launchProductsOnTensorCores(mlir::ModuleOp kernels,
                                                ProductPrecision precision);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_TENSORCOREPRODUCTS_H
