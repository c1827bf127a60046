//===- Machine.cpp - The NPU's state and what each instruction does -------===//

#include "Machine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessel::runtime::npu {

namespace {

int32_t widen(uint8_t byte, bool isUnsigned) {
  return isUnsigned ? int32_t(byte) : int32_t(int8_t(byte));
}

/// The pixel index (y * Wi + x) of window offset (ky, kx) of output pixel
/// (oy, ox) in a Hi x Wi tile; -1 when it falls outside the tile.
int64_t windowPixel(const isa::Window &window, uint32_t Hi, uint32_t Wi, uint32_t oy, uint32_t ox,
                    uint32_t ky, uint32_t kx) {
  int64_t y = int64_t(oy) * window.sh + int64_t(ky) * window.dh - window.padTop;
  int64_t x = int64_t(ox) * window.sw + int64_t(kx) * window.dw - window.padLeft;
  if (y < 0 || y >= Hi || x < 0 || x >= Wi)
    return -1;
  return y * Wi + x;
}

int32_t readLittleEndian32(const uint8_t *bytes) {
  uint32_t value = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 |
                   uint32_t(bytes[3]) << 24;
  return int32_t(value);
}

/// value / 2^shift + offset, rounded half to even (shift in [0, 62]): the
/// tie goes to the even sum, so the offset's parity decides it.
int64_t shiftRoundingHalfEven(int64_t value, int shift, int64_t offset) {
  if (shift == 0)
    return value + offset;
  int64_t quotient = value >> shift; // floor (arithmetic shift)
  // value - quotient * 2^shift, in [0, 2^shift): the bits shifted out.
  int64_t remainder = int64_t(uint64_t(value) & ((uint64_t(1) << shift) - 1));
  int64_t half = int64_t(1) << (shift - 1);
  if (remainder > half || (remainder == half && ((quotient + offset) & 1)))
    ++quotient;
  return quotient + offset;
}

int64_t storageMinimum(bool isUnsigned) { return isUnsigned ? 0 : -128; }
int64_t storageMaximum(bool isUnsigned) { return isUnsigned ? 255 : 127; }

/// Accumulates `product` into an accumulator entry, two's-complement
/// wrapping as 32-bit hardware does.
void accumulateInto(int32_t &entry, int32_t product, bool accumulate) {
  entry = accumulate ? int32_t(uint32_t(entry) + uint32_t(product)) : product;
}

} // namespace

Machine::Machine(const isa::Config &config)
    : config(config), scratchpadBytes(config.scratchpadBytes),
      accumulatorEntries(config.accumulatorEntries()), parameterBytes(config.parameterBytes) {}

void Machine::reset() {
  std::fill(scratchpadBytes.begin(), scratchpadBytes.end(), 0);
  std::fill(accumulatorEntries.begin(), accumulatorEntries.end(), 0);
  std::fill(parameterBytes.begin(), parameterBytes.end(), 0);
  lut.fill(0);
}

uint8_t *Machine::local(isa::Memory memory) {
  switch (memory) {
  case isa::Memory::Parameters:
    return parameterBytes.data();
  case isa::Memory::Lut:
    return lut.data();
  default:
    return scratchpadBytes.data();
  }
}

std::string Machine::execute(const isa::Instruction &instruction, const Dram &dram) {
  switch (instruction.opcode) {
  case isa::Opcode::Load:
  case isa::Opcode::Store:
    return dma(std::get<isa::Dma>(instruction.body), instruction.opcode == isa::Opcode::Load,
               dram);
  case isa::Opcode::Gemm:
    gemm(std::get<isa::Gemm>(instruction.body));
    return "";
  case isa::Opcode::Post:
    return post(std::get<isa::Post>(instruction.body));
  case isa::Opcode::Add:
    add(std::get<isa::Add>(instruction.body));
    return "";
  case isa::Opcode::Pool:
    pool(std::get<isa::Pool>(instruction.body));
    return "";
  case isa::Opcode::DwConv:
    depthwise(std::get<isa::DwConv>(instruction.body));
    return "";
  }
  return "unknown opcode";
}

