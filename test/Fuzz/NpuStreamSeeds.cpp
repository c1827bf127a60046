//===- NpuStreamSeeds.cpp - Seed inputs of the NPU stream fuzz target -----===//
//
// Writes valid programs in tessel-fuzz-npu-stream's input layout (machine
// bytes, buffer sizes, instruction count, instructions, DRAM contents) into a folder, encoded
// by the ISA's one encoder: a double-buffered product pipeline with every
// token, a convolution through im2col GEMMs and POST, and the vector
// unit's instructions. scripts/fuzz-seeds.py calls it.
//
//   tessel-npu-stream-seeds FOLDER
//
//===----------------------------------------------------------------------===//

#include "runtime/schema/NpuIsa.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace isa = tessel::schema::npu;

struct Seed {
  std::vector<uint8_t> bytes;

  /// The machine: array rows and columns, and scratchpad, accumulator and
  /// parameter memory in the fuzz target's units.
  Seed(uint8_t rows, uint8_t columns, uint8_t scratchpadKiB, uint8_t accumulatorKiB,
       uint8_t parameterRecords, std::vector<uint8_t> bufferUnits) {
    bytes = {uint8_t(rows - 1), uint8_t(columns - 1), 0, uint8_t(scratchpadKiB - 1),
             uint8_t(accumulatorKiB - 1), uint8_t(parameterRecords - 1), 15, 16};
    bytes.insert(bytes.end(), bufferUnits.begin(), bufferUnits.end());
    bytes.push_back(0); // the instruction count, which emit() keeps
  }
  void emit(isa::Opcode opcode, isa::Body body, isa::Dependencies dependencies = {}) {
    isa::Words words;
    std::string error;
    if (!isa::encode({opcode, dependencies, std::move(body)}, words, &error)) {
      std::fprintf(stderr, "tessel-npu-stream-seeds: %s\n", error.c_str());
      std::exit(1);
    }
    for (uint64_t word : words)
      for (int i = 0; i < 8; ++i)
        bytes.push_back(uint8_t(word >> (8 * i)));
    ++bytes[12];
  }
  void data(size_t count, uint8_t seed) {
    for (size_t i = 0; i < count; ++i)
      bytes.push_back(uint8_t(seed + i * 7));
  }
};

isa::Dma dma(uint8_t binding, uint32_t local, uint32_t rowBytes,
             isa::Memory memory = isa::Memory::Scratchpad) {
  isa::Dma result;
  result.binding = binding;
  result.local = local;
  result.rowBytes = rowBytes;
  result.memory = memory;
  return result;
}

Seed pipeline() {
  Seed seed(16, 16, 4, 2, 16, {16, 64, 64, 0});
  seed.emit(isa::Opcode::Load, dma(0, 0, 256));
  for (uint32_t i = 0; i < 4; ++i) {
    isa::Dma tile = dma(1, 256 * (1 + i % 2), 256);
    tile.dram = 256 * i;
    seed.emit(isa::Opcode::Load, tile, {false, i >= 2, false, true});
  }
  for (uint32_t i = 0; i < 4; ++i) {
    isa::Gemm gemm;
    gemm.input = 256 * (1 + i % 2);
    gemm.K = 16;
    gemm.N = 16;
    gemm.T = 16;
    gemm.rowStride = 16;
    seed.emit(isa::Opcode::Gemm, gemm, {true, false, i + 2 < 4, false});
    isa::Post post;
    post.T = 16;
    post.N = 16;
    post.output = 256 * (3 + i % 2);
    post.outputStride = 16;
    seed.emit(isa::Opcode::Post, post, {false, i >= 2, false, true});
  }
  for (uint32_t i = 0; i < 4; ++i) {
    isa::Dma tile = dma(2, 256 * (3 + i % 2), 256);
    tile.dram = 256 * i;
    seed.emit(isa::Opcode::Store, tile, {true, false, i + 2 < 4, false});
  }
  seed.data(256 + 1024, 3);
  return seed;
}

