//===- Lowering.cpp - A layer as NPU instructions -------------------------===//
//
// Every layer is tiled along its output rows (a product's output pixels in
// whole image rows, or rows of its left matrix), and each tile's data
// passes through two scratchpad slots per stream, so that the load engine
// fills one slot while the execute engine reads the other and the store
// engine drains a third pair.
//
// A product layer's tile runs, per chunk of at most C filters, its folds
// through the array into the accumulator, then POSTs the chunk into the
// tile's output slot. A fold is one GEMM: a slice of the im2col (or left)
// matrix's reduction rows (at most R weight stationary, where the weights
// fill the array's rows; output stationary, where the reduction streams
// through the array in time, as many as the scratchpad holds) times one
// plane of the weights (WeightPlanes). The dependency tokens
// (docs/npu/isa.md section 1) follow one protocol:
//
// - LD->EX: one token per fold g, popped by GEMM g. It is pushed by the
//   LOAD of fold g's weights, except for a tile's first fold, where the
//   tile's input LOAD (which comes after that weight LOAD) pushes it: the
//   GEMM then has both.
// - EX->LD: weight slot g % 2 is reused by fold g + 2, whose weight LOAD
//   pops a token released for fold g: by GEMM g, or for a tile's last fold
//   by the tile's last instruction (its last POST), which also frees the
//   tile's input slot. A tile's input LOAD follows the weight LOAD of its
//   first fold, which has popped the release of two folds before it, at or
//   after the release of the tile two tiles back: so input slot t % 2 is
//   free when tile t loads it.
// - EX->ST: the tile's last POST hands the output slot to its STORE.
// - ST->EX: the STORE of tile t frees output slot t % 2 for the first POST
//   of tile t + 2.
//
// Pooling and addition tiles are one instruction each on the execute
// engine, with one token of each kind per tile.
//
//===----------------------------------------------------------------------===//

#include "targets/npu/Lowering.h"

#include "dialects/tessel/QuantizedTypes.h"

#include <algorithm>
#include <limits>

