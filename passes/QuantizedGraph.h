//===- QuantizedGraph.h - Shared facts about quantized tessel graphs -*- C++ -*-===//
//
// What post-training quantization (InsertQuantization.cpp, and the
// compiler's calibration), the fusion of quantized ops (FuseQuantized.cpp)
// and the QDQ ONNX export agree on: which ops are products, along which
// axes their channels run, how their biases are quantized, and which float
// values a calibrated model quantizes.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_QUANTIZEDGRAPH_H
#define TESSEL_PASSES_QUANTIZEDGRAPH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Quant/IR/QuantTypes.h"
#include "mlir/IR/Builders.h"

#include <optional>
#include <utility>

namespace tessel {

/// The attribute on an op (or a function argument) that holds the range
/// [lo, hi] calibration chose for its result: array<f64: lo, hi>.
inline constexpr llvm::StringLiteral kCalibratedRangeAttr = "tessel.calibrated_range";
/// On a product, the mean of each input channel its weight reduces over,
/// on the calibration data: what bias correction needs.
inline constexpr llvm::StringLiteral kInputChannelMeansAttr = "tessel.input_channel_means";
/// The attribute that keeps a product in float ("f32") when the accuracy
/// budget rejects its quantization.
inline constexpr llvm::StringLiteral kPrecisionAttr = "tessel.precision";

/// Convolution, matmul or gemm: operand 0 is the input, 1 the weight.
bool isProduct(mlir::Operation *op);

/// Where the bias of `product` is: a convolution's bias, a gemm's C, or the
/// constant added to a matmul's result by its only reader (other than the
/// function's return); null if none.
mlir::OpOperand *biasOperand(mlir::Operation *product);

/// The axis of product `op`'s weight that its output channels run along,
/// and the result's.
std::pair<int64_t, int64_t> channelAxes(mlir::Operation *op);

/// The axis of product `op`'s weight that it sums over: the input channels.
int64_t reductionAxis(mlir::Operation *op);

/// A constant of quantized `type` holding storage `values` in `shape`.
mlir::Value quantizedConstant(mlir::OpBuilder &b, mlir::Location loc,
                              llvm::ArrayRef<int64_t> shape, mlir::quant::QuantizedType type,
                              llvm::ArrayRef<int64_t> values);

/// The bias of a quantized product: an i32 tensor quantized at
/// `accumulator`'s scales (input x weight), rounded half to even. A
/// dequantized i32 constant of other scales, or a float constant, is
/// quantized to them at compile time; null when `bias` is neither, or a
/// value overflows i32.
mlir::Value quantizedBias(mlir::OpBuilder &b, mlir::Location loc, mlir::Value bias,
                          mlir::quant::QuantizedType accumulator);

/// Whether post-training quantization computes float product `op` in
/// integers: its weight is an f32 constant, its input an f32 tensor, it is
/// not kept in float, and the integer lowering takes its attributes.
bool isQuantizableProduct(mlir::Operation *op);

/// The value that holds product `op`'s output once its activation is
/// applied: its result, or that of the relu or clip chain it alone feeds.
mlir::Value activatedResult(mlir::Operation *op);

/// The input and the activated result of each product of `function` that
/// `selected` holds for, in program order, each value once.
llvm::SmallVector<mlir::Value>
productPoints(mlir::func::FuncOp function, llvm::function_ref<bool(mlir::Operation *)> selected);

/// The float values of `function` that post-training quantization
/// quantizes: the productPoints of the quantizable products.
llvm::SmallVector<mlir::Value> quantizationPoints(mlir::func::FuncOp function);

/// Records on `value`'s defining op (or its function argument) the range
/// calibration chose for it; false for a result of an op with several.
bool setCalibratedRange(mlir::Value value, double lo, double hi);

/// The range recorded by setCalibratedRange, if any.
std::optional<std::pair<double, double>> calibratedRange(mlir::Value value);

/// What a quantized graph computes in float once tessel-fuse-quantized-ops
/// has run: its ops joined by the float values that pass between them.
/// Only groups that read a dequantized tensor or feed a quantize are
/// islands; a float model has none.
struct FloatIsland {
  /// In program order.
  llvm::SmallVector<mlir::Operation *> ops;
};
llvm::SmallVector<FloatIsland> floatIslands(mlir::func::FuncOp function);

/// How many ops of `function` compute on quantized tensors (quantize,
/// dequantize, requantize and constants not counted).
int64_t integerOpCount(mlir::func::FuncOp function);

} // namespace tessel

#endif // TESSEL_PASSES_QUANTIZEDGRAPH_H
