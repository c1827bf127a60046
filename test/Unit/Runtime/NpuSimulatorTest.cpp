//===- NpuSimulatorTest.cpp - The NPU simulator against the ISA's text ----===//
//
// Programs written here instruction by instruction, run by the simulator,
// and compared with the ISA's definitions (docs/npu/isa.md) computed
// directly: convolutions and products as plain loops, requantization in
// exact integer arithmetic and in binary64 as the x86 target computes it,
// timing as the section 4 formulas give it.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/npu/Machine.h"
#include "runtime/src/npu/Program.h"
#include "runtime/src/npu/Simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

namespace isa = tessel::schema::npu;
using namespace tessel::runtime::npu;
using ::testing::HasSubstr;

/// A program under construction, and the DRAM buffers it runs on.
struct Assembler {
  std::vector<uint64_t> words;

  void emit(isa::Opcode opcode, isa::Body body, isa::Dependencies dependencies = {}) {
    isa::Instruction instruction{opcode, dependencies, std::move(body)};
    isa::Words encoded;
    std::string error;
    ASSERT_TRUE(isa::encode(instruction, encoded, &error)) << error;
    words.insert(words.end(), encoded.begin(), encoded.end());
  }
  size_t count() const { return words.size() / isa::kInstructionWords; }
};

struct Buffers {
  std::vector<std::vector<uint8_t>> data;
  std::vector<uint8_t *> pointers;
  std::vector<uint64_t> sizes;

  size_t add(std::vector<uint8_t> bytes) {
    data.push_back(std::move(bytes));
    return data.size() - 1;
  }
  Dram dram() {
    pointers.clear();
    sizes.clear();
    for (std::vector<uint8_t> &buffer : data) {
      pointers.push_back(buffer.data());
      sizes.push_back(buffer.size());
    }
    return {pointers.data(), sizes.data(), pointers.size()};
  }
};

/// Loads and runs `program` on `buffers`; the error, or "" and statistics.
std::string run(const Assembler &program, Buffers &buffers, const isa::Config &config,
                RunStatistics &statistics) {
  Dram dram = buffers.dram();
  std::vector<uint64_t> sizes(dram.sizes, dram.sizes + dram.count);
  Program loaded;
  if (std::string problem = loadProgram(program.words.data(), program.count(), config, sizes, loaded);
      !problem.empty())
    return "load: " + problem;
  Machine machine(config);
  return runProgram(loaded, config, machine, dram, statistics);
}

using isa::dma;

isa::Dependencies deps(bool popPrevious, bool popNext, bool pushPrevious, bool pushNext) {
  return {popPrevious, popNext, pushPrevious, pushNext};
}

std::vector<uint8_t> randomBytes(size_t count, std::mt19937 &random) {
  std::vector<uint8_t> bytes(count);
  for (uint8_t &byte : bytes)
    byte = uint8_t(random());
  return bytes;
}

