//===- Program.cpp - An NPU entry's instructions, decoded and verified ----===//

#include "Program.h"

#include <algorithm>
#include <cmath>
#include <variant>

namespace tessel::runtime::npu {

namespace {

using isa::Opcode;

/// Bytes [begin, begin + (rows - 1) * stride + rowBytes): a strided copy's
/// extent (no overflow: every operand is a field of at most 40 bits).
uint64_t stridedEnd(uint64_t begin, uint64_t rows, uint64_t stride, uint64_t rowBytes) {
  return begin + (rows - 1) * stride + rowBytes;
}

Space spaceOf(isa::Memory memory) {
  switch (memory) {
  case isa::Memory::Parameters:
    return Space::Parameters;
  case isa::Memory::Lut:
    return Space::Lut;
  default:
    return Space::Scratchpad;
  }
}

struct AccessCollector {
  const isa::Instruction &instruction;
  std::vector<Access> accesses;

  void operator()(const isa::Dma &dma) {
    Space space = spaceOf(dma.memory);
    uint64_t end = stridedEnd(dma.local, dma.rows, dma.localStride, dma.rowBytes);
    accesses.push_back({space, dma.local, end, instruction.opcode == Opcode::Load});
  }
  void operator()(const isa::Gemm &gemm) {
    accesses.push_back({Space::Scratchpad, gemm.weights, gemm.weights + uint64_t(gemm.K) * gemm.N,
                        false});
    uint64_t inputEnd = gemm.im2col
                            ? gemm.input + uint64_t(gemm.Hi) * gemm.Wi * gemm.Ci
                            : stridedEnd(gemm.input, gemm.T, gemm.rowStride, gemm.K);
    accesses.push_back({Space::Scratchpad, gemm.input, inputEnd, false});
    accumulatorRows(gemm.acc, uint64_t(gemm.T) * gemm.N, gemm.accumulate);
  }
  void operator()(const isa::Post &post) {
    accesses.push_back({Space::Accumulator, post.acc, post.acc + uint64_t(post.T) * post.N,
                        false});
    accesses.push_back({Space::Parameters, uint64_t(post.param) * 16,
                        (uint64_t(post.param) + post.N) * 16, false});
    if (post.lut)
      accesses.push_back({Space::Lut, 0, 256, false});
    accesses.push_back({Space::Scratchpad, post.output,
                        stridedEnd(post.output, post.T, post.outputStride, post.N), true});
  }
  void operator()(const isa::Add &add) {
    accesses.push_back({Space::Scratchpad, add.a, uint64_t(add.a) + add.count, false});
    accesses.push_back({Space::Scratchpad, add.b, uint64_t(add.b) + add.count, false});
    accesses.push_back({Space::Scratchpad, add.output, uint64_t(add.output) + add.count, true});
  }
  void operator()(const isa::Pool &pool) {
    accesses.push_back({Space::Scratchpad, pool.input,
                        pool.input + uint64_t(pool.Hi) * pool.Wi * pool.C, false});
    accesses.push_back({Space::Scratchpad, pool.output,
                        pool.output + uint64_t(pool.Ho) * pool.Wo * pool.C, true});
  }
  void operator()(const isa::DwConv &conv) {
    const isa::Window &window = conv.window;
    accesses.push_back({Space::Scratchpad, conv.input,
                        conv.input + uint64_t(conv.Hi) * conv.Wi * conv.C, false});
    accesses.push_back({Space::Scratchpad, conv.weights,
                        conv.weights + uint64_t(window.kh) * window.kw * conv.C, false});
    accumulatorRows(conv.acc, uint64_t(conv.Ho) * conv.Wo * conv.C, conv.accumulate);
  }

  void accumulatorRows(uint64_t begin, uint64_t count, bool accumulate) {
    if (accumulate)
      accesses.push_back({Space::Accumulator, begin, begin + count, false});
    accesses.push_back({Space::Accumulator, begin, begin + count, true});
  }
};

const char *spaceName(Space space) {
  switch (space) {
  case Space::Scratchpad:
    return "scratchpad";
  case Space::Accumulator:
    return "accumulator";
  case Space::Parameters:
    return "parameter memory";
  case Space::Lut:
    return "lookup table";
  }
  return "memory";
}

uint64_t spaceSize(Space space, const isa::Config &config) {
  switch (space) {
  case Space::Scratchpad:
    return config.scratchpadBytes;
  case Space::Accumulator:
    return config.accumulatorEntries();
  case Space::Parameters:
    return config.parameterBytes;
  case Space::Lut:
    return 256;
  }
  return 0;
}

std::string windowProblem(const isa::Window &window) {
  for (auto [name, value] : {std::pair{"kernel height", window.kh}, {"kernel width", window.kw},
                             {"stride height", window.sh}, {"stride width", window.sw},
                             {"dilation height", window.dh}, {"dilation width", window.dw}})
    if (value < 1)
      return std::string(name) + " is 0";
  return "";
}

std::string atLeastOne(std::initializer_list<std::pair<const char *, uint64_t>> values) {
  for (auto [name, value] : values)
    if (value < 1)
      return std::string(name) + " is 0";
  return "";
}

/// The range of an 8-bit value of the given signedness.
bool inStorageRange(int64_t value, bool isUnsigned) {
  return isUnsigned ? value >= 0 && value <= 255 : value >= -128 && value <= 127;
}

int64_t storageValue(uint8_t byte, bool isUnsigned) {
  return isUnsigned ? int64_t(byte) : int64_t(int8_t(byte));
}

/// The field checks of one instruction: what its encoding allows but the
/// ISA does not.
struct FieldChecker {
  const isa::Instruction &instruction;
  const isa::Config &config;
  const std::vector<uint64_t> &bindingSizes;

