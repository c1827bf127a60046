//===- ArtifactWriter.cpp - Serialize a compiled model to .tsl ------------===//

#include "compiler/artifact/ArtifactWriter.h"

#include "runtime/schema/Artifact.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"

namespace tessel {

namespace fb = flatbuffers;
namespace sc = tessel::schema;

std::optional<uint8_t> artifactDType(mlir::Type type) {
  auto dtype = [](sc::DType value) { return static_cast<uint8_t>(value); };
  if (type.isF32())
    return dtype(sc::DType_f32);
  if (type.isF64())
    return dtype(sc::DType_f64);
  if (type.isF16())
    return dtype(sc::DType_f16);
  if (type.isBF16())
    return dtype(sc::DType_bf16);
  if (type.isInteger(1))
    return dtype(sc::DType_bool_);
  if (mlir::isa<mlir::Float8E4M3FNType>(type))
    return dtype(sc::DType_f8e4m3fn);
  if (mlir::isa<mlir::Float8E4M3FNUZType>(type))
    return dtype(sc::DType_f8e4m3fnuz);
  if (mlir::isa<mlir::Float8E5M2Type>(type))
    return dtype(sc::DType_f8e5m2);
  if (mlir::isa<mlir::Float8E5M2FNUZType>(type))
    return dtype(sc::DType_f8e5m2fnuz);
  if (mlir::isa<mlir::Float4E2M1FNType>(type))
    return dtype(sc::DType_f4e2m1fn);
  auto integer = mlir::dyn_cast<mlir::IntegerType>(type);
  if (!integer)
    return std::nullopt;
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 2:
    return dtype(isUnsigned ? sc::DType_u2 : sc::DType_i2);
  case 4:
    return dtype(isUnsigned ? sc::DType_u4 : sc::DType_i4);
  case 8:
    return dtype(isUnsigned ? sc::DType_u8 : sc::DType_i8);
  case 16:
    return dtype(isUnsigned ? sc::DType_u16 : sc::DType_i16);
  case 32:
    return dtype(isUnsigned ? sc::DType_u32 : sc::DType_i32);
  case 64:
    return dtype(isUnsigned ? sc::DType_u64 : sc::DType_i64);
  default:
    return std::nullopt;
  }
}

namespace {

template <typename T>
fb::Offset<fb::Vector<uint8_t>> alignedBytes(fb::FlatBufferBuilder &builder,
                                             const std::vector<T> &bytes) {
  builder.ForceVectorAlignment(bytes.size(), sizeof(uint8_t), sc::kAlignment);
  return builder.CreateVector(reinterpret_cast<const uint8_t *>(bytes.data()),
                              bytes.size());
}

/// The schema's graph_inputs or graph_outputs table; none when `values`
/// is empty.
fb::Offset<fb::Vector<fb::Offset<sc::GraphValue>>>
graphValues(fb::FlatBufferBuilder &builder, const std::vector<GraphValueSignature> &values) {
  if (values.empty())
    return 0;
  std::vector<fb::Offset<sc::GraphValue>> entries;
  for (const GraphValueSignature &value : values)
    entries.push_back(sc::CreateGraphValueDirect(builder, value.name.c_str(),
                                                 static_cast<sc::GraphValueKind>(value.kind),
                                                 value.present, value.first, value.count));
  return builder.CreateVector(entries);
}

fb::Offset<fb::Vector<fb::Offset<sc::TensorSignature>>>
signatures(fb::FlatBufferBuilder &builder,
           const std::vector<TensorSignature> &tensors) {
  std::vector<fb::Offset<sc::TensorSignature>> result;
  for (const TensorSignature &tensor : tensors) {
    fb::Offset<sc::Quantization> quantization;
    if (const std::optional<SignatureQuantization> &params = tensor.quantization)
      quantization = sc::CreateQuantization(builder, builder.CreateVector(params->scales),
                                            builder.CreateVector(params->zeroPoints),
                                            params->axis);
    result.push_back(sc::CreateTensorSignature(
        builder, builder.CreateString(tensor.name), static_cast<sc::DType>(tensor.dtype),
        builder.CreateVector(tensor.shape), quantization, tensor.batched, tensor.varyingAxis,
        tensor.holdsLength));
  }
  return builder.CreateVector(result);
}

/// Room left for the tables (signatures, buffers, schedule, entries) beside
/// the weights and binaries: compiled models need well under 1 MiB.
constexpr uint64_t kTableHeadroomBytes = uint64_t(64) << 20;

/// Refuses what the runtime's verifier would refuse to load and what
/// FlatBuffers cannot build (it asserts past 2 GiB): the compiler writes
/// no artifact that cannot be loaded.
llvm::Error checkRuntimeLimits(const ArtifactContents &contents) {
  uint64_t payload = contents.plan->weights.size();
  for (const Executable &executable : contents.executables) {
    payload += executable.binary.size();
    for (const KernelEntry &entry : executable.entries)
      if (static_cast<uint64_t>(entry.scratchBytes) > sc::kMaxScratchBytes)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "kernel %s needs %llu bytes of scratch per thread; the runtime loads kernels that "
            "need at most 1 GiB",
            entry.kernel.c_str(), static_cast<unsigned long long>(entry.scratchBytes));
  }
  if (payload > sc::kMaxArtifactBytes - kTableHeadroomBytes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the model's weights and code take %llu bytes; an artifact (a FlatBuffer) holds at most "
        "2 GiB",
        static_cast<unsigned long long>(payload));
  return llvm::Error::success();
}