void putLittleEndian32(std::vector<uint8_t> &bytes, size_t at, int32_t value) {
  for (int i = 0; i < 4; ++i)
    bytes[at + i] = uint8_t(uint32_t(value) >> (8 * i));
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

TEST(NpuIsaTest, EveryFieldRoundTrips) {
  isa::Gemm gemm;
  gemm.accumulate = true;
  gemm.inputUnsigned = true;
  gemm.im2col = true;
  gemm.weights = 0xabcdef;
  gemm.K = 0x7fff;
  gemm.N = 256;
  gemm.input = 0x123456;
  gemm.T = 0xfffff;
  gemm.acc = 0x54321;
  gemm.k0 = 0xbeef;
  gemm.Hi = 4095;
  gemm.Wi = 17;
  gemm.Ci = 2048;
  gemm.padValue = 0x80;
  gemm.Wo = 3000;
  gemm.window = {7, 5, 2, 3, 4, 1, 15, 9};
  isa::Instruction instruction{isa::Opcode::Gemm, deps(true, false, false, true), gemm};
  isa::Words words;
  ASSERT_TRUE(isa::encode(instruction, words));
  isa::Instruction decoded;
  std::string error;
  ASSERT_TRUE(isa::decode(words.data(), decoded, error)) << error;
  const auto &back = std::get<isa::Gemm>(decoded.body);
  EXPECT_EQ(back.weights, gemm.weights);
  EXPECT_EQ(back.K, 0x7fffu);
  EXPECT_EQ(back.N, 256u);
  EXPECT_EQ(back.T, 0xfffffu);
  EXPECT_EQ(back.acc, 0x54321u);
  EXPECT_EQ(back.k0, 0xbeefu);
  EXPECT_EQ(back.Ci, 2048u);
  EXPECT_EQ(back.padValue, 0x80);
  EXPECT_EQ(back.window.kh, 7);
  EXPECT_EQ(back.window.padLeft, 9);
  EXPECT_TRUE(back.accumulate && back.inputUnsigned && back.im2col && !back.weightUnsigned);
  EXPECT_TRUE(decoded.dependencies.popPrevious && decoded.dependencies.pushNext);

  isa::Post post;
  post.zeroPoint = -7;
  post.clampMin = -100;
  post.clampMax = 99;
  isa::Add add;
  add.aScale = 0.0123f;
  add.outputScale = 3.5e-5f;
  for (isa::Instruction original :
       {isa::Instruction{isa::Opcode::Post, {}, post}, isa::Instruction{isa::Opcode::Add, {}, add}}) {
    ASSERT_TRUE(isa::encode(original, words));
    ASSERT_TRUE(isa::decode(words.data(), decoded, error)) << error;
  }
  EXPECT_EQ(std::get<isa::Add>(decoded.body).aScale, 0.0123f);
  EXPECT_EQ(std::get<isa::Add>(decoded.body).outputScale, 3.5e-5f);
}

TEST(NpuIsaTest, SignedFieldsKeepTheirSign) {
  isa::Post post;
  post.zeroPoint = -128;
  post.clampMin = -128;
  post.clampMax = -1;
  isa::Words words;
  ASSERT_TRUE(isa::encode({isa::Opcode::Post, {}, post}, words));
  isa::Instruction decoded;
  std::string error;
  ASSERT_TRUE(isa::decode(words.data(), decoded, error));
  EXPECT_EQ(std::get<isa::Post>(decoded.body).zeroPoint, -128);
  EXPECT_EQ(std::get<isa::Post>(decoded.body).clampMax, -1);
}

TEST(NpuIsaTest, TooWideValuesAndReservedBitsAreRefused) {
  isa::Gemm gemm;
  gemm.N = 512; // a 9-bit field
  isa::Words words;
  std::string error;
  EXPECT_FALSE(isa::encode({isa::Opcode::Gemm, {}, gemm}, words, &error));
  EXPECT_THAT(error, HasSubstr("does not fit the 9-bit field"));

  ASSERT_TRUE(isa::encode({isa::Opcode::Gemm, {}, isa::Gemm()}, words));
  words[3] |= uint64_t(1) << 50; // a dense GEMM uses no bit of word 3
  isa::Instruction decoded;
  EXPECT_FALSE(isa::decode(words.data(), decoded, error));
  EXPECT_EQ(error, "reserved bit 50 of word 3 is set");

  words = {};
  words[0] = 0x2a;
  EXPECT_FALSE(isa::decode(words.data(), decoded, error));
  EXPECT_EQ(error, "unknown opcode 42");
}

TEST(NpuIsaTest, RequantizationRecordsAreExact) {
  for (float scale : {0.0123f, 1.0f, 3.999f, 1e-9f, 0.5f, 7.3e-5f}) {
    isa::Requantization record;
    ASSERT_TRUE(isa::requantizationOf(scale, record)) << scale;
    EXPECT_EQ(std::ldexp(double(record.multiplier), -record.shift), double(scale)) << scale;
  }
  isa::Requantization record;
  EXPECT_FALSE(isa::requantizationOf(0.0f, record));
  EXPECT_FALSE(isa::requantizationOf(-1.0f, record));
  EXPECT_FALSE(isa::requantizationOf(1e20f, record)); // the shift would be negative
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

std::string loadProblem(const Assembler &program, std::vector<uint64_t> bindingSizes = {64},
                        isa::Config config = {}) {
  Program loaded;
  return loadProgram(program.words.data(), program.count(), config, bindingSizes, loaded);
}

TEST(NpuVerifierTest, RefusesWhatLeavesItsMemory) {
  Assembler beyondScratchpad;
  beyondScratchpad.emit(isa::Opcode::Load, dma(0, 0, 262144 - 8, 1, 16, 0, 0));
  EXPECT_EQ(loadProblem(beyondScratchpad),
            "instruction 0: writes scratchpad [262136, 262152), which has 262144 bytes");

  Assembler beyondBinding;
  beyondBinding.emit(isa::Opcode::Load, dma(0, 0, 0, 2, 16, 60, 16));
  EXPECT_EQ(loadProblem(beyondBinding),
            "instruction 0: DRAM bytes up to 76 of binding 0, which holds 64");

  Assembler noSuchBinding;
  noSuchBinding.emit(isa::Opcode::Store, dma(3, 0, 0, 1, 1, 0, 0));
  EXPECT_EQ(loadProblem(noSuchBinding), "instruction 0: binding 3 of an entry with 1");

  isa::Gemm wide;
  wide.K = 33;
  Assembler tooWide;
  tooWide.emit(isa::Opcode::Gemm, wide);
  EXPECT_EQ(loadProblem(tooWide), "instruction 0: K 33 outside [1, 32]");
  // Output stationary, the reduction streams in time: any K the field holds.
  isa::Config outputStationary;
  outputStationary.outputStationary = true;
  EXPECT_EQ(loadProblem(tooWide, {64}, outputStationary), "");

  isa::Gemm manyRows;
  manyRows.T = 20000;
  manyRows.N = 1;
  manyRows.acc = 0;
  Assembler beyondAccumulator;
  beyondAccumulator.emit(isa::Opcode::Gemm, manyRows);
  EXPECT_EQ(loadProblem(beyondAccumulator),
            "instruction 0: writes accumulator [0, 20000), which has 16384 entries");

  isa::Gemm im2col;
  im2col.im2col = true;
  im2col.K = 10;
  im2col.Ci = 1;
  im2col.window.kh = 3;
  im2col.window.kw = 3;
  Assembler pastTheMatrix;
  pastTheMatrix.emit(isa::Opcode::Gemm, im2col);
  EXPECT_EQ(loadProblem(pastTheMatrix),
            "instruction 0: im2col indices up to 10 of a 9-column matrix");

  isa::Add add;
  add.outputScale = std::nanf("");
  Assembler notAScale;
  notAScale.emit(isa::Opcode::Add, add);
  EXPECT_EQ(loadProblem(notAScale), "instruction 0: output_scale is not a positive finite number");

  isa::Post post;
  post.outputUnsigned = true;
  post.zeroPoint = -1;
  Assembler negativeZeroPoint;
  negativeZeroPoint.emit(isa::Opcode::Post, post);
  EXPECT_EQ(loadProblem(negativeZeroPoint),
            "instruction 0: zero point -1 outside the output type");
}

TEST(NpuVerifierTest, RefusesTokensWithoutAQueueOrAPartner) {
  Assembler loadPopsPrevious;
  loadPopsPrevious.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 1, 0, 0), deps(true, false, false, false));
  EXPECT_THAT(loadProblem(loadPopsPrevious), HasSubstr("which it does not have"));

  Assembler unbalanced;
  unbalanced.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 1, 0, 0), deps(false, false, false, true));
  EXPECT_EQ(loadProblem(unbalanced),
            "the LD->EX tokens do not balance: 1 more pushed than popped");
}

