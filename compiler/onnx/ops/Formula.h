//===- Formula.h - Elementwise formulas of an ONNX node ---------*- C++ -*-===//
//
// Handlers that import an op as its formula over tessel's broadcasting
// elementwise ops and reductions write it with these builders.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_OPS_FORMULA_H
#define TESSEL_COMPILER_ONNX_OPS_FORMULA_H

#include "compiler/onnx/NodeImporter.h"
#include "dialects/tessel/TesselDialect.h"

namespace tessel::onnx_import {

/// Builds the formulas of one node: broadcasting arithmetic, comparisons
/// and selections, and means over axes that keep their dimensions. Each
/// builder gives null when an operand is null or inference refuses it (the
/// reason recorded on the node), so that formulas chain.
class Formula {
public:
  explicit Formula(NodeImporter &node) : node(node), b(node.builder()) {}

  mlir::Value add(mlir::Value lhs, mlir::Value rhs) { return node.createInferred<AddOp>(lhs, rhs); }
  mlir::Value sub(mlir::Value lhs, mlir::Value rhs) { return node.createInferred<SubOp>(lhs, rhs); }
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs) { return node.createInferred<MulOp>(lhs, rhs); }
  mlir::Value div(mlir::Value lhs, mlir::Value rhs) { return node.createInferred<DivOp>(lhs, rhs); }
  mlir::Value min(mlir::Value lhs, mlir::Value rhs) { return node.createInferred<MinOp>(lhs, rhs); }
  mlir::Value max(mlir::Value lhs, mlir::Value rhs) { return node.createInferred<MaxOp>(lhs, rhs); }
  mlir::Value sqrt(mlir::Value x) { return SqrtOp::create(b, node.loc(), x.getType(), x); }
  mlir::Value abs(mlir::Value x) { return AbsOp::create(b, node.loc(), x.getType(), x); }
  mlir::Value floor(mlir::Value x) { return FloorOp::create(b, node.loc(), x.getType(), x); }
  mlir::Value ceil(mlir::Value x) { return CeilOp::create(b, node.loc(), x.getType(), x); }
  mlir::Value round(mlir::Value x) { return RoundOp::create(b, node.loc(), x.getType(), x); }
  mlir::Value exp(mlir::Value x) { return ExpOp::create(b, node.loc(), x.getType(), x); }
  mlir::Value log(mlir::Value x) { return LogOp::create(b, node.loc(), x.getType(), x); }
  /// `predicate`: eq, lt, le, gt or ge.
  mlir::Value compare(llvm::StringRef predicate, mlir::Value lhs, mlir::Value rhs) {
    return node.createInferred<CompareOp>(b.getStringAttr(predicate), lhs, rhs);
  }
  mlir::Value logicalNot(mlir::Value x) {
    return x ? NotOp::create(b, node.loc(), x.getType(), x).getResult() : mlir::Value();
  }
  /// Whether each element of `x` (floats) is NaN: the one value unequal
  /// to itself.
  mlir::Value isNaN(mlir::Value x) { return logicalNot(compare("eq", x, x)); }
  mlir::Value select(mlir::Value condition, mlir::Value x, mlir::Value y) {
    return node.createInferred<WhereOp>(condition, x, y);
  }
  mlir::Value scalar(mlir::Value like, double value) {
    return node.splatConstant(mlir::getElementTypeOrSelf(like.getType()), value);
  }
  /// 0-D constants of f32 and i64.
  mlir::Value f32(double value) { return node.splatConstant(b.getF32Type(), value); }
  mlir::Value i64(int64_t value) { return node.int64Constant({value}, {}); }
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
    return ReshapeOp::create(b, node.loc(), type.clone(shape), x);
  }
  mlir::Value convert(mlir::Value x, mlir::Type elementType) {
    auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
    if (type.getElementType() == elementType)
      return x;
    return CastOp::create(b, node.loc(), type.clone(elementType), x);
  }

  /// The sum over `axes` with those axes kept as size 1.
  mlir::Value sumKeep(mlir::Value x, llvm::ArrayRef<int64_t> axes) {
    return reduceKeep("sum", x, axes);
  }
  /// The reduction `kind` ("sum", "max", ...) over `axes`, those axes kept
  /// as size 1.
  mlir::Value reduceKeep(llvm::StringRef kind, mlir::Value x, llvm::ArrayRef<int64_t> axes) {
    auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
    mlir::Value reduced =
        node.createInferred<ReduceOp>(b.getStringAttr(kind), x, b.getDenseI64ArrayAttr(axes));
    llvm::SmallVector<int64_t> kept(type.getShape());
    for (int64_t axis : axes)
      kept[axis] = 1;
    return reshape(reduced, kept);
  }
  mlir::Value meanKeep(mlir::Value x, llvm::ArrayRef<int64_t> axes) {
    auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= type.getDimSize(axis);
    return div(sumKeep(x, axes), scalar(x, double(count)));
  }
  /// 1 / sqrt(variance + epsilon).
  mlir::Value inverseDeviation(mlir::Value variance, float epsilon) {
    mlir::Value deviation = sqrt(add(variance, scalar(variance, epsilon)));
    return ReciprocalOp::create(b, node.loc(), deviation.getType(), deviation);
  }

protected:
  NodeImporter &node;
  mlir::OpBuilder &b;
};

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_OPS_FORMULA_H