/// The schema's launches of a CUDA entry.
fb::Offset<fb::Vector<fb::Offset<sc::CudaLaunch>>>
cudaLaunchTable(fb::FlatBufferBuilder &builder, const std::vector<CudaLaunch> &launches) {
  std::vector<fb::Offset<sc::CudaLaunch>> table;
  for (const CudaLaunch &launch : launches) {
    std::vector<sc::CudaArgument> arguments;
    for (const CudaArgument &argument : launch.arguments)
      arguments.emplace_back(argument.binding, argument.offset);
    sc::Dim3 grid(launch.grid[0], launch.grid[1], launch.grid[2]);
    sc::Dim3 block(launch.block[0], launch.block[1], launch.block[2]);
    table.push_back(sc::CreateCudaLaunchDirect(builder, &grid, &block,
                                               launch.dynamicSharedMemory,
                                               launch.function.c_str(), &arguments));
  }
  return builder.CreateVector(table);
}

/// The schema's entry for `entry`, with what `statistics` knows of its
/// kernel (the nodes and arithmetic a profile report shows).
fb::Offset<sc::KernelEntry> kernelEntry(fb::FlatBufferBuilder &builder, const KernelEntry &entry,
                                       const llvm::StringMap<KernelStatistics> *statistics) {
  const KernelStatistics *found = nullptr;
  if (statistics) {
    auto it = statistics->find(entry.kernel);
    if (it != statistics->end())
      found = &it->second;
  }
  // The shared counts, or the target's own where it knows better (an NPU
  // kernel is no loop nest the shared count could read).
  const std::vector<std::string> &nodes =
      found && !found->sourceNodes.empty() ? found->sourceNodes : entry.sourceNodes;
  uint64_t integerOperations =
      std::max<uint64_t>(found ? found->integerOperations : 0, entry.integerOperations);
  fb::Offset<fb::Vector<fb::Offset<fb::String>>> sourceNodes;
  if (!nodes.empty())
    sourceNodes = builder.CreateVectorOfStrings(nodes);
  fb::Offset<fb::Vector<fb::Offset<sc::CudaLaunch>>> cudaLaunches;
  if (!entry.cudaLaunches.empty())
    cudaLaunches = cudaLaunchTable(builder, entry.cudaLaunches);
  return sc::CreateKernelEntry(
      builder, builder.CreateString(entry.symbol), entry.workgroupCount,
      static_cast<uint32_t>(entry.bindingBytes.size()), entry.scratchBytes,
      builder.CreateVector(entry.bindingBytes), sourceNodes, found ? found->floatOperations : 0,
      integerOperations, entry.npuFirstInstruction, entry.npuInstructionCount, cudaLaunches,
      entry.lengthRows ? entry.lengthRows->positions : 0,
      entry.lengthRows ? entry.lengthRows->workgroups : 0, builder.CreateString(entry.kernel));
}

/// The NPU program of an executable: its configuration and instructions.
fb::Offset<sc::NpuProgram> npuProgram(fb::FlatBufferBuilder &builder, const NpuCode &code) {
  const schema::npu::Config &config = code.config;
  auto table = sc::CreateNpuConfig(
      builder, config.arrayRows, config.arrayColumns, config.scratchpadBytes,
      config.accumulatorBytes,
      config.outputStationary ? sc::NpuDataflow_output_stationary
                              : sc::NpuDataflow_weight_stationary,
      config.parameterBytes, config.dmaBytesPerCycle, config.dmaLatencyCycles, config.clockMhz,
      config.macEnergyPj, config.sramByteEnergyPj, config.dramByteEnergyPj,
      config.scalesimTiming ? sc::NpuTiming_scalesim : sc::NpuTiming_tessel, config.isaVersion);
  return sc::CreateNpuProgram(builder, table, builder.CreateVector(code.instructions));
}

