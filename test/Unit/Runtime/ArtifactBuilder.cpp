//===- ArtifactBuilder.cpp - Artifacts for the runtime's tests ------------===//

#include "ArtifactBuilder.h"

namespace tessel::test {

namespace fb = flatbuffers;
namespace sc = tessel::schema;

namespace {

fb::Offset<fb::Vector<uint8_t>>
alignedBytes(fb::FlatBufferBuilder &builder,
             const std::vector<uint8_t> &bytes) {
  builder.ForceVectorAlignment(bytes.size(), sizeof(uint8_t), sc::kAlignment);
  return builder.CreateVector(bytes);
}

fb::Offset<fb::Vector<fb::Offset<sc::TensorSignature>>>
signatures(fb::FlatBufferBuilder &builder,
           const std::vector<TensorSpec> &tensors) {
  std::vector<fb::Offset<sc::TensorSignature>> result;
  for (const TensorSpec &tensor : tensors) {
    fb::Offset<sc::Quantization> quantization;
    if (tensor.quantization)
      quantization = sc::CreateQuantization(
          builder, builder.CreateVector(tensor.quantization->scales),
          builder.CreateVector(tensor.quantization->zeroPoints), tensor.quantization->axis);
    result.push_back(sc::CreateTensorSignature(builder, builder.CreateString(tensor.name),
                                               tensor.dtype, builder.CreateVector(tensor.shape),
                                               quantization, tensor.batched, tensor.varyingAxis,
                                               tensor.holdsLength));
  }
  return builder.CreateVector(result);
}

/// The sizes of the buffers the first dispatch of entry `entry` of
/// executable `executable` binds.
std::vector<uint64_t> dispatchedSizes(const ArtifactSpec &artifact, uint32_t executable,
                                      uint32_t entry, uint32_t bindingCount) {
  std::vector<uint64_t> sizes(bindingCount, 0);
  for (const StepSpec &step : artifact.steps) {
    const auto *dispatch = std::get_if<DispatchSpec>(&step);
    if (!dispatch || dispatch->executable != executable || dispatch->entry != entry)
      continue;
    for (size_t b = 0; b < dispatch->bindings.size() && b < sizes.size(); ++b)
      if (dispatch->bindings[b] < artifact.buffers.size())
        sizes[b] = artifact.buffers[dispatch->bindings[b]].size;
    break;
  }
  return sizes;
}

fb::Offset<sc::Executable> executable(fb::FlatBufferBuilder &builder,
                                      const ArtifactSpec &artifact, uint32_t index) {
  const ExecutableSpec &spec = artifact.executables[index];
  std::vector<fb::Offset<sc::KernelEntry>> entries;
  for (uint32_t e = 0; e < spec.entries.size(); ++e) {
    const EntrySpec &entry = spec.entries[e];
    std::vector<uint64_t> sizes = entry.bindingSizes.value_or(
        dispatchedSizes(artifact, index, e, entry.bindingCount));
    fb::Offset<fb::Vector<fb::Offset<sc::CudaLaunch>>> launches;
    if (!entry.cudaLaunches.empty()) {
      std::vector<fb::Offset<sc::CudaLaunch>> created;
      for (const EntrySpec::Launch &launch : entry.cudaLaunches)
        created.push_back(sc::CreateCudaLaunchDirect(builder, &launch.grid, &launch.block, 0,
                                                     launch.function.c_str(),
                                                     &launch.arguments));
      launches = builder.CreateVector(created);
    }
    entries.push_back(sc::CreateKernelEntry(
        builder, builder.CreateString(entry.symbol), entry.workgroupCount, entry.bindingCount,
        entry.scratchBytes, builder.CreateVector(sizes), /*source_nodes=*/0, /*float_operations=*/0,
        /*integer_operations=*/0, entry.npuFirstInstruction, entry.npuInstructionCount, launches,
        entry.lengthRowPositions, entry.lengthRowWorkgroups,
        entry.kernel.empty() ? 0 : builder.CreateString(entry.kernel)));
  }
  fb::Offset<sc::NpuProgram> npu;
  if (spec.npu) {
    auto config = sc::CreateNpuConfig(builder, spec.npu->arrayRows, spec.npu->arrayColumns);
    npu = sc::CreateNpuProgram(builder, config, builder.CreateVector(spec.npu->instructions));
  }
  auto binary = alignedBytes(builder, spec.binary);
  auto entryVector = builder.CreateVector(entries);
  auto architecture = builder.CreateString(spec.architecture);
  auto cpuFeatures = builder.CreateVectorOfStrings(spec.cpuFeatures);
  return sc::CreateExecutable(builder, spec.device, spec.format, binary,
                              entryVector, architecture, npu, cpuFeatures, spec.replaces);
}

fb::Offset<sc::ScheduleStep> step(fb::FlatBufferBuilder &builder,
                                  const StepSpec &spec) {
  if (const auto *dispatch = std::get_if<DispatchSpec>(&spec)) {
    auto created =
        sc::CreateDispatchStep(builder, dispatch->executable, dispatch->entry,
                               builder.CreateVector(dispatch->bindings));
    return sc::CreateScheduleStep(builder, sc::Step_DispatchStep,
                                  created.Union());
  }
  if (const auto *check = std::get_if<CheckSpec>(&spec)) {
    auto created = sc::CreateCheckStepDirect(builder, check->count, check->node.c_str(),
                                             check->problem.c_str());
    return sc::CreateScheduleStep(builder, sc::Step_CheckStep, created.Union());
  }
  const auto &copy = std::get<CopySpec>(spec);
  auto created = sc::CreateCopyStep(builder, copy.source, copy.destination,
                                    copy.sourceDevice, copy.destinationDevice);
  return sc::CreateScheduleStep(builder, sc::Step_CopyStep, created.Union());
}

} // namespace

std::vector<uint8_t> buildArtifact(const ArtifactSpec &spec) {
  fb::FlatBufferBuilder builder;

  std::vector<fb::Offset<sc::Executable>> executables;
  for (uint32_t e = 0; e < spec.executables.size(); ++e)
    executables.push_back(executable(builder, spec, e));
  std::vector<fb::Offset<sc::ScheduleStep>> steps;
  for (const StepSpec &stepSpec : spec.steps)
    steps.insert(steps.end(), spec.stepReferences, step(builder, stepSpec));
  std::vector<fb::Offset<sc::Buffer>> buffers;
  for (const BufferSpec &buffer : spec.buffers)
    buffers.push_back(sc::CreateBuffer(builder, buffer.kind, buffer.index,
                                       buffer.offset, buffer.size));

  auto inputs = signatures(builder, spec.inputs);
  auto outputs = signatures(builder, spec.outputs);
  auto bufferVector = builder.CreateVector(buffers);
  auto weights = alignedBytes(builder, spec.weights);
  auto executableVector = builder.CreateVector(executables);
  auto stepVector = builder.CreateVector(steps);
  auto memoryPlan =
      sc::CreateMemoryPlan(builder, spec.arenaSize, spec.arenaAlignment);
  auto provenance = sc::CreateProvenance(
      builder, builder.CreateString(spec.compilerVersion),
      builder.CreateString(spec.modelHash), builder.CreateString(spec.options),
      builder.CreateString(spec.modelName));
  auto graphValues = [&](const std::vector<GraphValueSpec> &values) {
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<sc::GraphValue>>> table;
    if (values.empty())
      return table;
    std::vector<flatbuffers::Offset<sc::GraphValue>> entries;
    for (const GraphValueSpec &value : values)
      entries.push_back(sc::CreateGraphValueDirect(builder, value.name.c_str(), value.kind,
                                                   value.present, value.first, value.count));
    return builder.CreateVector(entries);
  };
  auto graphOutputs = graphValues(spec.graphOutputs);
  auto graphInputs = graphValues(spec.graphInputs);
  sc::Integrity unsealed(0);
  auto artifact =
      sc::CreateArtifact(builder, spec.formatVersion, spec.withIntegrity ? &unsealed : nullptr,
                         inputs, outputs, bufferVector, weights, executableVector, stepVector,
                         memoryPlan, provenance, /*quantization=*/0, graphOutputs, graphInputs);
  builder.Finish(artifact, sc::ArtifactIdentifier());

  std::vector<uint8_t> bytes(builder.GetBufferPointer(),
                             builder.GetBufferPointer() + builder.GetSize());
  if (spec.withIntegrity)
    sealArtifact(bytes);
  return bytes;
}

void sealArtifact(std::vector<uint8_t> &bytes) { sc::sealArtifact(bytes.data(), bytes.size()); }

} // namespace tessel::test
