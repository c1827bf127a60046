//===- LoweringUtils.h - Helpers shared by the tessel lowerings -*- C++ -*-===//

#ifndef TESSEL_PASSES_TESSELTOLINALG_LOWERINGUTILS_H
#define TESSEL_PASSES_TESSELTOLINALG_LOWERINGUTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace tessel {

/// Builds scalar arithmetic for one element type, choosing the float,
/// signed or unsigned flavour of each arith op. `isUnsigned` comes from the
/// tessel-level type, since lowered integer types are signless.
class ScalarBuilder {
public:
  ScalarBuilder(mlir::OpBuilder &builder, mlir::Location loc,
                mlir::Type elementType, bool isUnsigned)
      : b(builder), loc(loc), type(elementType), isUnsigned(isUnsigned) {}

  bool isFloat() const { return mlir::isa<mlir::FloatType>(type); }
  mlir::Value add(mlir::Value lhs, mlir::Value rhs);
  mlir::Value sub(mlir::Value lhs, mlir::Value rhs);
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs);
  mlir::Value div(mlir::Value lhs, mlir::Value rhs);
  /// NaN-propagating maximum/minimum for floats (as ONNX's Max and Relu).
  mlir::Value max(mlir::Value lhs, mlir::Value rhs);
  mlir::Value min(mlir::Value lhs, mlir::Value rhs);
  mlir::Value pow(mlir::Value base, mlir::Value exponent); // floats only
  mlir::Value bitAnd(mlir::Value lhs, mlir::Value rhs);      // integers only
  mlir::Value bitOr(mlir::Value lhs, mlir::Value rhs);
  mlir::Value bitXor(mlir::Value lhs, mlir::Value rhs);
  mlir::Value constant(double value);
  /// The value that no element is smaller than (-inf or the minimum).
  mlir::Value lowest() { return extreme(/*largest=*/false); }
  /// The value that no element is larger than (+inf or the maximum).
  mlir::Value highest() { return extreme(/*largest=*/true); }

private:
  mlir::Value extreme(bool largest);

  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Type type;
  bool isUnsigned;
};

/// True if the tessel-level type (a tensor or an element) has unsigned
/// integer elements, or quantized ones stored unsigned; booleans count as
/// unsigned (true is 1, not -1).
bool hasUnsignedElements(mlir::Type tesselType);

/// A tensor.empty of the given static type.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type);

/// A tensor of `type` filled with `value`.
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value);

/// An operand of a broadcasting generic: the operand with its broadcast
/// (size-1) axes collapsed away, and the projected-permutation map that reads
/// it from the iteration space of `resultShape`.
struct BroadcastOperand {
  mlir::Value value;
  mlir::AffineMap map;
};
BroadcastOperand broadcastOperand(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value operand,
                                  llvm::ArrayRef<int64_t> resultShape);

/// The general form: operand axis i is indexed by iteration dimension
/// `axisDims[i]`; a size-1 axis whose dimension has another extent in
/// `iterationExtents` is broadcast, i.e. collapsed away.
BroadcastOperand indexOperand(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value operand,
                              llvm::ArrayRef<int64_t> axisDims,
                              llvm::ArrayRef<int64_t> iterationExtents);

using ScalarBodyFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// A parallel linalg.generic computing `body` of the (broadcast) operands
/// at every index of `resultType`.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange operands, ScalarBodyFn body);

/// The type a float product of `resultType` sums in: f32 for f16, whose
/// running sum rounded at every step loses about log2(K) of its 11 bits
/// (onnxruntime's CPU kernels and ONNX's reference widen f16 and round
/// once); `resultType` itself otherwise.
mlir::RankedTensorType productSumType(mlir::RankedTensorType resultType);

/// `sum` (of productSumType(resultType)) rounded to `resultType`.
mlir::Value roundProductSum(mlir::OpBuilder &b, mlir::Location loc, mlir::Value sum,
                            mlir::RankedTensorType resultType);

/// Reassociation that collapses `from` into `to` when `to` merges runs of
/// adjacent axes of `from` (or the reverse for expansion); nullopt if the
/// reshape is not such a merge.
std::optional<llvm::SmallVector<mlir::ReassociationIndices>>
reshapeReassociation(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// Reshapes a static tensor with collapse/expand_shape (views after
/// bufferization), through a 1-D tensor when no single merge describes it.
mlir::Value reshapeTensor(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value source, mlir::RankedTensorType resultType);

} // namespace tessel

#endif // TESSEL_PASSES_TESSELTOLINALG_LOWERINGUTILS_H
