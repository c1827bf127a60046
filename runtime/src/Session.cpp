//===- Session.cpp - Running a module -------------------------------------===//
//
// Everything a run needs is prepared when the session is created: the arena,
// the stream with its threads and scratch, and one bindings table per step
// with the arena and constant addresses already in place. A run only checks
// its tensors, writes their addresses into the table slots that take them
// and walks the schedule.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "Module.h"
#include "Status.h"
#include "Tensor.h"
#include "TensorType.h"
#include "VaryingLength.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <string>

using namespace tessel::runtime;
namespace sc = tessel::schema;

namespace {

/// More threads than any machine has cores only slow a session down; the
/// limit keeps a mistyped count from exhausting the process.
constexpr uint32_t kMaxThreads = 1024;

/// A module reference that the session drops last.
struct ModuleReference {
  explicit ModuleReference(tsl_module *module) : module(module) {
    tsl_module_retain(module);
  }
  ModuleReference(const ModuleReference &) = delete;
  ModuleReference &operator=(const ModuleReference &) = delete;
  ~ModuleReference() { tsl_module_release(module); }
  tsl_module *module;
};

/// One schedule step, resolved.
struct StepPlan {
  /// The executable of a dispatch; null for a copy or a check.
  const Executable *executable;
  /// The stream of the executable's device.
  Stream *stream;
  uint32_t entry;
  /// The check step's description; null for a dispatch or a copy.
  const sc::CheckStep *check;
  /// Where the step's bindings start in the session's slots: a dispatch's
  /// entry.binding_count buffers, a copy's source and destination, or a
  /// check's count.
  size_t firstSlot;
  size_t slotCount;
  size_t copyBytes;
  /// The step's index in the schedule, for messages.
  uint32_t index;
  /// A step on a simulated device: its record in the session's
  /// npuStatistics; else -1.
  int32_t npuRecord = -1;
};

/// A slot that takes the address of a caller's tensor.
struct Patch {
  size_t slot;
  bool isOutput;
  uint32_t index;
};

/// Clears the session's busy flag when a run ends, however it ends.
struct RunningFlag {
  std::atomic<bool> &flag;
  ~RunningFlag() { flag.store(false, std::memory_order_release); }
};

} // namespace

struct tsl_session_t {
  explicit tsl_session_t(tsl_module *module) : module(module) {}

  ModuleReference module;
  std::atomic<size_t> references{1};
  Device *device = nullptr;
  sc::DeviceKind deviceKind = sc::DeviceKind_cpu;
  DeviceBuffer arena;
  /// The weights in the session device's memory, when it cannot read the
  /// module's.
  DeviceBuffer weights;
  std::unique_ptr<Stream> stream;
  /// Streams of the other devices the artifact's executables run on, which
  /// reach the session device's buffers (host-accessible ones).
  std::vector<std::pair<Device *, std::unique_ptr<Stream>>> otherStreams;
  std::vector<StepPlan> steps;
  /// Every step's bindings, one step after another, and their byte sizes.
  std::vector<void *> slots;
  std::vector<uint64_t> slotSizes;
  std::vector<Patch> patches;
  /// Device addresses of the current run's inputs, then outputs.
  std::vector<void *> addresses;
  /// Aligned copies of caller tensors the device cannot use in place
  /// (inputs, then outputs), allocated the first time one is needed.
  std::vector<DeviceBuffer> staging;
  /// Varying inputs and outputs at the bound (inputs, then outputs; empty
  /// until a run needs them), and the varying length the hidden input
  /// passes (--max-shape).
  std::vector<AlignedBytes> padded;
  AlignedBytes lengthValue;
  /// Outputs the current run allocates for NULL slots.
  std::vector<tsl_tensor *> created;
  /// One per step when the session profiles, else empty.
  std::vector<tsl_step_timing> timings;
  /// One per step on a simulated device (StepPlan::npuRecord).
  std::vector<tsl_npu_step_statistics> npuStatistics;
  /// With options.npu_trace: each record's spans of the last run.
  bool traceNpu = false;
  std::vector<std::vector<tsl_npu_instruction_span>> npuSpans;
  /// The sample the schedule computes, for messages; -1 for a model
  /// without batched tensors.
  int64_t sample = -1;
  /// The varying length of the current run (--max-shape); -1 for a model
  /// without one.
  int64_t length = -1;
  std::atomic<bool> running{false};
};