namespace tessel::npu {

namespace {

using encoding::Dependencies;
using encoding::Instruction;
using encoding::Opcode;

constexpr uint64_t kSlotAlignment = 64;
/// The largest reduction the GEMM instruction's 15-bit K field holds.
constexpr int64_t kMaxGemmReduction = (1 << 15) - 1;

uint64_t aligned(uint64_t bytes) { return (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment; }
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Dependencies tokens(bool popPrevious, bool popNext, bool pushPrevious, bool pushNext) {
  return {popPrevious, popNext, pushPrevious, pushNext};
}

using encoding::dma;

/// Weights minus their zero points lie in [-255, 255], and the array
/// multiplies bytes: one plane of signed or unsigned bytes holds them when
/// they fit, else two or three signed planes whose sum they are (two
/// signed bytes sum to at most 254), each of which the array runs over the
/// same input, accumulating.
struct WeightPlanes {
  int64_t count = 1;
  bool isUnsigned = false;
  std::vector<uint8_t> bytes; // count planes of the weights' layout
};

WeightPlanes weightPlanes(const std::vector<int16_t> &weights) {
  auto [lowest, highest] = std::minmax_element(weights.begin(), weights.end());
  int64_t low = weights.empty() ? 0 : *lowest, high = weights.empty() ? 0 : *highest;
  WeightPlanes planes;
  planes.isUnsigned = low >= 0 && high > 127;
  if (!planes.isUnsigned && (low < -128 || high > 127))
    planes.count = low >= -256 && high <= 254 ? 2 : 3;
  planes.bytes.resize(size_t(planes.count) * weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    int64_t rest = weights[i];
    for (int64_t plane = 0; plane < planes.count; ++plane) {
      int64_t part = planes.isUnsigned ? rest : std::clamp<int64_t>(rest, -128, 127);
      planes.bytes[size_t(plane) * weights.size() + i] = uint8_t(part & 0xff);
      rest -= part;
    }
  }
  return planes;
}

/// A product's bindings (as lowerLayer in Lowering.h orders them): its input,
/// then its constants, then its result.
enum ProductBinding : uint8_t { Input = 0, Weights = 1, Records = 2, Output = 3 };

int64_t storageMinimum(bool isUnsigned) { return isUnsigned ? 0 : -128; }
int64_t storageMaximum(bool isUnsigned) { return isUnsigned ? 255 : 127; }

/// The input rows a tile of output rows [oy0, oy1) reads: the first one in
/// the image, how many, and how many rows of padding precede them.
struct RowSpan {
  int64_t first = 0, count = 0, padTop = 0;
};

RowSpan inputRows(int64_t oy0, int64_t oy1, int64_t H, int64_t kh, int64_t sh, int64_t dh,
                  int64_t padTop) {
  int64_t start = oy0 * sh - padTop;
  int64_t end = (oy1 - 1) * sh - padTop + (kh - 1) * dh + 1;
  RowSpan span;
  span.first = std::max<int64_t>(0, start);
  span.count = std::min(H, end) - span.first;
  span.padTop = span.first - start;
  return span;
}

/// Each filter's record, per product of a batch: bias (with the input zero
/// point's share of the weights, as the padding holds that zero point),
/// multiplier and shift.
std::variant<std::vector<uint8_t>, std::string> channelRecords(const ProductLayer &layer) {
  int64_t K = layer.reduction();
  std::vector<uint8_t> records(size_t(layer.weightSets() * layer.F) * 16, 0);
  auto put = [&](size_t at, int32_t value) {
    for (int i = 0; i < 4; ++i)
      records[at + i] = uint8_t(uint32_t(value) >> (8 * i));
  };
  for (int64_t f = 0; f < layer.F; ++f) {
    double multiplier = requantizationMultiplier(layer.expressed, layer.input.scale,
                                                 layer.weightScales[f], layer.output.scale);
    encoding::Requantization record;
    if (!encoding::requantizationOf(float(multiplier), record))
      return "filter " + std::to_string(f) + "'s requantization scale " +
             std::to_string(multiplier) + " is outside what POST can shift";
    for (int64_t b = 0; b < layer.weightSets(); ++b) {
      int64_t weightSum = 0;
      for (int64_t k = 0; k < K; ++k)
        weightSum += layer.weights[size_t((b * K + k) * layer.F + f)];
      int64_t bias = int64_t(layer.bias[f]) - layer.input.zeroPoint * weightSum;
      if (bias < std::numeric_limits<int32_t>::min() ||
          bias > std::numeric_limits<int32_t>::max())
        return "filter " + std::to_string(f) + "'s bias leaves 32 bits";
      size_t at = size_t(b * layer.F + f) * 16;
      put(at, int32_t(bias));
      put(at + 4, record.multiplier);
      put(at + 8, record.shift);
    }
  }
  return records;
}

/// Starts the program of a product layer: its constants (the weight planes,
/// then the channel records) and the LOAD of the records into the
/// parameter memory; why it cannot.
std::optional<std::string> startProduct(const ProductLayer &layer, const WeightPlanes &planes,
                                        const encoding::Config &config, LayerProgram &program) {
  uint64_t recordBytes = uint64_t(layer.weightSets() * layer.F) * 16;
  if (recordBytes > config.parameterBytes)
    return "its " + std::to_string(layer.weightSets() * layer.F) + " channel records exceed the " +
           std::to_string(config.parameterBytes) + "-byte parameter memory";
  auto records = channelRecords(layer);
  if (auto *problem = std::get_if<std::string>(&records))
    return *problem;
  program.constants = {planes.bytes, std::move(std::get<std::vector<uint8_t>>(records))};
  program.instructions.push_back({Opcode::Load, {},
                                  dma(Records, 0, 0, 1, uint32_t(recordBytes), 0, 0,
                                      encoding::Memory::Parameters)});
  return std::nullopt;
}

/// The stored values a layer's result may take: its type's, within its
/// epilogue's bounds.
std::pair<int64_t, int64_t> outputRange(const Activation &output, const Epilogue &epilogue) {
  int64_t lowest = storageMinimum(output.isUnsigned), highest = storageMaximum(output.isUnsigned);
  return {std::clamp(epilogue.lowest.value_or(lowest), lowest, highest),
          std::clamp(epilogue.highest.value_or(highest), lowest, highest)};
}

void setClamp(encoding::Post &post, const Activation &output, const Epilogue &epilogue) {
  post.zeroPoint = int16_t(output.zeroPoint);
  auto [lowest, highest] = outputRange(output, epilogue);
  post.clampMin = int16_t(lowest);
  post.clampMax = int16_t(highest);
}

/// The most input rows a tile of `rows` output rows reads (at least 1): its
/// input slot holds that many image rows.
int64_t tallestInputTile(int64_t rows, int64_t Ho, int64_t H, int64_t kh, int64_t sh,
                         int64_t dh, int64_t padTop) {
  int64_t tallest = 1;
  for (int64_t oy0 = 0; oy0 < Ho; oy0 += rows)
    tallest = std::max(tallest,
                       inputRows(oy0, std::min(Ho, oy0 + rows), H, kh, sh, dh, padTop).count);
  return tallest;
}

/// Places a pair of slots of `bytes` each at scratchpad address `at`, which
/// moves past them: what one stream double-buffers.
void placeSlots(uint32_t (&slots)[2], uint64_t bytes, uint64_t &at) {
  for (uint32_t &slot : slots) {
    slot = uint32_t(at);
    at += aligned(bytes);
  }
}

/// A weighted layer's scratchpad: a pair of slots for its weights, its
/// input and its output, in that order, and the address past them.
struct WeightedSlots {
  uint32_t weights[2], input[2], output[2];
  uint64_t end = 0;

  WeightedSlots(uint64_t weightBytes, uint64_t inputBytes, uint64_t outputBytes) {
    placeSlots(weights, weightBytes, end);
    placeSlots(input, inputBytes, end);
    placeSlots(output, outputBytes, end);
  }
};

/// The window of a tile of `layer` (a convolution or pooling) whose first
/// input row is preceded by `padTop` rows of padding.
template <typename WindowedLayer>
encoding::Window tileWindow(const WindowedLayer &layer, int64_t padTop) {
  return {uint8_t(layer.kh), uint8_t(layer.kw), uint8_t(layer.sh), uint8_t(layer.sw),
          uint8_t(layer.dh), uint8_t(layer.dw), uint8_t(padTop),   uint8_t(layer.padLeft)};
}

//===----------------------------------------------------------------------===//
// Products: convolutions and matrix products
//===----------------------------------------------------------------------===//

class ProductLowering {
public:
  ProductLowering(const ProductLayer &layer, const encoding::Config &config)
      : layer(layer), config(config), R(config.arrayRows), C(config.arrayColumns),
        K(layer.reduction()), chunks(ceilDiv(layer.F, C)),
        planes(weightPlanes(layer.weights)), slice(R) {}

  std::variant<LayerProgram, std::string> lower() {
    LayerProgram program;
    if (std::optional<std::string> problem = startProduct(layer, planes, config, program))
      return *problem;
    chooseSlice();
    std::optional<TileChoice> tile = chooseTile();
    if (!tile)
      return std::string("no tile of its output fits the scratchpad and accumulator");
    program.tile = *tile;
    emit(program, tile->rows);
    program.macs = uint64_t(layer.batch) * layer.Ho * layer.Wo * K * layer.F;
    return program;
  }

private:
  /// Output stationary, the longest slice of the reduction whose weights
  /// fit the scratchpad twice beside a tile of one row: every slice fills
  /// and drains the array once per pass.
  void chooseSlice() {
    if (config.outputStationary) {
      for (int64_t pieces = 1; pieces <= K; ++pieces) {
        slice = ceilDiv(K, pieces);
        if (slice <= kMaxGemmReduction && fits(1))
          break;
      }
    }
    folds = ceilDiv(K, slice) * planes.count;
  }

  /// Output pixels (product rows) per tile of `rows` rows.
  int64_t pixels(int64_t rows) const { return layer.isMatrixProduct ? rows : rows * layer.Wo; }
  int64_t outputRows() const { return layer.isMatrixProduct ? layer.Wo : layer.Ho; }
  /// Tiles of `rows` rows of every product of the batch.
  int64_t tilesOf(int64_t rows) const { return layer.batch * ceilDiv(outputRows(), rows); }

  /// The largest input tile of `rows` output rows, in bytes.
  uint64_t inputSlotBytes(int64_t rows) const {
    if (layer.isMatrixProduct)
      return uint64_t(rows) * K;
    return uint64_t(tallestInputTile(rows, layer.Ho, layer.H, layer.kh, layer.sh, layer.dh,
                                     layer.padTop)) *
           layer.W * layer.C;
  }

  WeightedSlots layout(int64_t rows) const {
    return {uint64_t(slice) * C, inputSlotBytes(rows), uint64_t(pixels(rows)) * layer.F};
  }

  bool fits(int64_t rows) const {
    return layout(rows).end <= config.scratchpadBytes &&
           uint64_t(pixels(rows)) * std::min<int64_t>(C, layer.F) <= config.accumulatorEntries() &&
           pixels(rows) < (int64_t(1) << 20) &&
           uint64_t(pixels(rows)) * layer.F < (uint64_t(1) << 24);
  }

  /// Cycles the layer is predicted to take in tiles of `rows` rows: per
  /// tile, its array work (every fold streams the tile's pixels, in passes
  /// of R output stationary; each chunk drains and is post-processed) or
  /// its DRAM transfers, whichever is longer, since the slots overlap the
  /// two.
  uint64_t predictedCycles(int64_t rows) const {
    int64_t tiles = tilesOf(rows);
    uint64_t T = uint64_t(pixels(rows));
    uint64_t foldCycles = config.outputStationary ? ceilDiv(T, R) * (slice + R) : T;
    uint64_t postCycles = ceilDiv(T * std::min<int64_t>(C, layer.F), C) + 4;
    uint64_t compute = uint64_t(chunks) * folds * foldCycles + R +
                       uint64_t(chunks) * (uint64_t(R) + C - 2 + postCycles);
    uint64_t bytes = inputSlotBytes(rows) + uint64_t(planes.count) * K * layer.F + T * layer.F;
    uint64_t dma = bytes / config.dmaBytesPerCycle + config.dmaLatencyCycles;
    return uint64_t(tiles) * std::max(compute, dma) + config.dmaLatencyCycles;
  }

  std::optional<TileChoice> chooseTile() const {
    std::optional<TileChoice> best;
    for (int64_t rows = 1; rows <= outputRows(); ++rows) {
      if (!fits(rows))
        continue;
      uint64_t cycles = predictedCycles(rows);
      if (!best || cycles <= best->predictedCycles)
        best = TileChoice{rows, tilesOf(rows), cycles};
    }
    return best;
  }

  void emit(LayerProgram &program, int64_t rows) {
    WeightedSlots slots = layout(rows);
    std::vector<Instruction> &out = program.instructions;
    int64_t tiles = tilesOf(rows), tilesPerProduct = tiles / layer.batch;
    int64_t total = tiles * chunks * folds;
    int64_t g = 0; // global fold
    for (int64_t t = 0; t < tiles; ++t) {
      // Product b of the batch: its image or rows of A, and its weights and
      // records when it has its own.
      int64_t b = t / tilesPerProduct, weightSet = layer.weightsPerProduct ? b : 0;
      int64_t row0 = t % tilesPerProduct * rows, row1 = std::min(outputRows(), row0 + rows);
      int64_t T = pixels(row1 - row0), firstPixel = b * pixels(outputRows()) + pixels(row0);
      RowSpan span{row0, row1 - row0, 0};
      uint64_t inputBytes = uint64_t(T) * K, inputAt = uint64_t(b * outputRows() + row0) * K;
      if (!layer.isMatrixProduct) {
        span = inputRows(row0, row1, layer.H, layer.kh, layer.sh, layer.dh, layer.padTop);
        inputBytes = uint64_t(span.count) * layer.W * layer.C;
        inputAt = uint64_t(b * layer.H + span.first) * layer.W * layer.C;
      }
      uint32_t inputSlot = slots.input[t % 2], outputSlot = slots.output[t % 2];
      for (int64_t j = 0; j < chunks; ++j) {
        int64_t n0 = j * C, N = std::min<int64_t>(C, layer.F - n0);
        for (int64_t kk = 0; kk < folds; ++kk, ++g) {
          int64_t k0 = kk / planes.count * slice, Kf = std::min<int64_t>(slice, K - k0);
          uint64_t planeAt = uint64_t(kk % planes.count) * layer.weights.size() +
                             uint64_t(weightSet) * K * layer.F;
          bool firstOfTile = j == 0 && kk == 0;
          bool lastOfTile = j == chunks - 1 && kk == folds - 1;
          uint32_t weightSlot = slots.weights[g % 2];
          out.push_back({Opcode::Load, tokens(false, g >= 2, false, !firstOfTile),
                         dma(Weights, planeAt + uint64_t(k0) * layer.F + n0, weightSlot,
                             uint32_t(Kf), uint32_t(N), uint32_t(layer.F), uint32_t(N))});
          if (firstOfTile)
            out.push_back({Opcode::Load, tokens(false, false, false, true),
                           dma(Input, inputAt, inputSlot, 1, uint32_t(inputBytes))});
          encoding::Gemm gemm;
          gemm.accumulate = kk > 0;
          gemm.inputUnsigned = layer.input.isUnsigned;
          gemm.weightUnsigned = planes.isUnsigned;
          gemm.weights = weightSlot;
          gemm.K = uint32_t(Kf);
          gemm.N = uint32_t(N);
          gemm.T = uint32_t(T);
          gemm.acc = 0;
          if (layer.isMatrixProduct) {
            gemm.input = inputSlot + uint32_t(k0);
            gemm.rowStride = uint32_t(K);
          } else {
            gemm.im2col = true;
            gemm.input = inputSlot;
            gemm.k0 = uint32_t(k0);
            gemm.Hi = uint32_t(span.count);
            gemm.Wi = uint32_t(layer.W);
            gemm.Ci = uint32_t(layer.C);
            gemm.Wo = uint32_t(layer.Wo);
            gemm.padValue = uint8_t(layer.input.zeroPoint);
            gemm.window = tileWindow(layer, span.padTop);
          }
          out.push_back({Opcode::Gemm, tokens(true, false, !lastOfTile && g + 2 < total, false),
                         gemm});
          if (kk != folds - 1)
            continue;
          encoding::Post post;
          post.outputUnsigned = layer.output.isUnsigned;
          post.output = outputSlot + uint32_t(n0);
          post.acc = 0;
          post.T = uint32_t(T);
          post.N = uint32_t(N);
          post.outputStride = uint32_t(layer.F);
          post.param = uint32_t(weightSet * layer.F + n0);
          setClamp(post, layer.output, layer.epilogue);
          bool lastPost = j == chunks - 1;
          out.push_back({Opcode::Post,
                         tokens(false, j == 0 && t >= 2, lastPost && g + 2 < total, lastPost),
                         post});
        }
      }
      out.push_back({Opcode::Store, tokens(true, false, t + 2 < tiles, false),
                     dma(Output, uint64_t(firstPixel) * layer.F, outputSlot, 1,
                         uint32_t(uint64_t(T) * layer.F))});
    }
  }

  const ProductLayer &layer;
  const encoding::Config &config;
  const int64_t R, C, K, chunks;
  const WeightPlanes planes;
  int64_t slice, folds = 0; // reduction rows per GEMM; GEMMs per chunk
};

//===----------------------------------------------------------------------===//
// Depthwise convolutions
//===----------------------------------------------------------------------===//

/// A depthwise convolution runs on the vector unit (DWCONV), not the array:
/// tiles of output rows times chunks of channels, each loading its window's
/// weights and input rows (strided, when a chunk is not every channel) into
/// one of two slots, DWCONV once per weight plane into the accumulator,
/// POST into one of two output slots, STORE. Tokens as for pooling: the
/// tile's input LOAD hands both slots to its first DWCONV, its POST frees
/// them for the tile two later (popped by that tile's weight LOAD) and
/// hands the output slot to the STORE, which frees it for the POST two
/// tiles later.
class DepthwiseLowering {
public:
  DepthwiseLowering(const ProductLayer &layer, const encoding::Config &config)
      : layer(layer), config(config), planes(weightPlanes(layer.weights)),
        taps(layer.kh * layer.kw) {}

  std::variant<LayerProgram, std::string> lower() {
    LayerProgram program;
    if (std::optional<std::string> problem = startProduct(layer, planes, config, program))
      return *problem;
    // The most channels per chunk for which a tile of one row fits, then
    // the most rows: the fewest DMA latencies.
    for (int64_t pieces = 1; pieces <= layer.C && rows == 0; ++pieces) {
      channels = ceilDiv(layer.C, pieces);
      for (int64_t candidate = std::min<int64_t>(layer.Ho, kMaxTileField); candidate >= 1;
           --candidate)
        if (fits(candidate)) {
          rows = candidate;
          break;
        }
    }
    if (rows == 0)
      return std::string("no tile of its rows and channels fits the scratchpad and accumulator");
    int64_t tiles = layer.batch * ceilDiv(layer.Ho, rows) * ceilDiv(layer.C, channels);
    program.tile = {rows, tiles, 0};
    emit(program, tiles);
    program.macs = uint64_t(layer.batch) * layer.Ho * layer.Wo * taps * layer.C;
    return program;
  }

private:
  /// The largest field of a DWCONV tile (Ho, Hi: 12 bits).
  static constexpr int64_t kMaxTileField = 4095;

  uint64_t inputSlotBytes(int64_t tileRows) const {
    return uint64_t(tallestInputTile(tileRows, layer.Ho, layer.H, layer.kh, layer.sh, layer.dh,
                                     layer.padTop)) *
           layer.W * channels;
  }

  uint64_t weightSlotBytes() const { return uint64_t(planes.count) * taps * channels; }
  uint64_t outputSlotBytes(int64_t tileRows) const {
    return uint64_t(tileRows) * layer.Wo * channels;
  }

  bool fits(int64_t tileRows) const {
    uint64_t pixels = uint64_t(tileRows) * layer.Wo, input = inputSlotBytes(tileRows);
    // A chunk of the channels moves a pixel per DMA row (16 bits).
    bool strided = channels < layer.C;
    return WeightedSlots(weightSlotBytes(), input, outputSlotBytes(tileRows)).end <=
               config.scratchpadBytes &&
           pixels * channels <= config.accumulatorEntries() && pixels < (uint64_t(1) << 20) &&
           input < (uint64_t(1) << 24) &&
           (!strided || (input / channels < (uint64_t(1) << 16) && pixels < (uint64_t(1) << 16)));
  }

  void emit(LayerProgram &program, int64_t tiles) {
    WeightedSlots slots(weightSlotBytes(), inputSlotBytes(rows), outputSlotBytes(rows));
    int64_t tile = 0;
    for (int64_t b = 0; b < layer.batch; ++b)
      for (int64_t c0 = 0; c0 < layer.C; c0 += channels)
        for (int64_t oy0 = 0; oy0 < layer.Ho; oy0 += rows, ++tile)
          emitTile(program.instructions, slots, b, c0, oy0, tile, tiles);
  }

  /// Tile `tile` of `tiles`: output rows [oy0, oy0 + rows) of image b,
  /// channels from c0.
  void emitTile(std::vector<Instruction> &out, const WeightedSlots &slots, int64_t b, int64_t c0,
                int64_t oy0, int64_t tile, int64_t tiles) const {
    uint32_t Cc = uint32_t(std::min<int64_t>(channels, layer.C - c0));
    int64_t oy1 = std::min(layer.Ho, oy0 + rows);
    RowSpan span = inputRows(oy0, oy1, layer.H, layer.kh, layer.sh, layer.dh, layer.padTop);
    bool first = tile < 2, last = tile + 2 >= tiles;
    uint32_t weightSlot = slots.weights[tile % 2], inputSlot = slots.input[tile % 2],
             outputSlot = slots.output[tile % 2];
    // The planes' rows of taps, C bytes apart in DRAM, one LOAD.
    out.push_back({Opcode::Load, tokens(false, !first, false, false),
                   dma(Weights, uint64_t(c0), weightSlot, uint32_t(planes.count * taps), Cc,
                       uint32_t(layer.C), Cc)});
    out.push_back({Opcode::Load, tokens(false, false, false, true),
                   channelRows(Input, uint64_t(b * layer.H + span.first) * layer.W,
                               uint64_t(span.count) * layer.W, c0, Cc, inputSlot)});
    for (int64_t plane = 0; plane < planes.count; ++plane) {
      encoding::DwConv conv;
      conv.accumulate = plane > 0;
      conv.inputUnsigned = layer.input.isUnsigned;
      conv.weightUnsigned = planes.isUnsigned;
      conv.input = inputSlot;
      conv.weights = weightSlot + uint32_t(plane * taps * Cc);
      conv.acc = 0;
      conv.Hi = uint32_t(span.count);
      conv.Wi = uint32_t(layer.W);
      conv.C = Cc;
      conv.padValue = uint8_t(layer.input.zeroPoint);
      conv.Ho = uint32_t(oy1 - oy0);
      conv.Wo = uint32_t(layer.Wo);
      conv.window = tileWindow(layer, span.padTop);
      out.push_back({Opcode::DwConv, tokens(plane == 0, false, false, false), conv});
    }
    uint64_t pixels = uint64_t(oy1 - oy0) * layer.Wo;
    encoding::Post post;
    post.outputUnsigned = layer.output.isUnsigned;
    post.output = outputSlot;
    post.acc = 0;
    post.T = uint32_t(pixels);
    post.N = Cc;
    post.outputStride = Cc;
    post.param = uint32_t(c0);
    setClamp(post, layer.output, layer.epilogue);
    out.push_back({Opcode::Post, tokens(false, !first, !last, true), post});
    out.push_back({Opcode::Store, tokens(true, false, !last, false),
                   channelRows(Output, uint64_t(b * layer.Ho + oy0) * layer.Wo, pixels, c0, Cc,
                               outputSlot)});
  }

  /// The DMA of channels [c0, c0 + Cc) of `pixels` HWC pixels from pixel
  /// `first` of `binding`, packed in the slot: one row when the chunk is
  /// every channel, else a row per pixel.
  encoding::Dma channelRows(uint8_t binding, uint64_t first, uint64_t pixels, int64_t c0,
                            uint32_t Cc, uint32_t slot) const {
    uint64_t dram = first * layer.C + c0;
    if (Cc == layer.C)
      return dma(binding, dram, slot, 1, uint32_t(pixels * Cc));
    return dma(binding, dram, slot, uint32_t(pixels), Cc, uint32_t(layer.C), Cc);
  }

  const ProductLayer &layer;
  const encoding::Config &config;
  const WeightPlanes planes;
  const int64_t taps;
  int64_t channels = 0, rows = 0; // per tile
};

//===----------------------------------------------------------------------===//
// Pooling and addition
//===----------------------------------------------------------------------===//

std::variant<LayerProgram, std::string> lowerPool(const PoolLayer &layer,
                                                  const encoding::Config &config) {
  auto slotsFor = [&](int64_t rows, uint64_t &inputSlot, uint64_t &outputSlot) {
    inputSlot = uint64_t(tallestInputTile(rows, layer.Ho, layer.H, layer.kh, layer.sh, layer.dh,
                                          layer.padTop)) *
                layer.W * layer.C;
    outputSlot = uint64_t(rows) * layer.Wo * layer.C;
  };
  // Pooling moves data: the largest tile that fits pays the fewest DMA
  // latencies.
  int64_t rows = 0;
  uint64_t inputSlot = 0, outputSlot = 0;
  for (int64_t candidate = layer.Ho; candidate >= 1; --candidate) {
    slotsFor(candidate, inputSlot, outputSlot);
    if (2 * aligned(inputSlot) + 2 * aligned(outputSlot) <= config.scratchpadBytes &&
        outputSlot < (uint64_t(1) << 24)) {
      rows = candidate;
      break;
    }
  }
  if (rows == 0)
    return std::string("no tile of its rows fits the scratchpad");
  LayerProgram program;
  int64_t tilesPerImage = ceilDiv(layer.Ho, rows), tiles = layer.batch * tilesPerImage;
  program.tile = {rows, tiles, 0};
  uint32_t inputSlots[2], outputSlots[2];
  uint64_t at = 0;
  placeSlots(inputSlots, inputSlot, at);
  placeSlots(outputSlots, outputSlot, at);
  for (int64_t t = 0; t < tiles; ++t) {
    int64_t b = t / tilesPerImage;
    int64_t oy0 = t % tilesPerImage * rows, oy1 = std::min(layer.Ho, oy0 + rows);
    RowSpan span = inputRows(oy0, oy1, layer.H, layer.kh, layer.sh, layer.dh, layer.padTop);
    uint64_t rowBytes = uint64_t(layer.W) * layer.C;
    program.instructions.push_back(
        {Opcode::Load, tokens(false, t >= 2, false, true),
         dma(0, uint64_t(b * layer.H + span.first) * rowBytes, inputSlots[t % 2], 1,
             uint32_t(uint64_t(span.count) * rowBytes))});
    encoding::Pool pool;
    pool.isUnsigned = layer.isUnsigned;
    pool.input = inputSlots[t % 2];
    pool.output = outputSlots[t % 2];
    pool.Hi = uint32_t(span.count);
    pool.Wi = uint32_t(layer.W);
    pool.C = uint32_t(layer.C);
    pool.Ho = uint32_t(oy1 - oy0);
    pool.Wo = uint32_t(layer.Wo);
    pool.window = tileWindow(layer, span.padTop);
    program.instructions.push_back(
        {Opcode::Pool, tokens(true, t >= 2, t + 2 < tiles, true), pool});
    uint64_t outputRow = uint64_t(layer.Wo) * layer.C;
    program.instructions.push_back(
        {Opcode::Store, tokens(true, false, t + 2 < tiles, false),
         dma(1, uint64_t(b * layer.Ho + oy0) * outputRow, outputSlots[t % 2], 1,
             uint32_t(uint64_t(oy1 - oy0) * outputRow))});
  }
  return program;
}

std::variant<LayerProgram, std::string> lowerAdd(const AddLayer &layer,
                                                 const encoding::Config &config) {
  // Six slots (a, b and the sum, twice) of equal size.
  uint64_t chunk = std::min<uint64_t>(uint64_t(layer.count),
                                      config.scratchpadBytes / 6 / kSlotAlignment * kSlotAlignment);
  if (chunk == 0)
    return std::string("the scratchpad holds no chunk of it");
  LayerProgram program;
  int64_t chunks = ceilDiv(layer.count, int64_t(chunk));
  program.tile = {int64_t(chunk), chunks, 0};
  auto slot = [&](int stream, int64_t t) {
    return uint32_t((stream * 2 + t % 2) * aligned(chunk));
  };
  auto byte = [](int64_t value) { return uint8_t(value & 0xff); };
  for (int64_t t = 0; t < chunks; ++t) {
    uint64_t at = uint64_t(t) * chunk;
    uint32_t count = uint32_t(std::min<uint64_t>(chunk, uint64_t(layer.count) - at));
    program.instructions.push_back(
        {Opcode::Load, tokens(false, t >= 2, false, false), dma(0, at, slot(0, t), 1, count)});
    program.instructions.push_back(
        {Opcode::Load, tokens(false, false, false, true), dma(1, at, slot(1, t), 1, count)});
    encoding::Add add;
    add.aUnsigned = layer.a.isUnsigned;
    add.bUnsigned = layer.b.isUnsigned;
    add.outputUnsigned = layer.output.isUnsigned;
    add.a = slot(0, t);
    add.b = slot(1, t);
    add.output = slot(2, t);
    add.count = count;
    add.aZero = byte(layer.a.zeroPoint);
    add.bZero = byte(layer.b.zeroPoint);
    add.outputZero = byte(layer.output.zeroPoint);
    auto [lowest, highest] = outputRange(layer.output, layer.epilogue);
    add.clampMin = byte(lowest);
    add.clampMax = byte(highest);
    add.aScale = float(layer.a.scale);
    add.bScale = float(layer.b.scale);
    add.outputScale = float(layer.output.scale);
    program.instructions.push_back(
        {Opcode::Add, tokens(true, t >= 2, t + 2 < chunks, true), add});
    program.instructions.push_back(
        {Opcode::Store, tokens(true, false, t + 2 < chunks, false),
         dma(2, at, slot(2, t), 1, count)});
  }
  return program;
}

} // namespace

std::variant<LayerProgram, std::string> lowerLayer(const Layer &layer,
                                                   const encoding::Config &config) {
  if (const auto *product = std::get_if<ProductLayer>(&layer)) {
    if (product->isDepthwise)
      return DepthwiseLowering(*product, config).lower();
    return ProductLowering(*product, config).lower();
  }
  if (const auto *pool = std::get_if<PoolLayer>(&layer))
    return lowerPool(*pool, config);
  return lowerAdd(std::get<AddLayer>(layer), config);
}

} // namespace tessel::npu
