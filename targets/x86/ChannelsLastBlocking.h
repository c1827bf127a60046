//===- ChannelsLastBlocking.h - Register blocks for NHWC windows -*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_CHANNELSLASTBLOCKING_H
#define TESSEL_TARGETS_X86_CHANNELSLASTBLOCKING_H

#include "targets/x86/CacheGeometry.h"
#include "targets/x86/DotProduct.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace tessel::x86 {

/// A register block of an NHWC window op: `height` x `width` output pixels
/// by `channels` output channels (whole vectors but perhaps the last).
struct PixelBlock {
  int64_t height;
  int64_t width;
  int64_t channels;
};

/// The quantized (or bf16) lowering's NHWC convolution: a generic with
/// linalg.conv_2d_nhwc_hwcf's iteration space, (n, oh, ow, f, kh, kw, c),
/// whose body sums u8 x s8 products into i32 (bf16 products into f32); its
/// filter packs into dot panels.
bool isDotConvolution(mlir::linalg::LinalgOp op);

/// Whether `op` is an INT8 convolution that AMX tiles can compute
/// (AmxTiles.h): its input channels are whole groups of four.
bool convolutionFitsAmxTiles(mlir::linalg::LinalgOp op);

/// The window ops blocked here: linalg.conv_2d_nhwc_hwcf,
/// linalg.depthwise_conv_2d_nhwc_hwc, linalg.pooling_nhwc_max and
/// linalg.pooling_nhwc_sum on static f32 tensors, and the quantized
/// lowering's NHWC regular and depthwise convolutions of u8 inputs and s8
/// filters into i32, and bf16 regular convolutions into f32.
bool matchChannelsLastWindow(mlir::linalg::LinalgOp op);

/// matchChannelsLastWindow, for an op that carries a lowering config
/// (LoweringConfig.h), where a dot convolution must also read its filter
/// from dot panels of the config's width: the window ops register blocking
/// handles.
bool isBlockableChannelsLast(mlir::linalg::LinalgOp op);

/// The block for `op` (matchChannelsLastWindow) with `width`-lane vectors
/// (and `dot` products for an INT8 or bf16 convolution), whose pixels'
/// input runs fit the sets of `caches`' L1 together.
PixelBlock choosePixelBlock(mlir::linalg::LinalgOp op, int64_t width, DotProductKind dot,
                            const CacheGeometry &caches);

/// The most output channels of a block of `pixels` pixels of an INT8
/// convolution on AMX tiles (convolutionFitsAmxTiles): the accumulator tiles
/// that fit beside those of every other shape its blocks and steps take
/// (accumulatorBudget), 16 channels each.
int64_t amxConvolutionChannels(mlir::linalg::LinalgOp op, int64_t pixels);

/// The block of an INT8 convolution on AMX tiles (convolutionFitsAmxTiles): up to 16
/// pixels of one output row, the rows of its tiles, by up to
/// amxConvolutionChannels output channels.
PixelBlock chooseAmxBlock(mlir::linalg::LinalgOp op);

/// Whether `unpack` restores an HWCF convolution weight [KH, KW, C, F] that
/// was packed into panels [F / P, KH, KW, C, P]; returns P.
std::optional<int64_t> packedFilterPanelWidth(mlir::linalg::UnPackOp unpack);

/// Whether `unpack` restores an 8-bit or bf16 HWCF filter packed into dot
/// panels [F / P, KH, KW, C / G, P, G] (G = dotGroupSize); returns P.
std::optional<int64_t> packedFilterDotPanelWidth(mlir::linalg::UnPackOp unpack);

/// Whether every user of `pad` is an NHWC window op that register blocking
/// handles: blocks read the unpadded image in place, so the pad need not be
/// materialized.
bool padsChannelsLastWindow(mlir::tensor::PadOp pad);

/// Rewrites `op` (isBlockableChannelsLast) into loops over the register
/// blocks of its lowering config, output channels outermost:
///
///   regular:    for kh, kw, c:  w[j] = filter[kh, kw, c, f + j * width ...]
///                 acc[p][j] = fma(broadcast(in[pixel p, kh, kw, c]), w[j], acc[p][j])
///   depthwise:  for kh, kw:     w[j] = filter[kh, kw, c + j * width ...]
///                 acc[p][j] = fma(in[pixel p, kh, kw, c + j * width ...], w[j], acc[p][j])
///   pooling:    for kh, kw:     acc[p][j] = max/add(acc[p][j], in[pixel p, kh, kw, c ...])
///
///   INT8, bf16: for kh, kw, c step G:  w[j] = the next G * width filter elements
///                 acc[p][j] = dot(broadcast(in[pixel p, kh, kw, c .. c + G - 1]), w[j], acc[p][j])
///
/// A regular convolution's filter unpacked from panels (PackWeights) is read
/// from the panels; a dot convolution's from dot panels. An INT8
/// convolution whose config names "amx" is computed on AMX tiles instead,
/// a block of up to 16 pixels of one output row at a time, from its image
/// padded in memory.
mlir::LogicalResult registerBlockChannelsLast(mlir::RewriterBase &rewriter,
                                              mlir::linalg::LinalgOp op, int64_t width);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_CHANNELSLASTBLOCKING_H
