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

#include "mlir/IR/Builders.h"
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

/// One warp's mma.sync operands, loaded from tiles in shared memory with
/// ldmatrix, and its products: m16n8k16 of f16 or bf16 summing in f32, or
/// m16n8k32 of 8-bit integers summing in i32 (the fragment layouts of
/// TensorCoreProducts.cpp's file comment). A tile is kept [row][k] (`byK`)
/// or, for halves, [k][row], which ldmatrix transposes; its rows 16-byte
/// aligned.
class WarpFragments {
public:
  /// Fragments of `operandType` (f16, bf16 or i8) for the thread whose lane
  /// is `lane`.
  WarpFragments(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type operandType,
                mlir::Value lane);

  /// The A fragment (four registers) of the mma tile whose rows start at
  /// `row` and whose reduction starts at `k`, in elements.
  llvm::SmallVector<mlir::Value, 4> loadA(mlir::Value tile, mlir::Value row, mlir::Value k,
                                          bool byK);
  /// The B fragments (two registers each) of the two mma tiles whose
  /// columns start at `column` and `column` + 8.
  std::pair<llvm::SmallVector<mlir::Value, 2>, llvm::SmallVector<mlir::Value, 2>>
  loadBPair(mlir::Value tile, mlir::Value column, mlir::Value k, bool byK);
  /// `sums` (the tile's four accumulators of this thread) += a · b; the
  /// integers' signedness as given.
  void multiply(llvm::ArrayRef<mlir::Value> a, llvm::ArrayRef<mlir::Value> b,
                llvm::MutableArrayRef<mlir::Value> sums, bool aUnsigned = false,
                bool bUnsigned = false);

private:
  int64_t operandBytes() const;
  mlir::Value add(mlir::Value x, mlir::Value y);
  /// An offset of whole 16-byte matrix rows, `eightRowsOrBytes` counted as
  /// for halves, in elements of the operand type.
  mlir::Value inElements(mlir::Value eightRowsOrBytes);
  /// Four 8 x 8 matrices of 16-bit elements (8 rows of 16 bytes) with one
  /// ldmatrix: lane l names row l % 8 of matrix l / 8 at (row, column),
  /// and gets in register i the 32 bits at (group, 4 * inGroup bytes) of
  /// matrix i, or of its transpose: as mma.sync takes it.
  llvm::SmallVector<mlir::Value, 4> loadMatrices(mlir::Value tile, mlir::Value row,
                                                 mlir::Value column, bool transpose);

  mlir::OpBuilder &builder;
  mlir::Location loc;
  mlir::Type operandType;
  /// lane % 8; (lane / 8) % 2 * 8; lane / 16 * 8.
  mlir::Value rowInMatrix, matrixIsOdd, matrixHalf;
};

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_TENSORCOREPRODUCTS_H