namespace {

const sc::Artifact &artifactOf(const tsl_session &session) {
  return *session.module.module->artifact;
}

/// Refuses a schedule step whose device this process does not have.
tsl_status checkStepDevice(uint32_t step, sc::DeviceKind kind) {
  Device *device;
  tsl_status absent = getDevice(kind, device);
  if (!absent)
    return nullptr;
  tsl_status status = makeError(TSL_UNAVAILABLE, "schedule step %u needs the %s device: %s", step,
                                sc::EnumNameDeviceKind(kind), tsl_status_get_message(absent));
  tsl_status_free(absent);
  return status;
}

/// The name a profile gives a schedule step: the kernel a dispatch runs
/// (its entry's symbol where the artifact does not name it).
const char *stepName(const sc::Artifact &artifact, const sc::ScheduleStep &step) {
  if (step.step_as_CheckStep())
    return "check";
  const sc::DispatchStep *dispatch = step.step_as_DispatchStep();
  if (!dispatch)
    return "copy";
  return sc::kernelName(
      *artifact.executables()->Get(dispatch->executable())->entries()->Get(dispatch->entry()));
}

/// The stream that runs dispatches on `device` for `session`: the
/// session's own, or one created for a device whose dispatches can bind
/// the session device's buffers directly (both host-accessible).
tsl_status streamFor(tsl_session &session, uint32_t step, Device &device, Stream *&stream) {
  if (&device == session.device) {
    stream = session.stream.get();
    return nullptr;
  }
  for (auto &[other, otherStream] : session.otherStreams)
    if (other == &device) {
      stream = otherStream.get();
      return nullptr;
    }
  if (!device.capabilities().hostAccessible || !session.device->capabilities().hostAccessible)
    return makeError(TSL_UNSUPPORTED,
                     "schedule step %u runs on a device that cannot reach the session "
                     "device's memory without copy steps",
                     step);
  std::unique_ptr<Stream> created;
  TSL_RETURN_IF_ERROR(device.createStream({1, 0, session.traceNpu}, created));
  stream = created.get();
  session.otherStreams.emplace_back(&device, std::move(created));
  return nullptr;
}

/// The executable that runs `executable`'s entries on the session's
/// device: the one of that device that replaces it and that the device
/// loaded (the module loads one per device), else `executable` itself.
uint32_t replacementOn(const tsl_session &session, uint32_t executable) {
  const sc::Artifact &artifact = artifactOf(session);
  const tsl_module &module = *session.module.module;
  for (flatbuffers::uoffset_t e = 0; e < artifact.executables()->size(); ++e) {
    const sc::Executable &candidate = *artifact.executables()->Get(e);
    if (candidate.replaces() == int32_t(executable) &&
        candidate.device() == session.deviceKind && module.executables[e])
      return e;
  }
  return executable;
}

/// The device a session runs on when the caller names none: the one of
/// the executables that replace the CPU's, where it is present and loaded
/// one of them; else the CPU.
const char *defaultDevice(const tsl_module &module) {
  const sc::Artifact &artifact = *module.artifact;
  for (flatbuffers::uoffset_t e = 0; e < artifact.executables()->size(); ++e) {
    const sc::Executable &executable = *artifact.executables()->Get(e);
    if (executable.replaces() >= 0 && module.executables[e])
      return sc::EnumNameDeviceKind(executable.device());
  }
  return "cpu";
}

/// The scratch a stream of `kind` needs: the largest entry's of the
/// executables of that device.
size_t scratchBytesOn(const sc::Artifact &artifact, sc::DeviceKind kind) {
  if (kind == sc::DeviceKind_cpu)
    return cpuScratchBytes(artifact);
  uint64_t bytes = 0;
  for (const sc::Executable *executable : *artifact.executables())
    if (executable->device() == kind)
      for (const sc::KernelEntry *entry : *executable->entries())
        bytes = std::max(bytes, entry->scratch_bytes());
  return bytes;
}

/// Lays out every step's bindings and fills in what is known before a run.
tsl_status planSteps(tsl_session &session) {
  const sc::Artifact &artifact = artifactOf(session);
  const tsl_module &module = *session.module.module;
  const auto &buffers = *artifact.buffers();
  const flatbuffers::Vector<uint8_t> *weights = artifact.weights();
  auto *arena = static_cast<uint8_t *>(session.arena.get());
  uint8_t *weightBytes = session.weights.get()
                             ? static_cast<uint8_t *>(session.weights.get())
                             : (weights ? const_cast<uint8_t *>(weights->data()) : nullptr);

  auto addSlot = [&](uint32_t bufferIndex) {
    const sc::Buffer &buffer = *buffers.Get(bufferIndex);
    void *address = nullptr;
    switch (buffer.kind()) {
    case sc::BufferKind_input:
    case sc::BufferKind_output:
      session.patches.push_back({session.slots.size(),
                                 buffer.kind() == sc::BufferKind_output,
                                 buffer.index()});
      break;
    case sc::BufferKind_constant:
      // Kernels never write constants (a copy into one is refused by the
      // verifier); the bindings table is simply not const.
      if (weightBytes)
        address = weightBytes + buffer.offset();
      break;
    case sc::BufferKind_arena:
      address = arena + buffer.offset();
      break;
    }
    session.slots.push_back(address);
    session.slotSizes.push_back(buffer.size());
  };

  const auto &schedule = *artifact.schedule();
  session.steps.reserve(schedule.size());
  for (flatbuffers::uoffset_t i = 0; i < schedule.size(); ++i) {
    const sc::ScheduleStep &step = *schedule.Get(i);
    StepPlan plan{nullptr, nullptr, 0, nullptr, session.slots.size(), 0, 0, i};
    if (const sc::DispatchStep *dispatch = step.step_as_DispatchStep()) {
      uint32_t executable = replacementOn(session, dispatch->executable());
      sc::DeviceKind kind = artifact.executables()->Get(executable)->device();
      TSL_RETURN_IF_ERROR(checkStepDevice(i, kind));
      TSL_RETURN_IF_ERROR(streamFor(session, i, *findDevice(kind), plan.stream));
      plan.executable = module.executables[executable].get();
      plan.entry = dispatch->entry();
      if (kind == sc::DeviceKind_npu) {
        plan.npuRecord = int32_t(session.npuStatistics.size());
        tsl_npu_step_statistics record{};
        record.name = stepName(artifact, step);
        record.step = i;
        session.npuStatistics.push_back(record);
        session.npuSpans.emplace_back();
      }
      for (uint32_t buffer : *dispatch->bindings())
        addSlot(buffer);
    } else if (const sc::CheckStep *check = step.step_as_CheckStep()) {
      plan.check = check;
      addSlot(check->count());
    } else {
      const sc::CopyStep &copy = *step.step_as_CopyStep();
      TSL_RETURN_IF_ERROR(checkStepDevice(i, copy.source_device()));
      TSL_RETURN_IF_ERROR(checkStepDevice(i, copy.destination_device()));
      plan.copyBytes = buffers.Get(copy.source())->size();
      addSlot(copy.source());
      addSlot(copy.destination());
    }
    plan.slotCount = session.slots.size() - plan.firstSlot;
    session.steps.push_back(plan);
  }
  return nullptr;
}

tsl_status createSession(tsl_module *module, const tsl_session_options *given,
                         tsl_session *&result) {
  tsl_session_options options;
  tsl_session_options_init(&options);
  if (given)
    options = *given;
  if (options.thread_count > kMaxThreads)
    return makeError(TSL_INVALID_ARGUMENT,
                     "thread_count %u exceeds the limit of %u",
                     options.thread_count, kMaxThreads);

  auto session = std::make_unique<tsl_session_t>(module);
  session->traceNpu = options.npu_trace != 0;
  TSL_RETURN_IF_ERROR(deviceKindNamed(options.device ? options.device : defaultDevice(*module),
                                      session->deviceKind));
  TSL_RETURN_IF_ERROR(getDevice(session->deviceKind, session->device));
  Device &device = *session->device;
  const sc::Artifact &artifact = *module->artifact;

  const sc::MemoryPlan &memoryPlan = *artifact.memory_plan();
  TSL_RETURN_IF_ERROR(session->arena.allocate(device, memoryPlan.arena_size(),
                                              memoryPlan.arena_alignment()));
  const flatbuffers::Vector<uint8_t> *weights = artifact.weights();
  if (!device.capabilities().hostAccessible && weights && weights->size()) {
    TSL_RETURN_IF_ERROR(session->weights.allocate(device, weights->size()));
    TSL_RETURN_IF_ERROR(device.copy(session->weights.get(), weights->data(), weights->size(),
                                    CopyDirection::HostToDevice));
  }
  StreamOptions streamOptions;
  streamOptions.threadCount = options.thread_count
                                  ? options.thread_count
                                  : device.capabilities().computeUnits;
  streamOptions.scratchBytes = scratchBytesOn(artifact, session->deviceKind);
  streamOptions.keepSpans = session->traceNpu;
  TSL_RETURN_IF_ERROR(device.createStream(streamOptions, session->stream));

  TSL_RETURN_IF_ERROR(planSteps(*session));
  if (options.profile) {
    const auto &schedule = *artifact.schedule();
    for (const sc::ScheduleStep *step : schedule)
      session->timings.push_back({stepName(artifact, *step), 0, 0});
  }

  size_t tensorCount = module->artifactInputCount + module->outputs.size();
  session->addresses.resize(tensorCount);
  session->staging.resize(tensorCount);
  session->padded.resize(module->inputs.size() + module->outputs.size());
  session->created.resize(module->outputs.size());
  result = session.release();
  return nullptr;
}

/// Checks a caller's tensor against its signature entry; a batched one
/// may have any dimension 0, a varying one any size along its varying
/// dimension (the entry's -1; checkLength bounds it).
tsl_status checkTensor(const char *role, size_t index, const tsl_tensor_info &expected,
                       bool batched, int32_t varying, const tsl_tensor *tensor) {
  if (!tensor)
    return makeError(TSL_INVALID_ARGUMENT, "%s %zu ('%s') is NULL", role, index,
                     expected.name);
  if (tensor->dtype != expected.dtype)
    return makeError(TSL_INVALID_ARGUMENT,
                     "%s %zu ('%s'): expected dtype %s but got %s", role, index,
                     expected.name, tsl_dtype_name(expected.dtype),
                     tsl_dtype_name(tensor->dtype));
  const std::vector<int64_t> &shape = tensor->shape;
  if (shape.size() != expected.rank)
    return makeError(TSL_INVALID_ARGUMENT,
                     "%s %zu ('%s'): expected rank %zu (shape %s) but got "
                     "rank %zu (shape %s)",
                     role, index, expected.name, expected.rank,
                     formatShape(expected.shape, expected.rank).c_str(),
                     shape.size(),
                     formatShape(shape.data(), shape.size()).c_str());
  bool matches = true;
  for (size_t d = 0; d < shape.size(); ++d)
    matches &=
        (batched && d == 0) || static_cast<int64_t>(d) == varying || shape[d] == expected.shape[d];
  if (!matches)
    return makeError(TSL_INVALID_ARGUMENT,
                     "%s %zu ('%s'): expected shape %s but got %s", role, index,
                     expected.name,
                     formatShape(expected.shape, expected.rank).c_str(),
                     formatShape(shape.data(), shape.size()).c_str());
  return nullptr;
}

bool overlaps(const tsl_tensor *a, const tsl_tensor *b) {
  auto *aBegin = static_cast<const uint8_t *>(a->data);
  auto *bBegin = static_cast<const uint8_t *>(b->data);
  return a->byteSize && b->byteSize && aBegin < bBegin + b->byteSize &&
         bBegin < aBegin + a->byteSize;
}

/// Checks that every batched tensor holds `batch` samples, the number the
/// first batched input sets.
tsl_status checkBatch(const tsl_module &module, tsl_tensor *const *inputs,
                      tsl_tensor **outputs, int64_t &batch) {
  batch = 1;
  const tsl_tensor_info *first = nullptr;
  auto check = [&](const char *role, size_t index, const tsl_tensor_info &info,
                   const tsl_tensor *tensor) -> tsl_status {
    int64_t samples = tensor->shape[0];
    if (!first) {
      first = &info;
      batch = samples;
      return nullptr;
    }
    if (samples == batch)
      return nullptr;
    return makeError(TSL_INVALID_ARGUMENT,
                     "%s %zu ('%s') holds %" PRId64 " samples but input '%s' holds %" PRId64
                     ": every batched tensor must hold the same number",
                     role, index, info.name, samples, first->name, batch);
  };
  for (size_t i = 0; i < module.inputs.size(); ++i)
    if (module.inputBatched[i])
      TSL_RETURN_IF_ERROR(check("input", i, module.inputs[i], inputs[i]));
  for (size_t o = 0; o < module.outputs.size(); ++o)
    if (module.outputBatched[o] && outputs[o])
      TSL_RETURN_IF_ERROR(check("output", o, module.outputs[o], outputs[o]));
  // With no samples the schedule never runs, so it writes no output.
  if (batch == 0)
    for (size_t o = 0; o < module.outputs.size(); ++o)
      if (!module.outputBatched[o])
        return makeError(TSL_INVALID_ARGUMENT,
                         "the inputs hold no samples, and output %zu ('%s') is not batched: "
                         "nothing would compute it",
                         o, module.outputs[o].name);
  return nullptr;
}

/// The part of a caller's tensor that one run of the schedule reads or
/// writes: all of it, one sample of a batched tensor, or a copy of a
/// varying one at the bound.
struct HostRegion {
  void *data;
  size_t bytes;
};

tsl_status checkArguments(const tsl_module &module, tsl_tensor *const *inputs,
                          size_t inputCount, tsl_tensor **outputs,
                          size_t outputCount, int64_t &batch) {
  if (inputCount != module.inputs.size())
    return makeError(TSL_INVALID_ARGUMENT, "expected %zu inputs but got %zu",
                     module.inputs.size(), inputCount);
  if (outputCount != module.outputs.size())
    return makeError(TSL_INVALID_ARGUMENT,
                     "expected %zu output slots but got %zu",
                     module.outputs.size(), outputCount);
  if ((!inputs && inputCount) || (!outputs && outputCount))
    return makeError(TSL_INVALID_ARGUMENT,
                     "the inputs or outputs array is NULL");
  for (size_t i = 0; i < inputCount; ++i)
    TSL_RETURN_IF_ERROR(checkTensor("input", i, module.inputs[i], module.inputBatched[i],
                                    module.inputVarying[i], inputs[i]));

  for (size_t o = 0; o < outputCount; ++o) {
    const tsl_tensor *output = outputs[o];
    if (!output)
      continue;
    TSL_RETURN_IF_ERROR(checkTensor("output", o, module.outputs[o], module.outputBatched[o],
                                    module.outputVarying[o], output));
    // Kernels read inputs while they write outputs; shared memory would
    // make the result depend on their order.
    for (size_t i = 0; i < inputCount; ++i)
      if (overlaps(output, inputs[i]))
        return makeError(
            TSL_INVALID_ARGUMENT,
            "output %zu ('%s') shares memory with input %zu ('%s')", o,
            module.outputs[o].name, i, module.inputs[i].name);
    for (size_t other = 0; other < o; ++other)
      if (outputs[other] && overlaps(output, outputs[other]))
        return makeError(TSL_INVALID_ARGUMENT,
                         "output %zu ('%s') shares memory with output %zu "
                         "('%s')",
                         o, module.outputs[o].name, other,
                         module.outputs[other].name);
  }
  return checkBatch(module, inputs, outputs, batch);
}

/// Checks that every varying tensor has the same `length` along its
/// varying dimension, the one the first varying input sets, at most the
/// bound the model was compiled for.
tsl_status checkLength(const tsl_module &module, tsl_tensor *const *inputs, tsl_tensor **outputs,
                       int64_t &length) {
  length = -1;
  const tsl_tensor_info *first = nullptr;
  auto check = [&](const char *role, size_t index, const tsl_tensor_info &info, int32_t axis,
                   const tsl_tensor *tensor) -> tsl_status {
    int64_t size = tensor->shape[axis];
    if (!first) {
      first = &info;
      length = size;
      if (size > module.lengthBound)
        return makeError(TSL_INVALID_ARGUMENT,
                         "%s %zu ('%s'): dimension %d is %" PRId64 ", beyond the bound %" PRId64
                         " the model was compiled for (tessel-compile --max-shape)",
                         role, index, info.name, axis, size, module.lengthBound);
      return nullptr;
    }
    if (size == length)
      return nullptr;
    return makeError(TSL_INVALID_ARGUMENT,
                     "%s %zu ('%s'): dimension %d is %" PRId64 " but input '%s' sets the "
                     "varying length to %" PRId64 ": every varying tensor must share it",
                     role, index, info.name, axis, size, first->name, length);
  };
  for (size_t i = 0; i < module.inputs.size(); ++i)
    if (module.inputVarying[i] >= 0)
      TSL_RETURN_IF_ERROR(check("input", i, module.inputs[i], module.inputVarying[i], inputs[i]));
  for (size_t o = 0; o < module.outputs.size(); ++o)
    if (module.outputVarying[o] >= 0 && outputs[o])
      TSL_RETURN_IF_ERROR(
          check("output", o, module.outputs[o], module.outputVarying[o], outputs[o]));
  return nullptr;
}

/// The host region a run binds for varying caller tensor `slot` (inputs,
/// then outputs), whose run's part (one sample of a batched tensor) is
/// `region` on entry: a buffer of the bound's size, holding the caller's
/// input padded with zeros.
tsl_status paddedRegion(tsl_session &session, size_t slot, const tsl_tensor_info &info,
                        int32_t axis, bool isInput, int64_t length, HostRegion &region) {
  const tsl_module &module = *session.module.module;
  VaryingRows rows = varyingRows(info.dtype, info.shape, info.rank, axis);
  size_t bytes = rows.outer * static_cast<size_t>(module.lengthBound) * rows.rowBytes;
  AlignedBytes &buffer = session.padded[slot];
  if (!buffer) {
    buffer = allocateAligned(bytes, kBufferAlignment, /*zero=*/true);
    if (!buffer)
      return makeError(TSL_OUT_OF_MEMORY,
                       "cannot allocate %zu bytes for tensor '%s' at "
                       "its bound",
                       bytes, info.name);
  }
  if (isInput)
    padToBound(rows, region.data, length, buffer.get(), module.lengthBound);
  region = {buffer.get(), bytes};
  return nullptr;
}

/// Copies varying output `o`, computed at the bound into its padded
/// buffer, to the run's part of the caller's tensor (`to`) at `length`.
void trimOutput(tsl_session &session, size_t o, void *to, int64_t length) {
  const tsl_module &module = *session.module.module;
  const tsl_tensor_info &info = module.outputs[o];
  VaryingRows rows = varyingRows(info.dtype, info.shape, info.rank, module.outputVarying[o]);
  trimToLength(rows, session.padded[module.inputs.size() + o].get(), module.lengthBound, to,
               length);
}

HostRegion sampleOf(tsl_tensor &tensor, bool batched, int64_t batch, int64_t sample) {
  if (!batched)
    return {tensor.data, tensor.byteSize};
  size_t bytes = tensor.byteSize / static_cast<size_t>(batch);
  return {static_cast<uint8_t *>(tensor.data) + bytes * static_cast<size_t>(sample), bytes};
}

/// Sets the device address of caller tensor `slot` (inputs, then outputs):
/// the region's own memory when the device can use it in place, else a
/// staging buffer, filled here for an input.
tsl_status bindRegion(tsl_session &session, size_t slot, HostRegion region, bool isInput) {
  Device &device = *session.device;
  const DeviceCapabilities &capabilities = device.capabilities();
  auto address = reinterpret_cast<uintptr_t>(region.data);
  if (capabilities.hostAccessible &&
      address % capabilities.bufferAlignment == 0) {
    session.addresses[slot] = region.data;
    return nullptr;
  }
  // A region always has the size of its signature entry (one sample of a
  // batched tensor), so one staging buffer serves every run.
  DeviceBuffer &staging = session.staging[slot];
  if (!staging.get())
    TSL_RETURN_IF_ERROR(staging.allocate(device, region.bytes));
  if (isInput)
    TSL_RETURN_IF_ERROR(device.copy(staging.get(), region.data, region.bytes,
                                    CopyDirection::HostToDevice));
  session.addresses[slot] = staging.get();
  return nullptr;
}

/// Fails the run, naming the node, when the count the check reads (written
/// by an earlier dispatch, so the stream is drained first) is not zero.
/// Waits for every stream of the session.
tsl_status synchronizeAll(tsl_session &session) {
  TSL_RETURN_IF_ERROR(session.stream->synchronize());
  for (auto &[device, stream] : session.otherStreams)
    TSL_RETURN_IF_ERROR(stream->synchronize());
  return nullptr;
}

tsl_status executeCheck(tsl_session &session, const StepPlan &step, void *count) {
  TSL_RETURN_IF_ERROR(synchronizeAll(session));
  int64_t value = 0;
  TSL_RETURN_IF_ERROR(
      session.device->copy(&value, count, sizeof(value), CopyDirection::DeviceToHost));
  if (value == 0)
    return nullptr;
  std::string sample =
      session.sample < 0 ? "" : " of sample " + std::to_string(session.sample);
  return makeError(TSL_INVALID_ARGUMENT,
                   "run stopped at schedule step %u%s: node '%s': %s (%" PRId64 " of them)",
                   step.index, sample.c_str(), step.check->node()->c_str(),
                   step.check->problem()->c_str(), value);
}

/// Runs one step. `current` is the stream that ran the step before: a
/// step on another stream waits for it, since it may read what that one
/// wrote.
tsl_status executeStep(tsl_session &session, const StepPlan &step, Stream *&current) {
  // data() + offset: a dispatch without bindings may start at the end.
  void *const *slots = session.slots.data() + step.firstSlot;
  Stream *stream = step.executable ? step.stream : session.stream.get();
  if (current && current != stream)
    TSL_RETURN_IF_ERROR(current->synchronize());
  current = stream;
  if (step.executable) {
    Bindings bindings{slots, session.slotSizes.data() + step.firstSlot, step.slotCount};
    TSL_RETURN_IF_ERROR(
        stream->dispatch(*step.executable, step.entry, bindings, session.length, step.index));
    if (step.npuRecord >= 0) {
      size_t record = size_t(step.npuRecord);
      tsl_npu_step_statistics &statistics = session.npuStatistics[record];
      std::vector<tsl_npu_instruction_span> &spans = session.npuSpans[record];
      stream->addLastDispatchStatistics(statistics, spans);
      statistics.spans = spans.empty() ? nullptr : spans.data();
      statistics.span_count = spans.size();
    }
    return nullptr;
  }
  if (step.check)
    return executeCheck(session, step, slots[0]);
  return session.device->copy(slots[1], slots[0], step.copyBytes, CopyDirection::DeviceToDevice);
}

tsl_status execute(tsl_session &session) {
  for (const Patch &patch : session.patches) {
    size_t slot = patch.index + (patch.isOutput ? session.module.module->artifactInputCount : 0);
    session.slots[patch.slot] = session.addresses[slot];
  }
  Stream *current = nullptr;
  if (session.timings.empty()) {
    for (const StepPlan &step : session.steps)
      TSL_RETURN_IF_ERROR(executeStep(session, step, current));
    return synchronizeAll(session);
  }
  // A step is timed to its completion, so that an asynchronous device's
  // time lands on the step that spent it.
  using Clock = std::chrono::steady_clock;
  for (size_t i = 0; i < session.steps.size(); ++i) {
    Clock::time_point start = Clock::now();
    TSL_RETURN_IF_ERROR(executeStep(session, session.steps[i], current));
    TSL_RETURN_IF_ERROR(synchronizeAll(session));
    tsl_step_timing &timing = session.timings[i];
    timing.runs += 1;
    timing.total_nanoseconds += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start)
            .count());
  }
  return nullptr;
}