/// What post-training quantization did, for reports read off the artifact.
fb::Offset<sc::QuantizationSummary> quantizationSummary(fb::FlatBufferBuilder &builder,
                                                        const QuantizationReport &report) {
  std::vector<fb::Offset<sc::QuantizedLayer>> layers;
  for (const LayerQuantization &layer : report.layers)
    layers.push_back(sc::CreateQuantizedLayerDirect(
        builder, layer.name.c_str(), layer.op.c_str(), layer.precision.c_str(), layer.sqnrDb,
        layer.addedSqnrDb, layer.inputScale.value_or(0.0), layer.inputZeroPoint.value_or(0),
        layer.outputScale.value_or(0.0), layer.outputZeroPoint.value_or(0),
        layer.weightScaleMin, layer.weightScaleMax));
  std::vector<fb::Offset<sc::OutputSqnr>> outputs;
  for (const auto &[name, sqnr] : report.outputs)
    outputs.push_back(sc::CreateOutputSqnrDirect(builder, name.c_str(), sqnr));
  std::vector<fb::Offset<fb::String>> islands;
  for (const std::string &island : report.floatIslands)
    islands.push_back(builder.CreateString(island));
  return sc::CreateQuantizationSummaryDirect(builder, report.method.c_str(), report.sampleCount,
                                             report.minSqnrDb, &layers, &outputs,
                                             report.integerOps, &islands);
}

/// The entries of `replacing` in the order of `fallback`'s, which must hold
/// the same kernels.
llvm::Expected<std::vector<const KernelEntry *>>
entriesInOrderOf(const Executable &replacing, const Executable &fallback) {
  llvm::StringMap<const KernelEntry *> byKernel;
  for (const KernelEntry &entry : replacing.entries)
    byKernel[entry.kernel] = &entry;
  std::vector<const KernelEntry *> ordered;
  for (const KernelEntry &entry : fallback.entries) {
    const KernelEntry *found = byKernel.lookup(entry.kernel);
    if (!found || found->bindingBytes != entry.bindingBytes)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the %s executable has no entry matching kernel %s",
                                     replacing.architecture.c_str(), entry.kernel.c_str());
    ordered.push_back(found);
  }
  if (ordered.size() != replacing.entries.size())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the %s executable has kernels the CPU's has not",
                                   replacing.architecture.c_str());
  return ordered;
}

} // namespace