TEST(NpuVerifierTest, RefusesAConfigurationItCannotSimulate) {
  isa::Config config;
  config.arrayRows = 300;
  EXPECT_EQ(loadProblem(Assembler(), {}, config),
            "NPU configuration: array_rows 300 is outside [1, 256]");
}

//===----------------------------------------------------------------------===//
// Functional results
//===----------------------------------------------------------------------===//

/// ONNX's requantization as the x86 target computes it: the accumulator
/// times the binary32 multiplier, in binary64, plus the zero point, rounded
/// half to even, clamped.
int64_t referenceRequantize(int64_t accumulator, float multiplier, int64_t zeroPoint, int64_t low,
                            int64_t high) {
  double value = std::nearbyint(double(accumulator) * double(multiplier) + double(zeroPoint));
  return std::clamp<int64_t>(int64_t(value), low, high);
}

struct ConvCase {
  uint32_t H, W, C, F, kh, kw, stride, dilation, pad;
  bool inputUnsigned;
};

/// One convolution layer, NHWC input in binding 0, HWCF weights (as the
/// K x F im2col matrix) in binding 1, channel records in binding 2, output
/// in binding 3: loaded whole, one GEMM per fold of at most R rows and C
/// columns, requantized, stored.
void runConvolution(const ConvCase &layer, std::mt19937 &random) {
  isa::Config config;
  uint32_t Ho = (layer.H + 2 * layer.pad - layer.dilation * (layer.kh - 1) - 1) / layer.stride + 1;
  uint32_t Wo = (layer.W + 2 * layer.pad - layer.dilation * (layer.kw - 1) - 1) / layer.stride + 1;
  uint32_t K = layer.kh * layer.kw * layer.C, T = Ho * Wo;
  Buffers buffers;
  std::vector<uint8_t> input = randomBytes(size_t(layer.H) * layer.W * layer.C, random);
  std::vector<uint8_t> weights = randomBytes(size_t(K) * layer.F, random);
  uint8_t inputZero = layer.inputUnsigned ? uint8_t(random() % 256) : uint8_t(random() % 20 - 10);
  std::vector<int32_t> bias(layer.F);
  std::vector<float> multipliers(layer.F);
  std::vector<uint8_t> records(size_t(layer.F) * 16);
  for (uint32_t f = 0; f < layer.F; ++f) {
    bias[f] = int32_t(random() % 20001) - 10000;
    multipliers[f] = float(std::ldexp(1.0 + (random() % 1000) / 1000.0, -int(11 + random() % 5)));
    isa::Requantization record;
    ASSERT_TRUE(isa::requantizationOf(multipliers[f], record));
    putLittleEndian32(records, f * 16, bias[f]);
    putLittleEndian32(records, f * 16 + 4, record.multiplier);
    putLittleEndian32(records, f * 16 + 8, record.shift);
  }
  int32_t outputZero = int32_t(random() % 256) - 128;
  buffers.add(input);
  buffers.add(weights);
  buffers.add(records);
  buffers.add(std::vector<uint8_t>(size_t(T) * layer.F));

  // Scratchpad: input at 0, weights after it, output after them.
  uint32_t inputBytes = layer.H * layer.W * layer.C;
  uint32_t weightAddress = (inputBytes + 63) / 64 * 64;
  uint32_t outputAddress = (weightAddress + K * layer.F + 63) / 64 * 64;
  Assembler program;
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, inputBytes, 0, 0));
  program.emit(isa::Opcode::Load, dma(1, 0, weightAddress, 1, K * layer.F, 0, 0));
  program.emit(isa::Opcode::Load, dma(2, 0, 0, 1, layer.F * 16, 0, 0, isa::Memory::Parameters),
               deps(false, false, false, true));
  bool first = true;
  for (uint32_t n0 = 0; n0 < layer.F; n0 += config.arrayColumns) {
    uint32_t N = std::min(config.arrayColumns, layer.F - n0);
    for (uint32_t k0 = 0; k0 < K; k0 += config.arrayRows) {
      isa::Gemm gemm;
      gemm.im2col = true;
      gemm.inputUnsigned = layer.inputUnsigned;
      gemm.accumulate = k0 > 0;
      gemm.K = std::min(config.arrayRows, K - k0);
      gemm.N = N;
      gemm.T = T;
      gemm.acc = n0 * T;
      // The fold's weight tile: rows k0.., columns n0.. of the K x F matrix,
      // gathered by one strided LOAD per fold would be the compiler's way;
      // here the K x F matrix is re-laid out in DRAM per fold instead.
      gemm.weights = weightAddress + k0 * layer.F + n0;
      gemm.k0 = k0;
      gemm.Hi = layer.H;
      gemm.Wi = layer.W;
      gemm.Ci = layer.C;
      gemm.Wo = Wo;
      gemm.padValue = inputZero;
      gemm.window = {uint8_t(layer.kh), uint8_t(layer.kw), uint8_t(layer.stride),
                     uint8_t(layer.stride), uint8_t(layer.dilation), uint8_t(layer.dilation),
                     uint8_t(layer.pad), uint8_t(layer.pad)};
      // GEMM reads its K x N tile contiguously: only a whole-width tile
      // (N == F) is contiguous in the K x F matrix.
      ASSERT_EQ(N, layer.F) << "keep F within one array width in these cases";
      program.emit(isa::Opcode::Gemm, gemm, deps(first, false, false, false));
      first = false;
    }
  }
  isa::Post post;
  post.acc = 0;
  post.T = T;
  post.N = layer.F;
  post.output = outputAddress;
  post.outputStride = layer.F;
  post.zeroPoint = int16_t(outputZero);
  program.emit(isa::Opcode::Post, post, deps(false, false, false, true));
  program.emit(isa::Opcode::Store, dma(3, 0, outputAddress, 1, T * layer.F, 0, 0),
               deps(true, false, false, false));

  RunStatistics statistics;
  ASSERT_EQ(run(program, buffers, config, statistics), "");

  // The convolution by its definition, padding with the input zero point.
  auto value = [](uint8_t byte, bool isUnsigned) {
    return isUnsigned ? int64_t(byte) : int64_t(int8_t(byte));
  };
  for (uint32_t oy = 0; oy < Ho; ++oy)
    for (uint32_t ox = 0; ox < Wo; ++ox)
      for (uint32_t f = 0; f < layer.F; ++f) {
        int64_t sum = 0;
        for (uint32_t ky = 0; ky < layer.kh; ++ky)
          for (uint32_t kx = 0; kx < layer.kw; ++kx)
            for (uint32_t c = 0; c < layer.C; ++c) {
              int64_t y = int64_t(oy) * layer.stride + ky * layer.dilation - layer.pad;
              int64_t x = int64_t(ox) * layer.stride + kx * layer.dilation - layer.pad;
              uint8_t byte = y >= 0 && y < layer.H && x >= 0 && x < layer.W
                                 ? input[(y * layer.W + x) * layer.C + c]
                                 : inputZero;
              sum += value(byte, layer.inputUnsigned) *
                     value(weights[((ky * layer.kw + kx) * layer.C + c) * layer.F + f], false);
            }
        int64_t expected =
            referenceRequantize(sum + bias[f], multipliers[f], outputZero, -128, 127);
        int64_t got = int8_t(buffers.data[3][(oy * Wo + ox) * layer.F + f]);
        ASSERT_EQ(got, expected) << "output (" << oy << ", " << ox << ", " << f << ")";
      }
  EXPECT_EQ(statistics.arrayMacs, uint64_t(T) * K * layer.F);
}