  std::string operator()(const isa::Dma &dma) {
    bool load = instruction.opcode == Opcode::Load;
    if (load && dma.memory != isa::Memory::Scratchpad && dma.memory != isa::Memory::Parameters &&
        dma.memory != isa::Memory::Lut)
      return "LOAD into memory " + std::to_string(unsigned(dma.memory)) + ", which is none";
    if (!load && dma.memory != isa::Memory::Scratchpad)
      return "STORE from memory " + std::to_string(unsigned(dma.memory)) +
             " (only the scratchpad is stored)";
    if (std::string problem = atLeastOne({{"rows", dma.rows}, {"row_bytes", dma.rowBytes}});
        !problem.empty())
      return problem;
    if (dma.binding >= bindingSizes.size())
      return "binding " + std::to_string(dma.binding) + " of an entry with " +
             std::to_string(bindingSizes.size());
    uint64_t end = stridedEnd(dma.dram, dma.rows, dma.dramStride, dma.rowBytes);
    if (end > bindingSizes[dma.binding])
      return "DRAM bytes up to " + std::to_string(end) + " of binding " +
             std::to_string(dma.binding) + ", which holds " +
             std::to_string(bindingSizes[dma.binding]);
    return "";
  }
  std::string operator()(const isa::Gemm &gemm) {
    // Weight stationary, the K x N weights sit in the array's rows; output
    // stationary, the reduction streams through it in time, of any length.
    if (!config.outputStationary && (gemm.K < 1 || gemm.K > config.arrayRows))
      return "K " + std::to_string(gemm.K) + " outside [1, " + std::to_string(config.arrayRows) +
             "]";
    if (gemm.K < 1)
      return "K is 0";
    if (gemm.N < 1 || gemm.N > config.arrayColumns)
      return "N " + std::to_string(gemm.N) + " outside [1, " +
             std::to_string(config.arrayColumns) + "]";
    if (gemm.T < 1)
      return "T is 0";
    if (!gemm.im2col)
      return "";
    if (std::string problem = atLeastOne(
            {{"Hi", gemm.Hi}, {"Wi", gemm.Wi}, {"Ci", gemm.Ci}, {"Wo", gemm.Wo}});
        !problem.empty())
      return problem;
    if (std::string problem = windowProblem(gemm.window); !problem.empty())
      return problem;
    uint64_t columns = uint64_t(gemm.window.kh) * gemm.window.kw * gemm.Ci;
    if (gemm.k0 + uint64_t(gemm.K) > columns)
      return "im2col indices up to " + std::to_string(gemm.k0 + gemm.K) + " of a " +
             std::to_string(columns) + "-column matrix";
    return "";
  }
  std::string operator()(const isa::Post &post) {
    if (std::string problem = atLeastOne({{"T", post.T}, {"N", post.N}}); !problem.empty())
      return problem;
    for (auto [name, value] : {std::pair{"zero point", post.zeroPoint},
                               {"clamp_min", post.clampMin}, {"clamp_max", post.clampMax}})
      if (!inStorageRange(value, post.outputUnsigned))
        return std::string(name) + " " + std::to_string(value) + " outside the output type";
    if (post.clampMin > post.clampMax)
      return "clamp_min above clamp_max";
    return "";
  }
  std::string operator()(const isa::Add &add) {
    if (add.count < 1)
      return "count is 0";
    for (auto [name, scale] : {std::pair{"a_scale", add.aScale}, {"b_scale", add.bScale},
                               {"output_scale", add.outputScale}})
      if (!(scale > 0) || !std::isfinite(scale))
        return std::string(name) + " is not a positive finite number";
    if (storageValue(add.clampMin, add.outputUnsigned) >
        storageValue(add.clampMax, add.outputUnsigned))
      return "clamp_min above clamp_max";
    return "";
  }
  std::string operator()(const isa::Pool &pool) {
    if (std::string problem = atLeastOne({{"Hi", pool.Hi}, {"Wi", pool.Wi}, {"C", pool.C},
                                          {"Ho", pool.Ho}, {"Wo", pool.Wo}});
        !problem.empty())
      return problem;
    return windowProblem(pool.window);
  }
  std::string operator()(const isa::DwConv &conv) {
    if (std::string problem = atLeastOne({{"Hi", conv.Hi}, {"Wi", conv.Wi}, {"C", conv.C},
                                          {"Ho", conv.Ho}, {"Wo", conv.Wo}});
        !problem.empty())
      return problem;
    return windowProblem(conv.window);
  }
};

std::string dependencyProblem(const isa::Instruction &instruction) {
  const isa::Dependencies &dependencies = instruction.dependencies;
  isa::Queue queue = isa::queueOf(instruction.opcode);
  if (queue == isa::Queue::Load && (dependencies.popPrevious || dependencies.pushPrevious))
    return "a LOAD pops or pushes the previous queue, which it does not have";
  if (queue == isa::Queue::Store && (dependencies.popNext || dependencies.pushNext))
    return "a STORE pops or pushes the next queue, which it does not have";
  return "";
}

std::string verify(const isa::Instruction &instruction, const isa::Config &config,
                   const std::vector<uint64_t> &bindingSizes) {
  if (std::string problem = dependencyProblem(instruction); !problem.empty())
    return problem;
  if (std::string problem =
          std::visit(FieldChecker{instruction, config, bindingSizes}, instruction.body);
      !problem.empty())
    return problem;
  for (const Access &access : accessesOf(instruction)) {
    uint64_t size = spaceSize(access.space, config);
    if (access.end > size)
      return std::string(access.write ? "writes " : "reads ") + spaceName(access.space) +
             " [" + std::to_string(access.begin) + ", " + std::to_string(access.end) +
             "), which has " + std::to_string(size) +
             (access.space == Space::Accumulator ? " entries" : " bytes");
  }
  return "";
}

} // namespace

std::vector<Access> accessesOf(const isa::Instruction &instruction) {
  AccessCollector collector{instruction, {}};
  std::visit(collector, instruction.body);
  return std::move(collector.accesses);
}

std::string loadProgram(const uint64_t *words, size_t count, const isa::Config &config,
                        const std::vector<uint64_t> &bindingSizes, Program &program) {
  if (std::string problem = config.problem(); !problem.empty())
    return "NPU configuration: " + problem;
  program.instructions.assign(count, {});
  // Tokens pushed less tokens popped, per channel (LD->EX, EX->LD,
  // EX->ST, ST->EX).
  int64_t balance[4] = {};
  for (size_t index = 0; index < count; ++index) {
    isa::Instruction &instruction = program.instructions[index];
    std::string problem;
    if (!isa::decode(words + index * isa::kInstructionWords, instruction, problem) ||
        !(problem = verify(instruction, config, bindingSizes)).empty())
      return "instruction " + std::to_string(index) + ": " + problem;
    const isa::Dependencies &dependencies = instruction.dependencies;
    switch (isa::queueOf(instruction.opcode)) {
    case isa::Queue::Load:
      balance[0] += dependencies.pushNext;
      balance[1] -= dependencies.popNext;
      break;
    case isa::Queue::Execute:
      balance[0] -= dependencies.popPrevious;
      balance[1] += dependencies.pushPrevious;
      balance[2] += dependencies.pushNext;
      balance[3] -= dependencies.popNext;
      break;
    case isa::Queue::Store:
      balance[2] -= dependencies.popPrevious;
      balance[3] += dependencies.pushPrevious;
      break;
    }
  }
  const char *channels[4] = {"LD->EX", "EX->LD", "EX->ST", "ST->EX"};
  for (int channel = 0; channel < 4; ++channel)
    if (balance[channel] != 0)
      return std::string("the ") + channels[channel] + " tokens do not balance: " +
             std::to_string(balance[channel]) + " more pushed than popped";
  return "";
}

std::vector<Token> tokensOf(const Program &program) {
  // Each channel: the queue that pushes, whether forward, the one that pops.
  struct Channel {
    isa::Queue pusher, popper;
    bool forward;
  };
  const Channel channels[4] = {{isa::Queue::Load, isa::Queue::Execute, true},
                               {isa::Queue::Execute, isa::Queue::Load, false},
                               {isa::Queue::Execute, isa::Queue::Store, true},
                               {isa::Queue::Store, isa::Queue::Execute, false}};
  std::vector<Token> tokens;
  for (const Channel &channel : channels) {
    std::vector<size_t> pushes, pops;
    for (size_t index = 0; index < program.instructions.size(); ++index) {
      const isa::Instruction &instruction = program.instructions[index];
      const isa::Dependencies &dependencies = instruction.dependencies;
      isa::Queue queue = isa::queueOf(instruction.opcode);
      if (queue == channel.pusher &&
          (channel.forward ? dependencies.pushNext : dependencies.pushPrevious))
        pushes.push_back(index);
      if (queue == channel.popper &&
          (channel.forward ? dependencies.popPrevious : dependencies.popNext))
        pops.push_back(index);
    }
    for (size_t k = 0; k < std::min(pushes.size(), pops.size()); ++k)
      tokens.push_back({pushes[k], pops[k], channel.forward});
  }
  return tokens;
}

void deleteToken(Program &program, const Token &token) {
  isa::Dependencies &push = program.instructions[token.push].dependencies;
  isa::Dependencies &pop = program.instructions[token.pop].dependencies;
  (token.forward ? push.pushNext : push.pushPrevious) = false;
  (token.forward ? pop.popPrevious : pop.popNext) = false;
}

} // namespace tessel::runtime::npu
