//===- ConvolutionBlocking.h - Register blocks for NCHW convolutions -*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_CONVOLUTIONBLOCKING_H
#define TESSEL_TARGETS_X86_CONVOLUTIONBLOCKING_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace tessel::x86 {

/// Rewrites a static 2-D NCHW convolution (linalg.conv_2d_nchw_fchw or
/// linalg.depthwise_conv_2d_nchw_chw) into loops over register blocks:
///
///   for each block of output channels and output columns of one row:
///     for c, kh, kw:   (the accumulator block is a vector<Ft x W>)
///       out[f, w] += broadcast(filter[f]) * input[w * stride]      (regular)
///       out[c, w] += broadcast(filter[c]) * input[c, w * stride]   (depthwise)
///
/// The block body is emitted as vector ops on tensors; `width` is the number
/// of f32 vector lanes.
mlir::LogicalResult registerBlockConvolution(mlir::RewriterBase &rewriter,
                                             mlir::linalg::LinalgOp conv,
                                             int64_t width);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_CONVOLUTIONBLOCKING_H