TEST(NpuMachineTest, ConvolutionsEqualTheirDefinitionBitForBit) {
  std::mt19937 random(7);
  for (const ConvCase &layer : {ConvCase{8, 8, 3, 16, 3, 3, 1, 1, 1, true},
                                ConvCase{9, 7, 5, 32, 3, 3, 2, 1, 1, false},
                                ConvCase{10, 10, 16, 8, 3, 3, 1, 2, 2, true},
                                ConvCase{6, 6, 40, 24, 1, 1, 1, 1, 0, true},
                                ConvCase{12, 11, 2, 4, 5, 5, 2, 1, 2, false},
                                ConvCase{5, 5, 70, 32, 2, 2, 1, 1, 0, true}})
    runConvolution(layer, random);
}

TEST(NpuMachineTest, PostRoundsHalfToEvenAndClamps) {
  // multiplier 1, shift 1: acc / 2, so odd accumulators are exact halves.
  isa::Config config;
  Buffers buffers;
  std::vector<uint8_t> records(16);
  putLittleEndian32(records, 4, 1);
  putLittleEndian32(records, 8, 1);
  buffers.add(records);
  buffers.add(std::vector<uint8_t>(8));
  // Accumulators come from a 1x1 GEMM of values times 1.
  std::vector<int8_t> values = {1, 3, 5, -1, -3, 127, -128, 0};
  std::vector<uint8_t> scratch(values.begin(), values.end());
  scratch.push_back(1); // the weight
  buffers.add(scratch);
  Assembler program;
  program.emit(isa::Opcode::Load, dma(2, 0, 0, 1, 9, 0, 0));
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 16, 0, 0, isa::Memory::Parameters),
               deps(false, false, false, true));
  isa::Gemm gemm;
  gemm.weights = 8;
  gemm.K = 1;
  gemm.N = 1;
  gemm.T = 8;
  gemm.rowStride = 1;
  program.emit(isa::Opcode::Gemm, gemm, deps(true, false, false, false));
  isa::Post post;
  post.T = 8;
  post.N = 1;
  post.output = 64;
  post.outputStride = 1;
  post.zeroPoint = 10;
  post.clampMin = -50;
  post.clampMax = 50;
  program.emit(isa::Opcode::Post, post, deps(false, false, false, true));
  program.emit(isa::Opcode::Store, dma(1, 0, 64, 1, 8, 0, 0), deps(true, false, false, false));
  RunStatistics statistics;
  ASSERT_EQ(run(program, buffers, config, statistics), "");
  // 10.5 -> 10, 11.5 -> 12, 12.5 -> 12, 9.5 -> 10, 8.5 -> 8, 73.5 -> 74
  // (clamped to 50), -54 (clamped to -50), 10.
  std::vector<int8_t> expected = {10, 12, 12, 10, 8, 50, -50, 10};
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(int8_t(buffers.data[1][i]), expected[i]) << i;

  // With an odd zero point the ties go the other way: the zero point is
  // added before rounding (0.5 + 11 = 11.5 -> 12, not round(0.5) + 11 = 11).
  program.words[3 * isa::kInstructionWords + 2] &= ~(uint64_t(0xffff) << 16);
  program.words[3 * isa::kInstructionWords + 2] |= uint64_t(11) << 16;
  ASSERT_EQ(run(program, buffers, config, statistics), "");
  std::vector<int8_t> odd = {12, 12, 14, 10, 10, 50, -50, 11};
  for (size_t i = 0; i < odd.size(); ++i)
    EXPECT_EQ(int8_t(buffers.data[1][i]), odd[i]) << i;
}

