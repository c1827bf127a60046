//===- Layers.h - The kernels the NPU runs, recognized ----------*- C++ -*-===//
//
// The NPU runs whole layers, not loops: a kernel placed on it must be one of
// the layer forms below, on 8-bit quantized tensors, with the weights
// known at compile time. recognizeLayer reads a kernel function (the
// tessel form kernel formation outlines) into one of them, or says why the
// NPU cannot run it, which the placement prints.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_NPU_LAYERS_H
#define TESSEL_TARGETS_NPU_LAYERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessel::npu {

/// An 8-bit per-tensor quantized activation.
struct Activation {
  double scale = 1.0;
  int64_t zeroPoint = 0;
  bool isUnsigned = false;
};

/// What follows the layer in its kernel, as bounds on its stored 8-bit
/// result: a ReLU (at least the zero point), a Clip of quantized bounds
/// (ReLU6), or nothing.
struct Epilogue {
  std::optional<int64_t> lowest, highest;
};

/// A 2-D convolution (NHWC input, HWCF weights, one group, or depthwise:
/// one group and one filter per channel), or a matrix product A[M, K] x
/// B[K, N] read as a 1 x M image of K channels convolved with a 1 x 1
/// kernel.
struct ProductLayer {
  bool isMatrixProduct = false;
  bool isDepthwise = false; // then F = C and the weights are kh x kw x C
  /// Independent products of as many images or matrices, which share the
  /// weights, or (weightsPerProduct, a batch of matrix products) each have
  /// their own; the bias and scales are shared.
  int64_t batch = 1;
  bool weightsPerProduct = false;
  int64_t H = 1, W = 1, C = 1, F = 1;   // input height, width, channels; filters
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t Ho = 1, Wo = 1;
  Activation input, output;
  /// Terms per output: kh * kw * C, or kh * kw for a depthwise one.
  int64_t reduction() const { return kh * kw * (isDepthwise ? 1 : C); }
  /// The sets of weights (and of channel records).
  int64_t weightSets() const { return weightsPerProduct ? batch : 1; }

  /// The weightSets() x K x F weights (K = reduction(), in that order) minus their zero
  /// points: in [-255, 255], so not always 8 bits (the lowering splits
  /// those that are not into two signed 8-bit planes).
  std::vector<int16_t> weights;
  std::vector<double> weightScales; // one per filter
  std::vector<int32_t> bias;        // one per filter (zeros without one)
  mlir::Type expressed;             // the scales' type (f32)
  Epilogue epilogue;
};

/// Max pooling, NHWC.
struct PoolLayer {
  int64_t batch = 1, H = 1, W = 1, C = 1, Ho = 1, Wo = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, padTop = 0, padLeft = 0;
  bool isUnsigned = false;
};

/// The elementwise sum of two quantized tensors of one shape.
struct AddLayer {
  int64_t count = 0;
  Activation a, b, output;
  Epilogue epilogue;
};

using Layer = std::variant<ProductLayer, PoolLayer, AddLayer>;

/// Where a kernel's operands come from: a kernel argument's constant value
/// in the host function, when it is one.
using ConstantOf = std::function<mlir::ElementsAttr(mlir::Value argument)>;

/// The layer `kernel` computes; the reason the NPU cannot run it otherwise.
std::variant<Layer, std::string> recognizeLayer(mlir::func::FuncOp kernel,
                                                const ConstantOf &constantOf);

/// The kernel arguments that are the recognized layer's activation inputs,
/// in the layer's order (a product's or pooling's input; an addition's two
/// operands); empty when one of them is not an argument.
llvm::SmallVector<mlir::BlockArgument> layerInputs(mlir::func::FuncOp kernel);

} // namespace tessel::npu

#endif // TESSEL_TARGETS_NPU_LAYERS_H