std::string Machine::dma(const isa::Dma &dma, bool load, const Dram &dram) {
  if (dma.binding >= dram.count)
    return "binding " + std::to_string(dma.binding) + " is not bound";
  uint8_t *buffer = dram.buffers[dma.binding];
  uint8_t *memory = local(dma.memory);
  for (uint32_t row = 0; row < dma.rows; ++row) {
    uint8_t *external = buffer + dma.dram + uint64_t(row) * dma.dramStride;
    uint8_t *internal = memory + dma.local + uint64_t(row) * dma.localStride;
    if (load)
      std::memmove(internal, external, dma.rowBytes);
    else
      std::memmove(external, internal, dma.rowBytes);
  }
  return "";
}

void Machine::gemm(const isa::Gemm &gemm) {
  const uint8_t *sp = scratchpadBytes.data();
  uint32_t K = gemm.K, N = gemm.N;
  // Weights as N columns of K, so that each output is one contiguous dot
  // product.
  weightColumns.resize(size_t(K) * N);
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t n = 0; n < N; ++n)
      weightColumns[size_t(n) * K + k] = widen(sp[gemm.weights + k * N + n], gemm.weightUnsigned);
  inputRow.resize(K);
  // im2col coordinates of the K-slice, independent of the output pixel.
  std::vector<uint32_t> channel, ky, kx;
  if (gemm.im2col) {
    channel.resize(K), ky.resize(K), kx.resize(K);
    for (uint32_t k = 0; k < K; ++k) {
      uint32_t j = gemm.k0 + k;
      channel[k] = j % gemm.Ci;
      kx[k] = (j / gemm.Ci) % gemm.window.kw;
      ky[k] = j / (gemm.Ci * gemm.window.kw);
    }
  }
  int32_t padValue = widen(gemm.padValue, gemm.inputUnsigned);
  for (uint32_t t = 0; t < gemm.T; ++t) {
    if (gemm.im2col) {
      uint32_t oy = t / gemm.Wo, ox = t % gemm.Wo;
      for (uint32_t k = 0; k < K; ++k) {
        int64_t pixel = windowPixel(gemm.window, gemm.Hi, gemm.Wi, oy, ox, ky[k], kx[k]);
        inputRow[k] = pixel < 0 ? padValue
                                : widen(sp[gemm.input + pixel * gemm.Ci + channel[k]],
                                        gemm.inputUnsigned);
      }
    } else {
      const uint8_t *row = sp + gemm.input + uint64_t(t) * gemm.rowStride;
      for (uint32_t k = 0; k < K; ++k)
        inputRow[k] = widen(row[k], gemm.inputUnsigned);
    }
    int32_t *out = accumulatorEntries.data() + gemm.acc + uint64_t(t) * N;
    for (uint32_t n = 0; n < N; ++n) {
      const int32_t *column = weightColumns.data() + size_t(n) * K;
      int32_t sum = 0; // |sum| < 2^31: K <= 256 products of at most 255 * 255
      for (uint32_t k = 0; k < K; ++k)
        sum += inputRow[k] * column[k];
      accumulateInto(out[n], sum, gemm.accumulate);
    }
  }
}

std::string Machine::post(const isa::Post &post) {
  struct Record {
    int64_t bias, multiplier;
    int shift;
  };
  std::vector<Record> records(post.N);
  for (uint32_t n = 0; n < post.N; ++n) {
    const uint8_t *bytes = parameterBytes.data() + (uint64_t(post.param) + n) * 16;
    int32_t shift = readLittleEndian32(bytes + 8), multiplier = readLittleEndian32(bytes + 4);
    if (shift < 0 || shift > 62 || multiplier < 0)
      return "channel record " + std::to_string(post.param + n) + " has multiplier " +
             std::to_string(multiplier) + " and shift " + std::to_string(shift) +
             " (the multiplier must be in [0, 2^31), the shift in [0, 62])";
    records[n] = {readLittleEndian32(bytes), multiplier, shift};
  }
  for (uint32_t t = 0; t < post.T; ++t) {
    const int32_t *row = accumulatorEntries.data() + post.acc + uint64_t(t) * post.N;
    uint8_t *out = scratchpadBytes.data() + post.output + uint64_t(t) * post.outputStride;
    for (uint32_t n = 0; n < post.N; ++n) {
      const Record &record = records[n];
      int64_t value = int64_t(row[n]) + record.bias;   // |value| < 2^32
      int64_t product = value * record.multiplier;     // |product| < 2^63
      // |product / 2^shift| < 2^63 and the zero point is 16-bit: no overflow
      // unless the shift is 0, which the clamp of the product prevents.
      if (record.shift == 0)
        product = std::clamp<int64_t>(product, -(int64_t(1) << 40), int64_t(1) << 40);
      int64_t rounded = shiftRoundingHalfEven(product, record.shift, post.zeroPoint);
      int64_t q = std::clamp<int64_t>(rounded, post.clampMin, post.clampMax);
      uint8_t byte = uint8_t(q & 0xff);
      out[n] = post.lut ? lut[byte] : byte;
    }
  }
  return "";
}

