//===- ConvolutionBlocking.cpp - Register blocks for NCHW convolutions ----===//
//
// Vectorizing along the output row is what NCHW allows without changing
// layouts: input and output rows are contiguous, and a block of `Ft` output
// channels reuses every input vector `Ft` times from registers. The filter
// scalars are broadcast. Strided convolutions read the input row
// contiguously and pick every stride-th lane with a shuffle.
//
//===----------------------------------------------------------------------===//

#include "targets/x86/ConvolutionBlocking.h"
#include "targets/x86/RegisterBudget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::x86 {
namespace {

/// A row of `columns` output elements held in registers: whole vectors of
/// `width` lanes, and for the remainder one more vector whose lanes past the
/// row are masked off in every load and store (7 columns with AVX2 are one
/// vector with 7 lanes live). Odd-sized vectors would instead be legalized by
/// LLVM through the stack.
struct RowChunk {
  int64_t offset;
  int64_t size; // live lanes
};

SmallVector<RowChunk> splitRow(int64_t columns, int64_t width) {
  SmallVector<RowChunk> chunks;
  for (int64_t offset = 0; offset < columns; offset += width)
    chunks.push_back({offset, std::min(width, columns - offset)});
  return chunks;
}

struct BlockShape {
  int64_t channels = 1;
  int64_t columns = 1;
};

/// Chooses `channels` x `columns` accumulators that fit `registers` vector
/// registers and keep both the FMA and the load ports busy: a regular block
/// loads `channels` filter scalars and one input row per step, a depthwise
/// block one scalar and one row per channel. Both sizes divide their extents
/// so that every block has the same static shape.
BlockShape chooseBlock(int64_t channelExtent, int64_t columnExtent,
                       int64_t width, int64_t registers, bool depthwise) {
  BlockShape best;
  double bestScore = 0;
  for (int64_t columns = 1; columns <= std::min(columnExtent, 4 * width);
       ++columns) {
    if (columnExtent % columns != 0)
      continue;
    int64_t rowRegisters = splitRow(columns, width).size();
    for (int64_t channels = 1;
         channels <= channelExtent && channels * rowRegisters <= registers;
         ++channels) {
      if (channelExtent % channels != 0)
        continue;
      int64_t loads = depthwise ? channels * (1 + rowRegisters)
                                : channels + rowRegisters;
      // Each step issues `channels * rowRegisters` FMAs and `loads` loads,
      // two of each per cycle; the score is live lanes per issue slot.
      double score = double(channels * columns) /
                     double(width * std::max(channels * rowRegisters, loads));
      bool larger = channels * columns > best.channels * best.columns;
      if (score > bestScore + 1e-9 || (score > bestScore - 1e-9 && larger)) {
        bestScore = score;
        best = {channels, columns};
      }
    }
  }
  return best;
}

} // namespace

