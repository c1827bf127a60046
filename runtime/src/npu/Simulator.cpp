//===- Simulator.cpp - Runs an NPU program: order, timing, hazards --------===//

#include "Simulator.h"

#include <algorithm>
#include <array>
#include <deque>
#include <iterator>
#include <map>
#include <optional>

namespace tessel::runtime::npu {

namespace {

using isa::Opcode;
using isa::Queue;

constexpr int kQueues = 3;
constexpr int kChannels = 4;
const char *const kChannelNames[kChannels] = {"LD->EX", "EX->LD", "EX->ST", "ST->EX"};
const char *const kQueueNames[kQueues] = {"load", "execute", "store"};

/// How far each queue's instructions are known complete: entry q is the
/// number (from 1) of the last instruction of queue q whose end happens
/// before the clock's owner starts.
using VectorClock = std::array<uint32_t, kQueues>;

void merge(VectorClock &into, const VectorClock &other) {
  for (int q = 0; q < kQueues; ++q)
    into[q] = std::max(into[q], other[q]);
}

struct Token {
  uint64_t ready;
  VectorClock clock;
};

/// The channels an instruction pops, and those it pushes (docs/npu/isa.md
/// section 1).
void channelsOf(Queue queue, const isa::Dependencies &dependencies, std::vector<int> &popped,
                std::vector<int> &pushed) {
  popped.clear();
  pushed.clear();
  switch (queue) {
  case Queue::Load:
    if (dependencies.popNext)
      popped.push_back(1);
    if (dependencies.pushNext)
      pushed.push_back(0);
    break;
  case Queue::Execute:
    if (dependencies.popPrevious)
      popped.push_back(0);
    if (dependencies.popNext)
      popped.push_back(3);
    if (dependencies.pushPrevious)
      pushed.push_back(1);
    if (dependencies.pushNext)
      pushed.push_back(2);
    break;
  case Queue::Store:
    if (dependencies.popPrevious)
      popped.push_back(2);
    if (dependencies.pushPrevious)
      pushed.push_back(3);
    break;
  }
}

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

/// Who last wrote a range of one local memory, and who last read it from
/// each queue, kept as a map of segments: accesses are ranges, so the map
/// stays small however large the memory.
class ShadowSpace {
public:
  struct Owners {
    int64_t writer = -1;
    std::array<int64_t, kQueues> readers = {-1, -1, -1};
    bool operator==(const Owners &other) const {
      return writer == other.writer && readers == other.readers;
    }
  };

  explicit ShadowSpace(uint64_t size) { segments[0] = Owners(); segments[size] = Owners(); }

  /// Calls `visit(owners)` for each segment of [begin, end).
  template <typename Visit> void forEach(uint64_t begin, uint64_t end, Visit &&visit) {
    if (begin >= end)
      return;
    auto first = split(begin);
    auto last = split(end);
    for (auto it = first; it != last; ++it)
      visit(it->second);
  }

  /// Joins the segments around [begin, end) that have become equal.
  void coalesce(uint64_t begin, uint64_t end) {
    auto it = segments.lower_bound(begin);
    if (it != segments.begin())
      --it;
    while (it != segments.end() && it->first <= end) {
      auto next = std::next(it);
      if (next == segments.end() || std::next(next) == segments.end())
        break;
      if (next->second == it->second)
        segments.erase(next);
      else
        it = next;
    }
  }

private:
  std::map<uint64_t, Owners>::iterator split(uint64_t at) {
    auto it = segments.lower_bound(at);
    if (it != segments.end() && it->first == at)
      return it;
    Owners owners = std::prev(it)->second;
    return segments.emplace_hint(it, at, owners);
  }

  /// Segment [key, next key); the last key is the memory's end.
  std::map<uint64_t, Owners> segments;
};

class Run {
public:
  Run(const Program &program, const isa::Config &config, Machine &machine, const Dram &dram,
      RunStatistics &statistics, RunOptions options)
      : program(program), config(config), machine(machine), dram(dram), statistics(statistics),
        keepSpans(options.keepSpans), skipResults(options.skipResults),
        shadows{ShadowSpace(config.scratchpadBytes), ShadowSpace(config.accumulatorEntries()),
                ShadowSpace(config.parameterBytes), ShadowSpace(256)} {
    size_t count = program.instructions.size();
    queueOf.resize(count);
    sequence.resize(count);
    uint32_t counts[kQueues] = {};
    for (size_t i = 0; i < count; ++i) {
      int queue = int(isa::queueOf(program.instructions[i].opcode));
      queueOf[i] = queue;
      sequence[i] = ++counts[queue];
      queues[queue].push_back(i);
    }
    if (keepSpans)
      statistics.spans.assign(count, {});
  }