void Machine::add(const isa::Add &add) {
  // binary32 throughout, each operation rounded on its own: ONNX's
  // dequantize, add, quantize, as the CPU computes it. The volatile
  // temporaries keep any compiler from fusing a multiply and an add.
  float aZero = float(widen(add.aZero, add.aUnsigned));
  float bZero = float(widen(add.bZero, add.bUnsigned));
  double outputZero = widen(add.outputZero, add.outputUnsigned);
  double low = std::max<double>(storageMinimum(add.outputUnsigned),
                                widen(add.clampMin, add.outputUnsigned));
  double high = std::min<double>(storageMaximum(add.outputUnsigned),
                                 widen(add.clampMax, add.outputUnsigned));
  uint8_t *sp = scratchpadBytes.data();
  for (uint32_t i = 0; i < add.count; ++i) {
    float a = float(widen(sp[add.a + i], add.aUnsigned));
    float b = float(widen(sp[add.b + i], add.bUnsigned));
    volatile float aCentred = a - aZero;
    volatile float bCentred = b - bZero;
    volatile float aReal = aCentred * add.aScale;
    volatile float bReal = bCentred * add.bScale;
    volatile float sum = aReal + bReal;
    volatile float scaled = sum / add.outputScale;
    float rounded = std::nearbyint(float(scaled)); // round half to even
    // Infinite products of opposite signs (scales near the binary32 limit)
    // sum to NaN, which quantizes to the zero point (isa.md section 3.4).
    double q = std::isnan(rounded) ? outputZero
                                   : std::clamp(double(rounded) + outputZero, low, high);
    sp[add.output + i] = uint8_t(int64_t(q) & 0xff);
  }
}

void Machine::pool(const isa::Pool &pool) {
  const uint8_t *sp = scratchpadBytes.data();
  int32_t minimum = int32_t(storageMinimum(pool.isUnsigned));
  for (uint32_t oy = 0; oy < pool.Ho; ++oy)
    for (uint32_t ox = 0; ox < pool.Wo; ++ox)
      for (uint32_t c = 0; c < pool.C; ++c) {
        int32_t best = minimum;
        for (uint32_t ky = 0; ky < pool.window.kh; ++ky)
          for (uint32_t kx = 0; kx < pool.window.kw; ++kx) {
            int64_t pixel = windowPixel(pool.window, pool.Hi, pool.Wi, oy, ox, ky, kx);
            if (pixel >= 0)
              best = std::max(best, widen(sp[pool.input + pixel * pool.C + c], pool.isUnsigned));
          }
        scratchpadBytes[pool.output + (uint64_t(oy) * pool.Wo + ox) * pool.C + c] =
            uint8_t(best & 0xff);
      }
}

void Machine::depthwise(const isa::DwConv &conv) {
  const uint8_t *sp = scratchpadBytes.data();
  int32_t padValue = widen(conv.padValue, conv.inputUnsigned);
  for (uint32_t oy = 0; oy < conv.Ho; ++oy)
    for (uint32_t ox = 0; ox < conv.Wo; ++ox) {
      int32_t *out = accumulatorEntries.data() + conv.acc + (uint64_t(oy) * conv.Wo + ox) * conv.C;
      for (uint32_t c = 0; c < conv.C; ++c) {
        int32_t sum = 0; // at most 225 products of at most 255 * 255
        for (uint32_t ky = 0; ky < conv.window.kh; ++ky)
          for (uint32_t kx = 0; kx < conv.window.kw; ++kx) {
            int64_t pixel = windowPixel(conv.window, conv.Hi, conv.Wi, oy, ox, ky, kx);
            int32_t x = pixel < 0 ? padValue
                                  : widen(sp[conv.input + pixel * conv.C + c], conv.inputUnsigned);
            int32_t w = widen(sp[conv.weights + (uint64_t(ky) * conv.window.kw + kx) * conv.C + c],
                              conv.weightUnsigned);
            sum += x * w;
          }
        accumulateInto(out[c], sum, conv.accumulate);
      }
    }
}

} // namespace tessel::runtime::npu