/// Runs the schedule on sample `sample` of the batched tensors (and all of
/// the others), copying staged outputs back.
tsl_status runSample(tsl_session &session, tsl_tensor *const *inputs,
                     const std::vector<tsl_tensor *> &outputs, int64_t batch, int64_t sample,
                     int64_t length) {
  const tsl_module &module = *session.module.module;
  size_t inputCount = module.inputs.size(), outputCount = outputs.size();
  size_t firstOutputSlot = module.artifactInputCount;
  std::vector<HostRegion> outputRegions(outputCount);
  // At the bound, varying tensors are used as they are.
  bool pads = length < module.lengthBound;
  for (size_t i = 0; i < inputCount; ++i) {
    HostRegion region = sampleOf(*inputs[i], module.inputBatched[i], batch, sample);
    if (pads && module.inputVarying[i] >= 0)
      TSL_RETURN_IF_ERROR(
          paddedRegion(session, i, module.inputs[i], module.inputVarying[i], true, length, region));
    TSL_RETURN_IF_ERROR(bindRegion(session, i, region, true));
  }
  // The hidden last input: the varying length.
  session.length = module.lengthBound > 0 ? length : -1;
  if (module.artifactInputCount > inputCount) {
    if (!session.lengthValue &&
        !(session.lengthValue = allocateAligned(sizeof(int64_t), kBufferAlignment, true)))
      return makeError(TSL_OUT_OF_MEMORY, "cannot allocate the varying length");
    std::memcpy(session.lengthValue.get(), &length, sizeof(length));
    TSL_RETURN_IF_ERROR(
        bindRegion(session, inputCount, {session.lengthValue.get(), sizeof(length)}, true));
  }
  std::vector<HostRegion> callerRegions(outputCount);
  for (size_t o = 0; o < outputCount; ++o) {
    callerRegions[o] = outputRegions[o] =
        sampleOf(*outputs[o], module.outputBatched[o], batch, sample);
    if (pads && module.outputVarying[o] >= 0)
      TSL_RETURN_IF_ERROR(paddedRegion(session, inputCount + o, module.outputs[o],
                                       module.outputVarying[o], false, length, outputRegions[o]));
    TSL_RETURN_IF_ERROR(bindRegion(session, firstOutputSlot + o, outputRegions[o], false));
  }

  TSL_RETURN_IF_ERROR(execute(session));

  for (size_t o = 0; o < outputCount; ++o) {
    HostRegion region = outputRegions[o];
    void *address = session.addresses[firstOutputSlot + o];
    if (address != region.data)
      TSL_RETURN_IF_ERROR(session.device->copy(region.data, address, region.bytes,
                                               CopyDirection::DeviceToHost));
    if (pads && module.outputVarying[o] >= 0)
      trimOutput(session, o, callerRegions[o].data, length);
  }
  return nullptr;
}

