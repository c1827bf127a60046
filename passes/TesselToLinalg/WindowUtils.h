//===- WindowUtils.h - What the window lowerings share ----------*- C++ -*-===//
//
// Padding, window iteration spaces and grouped convolutions, shared by the
// float (Window.cpp) and the quantized (QuantizedProducts.cpp) lowerings of
// convolutions and pooling.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_TESSELTOLINALG_WINDOWUTILS_H
#define TESSEL_PASSES_TESSELTOLINALG_WINDOWUTILS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace tessel {

/// Pads the spatial axes of an NC[spatial] tensor (2...) or, channels last,
/// of an N[spatial]C tensor (1..rank-2) with `value`.
mlir::Value padSpatial(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                       llvm::ArrayRef<int64_t> padsBegin, llvm::ArrayRef<int64_t> padsEnd,
                       mlir::Value value, bool channelsLast = false);

/// The spatial extents of an NC[spatial] or, channels last, N[spatial]C
/// tensor.
llvm::ArrayRef<int64_t> spatialExtents(mlir::RankedTensorType type, bool channelsLast);

/// A tensor of `type` holding `vector` (of length type[axis]) along `axis`.
mlir::Value broadcastAlongAxis(mlir::OpBuilder &b, mlir::Location loc, mlir::Value vector,
                               mlir::RankedTensorType type, int64_t axis);

/// The map reading a window op's input in an iteration space whose output
/// spatial dimensions start at `outputStart` and window dimensions at
/// `windowStart`: the leading dimensions, then o * stride + w * dilation.
mlir::AffineMap windowInputMap(mlir::MLIRContext *context,
                               llvm::ArrayRef<int64_t> inputLeadingDims,
                               llvm::ArrayRef<int64_t> strides,
                               llvm::ArrayRef<int64_t> dilations, int64_t outputStart,
                               int64_t windowStart, int64_t numDims);

/// sum + x * w for one input and one weight element, in whatever arithmetic
/// the lowering computes.
using MultiplyAccumulateFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::Value x, mlir::Value w, mlir::Value sum)>;

/// out[n, g, f, o...] = body(in[n, g, c, o * s + w * d], weight[g, f, c, w...],
/// out) over (c, w...), the channel axes split into groups by expand_shape
/// views: an NC[spatial] convolution of any rank and grouping. `input` is
/// already padded; `init` gives the result type.
mlir::Value buildGroupedConvolution(mlir::OpBuilder &b, mlir::Location loc,
                                    mlir::Value input, mlir::Value weight, mlir::Value init,
                                    llvm::ArrayRef<int64_t> strides,
                                    llvm::ArrayRef<int64_t> dilations, int64_t group,
                                    MultiplyAccumulateFn body);

/// out[n, oh, ow, f] = body(in[n, oh * s + kh * d, ow * s + kw * d, c],
/// weight[kh, kw, c, f], out) over (kh, kw, c): linalg.conv_2d_nhwc_hwcf's
/// iteration space; with `depthwise`, weight[kh, kw, c] and c = f
/// (linalg.depthwise_conv_2d_nhwc_hwc's). `input` is already padded.
mlir::Value buildChannelsLastConvolution(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::Value input, mlir::Value weight,
                                         mlir::Value init, llvm::ArrayRef<int64_t> strides,
                                         llvm::ArrayRef<int64_t> dilations, bool depthwise,
                                         MultiplyAccumulateFn body);

/// sum + x * w in sum's float (or plain integer) arithmetic; bf16 operands
/// of an f32 sum are widened first (exactly).
mlir::Value floatMultiplyAccumulate(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                                    mlir::Value w, mlir::Value sum);

} // namespace tessel

#endif // TESSEL_PASSES_TESSELTOLINALG_WINDOWUTILS_H