TEST(NpuMachineTest, AddComputesOnnxsFloatFormula) {
  isa::Config config;
  std::mt19937 random(3);
  Buffers buffers;
  const uint32_t count = 4096;
  buffers.add(randomBytes(2 * count, random));
  buffers.add(std::vector<uint8_t>(count));
  isa::Add add;
  add.aUnsigned = true;
  add.bUnsigned = false;
  add.outputUnsigned = true;
  add.a = 0;
  add.b = count;
  add.output = 2 * count;
  add.count = count;
  add.aZero = 131;
  add.bZero = uint8_t(int8_t(-3));
  add.outputZero = 120;
  add.clampMin = 120; // a fused ReLU
  add.clampMax = 255;
  add.aScale = 0.0371f;
  add.bScale = 0.0213f;
  add.outputScale = 0.0457f;
  Assembler program;
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 2 * count, 0, 0), deps(false, false, false, true));
  program.emit(isa::Opcode::Add, add, deps(true, false, false, true));
  program.emit(isa::Opcode::Store, dma(1, 0, 2 * count, 1, count, 0, 0),
               deps(true, false, false, false));
  RunStatistics statistics;
  ASSERT_EQ(run(program, buffers, config, statistics), "");
  for (uint32_t i = 0; i < count; ++i) {
    // ONNX's reference: dequantize each (float32), add, quantize.
    volatile float a = (float(buffers.data[0][i]) - 131.0f) * 0.0371f;
    volatile float b = (float(int8_t(buffers.data[0][count + i])) + 3.0f) * 0.0213f;
    volatile float sum = a + b;
    volatile float scaled = sum / 0.0457f;
    int64_t q = std::clamp<int64_t>(int64_t(std::nearbyint(float(scaled))) + 120, 0, 255);
    q = std::max<int64_t>(q, 120);
    ASSERT_EQ(buffers.data[1][i], uint8_t(q)) << i;
  }
}

TEST(NpuMachineTest, MaxPoolingIgnoresPadding) {
  isa::Config config;
  Buffers buffers;
  // A 3x3 single-channel s8 tile: -5 .. 3.
  std::vector<uint8_t> tile;
  for (int v = -5; v <= 3; ++v)
    tile.push_back(uint8_t(int8_t(v)));
  buffers.add(tile);
  buffers.add(std::vector<uint8_t>(4));
  isa::Pool pool;
  pool.input = 0;
  pool.output = 64;
  pool.Hi = pool.Wi = 3;
  pool.C = 1;
  pool.Ho = pool.Wo = 2;
  pool.window = {2, 2, 2, 2, 1, 1, 1, 1}; // 2x2, stride 2, padding 1
  Assembler program;
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 9, 0, 0), deps(false, false, false, true));
  program.emit(isa::Opcode::Pool, pool, deps(true, false, false, true));
  program.emit(isa::Opcode::Store, dma(1, 0, 64, 1, 4, 0, 0), deps(true, false, false, false));
  RunStatistics statistics;
  ASSERT_EQ(run(program, buffers, config, statistics), "");
  // Windows: {-5}, {-4,-3}, {-2,1}, {-1,0,2,3}.
  std::vector<int8_t> expected = {-5, -3, 1, 3};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(int8_t(buffers.data[1][i]), expected[i]) << i;
}

