//===- ContractionUtils.h - What the matrix product lowerings share -*- C++ -*-===//
//
// The iteration space of ONNX's MatMul (1-D promotion, broadcast batch axes)
// and the contraction generic over it, shared by the float (Contraction.cpp)
// and the quantized (QuantizedProducts.cpp) lowerings.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_TESSELTOLINALG_CONTRACTIONUTILS_H
#define TESSEL_PASSES_TESSELTOLINALG_CONTRACTIONUTILS_H

#include "passes/TesselToLinalg/LoweringUtils.h"
#include "passes/TesselToLinalg/WindowUtils.h"

namespace tessel {

/// The operands of a matrix product as read from its iteration space
/// (result axes, then the reduction axis), and the extents of that space.
struct MatMulIteration {
  BroadcastOperand lhs, rhs;
  llvm::SmallVector<int64_t> extents;
};

/// ONNX MatMul's iteration space for `lhs` x `rhs` giving `resultType`.
MatMulIteration matmulIteration(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lhs,
                                mlir::Value rhs, mlir::RankedTensorType resultType);

/// out[...] = body(lhs[...], rhs[...], out[...]) over the iteration space
/// `iterationExtents`, whose last dimension is the reduction.
mlir::Value buildContraction(mlir::OpBuilder &b, mlir::Location loc, BroadcastOperand lhs,
                             BroadcastOperand rhs, mlir::Value init,
                             llvm::ArrayRef<int64_t> iterationExtents,
                             MultiplyAccumulateFn body);

} // namespace tessel

#endif // TESSEL_PASSES_TESSELTOLINALG_CONTRACTIONUTILS_H