tsl_status run(tsl_session &session, tsl_tensor *const *inputs,
               size_t inputCount, tsl_tensor **outputs, size_t outputCount) {
  const tsl_module &module = *session.module.module;
  int64_t batch, length;
  TSL_RETURN_IF_ERROR(
      checkArguments(module, inputs, inputCount, outputs, outputCount, batch));
  TSL_RETURN_IF_ERROR(checkLength(module, inputs, outputs, length));

  std::fill(session.created.begin(), session.created.end(), nullptr);
  // Created outputs belong to the caller only once the run succeeds.
  struct ReleaseCreated {
    std::vector<tsl_tensor *> &created;
    ~ReleaseCreated() {
      for (tsl_tensor *&tensor : created) {
        tsl_tensor_release(tensor);
        tensor = nullptr;
      }
    }
  } releaseCreated{session.created};

  for (size_t o = 0; o < outputCount; ++o) {
    if (outputs[o])
      continue;
    const tsl_tensor_info &info = module.outputs[o];
    std::vector<int64_t> shape(info.shape, info.shape + info.rank);
    if (module.outputBatched[o])
      shape[0] = batch;
    if (module.outputVarying[o] >= 0)
      shape[module.outputVarying[o]] = length;
    TSL_RETURN_IF_ERROR(
        allocateTensor(info.dtype, shape.data(), info.rank, session.created[o]));
  }
  std::vector<tsl_tensor *> outputTensors(outputCount);
  for (size_t o = 0; o < outputCount; ++o)
    outputTensors[o] = outputs[o] ? outputs[o] : session.created[o];

  // A batched model's schedule computes one sample (the compiler checked
  // that no node lets samples meet) and runs once per sample; any other
  // model's runs once.
  bool batched = std::find(module.inputBatched.begin(), module.inputBatched.end(), true) !=
                 module.inputBatched.end();
  for (int64_t sample = 0; sample < batch; ++sample) {
    session.sample = batched ? sample : -1;
    TSL_RETURN_IF_ERROR(runSample(session, inputs, outputTensors, batch, sample, length));
  }
  for (tsl_tensor *output : outputTensors)
    canonicalizeSubByteElements(output->dtype, output->data, output->byteSize);
  for (size_t o = 0; o < outputCount; ++o) {
    if (!outputs[o])
      std::swap(outputs[o], session.created[o]);
  }
  return nullptr;
}

} // namespace