Seed convolution() {
  // A 6x6x4 u8 tile, 3x3 kernel, 8 filters: K = 36 in two folds of 32 and 4.
  Seed seed(32, 8, 4, 2, 8, {9, 18, 8, 18});
  seed.emit(isa::Opcode::Load, dma(0, 0, 144));
  seed.emit(isa::Opcode::Load, dma(1, 256, 288));
  seed.emit(isa::Opcode::Load, dma(2, 0, 128, isa::Memory::Parameters), {false, false, false, true});
  for (uint32_t k0 = 0; k0 < 36; k0 += 32) {
    isa::Gemm gemm;
    gemm.im2col = true;
    gemm.inputUnsigned = true;
    gemm.accumulate = k0 > 0;
    gemm.weights = 256 + k0 * 8;
    gemm.K = k0 == 0 ? 32 : 4;
    gemm.N = 8;
    gemm.T = 36;
    gemm.k0 = k0;
    gemm.Hi = gemm.Wi = 6;
    gemm.Ci = 4;
    gemm.Wo = 6;
    gemm.padValue = 128;
    gemm.window = {3, 3, 1, 1, 1, 1, 1, 1};
    seed.emit(isa::Opcode::Gemm, gemm, {k0 == 0, false, false, false});
  }
  isa::Post post;
  post.T = 36;
  post.N = 8;
  post.output = 1024;
  post.outputStride = 8;
  seed.emit(isa::Opcode::Post, post, {false, false, false, true});
  seed.emit(isa::Opcode::Store, dma(3, 1024, 288), {true, false, false, false});
  // Input, weights, then records: bias 0, multiplier 2^23, shift 30.
  seed.data(144 + 288, 11);
  for (int channel = 0; channel < 8; ++channel)
    for (int32_t field : {0, 1 << 23, 30, 0})
      for (int i = 0; i < 4; ++i)
        seed.bytes.push_back(uint8_t(uint32_t(field) >> (8 * i)));
  return seed;
}

Seed vectorUnit() {
  Seed seed(8, 8, 4, 1, 16, {16, 16, 16, 16});
  seed.emit(isa::Opcode::Load, dma(0, 0, 256));
  seed.emit(isa::Opcode::Load, dma(1, 0, 256, isa::Memory::Lut), {false, false, false, true});
  isa::Pool pool;
  pool.input = 0;
  pool.output = 512;
  pool.Hi = pool.Wi = 4;
  pool.C = 16;
  pool.Ho = pool.Wo = 2;
  pool.window = {2, 2, 2, 2, 1, 1, 0, 0};
  seed.emit(isa::Opcode::Pool, pool, {true, false, false, false});
  isa::Add add;
  add.a = 0;
  add.b = 512;
  add.output = 640;
  add.count = 64;
  add.aScale = 0.02f;
  add.bScale = 0.03f;
  add.outputScale = 0.05f;
  seed.emit(isa::Opcode::Add, add);
  isa::DwConv conv;
  conv.input = 0;
  conv.weights = 768;
  conv.Hi = conv.Wi = 4;
  conv.C = 16;
  conv.Ho = conv.Wo = 4;
  conv.window = {3, 3, 1, 1, 1, 1, 1, 1};
  seed.emit(isa::Opcode::DwConv, conv);
  isa::Post post;
  post.lut = true;
  post.T = 16;
  post.N = 16;
  post.output = 1024;
  post.outputStride = 16;
  seed.emit(isa::Opcode::Post, post, {false, false, false, true});
  seed.emit(isa::Opcode::Store, dma(2, 1024, 256), {true, false, false, false});
  seed.data(1024, 5);
  return seed;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tessel-npu-stream-seeds FOLDER\n");
    return 2;
  }
  struct Named {
    const char *name;
    Seed seed;
  } seeds[] = {{"pipeline", pipeline()}, {"convolution", convolution()},
               {"vector-unit", vectorUnit()}};
  for (const Named &named : seeds) {
    std::string path = std::string(argv[1]) + "/" + named.name;
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char *>(named.seed.bytes.data()),
               std::streamsize(named.seed.bytes.size()));
    if (!file) {
      std::fprintf(stderr, "tessel-npu-stream-seeds: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