  std::string execute();

private:
  /// The cycle the next instruction of `queue` could start, or nullopt
  /// when a token it pops has not been pushed yet.
  std::optional<uint64_t> earliestStart(int queue);
  std::string start(int queue, uint64_t cycle);
  std::string checkHazards(size_t index, const VectorClock &clock,
                           const std::vector<Access> &accesses);
  void recordAccesses(size_t index, const std::vector<Access> &accesses);
  uint64_t dmaEnd(const isa::Dma &dma, uint64_t cycle);
  void countWork(const isa::Instruction &instruction);
  std::string deadlock();
  void endGemmRun();

  const Program &program;
  const isa::Config &config;
  Machine &machine;
  const Dram &dram;
  RunStatistics &statistics;
  bool keepSpans, skipResults;

  std::vector<int> queueOf;
  std::vector<uint32_t> sequence; // number within its queue, from 1
  std::deque<size_t> queues[kQueues];
  std::deque<Token> channels[kChannels];
  VectorClock queueClocks[kQueues] = {};
  uint64_t engineFree[kQueues] = {};
  uint64_t busFree = 0;
  std::array<ShadowSpace, kSpaceCount> shadows;

  // The array's state for GEMM runs (docs/npu/isa.md section 4.1).
  bool previousWasGemm = false;
  const isa::Gemm *previousGemm = nullptr;
  uint64_t resultsReady = 0;
  std::vector<int> popped, pushed;
};

std::optional<uint64_t> Run::earliestStart(int queue) {
  const isa::Instruction &instruction = program.instructions[queues[queue].front()];
  channelsOf(Queue(queue), instruction.dependencies, popped, pushed);
  uint64_t cycle = engineFree[queue];
  for (int channel : popped) {
    if (channels[channel].empty())
      return std::nullopt;
    cycle = std::max(cycle, channels[channel].front().ready);
  }
  // Every execute instruction but a GEMM reads what earlier GEMMs leave in
  // the accumulator only once the array has drained.
  if (Queue(queue) == Queue::Execute && instruction.opcode != Opcode::Gemm)
    cycle = std::max(cycle, resultsReady);
  return cycle;
}

std::string Run::execute() {
  machine.reset();
  while (!queues[0].empty() || !queues[1].empty() || !queues[2].empty()) {
    int chosen = -1;
    uint64_t chosenCycle = 0;
    for (int queue = 0; queue < kQueues; ++queue) {
      if (queues[queue].empty())
        continue;
      std::optional<uint64_t> cycle = earliestStart(queue);
      if (cycle && (chosen < 0 || *cycle < chosenCycle)) {
        chosen = queue;
        chosenCycle = *cycle;
      }
    }
    if (chosen < 0)
      return deadlock();
    if (std::string problem = start(chosen, chosenCycle); !problem.empty())
      return problem;
  }
  if (previousWasGemm)
    endGemmRun();
  for (int queue = 0; queue < kQueues; ++queue)
    statistics.totalCycles = std::max(statistics.totalCycles, engineFree[queue]);
  statistics.totalCycles = std::max(statistics.totalCycles, resultsReady);
  statistics.stallCycles = statistics.totalCycles - std::min(statistics.totalCycles,
                                                             statistics.computeCycles);
  statistics.energyPj = double(statistics.arrayMacs + statistics.vectorMacs) * config.macEnergyPj +
                        double(statistics.sramBytes) * config.sramByteEnergyPj +
                        double(statistics.dramBytes) * config.dramByteEnergyPj;
  return "";
}

std::string Run::start(int queue, uint64_t cycle) {
  size_t index = queues[queue].front();
  queues[queue].pop_front();
  const isa::Instruction &instruction = program.instructions[index];
  channelsOf(Queue(queue), instruction.dependencies, popped, pushed);

  VectorClock clock = queueClocks[queue];
  for (int channel : popped) {
    merge(clock, channels[channel].front().clock);
    channels[channel].pop_front();
  }
  clock[queue] = sequence[index];

  std::vector<Access> accesses = accessesOf(instruction);
  if (std::string problem = checkHazards(index, clock, accesses); !problem.empty())
    return problem;
  recordAccesses(index, accesses);
  if (std::string problem = skipResults ? "" : machine.execute(instruction, dram);
      !problem.empty())
    return "instruction " + std::to_string(index) + " (" + opcodeName(instruction.opcode) +
           "): " + problem;
  countWork(instruction);

  uint64_t end = cycle;
  bool scalesim = config.scalesimTiming;
  uint64_t R = config.arrayRows, C = config.arrayColumns;
  if (const auto *dma = std::get_if<isa::Dma>(&instruction.body)) {
    end = scalesim ? cycle : dmaEnd(*dma, cycle);
    engineFree[queue] = end;
  } else if (const auto *gemm = std::get_if<isa::Gemm>(&instruction.body)) {
    // Output stationary, the array holds R output pixels at a time: a GEMM
    // of T pixels takes ceil(T / R) passes.
    uint64_t passes = (uint64_t(gemm->T) + R - 1) / R;
    if (scalesim) {
      end = cycle + (config.outputStationary ? passes * (R + C + gemm->K - 2)
                                             : 2 * R + C + gemm->T - 2);
      engineFree[queue] = end;
      statistics.arrayCycles += end - cycle;
      statistics.computeCycles += end - cycle;
    } else if (config.outputStationary) {
      // Outputs stay in the cells: the K steps stream in, then the results
      // drain (R cycles) before the next pass's outputs can gather.
      engineFree[queue] = cycle + passes * (gemm->K + R);
      end = engineFree[queue] + R + C - 2;
      statistics.arrayCycles += passes * (gemm->K + R);
      statistics.computeCycles += passes * (gemm->K + R);
    } else {
      bool sameWeights = previousWasGemm && previousGemm->weights == gemm->weights &&
                         previousGemm->K == gemm->K && previousGemm->N == gemm->N;
      uint64_t preload = !previousWasGemm ? R
                         : sameWeights    ? 0
                                          : R - std::min<uint64_t>(R, previousGemm->T);
      engineFree[queue] = cycle + preload + gemm->T;
      end = engineFree[queue] + R + C - 2;
      statistics.arrayCycles += preload + gemm->T;
      statistics.computeCycles += preload + gemm->T;
    }
    resultsReady = std::max(resultsReady, end);
    previousWasGemm = true;
    previousGemm = gemm;
  } else {
    if (previousWasGemm)
      endGemmRun();
    uint64_t lanes = C, busy = 0;
    if (const auto *post = std::get_if<isa::Post>(&instruction.body))
      busy = (uint64_t(post->T) * post->N + lanes - 1) / lanes + 4;
    else if (const auto *add = std::get_if<isa::Add>(&instruction.body))
      busy = (uint64_t(add->count) + lanes - 1) / lanes + 4;
    else if (const auto *pool = std::get_if<isa::Pool>(&instruction.body))
      busy = uint64_t(pool->Ho) * pool->Wo * pool->window.kh * pool->window.kw *
                 ((pool->C + lanes - 1) / lanes) + 4;
    else if (const auto *conv = std::get_if<isa::DwConv>(&instruction.body))
      busy = uint64_t(conv->Ho) * conv->Wo * conv->window.kh * conv->window.kw *
                 ((conv->C + lanes - 1) / lanes) + 4;
    if (scalesim)
      busy = 0; // SCALE-Sim models the array alone
    end = cycle + busy;
    engineFree[queue] = end;
    statistics.computeCycles += busy;
  }

  for (int channel : pushed)
    channels[channel].push_back({end, clock});
  queueClocks[queue] = clock;
  if (keepSpans)
    statistics.spans[index] = {cycle, end};
  return "";
}

/// A run of GEMMs ends: its last results drain once (R + C - 2 cycles).
void Run::endGemmRun() {
  previousWasGemm = false;
  if (config.scalesimTiming)
    return;
  uint64_t drain = config.arrayRows + config.arrayColumns - 2;
  statistics.arrayCycles += drain;
  statistics.computeCycles += drain;
}

uint64_t Run::dmaEnd(const isa::Dma &dma, uint64_t cycle) {
  uint64_t bytes = uint64_t(dma.rows) * dma.rowBytes;
  uint64_t transfer = (bytes + config.dmaBytesPerCycle - 1) / config.dmaBytesPerCycle;
  uint64_t transferStart = std::max(cycle + config.dmaLatencyCycles, busFree);
  busFree = transferStart + transfer;
  return busFree;
}

void Run::countWork(const isa::Instruction &instruction) {
  uint64_t &sram = statistics.sramBytes;
  if (const auto *dma = std::get_if<isa::Dma>(&instruction.body)) {
    uint64_t bytes = uint64_t(dma->rows) * dma->rowBytes;
    statistics.dramBytes += bytes;
    sram += bytes;
  } else if (const auto *gemm = std::get_if<isa::Gemm>(&instruction.body)) {
    uint64_t outputs = uint64_t(gemm->T) * gemm->N;
    statistics.arrayMacs += outputs * gemm->K;
    sram += uint64_t(gemm->K) * gemm->N + uint64_t(gemm->T) * gemm->K +
            4 * outputs * (gemm->accumulate ? 2 : 1);
  } else if (const auto *post = std::get_if<isa::Post>(&instruction.body)) {
    uint64_t outputs = uint64_t(post->T) * post->N;
    sram += 4 * outputs + 16 * uint64_t(post->N) + outputs;
  } else if (const auto *add = std::get_if<isa::Add>(&instruction.body)) {
    sram += 3 * uint64_t(add->count);
  } else if (const auto *pool = std::get_if<isa::Pool>(&instruction.body)) {
    uint64_t outputs = uint64_t(pool->Ho) * pool->Wo * pool->C;
    sram += outputs * pool->window.kh * pool->window.kw + outputs;
  } else if (const auto *conv = std::get_if<isa::DwConv>(&instruction.body)) {
    uint64_t outputs = uint64_t(conv->Ho) * conv->Wo * conv->C;
    uint64_t macs = outputs * conv->window.kh * conv->window.kw;
    statistics.vectorMacs += macs;
    sram += 2 * macs + 4 * outputs * (conv->accumulate ? 2 : 1);
  }
}

std::string Run::checkHazards(size_t index, const VectorClock &clock,
                              const std::vector<Access> &accesses) {
  int queue = queueOf[index];
  auto ordered = [&](int64_t other) {
    return other < 0 || queueOf[other] == queue || clock[queueOf[other]] >= sequence[other];
  };
  std::string problem;
  for (const Access &access : accesses) {
    shadows[int(access.space)].forEach(
        access.begin, access.end, [&](const ShadowSpace::Owners &owners) {
          if (!problem.empty())
            return;
          auto report = [&](int64_t other, const char *what) {
            const isa::Instruction &earlier = program.instructions[other];
            problem = "hazard: instruction " + std::to_string(index) + " (" +
                      opcodeName(program.instructions[index].opcode) + ", " +
                      kQueueNames[queue] + " queue) " + (access.write ? "writes" : "reads") +
                      " " + spaceName(access.space) + " [" + std::to_string(access.begin) +
                      ", " + std::to_string(access.end) + ") that instruction " +
                      std::to_string(other) + " (" + opcodeName(earlier.opcode) + ", " +
                      kQueueNames[queueOf[other]] + " queue) " + what +
                      ", and no dependency token orders them";
          };
          if (!ordered(owners.writer))
            return report(owners.writer, "writes");
          if (!access.write)
            return;
          for (int reader = 0; reader < kQueues; ++reader)
            if (!ordered(owners.readers[reader]))
              return report(owners.readers[reader], "reads");
        });
    if (!problem.empty())
      return problem;
  }
  return "";
}

void Run::recordAccesses(size_t index, const std::vector<Access> &accesses) {
  int queue = queueOf[index];
  for (const Access &access : accesses) {
    ShadowSpace &shadow = shadows[int(access.space)];
    shadow.forEach(access.begin, access.end, [&](ShadowSpace::Owners &owners) {
      if (access.write) {
        owners.writer = int64_t(index);
        owners.readers = {-1, -1, -1};
      } else {
        owners.readers[queue] = int64_t(index);
      }
    });
    shadow.coalesce(access.begin, access.end);
  }
}

std::string Run::deadlock() {
  std::string waiting;
  for (int queue = 0; queue < kQueues; ++queue) {
    if (queues[queue].empty())
      continue;
    size_t index = queues[queue].front();
    const isa::Instruction &instruction = program.instructions[index];
    channelsOf(Queue(queue), instruction.dependencies, popped, pushed);
    std::string tokens;
    for (int channel : popped)
      if (channels[channel].empty())
        tokens += std::string(tokens.empty() ? "" : ", ") + kChannelNames[channel];
    waiting += std::string(waiting.empty() ? "" : "; ") + "instruction " + std::to_string(index) +
               " (" + opcodeName(instruction.opcode) + ") waits for a " + tokens + " token";
  }
  return "deadlock: no engine can proceed: " + waiting;
}

} // namespace

std::string runProgram(const Program &program, const isa::Config &config, Machine &machine,
                       const Dram &dram, RunStatistics &statistics, RunOptions options) {
  statistics = RunStatistics();
  Run run(program, config, machine, dram, statistics, options);
  return run.execute();
}

} // namespace tessel::runtime::npu