LogicalResult registerBlockConvolution(RewriterBase &rewriter,
                                       linalg::LinalgOp conv, int64_t width) {
  bool depthwise = isa<linalg::DepthwiseConv2DNchwChwOp>(conv.getOperation());
  if (!depthwise && !isa<linalg::Conv2DNchwFchwOp>(conv.getOperation()))
    return failure();
  if (!conv.hasPureTensorSemantics())
    return failure();
  SmallVector<int64_t> extents = conv.getStaticLoopRanges();
  if (llvm::any_of(extents, ShapedType::isDynamic))
    return failure();
  FailureOr<linalg::ConvolutionDimensions> dims =
      linalg::inferConvolutionDims(conv);
  if (failed(dims) || dims->strides.size() != 2 || dims->dilations.size() != 2)
    return failure();

  // Loops: regular (n, f, oh, ow, c, kh, kw); depthwise (n, oh, ow, c, kh, kw).
  // Only the parallel loops are tiled here; the reduction loops are emitted
  // below around the block so that the accumulators are their iter_args.
  unsigned channelDim = depthwise ? 3 : 1;
  unsigned columnDim = depthwise ? 2 : 3;
  BlockShape shape =
      chooseBlock(extents[channelDim], extents[columnDim], width,
                  accumulatorRegisters(width), depthwise);
  int64_t channels = shape.channels, columns = shape.columns;
  SmallVector<int64_t> tiles(extents.size(), 0);
  std::fill_n(tiles.begin(), 4, 1);
  tiles[channelDim] = channels;
  tiles[columnDim] = columns;

  MLIRContext *context = rewriter.getContext();
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(context, tiles));
  rewriter.setInsertionPoint(conv);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(conv.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(conv, tiled->replacements);
  auto block = cast<linalg::LinalgOp>(tiled->tiledOps.back());

  // The block's operands: input [1, C, KH', W'], filter [F', C, KH, KW] or
  // [C', KH, KW], output [1, F', 1, W'] (depthwise: input [1, C', KH', W']).
  Location loc = block.getLoc();
  rewriter.setInsertionPoint(block);
  Value input = block.getDpsInputOperand(0)->get();
  Value filter = block.getDpsInputOperand(1)->get();
  Value output = block.getDpsInitOperand(0)->get();
  Type elementType = getElementTypeOrSelf(output.getType());
  auto filterShape = cast<RankedTensorType>(filter.getType()).getShape();
  int64_t reducedChannels = depthwise ? 1 : filterShape[1];
  int64_t kernelHeight = filterShape[filterShape.size() - 2];
  int64_t kernelWidth = filterShape.back();
  SmallVector<RowChunk> chunks = splitRow(columns, width);
  Value padding = ub::PoisonOp::create(rewriter, loc, elementType);
  auto index = [](OpBuilder &b, Location at, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, at, value);
  };
  auto vectorType = VectorType::get({width}, elementType);
  auto inBounds = [&](const RowChunk &chunk) {
    return SmallVector<bool>{chunk.size == width};
  };

  // Accumulators: one vector per (output channel, chunk), row-major.
  Value zero = index(rewriter, loc, 0), one = index(rewriter, loc, 1);
  SmallVector<Value> accumulators;
  for (int64_t row = 0; row < channels; ++row)
    for (const RowChunk &chunk : chunks)
      accumulators.push_back(vector::TransferReadOp::create(
          rewriter, loc, vectorType, output,
          ValueRange{zero, index(rewriter, loc, row), zero,
                     index(rewriter, loc, chunk.offset)},
          padding, inBounds(chunk)));

  // One reduction step at (c, kh, kw): accumulator[f] += filter[f, c, kh, kw]
  // * the input row at (c, kh * dh, kw * dw + w * stride).
  auto step = [&](OpBuilder &b, Location at, Value channel, Value kh, Value kw,
                  ValueRange sums) {
    Value rowOffset = arith::MulIOp::create(
        b, at, kh, index(b, at, dims->dilations[0]));
    Value columnOffset = arith::MulIOp::create(
        b, at, kw, index(b, at, dims->dilations[1]));
    // Strided rows are read contiguously, `stride` vectors' worth, and the
    // lanes used are picked with a shuffle: a few shuffles instead of a
    // gather of scalar loads.
    int64_t stride = dims->strides[1];
    auto wideType = VectorType::get({width * stride}, elementType);
    SmallVector<int64_t> picked;
    for (int64_t lane = 0; lane < width; ++lane)
      picked.push_back(lane * stride);
    auto inputChunks = [&](Value inputChannel) {
      SmallVector<Value> loaded;
      for (const RowChunk &chunk : chunks) {
        Value start = arith::AddIOp::create(
            b, at, columnOffset, index(b, at, chunk.offset * stride));
        SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), inputChannel,
                                          rowOffset, start};
        int64_t span = (chunk.size - 1) * stride + 1;
        Value slice = tensor::ExtractSliceOp::create(
            b, at, RankedTensorType::get({span}, elementType), input, offsets,
            getAsIndexOpFoldResult(context, {1, 1, 1, span}),
            getAsIndexOpFoldResult(context, {1, 1, 1, 1}));
        if (stride == 1) {
          loaded.push_back(vector::TransferReadOp::create(
              b, at, vectorType, slice, ValueRange{index(b, at, 0)}, padding,
              inBounds(chunk)));
          continue;
        }
        Value wide = vector::TransferReadOp::create(
            b, at, wideType, slice, ValueRange{index(b, at, 0)}, padding,
            ArrayRef<bool>{span == width * stride});
        loaded.push_back(
            vector::ShuffleOp::create(b, at, wide, wide, picked));
      }
      return loaded;
    };
    SmallVector<Value> shared = depthwise ? SmallVector<Value>()
                                          : inputChunks(channel);
    SmallVector<Value> updated;
    for (int64_t row = 0; row < channels; ++row) {
      Value rowIndex = index(b, at, row);
      SmallVector<Value> rowInput = depthwise ? inputChunks(rowIndex) : shared;
      Value weight = tensor::ExtractOp::create(
          b, at, filter,
          depthwise ? ValueRange{rowIndex, kh, kw}
                    : ValueRange{rowIndex, channel, kh, kw});
      for (auto [chunk, value] : llvm::zip(chunks, rowInput)) {
        Value broadcast = vector::BroadcastOp::create(b, at, vectorType, weight);
        Value product = arith::MulFOp::create(b, at, broadcast, value);
        updated.push_back(arith::AddFOp::create(
            b, at, sums[updated.size()], product));
      }
    }
    return updated;
  };
  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loc, {zero, zero, zero},
      {index(rewriter, loc, reducedChannels),
       index(rewriter, loc, kernelHeight), index(rewriter, loc, kernelWidth)},
      {one, one, one}, accumulators,
      [&](OpBuilder &b, Location at, ValueRange ivs, ValueRange sums) {
        return step(b, at, ivs[0], ivs[1], ivs[2], sums);
      });

  Value result = output;
  size_t next = 0;
  for (int64_t row = 0; row < channels; ++row)
    for (const RowChunk &chunk : chunks)
      result = vector::TransferWriteOp::create(
                   rewriter, loc, nest.results[next++], result,
                   ValueRange{zero, index(rewriter, loc, row), zero,
                              index(rewriter, loc, chunk.offset)},
                   inBounds(chunk))
                   .getResult();
  rewriter.replaceOp(block, result);
  return success();
}

} // namespace tessel::x86