TEST(NpuMachineTest, DepthwiseConvolutionEqualsItsDefinition) {
  isa::Config config;
  std::mt19937 random(11);
  const uint32_t H = 7, W = 6, C = 40, Ho = 4, Wo = 3;
  Buffers buffers;
  std::vector<uint8_t> input = randomBytes(H * W * C, random);
  std::vector<uint8_t> weights = randomBytes(9 * C, random);
  buffers.add(input);
  buffers.add(weights);
  std::vector<uint8_t> output(Ho * Wo * C * 4);
  buffers.add(output);
  isa::DwConv conv;
  conv.inputUnsigned = true;
  conv.input = 0;
  conv.weights = 4096;
  conv.acc = 0;
  conv.Hi = H;
  conv.Wi = W;
  conv.C = C;
  conv.Ho = Ho;
  conv.Wo = Wo;
  conv.padValue = 100;
  conv.window = {3, 3, 2, 2, 1, 1, 1, 1};
  // The int32 results go out through POST with an identity record
  // (multiplier 1, shift 0) into s8 after clamping: check them whole
  // instead by reading the accumulator directly.
  Assembler program;
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, H * W * C, 0, 0));
  program.emit(isa::Opcode::Load, dma(1, 0, 4096, 1, 9 * C, 0, 0), deps(false, false, false, true));
  program.emit(isa::Opcode::DwConv, conv, deps(true, false, false, false));
  Program loaded;
  Dram dram = buffers.dram();
  std::vector<uint64_t> sizes(dram.sizes, dram.sizes + dram.count);
  ASSERT_EQ(loadProgram(program.words.data(), program.count(), config, sizes, loaded), "");
  Machine machine(config);
  RunStatistics statistics;
  ASSERT_EQ(runProgram(loaded, config, machine, dram, statistics), "");
  for (uint32_t oy = 0; oy < Ho; ++oy)
    for (uint32_t ox = 0; ox < Wo; ++ox)
      for (uint32_t c = 0; c < C; ++c) {
        int32_t sum = 0;
        for (uint32_t ky = 0; ky < 3; ++ky)
          for (uint32_t kx = 0; kx < 3; ++kx) {
            int64_t y = int64_t(oy) * 2 + ky - 1, x = int64_t(ox) * 2 + kx - 1;
            int32_t v = y >= 0 && y < H && x >= 0 && x < W ? input[(y * W + x) * C + c] : 100;
            sum += v * int8_t(weights[(ky * 3 + kx) * C + c]);
          }
        ASSERT_EQ(machine.accumulator()[(oy * Wo + ox) * C + c], sum);
      }
  EXPECT_EQ(statistics.vectorMacs, uint64_t(Ho) * Wo * C * 9);
}

//===----------------------------------------------------------------------===//
// Order: tokens, hazards, deadlocks
//===----------------------------------------------------------------------===//

/// LOAD a 32x32 tile, GEMM it, POST, STORE; with every token in place.
Assembler pipeline(bool tokens[4]) {
  Assembler program;
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 2048, 0, 0), deps(false, false, false, tokens[0]));
  isa::Gemm gemm;
  gemm.weights = 1024;
  gemm.K = 32;
  gemm.N = 32;
  gemm.T = 32;
  gemm.rowStride = 32;
  program.emit(isa::Opcode::Gemm, gemm, deps(tokens[0], false, false, false));
  isa::Post post;
  post.T = 32;
  post.N = 32;
  post.output = 4096;
  post.outputStride = 32;
  post.clampMin = -128;
  post.clampMax = 127;
  program.emit(isa::Opcode::Post, post, deps(false, false, false, tokens[1]));
  program.emit(isa::Opcode::Store, dma(1, 0, 4096, 1, 1024, 0, 0), deps(tokens[1], false, false, false));
  return program;
}

TEST(NpuOrderTest, MissingTokensAreHazards) {
  isa::Config config;
  std::mt19937 random(5);
  bool all[4] = {true, true, false, false};
  Buffers buffers;
  buffers.add(randomBytes(2048, random));
  buffers.add(std::vector<uint8_t>(1024));
  RunStatistics statistics;
  EXPECT_EQ(run(pipeline(all), buffers, config, statistics), "");

  bool noLoadToken[4] = {false, true, false, false};
  EXPECT_THAT(run(pipeline(noLoadToken), buffers, config, statistics),
              HasSubstr("hazard: instruction 1 (GEMM, execute queue) reads scratchpad [1024, 2048) "
                        "that instruction 0 (LOAD, load queue) writes, and no dependency token "
                        "orders them"));
  // Without its token the STORE runs at once, before the POST writes what
  // it stores: the POST's write is then the conflict found.
  bool noStoreToken[4] = {true, false, false, false};
  EXPECT_THAT(run(pipeline(noStoreToken), buffers, config, statistics),
              HasSubstr("hazard: instruction 2 (POST, execute queue) writes scratchpad [4096, "
                        "5120) that instruction 3 (STORE, store queue) reads"));
}

TEST(NpuOrderTest, WaitingInACircleIsADeadlock) {
  Assembler program;
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 1, 0, 0), deps(false, true, false, true));
  isa::Post post;
  program.emit(isa::Opcode::Post, post, deps(true, false, true, false));
  Buffers buffers;
  buffers.add(std::vector<uint8_t>(64));
  RunStatistics statistics;
  EXPECT_EQ(run(program, buffers, isa::Config(), statistics),
            "deadlock: no engine can proceed: instruction 0 (LOAD) waits for a EX->LD token; "
            "instruction 1 (POST) waits for a LD->EX token");
}

