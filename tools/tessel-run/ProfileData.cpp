//===- ProfileData.cpp - A run's profile joined with its artifact ---------===//

#include "tools/tessel-run/ProfileData.h"
#include "tools/tessel-run/Text.h"

#include "runtime/schema/Artifact.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace tessel::run {

namespace sc = tessel::schema;

namespace {

std::string text(const flatbuffers::String *string) {
  return string ? string->str() : std::string();
}

std::vector<std::string> strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *list) {
  std::vector<std::string> result;
  if (list)
    for (const flatbuffers::String *string : *list)
      result.push_back(string->str());
  return result;
}

/// The buffers a step reads or writes.
std::vector<uint32_t> buffersOf(const sc::ScheduleStep &step) {
  if (const sc::DispatchStep *dispatch = step.step_as_DispatchStep())
    return {dispatch->bindings()->begin(), dispatch->bindings()->end()};
  if (const sc::CopyStep *copy = step.step_as_CopyStep())
    return {copy->source(), copy->destination()};
  if (const sc::CheckStep *check = step.step_as_CheckStep())
    return {check->count()};
  return {};
}

std::optional<QuantizationRecord> quantizationOf(const sc::Artifact &artifact) {
  const sc::QuantizationSummary *summary = artifact.quantization();
  if (!summary)
    return std::nullopt;
  QuantizationRecord record;
  record.method = text(summary->method());
  record.samples = summary->samples();
  record.minSqnrDb = summary->min_sqnr_db();
  for (const sc::QuantizedLayer *layer : *summary->layers())
    record.layers.push_back({layer->node()->str(), text(layer->op()), text(layer->precision()),
                             layer->sqnr_db(), layer->added_sqnr_db(), layer->input_scale(),
                             layer->output_scale(), layer->input_zero_point(),
                             layer->output_zero_point(), layer->weight_scale_min(),
                             layer->weight_scale_max()});
  for (const sc::OutputSqnr *output : *summary->outputs())
    record.outputs.emplace_back(output->name()->str(), output->sqnr_db());
  record.integerOps = summary->integer_ops();
  record.floatIslands = strings(summary->float_islands());
  return record;
}

} // namespace

ProfileData readProfile(const uint8_t *verifiedArtifact,
                        const std::vector<tsl_step_timing> &timings) {
  const sc::Artifact &artifact = *sc::GetArtifact(verifiedArtifact);
  const auto &schedule = *artifact.schedule();
  if (timings.size() != schedule.size())
    throw std::runtime_error("the profile has " + std::to_string(timings.size()) +
                             " step timings but the artifact " + std::to_string(schedule.size()) +
                             " schedule steps");
  ProfileData profile;
  if (const sc::Provenance *provenance = artifact.provenance()) {
    profile.modelName = text(provenance->model_name());
    profile.compilerVersion = text(provenance->compiler_version());
    profile.options = text(provenance->options());
    profile.modelHash = text(provenance->model_hash());
  }
  profile.stepCount = schedule.size();
  profile.arenaBytes = artifact.memory_plan()->arena_size();
  profile.quantization = quantizationOf(artifact);

  const auto &buffers = *artifact.buffers();
  std::map<std::pair<uint32_t, uint32_t>, KernelProfile> kernels; // by (executable, entry)
  std::map<uint32_t, ArenaLifetime> arena;                          // by buffer
  for (uint32_t index = 0; index < schedule.size(); ++index) {
    const sc::ScheduleStep &step = *schedule[index];
    const tsl_step_timing &timing = timings[index];
    profile.runs = std::max<uint64_t>(profile.runs, timing.runs);
    double nanoseconds = timing.runs ? double(timing.total_nanoseconds) / double(timing.runs) : 0;
    profile.nanosecondsPerRun += nanoseconds;

    std::string producer;
    if (const sc::DispatchStep *dispatch = step.step_as_DispatchStep()) {
      const sc::KernelEntry &entry =
          *artifact.executables()->Get(dispatch->executable())->entries()->Get(dispatch->entry());
      KernelProfile &kernel = kernels[{dispatch->executable(), dispatch->entry()}];
      if (kernel.steps == 0) {
        kernel.name = sc::kernelName(entry);
        kernel.nodes = strings(entry.source_nodes());
      }
      kernel.steps += 1;
      kernel.nanosecondsPerRun += nanoseconds;
      kernel.floatOperations += double(entry.float_operations());
      kernel.integerOperations += double(entry.integer_operations());
      for (uint64_t bytes : *entry.binding_sizes())
        kernel.bytes += double(bytes);
      producer = kernel.nodes.empty() ? kernel.name : joined(kernel.nodes);
    } else {
      profile.otherNanosecondsPerRun += nanoseconds;
    }

    std::vector<uint32_t> used = buffersOf(step);
    for (size_t b = 0; b < used.size(); ++b) {
      const sc::Buffer &buffer = *buffers[used[b]];
      if (buffer.kind() != sc::BufferKind_arena)
        continue;
      auto [it, first] = arena.try_emplace(used[b]);
      ArenaLifetime &lifetime = it->second;
      if (first) {
        lifetime.offset = buffer.offset();
        lifetime.size = buffer.size();
        lifetime.firstStep = index;
      }
      lifetime.lastStep = index;
      // A dispatch's result is its last binding.
      if (lifetime.producer.empty() && !producer.empty() && b + 1 == used.size())
        lifetime.producer = producer;
    }
  }

  for (auto &[key, kernel] : kernels)
    profile.kernels.push_back(std::move(kernel));
  std::sort(profile.kernels.begin(), profile.kernels.end(),
            [](const KernelProfile &a, const KernelProfile &b) {
              return a.nanosecondsPerRun != b.nanosecondsPerRun
                         ? a.nanosecondsPerRun > b.nanosecondsPerRun
                         : a.name < b.name;
            });
  for (auto &[buffer, lifetime] : arena)
    profile.arena.push_back(std::move(lifetime));
  std::sort(profile.arena.begin(), profile.arena.end(),
            [](const ArenaLifetime &a, const ArenaLifetime &b) {
              return a.offset != b.offset ? a.offset < b.offset : a.firstStep < b.firstStep;
            });
  return profile;
}

} // namespace tessel::run