extern "C" {

void tsl_session_options_init(tsl_session_options *options) {
  if (!options)
    return;
  options->thread_count = 0;
  options->device = nullptr;
  options->profile = 0;
  options->npu_trace = 0;
}

tsl_status tsl_session_create(tsl_module *module,
                              const tsl_session_options *options,
                              tsl_session **out_session) {
  if (!module || !out_session)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_session_create: module and out_session must not be "
                     "NULL");
  return guard([&] { return createSession(module, options, *out_session); });
}

const char *tsl_session_device(const tsl_session *session) {
  return session ? sc::EnumNameDeviceKind(session->deviceKind) : "";
}

void tsl_session_retain(tsl_session *session) {
  if (session)
    session->references.fetch_add(1, std::memory_order_relaxed);
}

void tsl_session_release(tsl_session *session) {
  if (session &&
      session->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete session;
}

tsl_status tsl_session_run(tsl_session *session, tsl_tensor *const *inputs,
                           size_t input_count, tsl_tensor **outputs,
                           size_t output_count) {
  if (!session)
    return makeError(TSL_INVALID_ARGUMENT, "tsl_session_run: session is NULL");
  if (session->running.exchange(true, std::memory_order_acquire))
    return makeError(TSL_INVALID_ARGUMENT,
                     "the session is already running on another thread; give "
                     "each thread its own session");
  RunningFlag running{session->running};
  return guard([&] {
    return run(*session, inputs, input_count, outputs, output_count);
  });
}

tsl_status tsl_session_get_step_timings(const tsl_session *session,
                                        const tsl_step_timing **out_timings,
                                        size_t *out_count) {
  if (!session || !out_timings || !out_count)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_session_get_step_timings: session, out_timings and "
                     "out_count must not be NULL");
  *out_timings = session->timings.data();
  *out_count = session->timings.size();
  return nullptr;
}

tsl_status tsl_session_get_npu_statistics(const tsl_session *session,
                                          const tsl_npu_step_statistics **out_statistics,
                                          size_t *out_count) {
  if (!session || !out_statistics || !out_count)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_session_get_npu_statistics: session, out_statistics and "
                     "out_count must not be NULL");
  *out_statistics = session->npuStatistics.data();
  *out_count = session->npuStatistics.size();
  return nullptr;
}

} // extern "C"
