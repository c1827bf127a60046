//===- DeleteTokens.cpp - Every dependency token of a compiled stream matters ===//
//
// tessel-npu-delete-tokens ARTIFACT: for every NPU entry of a compiled
// artifact, deletes each of its dependency tokens in turn (the push and its
// pop) and runs the entry on the simulator. The compiler's token protocol
// claims every token orders a pair of accesses that would otherwise race,
// so the simulator must refuse each mutilated stream with a hazard or a
// deadlock. Prints the counts; exits 1 if a deletion went unnoticed (naming
// it) or the intact stream does not run.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/npu/ArtifactConfig.h"
#include "runtime/src/npu/Simulator.h"

#include "runtime/schema/Artifact.h"
#include "tessel/runtime.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace npu = tessel::runtime::npu;
namespace sc = tessel::schema;

/// Runs `program` over zeroed DRAM buffers of `sizes`, computing results
/// or only checking the order; the problem or "".
std::string run(const npu::Program &program, const npu::isa::Config &config,
                const std::vector<uint64_t> &sizes, npu::RunOptions options) {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<uint8_t *> pointers;
  for (uint64_t size : sizes) {
    buffers.emplace_back(size);
    pointers.push_back(buffers.back().data());
  }
  npu::Dram dram{pointers.data(), sizes.data(), sizes.size()};
  npu::Machine machine(config);
  npu::RunStatistics statistics;
  return npu::runProgram(program, config, machine, dram, statistics, options);
}

bool refused(const std::string &problem) {
  return problem.find("hazard:") != std::string::npos ||
         problem.find("deadlock:") != std::string::npos;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tessel-npu-delete-tokens ARTIFACT\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(file), {});
  if (tsl_status status = tsl_artifact_verify(bytes.data(), bytes.size(), nullptr)) {
    std::fprintf(stderr, "tessel-npu-delete-tokens: %s: %s\n", argv[1],
                 tsl_status_get_message(status));
    tsl_status_free(status);
    return 1;
  }
  const sc::Artifact &artifact = *sc::GetArtifact(bytes.data());
  size_t entries = 0, tokens = 0, missed = 0;
  for (const sc::Executable *executable : *artifact.executables()) {
    if (executable->device() != sc::DeviceKind_npu)
      continue;
    npu::isa::Config config = npu::configOf(*executable->npu()->config());
    const uint64_t *words = executable->npu()->instructions()->data();
    for (const sc::KernelEntry *entry : *executable->entries()) {
      const char *symbol = entry->symbol()->c_str();
      std::vector<uint64_t> sizes(entry->binding_sizes()->begin(), entry->binding_sizes()->end());
      npu::Program program;
      std::string problem = npu::loadProgram(
          words + entry->npu_first_instruction() * npu::isa::kInstructionWords,
          entry->npu_instruction_count(), config, sizes, program);
      if (problem.empty())
        problem = run(program, config, sizes, {});
      if (!problem.empty()) {
        std::fprintf(stderr, "tessel-npu-delete-tokens: entry '%s' does not run: %s\n",
                     symbol, problem.c_str());
        return 1;
      }
      ++entries;
      for (const npu::Token &token : npu::tokensOf(program)) {
        npu::Program mutilated = program;
        npu::deleteToken(mutilated, token);
        ++tokens;
        // Order and timing do not depend on the data: the results are
        // left uncomputed, which makes each run about a hundred times faster.
        if (!refused(run(mutilated, config, sizes, {false, /*skipResults=*/true}))) {
          ++missed;
          std::printf("entry '%s': deleting the token from instruction %zu to %zu went "
                      "unnoticed\n",
                      symbol, token.push, token.pop);
        }
      }
    }
  }
  std::printf("%zu tokens in %zu NPU entries deleted one at a time: %zu detected, %zu "
              "missed\n",
              tokens, entries, tokens - missed, missed);
  return missed || !entries ? 1 : 0;
}