TEST(NpuOrderTest, AWriteAfterAReadNeedsATokenBack) {
  // The second LOAD overwrites the tile the GEMM reads: without the GEMM's
  // token back (EX->LD) it could overwrite it before the GEMM ran.
  auto program = [](bool tokenBack) {
    Assembler result;
    result.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 1024, 0, 0), deps(false, false, false, true));
    isa::Gemm gemm;
    gemm.K = 32;
    gemm.N = 32;
    gemm.T = 1;
    gemm.weights = 0;
    gemm.input = 0;
    result.emit(isa::Opcode::Gemm, gemm, deps(true, false, tokenBack, false));
    result.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 1024, 0, 0), deps(false, tokenBack, false, false));
    return result;
  };
  Buffers buffers;
  buffers.add(std::vector<uint8_t>(1024));
  RunStatistics statistics;
  EXPECT_EQ(run(program(true), buffers, isa::Config(), statistics), "");
  // Whichever the simulator meets first, the pair is named.
  std::string problem = run(program(false), buffers, isa::Config(), statistics);
  EXPECT_THAT(problem, HasSubstr("hazard: instruction"));
  EXPECT_THAT(problem, HasSubstr("(LOAD, load queue)"));
  EXPECT_THAT(problem, HasSubstr("(GEMM, execute queue)"));
}

/// A double-buffered stream: tiles of a 32 x 32 product loaded into two
/// input buffers and stored from two output buffers, so that the load of
/// tile i + 1 and the store of tile i - 1 overlap the GEMM of tile i. Every
/// token guards a buffer: a tile is loaded before its GEMM (LD->EX), its
/// buffer is free again after it (EX->LD), its result is written before
/// its STORE (EX->ST), and stored before the buffer is reused (ST->EX).
Assembler doubleBuffered(uint32_t tiles) {
  Assembler program;
  const uint32_t tileBytes = 32 * 32, T = 32;
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, tileBytes, 0, 0)); // the weights
  for (uint32_t i = 0; i < tiles; ++i)
    program.emit(isa::Opcode::Load,
                 dma(1, uint64_t(i) * tileBytes, tileBytes * (1 + i % 2), 1, tileBytes, 0, 0),
                 deps(false, i >= 2, false, true));
  for (uint32_t i = 0; i < tiles; ++i) {
    isa::Gemm gemm;
    gemm.weights = 0;
    gemm.input = tileBytes * (1 + i % 2);
    gemm.K = 32;
    gemm.N = 32;
    gemm.T = T;
    gemm.rowStride = 32;
    program.emit(isa::Opcode::Gemm, gemm, deps(true, false, i + 2 < tiles, false));
    isa::Post post;
    post.T = T;
    post.N = 32;
    post.output = tileBytes * (3 + i % 2);
    post.outputStride = 32;
    program.emit(isa::Opcode::Post, post, deps(false, i >= 2, false, true));
  }
  for (uint32_t i = 0; i < tiles; ++i)
    program.emit(isa::Opcode::Store,
                 dma(2, uint64_t(i) * tileBytes, tileBytes * (3 + i % 2), 1, tileBytes, 0, 0),
                 deps(true, false, i + 2 < tiles, false));
  return program;
}

TEST(NpuOrderTest, DeletingAnyOneTokenIsDetected) {
  const uint32_t tiles = 6;
  Assembler program = doubleBuffered(tiles);
  std::mt19937 random(9);
  Buffers buffers;
  buffers.add(randomBytes(1024, random));
  buffers.add(randomBytes(1024 * tiles, random));
  buffers.add(std::vector<uint8_t>(1024 * tiles));
  isa::Config config;
  RunStatistics statistics;
  ASSERT_EQ(run(program, buffers, config, statistics), "");
  // The overlap shows: less than the engines' work end to end.
  uint64_t serial = 0;
  {
    Program loaded;
    Dram dram = buffers.dram();
    std::vector<uint64_t> sizes(dram.sizes, dram.sizes + dram.count);
    ASSERT_EQ(loadProgram(program.words.data(), program.count(), config, sizes, loaded), "");
    Machine machine(config);
    ASSERT_EQ(runProgram(loaded, config, machine, dram, statistics, {/*keepSpans=*/true}), "");
    for (const InstructionSpan &span : statistics.spans)
      serial += span.end - span.start;
  }
  EXPECT_LT(statistics.totalCycles, serial);

  // A token is the k-th push and the k-th pop of one channel: delete both.
  Program loaded;
  Dram dram = buffers.dram();
  std::vector<uint64_t> sizes(dram.sizes, dram.sizes + dram.count);
  ASSERT_EQ(loadProgram(program.words.data(), program.count(), config, sizes, loaded), "");
  int deleted = 0;
  for (const Token &token : tokensOf(loaded)) {
    Program broken = loaded;
    deleteToken(broken, token);
    Machine machine(config);
    std::string problem = runProgram(broken, config, machine, dram, statistics);
    EXPECT_THAT(problem, ::testing::AnyOf(HasSubstr("hazard:"), HasSubstr("deadlock:")))
        << "token from instruction " << token.push << " to " << token.pop;
    ++deleted;
  }
  EXPECT_EQ(deleted, int(tiles + (tiles - 2) + tiles + (tiles - 2)));
}

//===----------------------------------------------------------------------===//
// Timing (docs/npu/isa.md section 4)
//===----------------------------------------------------------------------===//