llvm::Expected<std::vector<uint8_t>>
serializeArtifact(const ArtifactContents &contents) {
  if (llvm::Error error = checkRuntimeLimits(contents))
    return std::move(error);
  const HostPlan &plan = *contents.plan;
  fb::FlatBufferBuilder builder(1 << 20);

  // Where each kernel's entry lives. An executable that replaces the
  // fallback's (the last of the others) lists its entries in that one's
  // order, which is how the runtime finds them.
  llvm::StringMap<std::pair<uint32_t, uint32_t>> entryOf;
  int32_t fallback = -1;
  for (auto [e, executable] : llvm::enumerate(contents.executables))
    if (!executable.replacesFallback)
      fallback = static_cast<int32_t>(e);
  std::vector<fb::Offset<sc::Executable>> executables;
  for (auto [e, executable] : llvm::enumerate(contents.executables)) {
    std::vector<const KernelEntry *> ordered;
    if (executable.replacesFallback) {
      llvm::Expected<std::vector<const KernelEntry *>> matched =
          entriesInOrderOf(executable, contents.executables[fallback]);
      if (!matched)
        return matched.takeError();
      ordered = std::move(*matched);
    } else {
      for (const KernelEntry &entry : executable.entries)
        ordered.push_back(&entry);
    }
    std::vector<fb::Offset<sc::KernelEntry>> entries;
    for (auto [i, entry] : llvm::enumerate(ordered)) {
      if (!executable.replacesFallback)
        entryOf[entry->kernel] = {static_cast<uint32_t>(e), static_cast<uint32_t>(i)};
      entries.push_back(kernelEntry(builder, *entry, contents.kernelStatistics));
    }
    fb::Offset<fb::Vector<uint8_t>> binary;
    if (!executable.binary.empty())
      binary = alignedBytes(builder, executable.binary);
    auto entryVector = builder.CreateVector(entries);
    auto architecture = builder.CreateString(executable.architecture);
    auto cpuFeatures = builder.CreateVectorOfStrings(executable.cpuFeatures);
    fb::Offset<sc::NpuProgram> npu;
    if (executable.npu)
      npu = npuProgram(builder, *executable.npu);
    executables.push_back(sc::CreateExecutable(
        builder, static_cast<sc::DeviceKind>(executable.device),
        static_cast<sc::ExecutableFormat>(executable.format), binary,
        entryVector, architecture, npu, cpuFeatures,
        executable.replacesFallback ? fallback : -1));
  }

  std::vector<fb::Offset<sc::ScheduleStep>> steps;
  for (const HostStep &step : plan.steps) {
    if (const auto *dispatch = std::get_if<DispatchPlan>(&step)) {
      auto it = entryOf.find(dispatch->kernel);
      if (it == entryOf.end())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "no executable provides kernel %s",
                                       dispatch->kernel.c_str());
      // The entry refuses, at run time, buffers of other sizes than it was
      // compiled for.
      const KernelEntry &entry = contents.executables[it->second.first].entries[it->second.second];
      std::vector<uint64_t> sizes;
      for (uint32_t buffer : dispatch->bindings)
        sizes.push_back(plan.buffers[buffer].size);
      if (sizes != entry.bindingBytes)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "kernel %s is dispatched with buffers of other sizes "
                                       "than it was compiled for",
                                       dispatch->kernel.c_str());
      auto bindings = builder.CreateVector(dispatch->bindings);
      auto dispatchStep = sc::CreateDispatchStep(builder, it->second.first,
                                                 it->second.second, bindings);
      steps.push_back(sc::CreateScheduleStep(builder, sc::Step_DispatchStep,
                                             dispatchStep.Union()));
    } else if (const auto *check = std::get_if<CheckPlan>(&step)) {
      auto checkStep = sc::CreateCheckStepDirect(builder, check->count, check->node.c_str(),
                                                 check->problem.c_str());
      steps.push_back(sc::CreateScheduleStep(builder, sc::Step_CheckStep, checkStep.Union()));
    } else {
      const auto &copy = std::get<CopyPlan>(step);
      auto copyStep = sc::CreateCopyStep(builder, copy.source, copy.destination,
                                         sc::DeviceKind_cpu, sc::DeviceKind_cpu);
      steps.push_back(sc::CreateScheduleStep(builder, sc::Step_CopyStep,
                                             copyStep.Union()));
    }
  }

  std::vector<fb::Offset<sc::Buffer>> buffers;
  for (const PlannedBuffer &buffer : plan.buffers)
    buffers.push_back(sc::CreateBuffer(builder,
                                       static_cast<sc::BufferKind>(buffer.kind),
                                       buffer.index, buffer.offset, buffer.size));

  auto inputs = signatures(builder, contents.inputs);
  auto outputs = signatures(builder, contents.outputs);
  auto bufferVector = builder.CreateVector(buffers);
  auto weights = alignedBytes(builder, plan.weights);
  auto executableVector = builder.CreateVector(executables);
  auto stepVector = builder.CreateVector(steps);
  auto memoryPlan = sc::CreateMemoryPlan(builder, plan.arenaSize, sc::kAlignment);
  const Provenance &source = contents.provenance;
  auto provenance = sc::CreateProvenance(
      builder, builder.CreateString(source.compilerVersion),
      builder.CreateString(source.modelHash), builder.CreateString(source.options),
      builder.CreateString(source.modelName));
  fb::Offset<sc::QuantizationSummary> quantization;
  if (contents.quantization)
    quantization = quantizationSummary(builder, *contents.quantization);
  auto graphInputs = graphValues(builder, contents.graphInputs);
  auto graphOutputs = graphValues(builder, contents.graphOutputs);
  sc::Integrity unsealed(0);
  auto artifact =
      sc::CreateArtifact(builder, sc::kFormatVersion, &unsealed, inputs, outputs, bufferVector,
                         weights, executableVector, stepVector, memoryPlan, provenance,
                         quantization, graphOutputs, graphInputs);
  builder.Finish(artifact, sc::ArtifactIdentifier());

  std::vector<uint8_t> bytes(builder.GetBufferPointer(),
                             builder.GetBufferPointer() + builder.GetSize());
  sc::sealArtifact(bytes.data(), bytes.size());
  return bytes;
}

} // namespace tessel