TEST(NpuTimingTest, OneGemmPaysPreloadStreamAndDrain) {
  isa::Config config;
  bool all[4] = {true, true, false, false};
  Buffers buffers;
  buffers.add(std::vector<uint8_t>(2048));
  buffers.add(std::vector<uint8_t>(1024));
  Program loaded;
  Dram dram = buffers.dram();
  Assembler program = pipeline(all);
  ASSERT_EQ(loadProgram(program.words.data(), program.count(), config, {2048, 1024}, loaded), "");
  Machine machine(config);
  RunStatistics statistics;
  ASSERT_EQ(runProgram(loaded, config, machine, dram, statistics, {/*keepSpans=*/true}), "");
  const uint64_t R = 32, C = 32, latency = 64;
  // LOAD: latency + 2048 / 16 bytes per cycle.
  EXPECT_EQ(statistics.spans[0].end, latency + 128);
  // GEMM: preload R, stream T = 32, results R + C - 2 later.
  EXPECT_EQ(statistics.spans[1].start, latency + 128);
  EXPECT_EQ(statistics.spans[1].end, latency + 128 + R + 32 + R + C - 2);
  // POST: ceil(32 * 32 / C) + 4.
  EXPECT_EQ(statistics.spans[2].end, statistics.spans[1].end + 32 + 4);
  // STORE: latency + 1024 / 16.
  EXPECT_EQ(statistics.spans[3].end, statistics.spans[2].end + latency + 64);
  EXPECT_EQ(statistics.totalCycles, statistics.spans[3].end);
  EXPECT_EQ(statistics.arrayCycles, R + 32 + R + C - 2);
  EXPECT_EQ(statistics.dramBytes, 2048u + 1024u);
  EXPECT_DOUBLE_EQ(statistics.arrayUtilization(config),
                   32.0 * 32 * 32 / (32.0 * 32 * double(statistics.arrayCycles)));
}

TEST(NpuTimingTest, BackToBackGemmsHideEachOthersPreloadAndDrain) {
  isa::Config config;
  Buffers buffers;
  buffers.add(std::vector<uint8_t>(64));
  Assembler program;
  for (uint32_t fold = 0; fold < 4; ++fold) {
    isa::Gemm gemm;
    gemm.weights = 1024 * fold; // new weights each time
    gemm.K = 32;
    gemm.N = 32;
    gemm.T = 100;
    gemm.rowStride = 32;
    gemm.acc = 3200 * fold;
    program.emit(isa::Opcode::Gemm, gemm);
  }
  Program loaded;
  ASSERT_EQ(loadProgram(program.words.data(), program.count(), config, {64}, loaded), "");
  Machine machine(config);
  RunStatistics statistics;
  Dram dram = buffers.dram();
  ASSERT_EQ(runProgram(loaded, config, machine, dram, statistics), "");
  // The first preload (32), four streams of 100, one drain (62); each later
  // preload hides under the previous stream (100 >= 32).
  EXPECT_EQ(statistics.totalCycles, 32u + 4 * 100 + 62);
  EXPECT_EQ(statistics.arrayCycles, statistics.totalCycles);
}

TEST(NpuTimingTest, ScaleSimModeChargesEachFoldItsFormula) {
  for (bool outputStationary : {false, true}) {
    isa::Config config;
    config.scalesimTiming = true;
    config.outputStationary = outputStationary;
    config.arrayRows = 16;
    config.arrayColumns = 8;
    Buffers buffers;
    buffers.add(std::vector<uint8_t>(64));
    Assembler program;
    program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 64, 0, 0), deps(false, false, false, true));
    uint64_t expected = 0;
    for (uint32_t fold = 0; fold < 3; ++fold) {
      isa::Gemm gemm;
      gemm.K = 16 - fold;
      gemm.N = 8;
      gemm.T = 50 + fold;
      gemm.rowStride = 16;
      gemm.acc = 1000 * fold;
      program.emit(isa::Opcode::Gemm, gemm, deps(fold == 0, false, false, false));
      // Output stationary: ceil(T / R) passes of R + C + K - 2.
      expected += outputStationary ? (gemm.T + 15) / 16 * (16 + 8 + gemm.K - 2)
                                   : 2 * 16 + 8 + gemm.T - 2;
    }
    RunStatistics statistics;
    ASSERT_EQ(run(program, buffers, config, statistics), "");
    EXPECT_EQ(statistics.totalCycles, expected) << outputStationary;
    EXPECT_EQ(statistics.arrayCycles, expected);
  }
}

TEST(NpuTimingTest, LoadsAndStoresShareTheBus) {
  isa::Config config;
  Buffers buffers;
  buffers.add(std::vector<uint8_t>(4096));
  buffers.add(std::vector<uint8_t>(4096));
  Assembler program;
  // Two independent LOADs in one queue and a STORE of other bytes: the
  // STORE's transfer waits for the bus.
  program.emit(isa::Opcode::Load, dma(0, 0, 0, 1, 1600, 0, 0));
  program.emit(isa::Opcode::Store, dma(1, 0, 8192, 1, 1600, 0, 0));
  Program loaded;
  ASSERT_EQ(loadProgram(program.words.data(), program.count(), config, {4096, 4096}, loaded), "");
  Machine machine(config);
  RunStatistics statistics;
  Dram dram = buffers.dram();
  ASSERT_EQ(runProgram(loaded, config, machine, dram, statistics, {/*keepSpans=*/true}), "");
  EXPECT_EQ(statistics.spans[0].end, 64u + 100);
  EXPECT_EQ(statistics.spans[1].end, 64u + 100 + 100);
}

} // namespace
