//===- Verifier.cpp - Checking an artifact before anything runs -----------===//

#include "Verifier.h"

#include "Memory.h"
#include "Status.h"
#include "TensorType.h"

#include <algorithm>
#include <cassert>
#include <cinttypes>
#include <cstdarg>
#include <cstddef>
#include <cstring>
#include <elf.h>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tessel::runtime {

namespace {

namespace fb = flatbuffers;
namespace sc = tessel::schema;

// The C API's tsl_dtype and the artifact's DType are one numbering.
static_assert(static_cast<int>(sc::DType_MAX) == TSL_U2 &&
                  static_cast<int>(sc::DType_bool_) == TSL_BOOL &&
                  static_cast<int>(sc::DType_f8e4m3fn) == TSL_F8E4M3FN,
              "tsl_dtype and the schema's DType disagree");

/// The root table's offset and the file identifier.
constexpr size_t kHeaderBytes = sizeof(fb::uoffset_t) + fb::kFileIdentifierLength;

/// The schema nests about seven deep; the limits bound the Verifier's work
/// on a crafted file whose tables are shared many times over.
constexpr fb::uoffset_t kMaxDepth = 16;
constexpr fb::uoffset_t kMaxTables = 1u << 24;

constexpr uint32_t kMaxArenaAlignment = 4096;

tsl_status invalid(const char *format, ...)
    __attribute__((format(printf, 1, 2)));
tsl_status invalid(const char *format, ...) {
  va_list args;
  va_start(args, format);
  tsl_status status = makeErrorV(TSL_INVALID_ARTIFACT, format, args);
  va_end(args);
  return status;
}

bool hasNulByte(const fb::String &text) {
  return std::memchr(text.data(), '\0', text.size()) != nullptr;
}

bool isPowerOfTwo(uint32_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

/// Whether an executable of `format` runs on `device`.
bool formatRunsOn(sc::ExecutableFormat format, sc::DeviceKind device) {
  switch (format) {
  case sc::ExecutableFormat_elf_shared_object:
    return device == sc::DeviceKind_cpu;
  case sc::ExecutableFormat_cuda_ptx:
  case sc::ExecutableFormat_cuda_cubin:
    return device == sc::DeviceKind_cuda;
  case sc::ExecutableFormat_npu_command_stream:
    return device == sc::DeviceKind_npu;
  }
  return false;
}

/// Checks what FlatBuffers cannot: every index, offset and size the session
/// uses without checking again.
class SemanticChecker {
public:
  SemanticChecker(size_t size, uint64_t maxArenaBytes, const sc::Artifact &artifact)
      : artifact(artifact), workLeft(size), fileBytes(size), maxArenaBytes(maxArenaBytes) {}

  tsl_status check() {
    TSL_RETURN_IF_ERROR(checkMemoryPlan());
    TSL_RETURN_IF_ERROR(
        checkSignatures("input", *artifact.inputs(), inputBytes));
    TSL_RETURN_IF_ERROR(
        checkSignatures("output", *artifact.outputs(), outputBytes));
    TSL_RETURN_IF_ERROR(checkGraphValues("input", artifact.graph_inputs(), *artifact.inputs()));
    TSL_RETURN_IF_ERROR(checkGraphValues("output", artifact.graph_outputs(), *artifact.outputs()));
    TSL_RETURN_IF_ERROR(checkBatch());
    TSL_RETURN_IF_ERROR(checkBuffers());
    TSL_RETURN_IF_ERROR(checkExecutables());
    return checkSchedule();
  }

private:
  /// A file whose tables and vectors are not shared holds fewer elements
  /// than bytes. Sharing lets a small file describe billions of bindings,
  /// which checking (and later the session's tables) would pay for, so
  /// every element visited is charged against the file's size.
  tsl_status spend(uint64_t elements) {
    if (elements > workLeft)
      return invalid("artifact: describes more signature dimensions, buffers, "
                     "entries, steps and bindings than a file of %zu bytes "
                     "holds without sharing tables",
                     fileBytes);
    workLeft -= elements;
    return nullptr;
  }

  /// Tools read which of the signature's inputs or outputs (`role`) hold
  /// each graph value's tensors: each must be of one graph value, in order.
  tsl_status checkGraphValues(const char *role,
                              const fb::Vector<fb::Offset<sc::GraphValue>> *values,
                              const fb::Vector<fb::Offset<sc::TensorSignature>> &signatures) {
    if (!values)
      return nullptr;
    TSL_RETURN_IF_ERROR(spend(values->size()));
    uint64_t next = 0;
    for (fb::uoffset_t i = 0; i < values->size(); ++i) {
      const sc::GraphValue &value = *values->Get(i);
      if (value.kind() > sc::GraphValueKind_MAX)
        return invalid("artifact graph %s %" PRIu32 ": unknown kind %u", role, i,
                       static_cast<unsigned>(value.kind()));
      bool single =
          value.kind() == sc::GraphValueKind_Tensor || value.kind() == sc::GraphValueKind_Optional;
      if (value.first() != next || (single && value.count() > 1) ||
          (!value.present() && value.count() > 0))
        return invalid("artifact graph %s %" PRIu32 ": %ss %" PRIu32 " to %" PRIu64
                       " do not follow the graph %s before it or do not fit its kind",
                       role, i, role, value.first(), uint64_t(value.first()) + value.count(), role);
      next += value.count();
    }
    if (next != signatures.size())
      return invalid("artifact graph %ss: they hold %" PRIu64
                     " %ss, but the signature has %" PRIu32,
                     role, next, role, signatures.size());
    return nullptr;
  }

  tsl_status checkMemoryPlan() {
    const sc::MemoryPlan &plan = *artifact.memory_plan();
    if (plan.arena_size() > maxArenaBytes)
      return invalid("artifact memory plan: arena_size %" PRIu64 " exceeds the limit of %" PRIu64
                     " bytes%s",
                     plan.arena_size(), maxArenaBytes,
                     maxArenaBytes == sc::kMaxArenaBytes ? " (1 TiB)" : " the caller set");
    if (!isPowerOfTwo(plan.arena_alignment()) ||
        plan.arena_alignment() > kMaxArenaAlignment)
      return invalid("artifact memory plan: arena_alignment %" PRIu32
                     " is not a power of two up to %" PRIu32,
                     plan.arena_alignment(), kMaxArenaAlignment);
    return nullptr;
  }

  tsl_status
  checkSignatures(const char *role,
                  const fb::Vector<fb::Offset<sc::TensorSignature>> &signatures,
                  std::vector<uint64_t> &bytes) {
    TSL_RETURN_IF_ERROR(spend(signatures.size()));
    std::unordered_set<std::string_view> names;
    for (fb::uoffset_t i = 0; i < signatures.size(); ++i) {
      const sc::TensorSignature &signature = *signatures.Get(i);
      const fb::String &name = *signature.name();
      if (name.size() == 0)
        return invalid("artifact %s %" PRIu32 ": the name is empty", role, i);
      if (hasNulByte(name))
        return invalid("artifact %s %" PRIu32 ": the name contains a NUL byte",
                       role, i);
      if (!names.insert(name.string_view()).second)
        return invalid("artifact %s %" PRIu32
                       ": the name '%s' is already taken by another %s",
                       role, i, name.c_str(), role);
      if (signature.dtype() > sc::DType_MAX)
        return invalid(
            "artifact %s %" PRIu32 " ('%s'): dtype %u is not a DType", role, i,
            name.c_str(), static_cast<unsigned>(signature.dtype()));

      const fb::Vector<int64_t> &shape = *signature.shape();
      TSL_RETURN_IF_ERROR(spend(shape.size()));
      // The Verifier aligns a vector's length, not its 8-byte elements; the
      // module hands these out as an int64_t array. The builder leaves the
      // empty vector of a rank-0 tensor unaligned, which is harmless.
      if (shape.size() > 0 &&
          reinterpret_cast<uintptr_t>(shape.data()) % alignof(int64_t) != 0)
        return invalid("artifact %s %" PRIu32
                       " ('%s'): the shape is not 8-byte aligned",
                       role, i, name.c_str());
      for (fb::uoffset_t d = 0; d < shape.size(); ++d)
        if (shape[d] < 0)
          return invalid("artifact %s %" PRIu32 " ('%s'): dimension %" PRIu32
                         " is %" PRId64 ", which is negative",
                         role, i, name.c_str(), d, shape[d]);
      size_t size;
      if (!tensorByteSize(signature.dtype(), shape.data(), shape.size(), size))
        return invalid("artifact %s %" PRIu32
                       " ('%s'): %s of shape %s has more bytes than memory",
                       role, i, name.c_str(),
                       sc::EnumNameDType(signature.dtype()),
                       formatShape(shape.data(), shape.size()).c_str());
      if (signature.batched() && (shape.size() == 0 || shape[0] != 1))
        return invalid("artifact %s %" PRIu32 " ('%s') is batched, so its shape gives one "
                       "sample, but its dimension 0 is not 1",
                       role, i, name.c_str());
      if (signature.varying_axis() != -1 &&
          (signature.varying_axis() < 0 ||
           static_cast<size_t>(signature.varying_axis()) >= shape.size() ||
           shape[signature.varying_axis()] < 1 ||
           (signature.batched() && signature.varying_axis() == 0)))
        return invalid("artifact %s %" PRIu32 " ('%s'): its varying dimension %" PRId32
                       " is not one of its dimensions of size 1 or more (or it is the batch's)",
                       role, i, name.c_str(), signature.varying_axis());
      if (const sc::Quantization *quantization = signature.quantization())
        TSL_RETURN_IF_ERROR(checkQuantization(role, i, signature, *quantization));
      bytes.push_back(size);
    }
    return nullptr;
  }

  /// A batched output takes its batch size from the batched inputs.
  tsl_status checkBatch() {
    auto batched = [](const sc::TensorSignature *signature) { return signature->batched(); };
    const auto &inputs = *artifact.inputs();
    const auto &outputs = *artifact.outputs();
    if (std::any_of(outputs.begin(), outputs.end(), batched) &&
        std::none_of(inputs.begin(), inputs.end(), batched))
      return invalid("artifact outputs are batched but no input is: the batch size is unknown");
    return checkLength();
  }

  /// The varying length: its hidden input is the last, a [1] long tensor,
  /// and is there exactly when some input varies; every varying tensor has
  /// the same bound.
  tsl_status checkLength() {
    const auto &inputs = *artifact.inputs();
    const auto &outputs = *artifact.outputs();
    int64_t bound = -1;
    bool holder = false;
    for (fb::uoffset_t i = 0; i < inputs.size(); ++i) {
      const sc::TensorSignature &input = *inputs[i];
      if (input.holds_length()) {
        const fb::Vector<int64_t> &shape = *input.shape();
        if (i + 1 != inputs.size() || input.dtype() != sc::DType_i64 || shape.size() != 1 ||
            shape[0] != 1 || input.varying_axis() != -1 || input.batched())
          return invalid("artifact input %" PRIu32 " ('%s') holds the varying length but is "
                         "not the last input, a [1] i64 tensor",
                         i, input.name()->c_str());
        holder = true;
      }
    }
    for (fb::uoffset_t o = 0; o < outputs.size(); ++o)
      if (outputs[o]->holds_length())
        return invalid("artifact output %" PRIu32 " ('%s') holds the varying length, which only "
                       "the last input may",
                       o, outputs[o]->name()->c_str());
    bool inputVaries = false, outputVaries = false;
    for (const auto *tensors : {&inputs, &outputs})
      for (const sc::TensorSignature *tensor : *tensors) {
        if (tensor->varying_axis() < 0)
          continue;
        (tensors == &inputs ? inputVaries : outputVaries) = true;
        int64_t size = (*tensor->shape())[tensor->varying_axis()];
        if (bound >= 0 && size != bound)
          return invalid("artifact tensor '%s' varies up to %" PRId64 " but another up to "
                         "%" PRId64 ": the varying tensors share one bound",
                         tensor->name()->c_str(), size, bound);
        bound = size;
      }
    if (holder != inputVaries || (outputVaries && !inputVaries))
      return invalid(holder        ? "artifact holds a varying length but no input varies"
                     : inputVaries ? "artifact inputs vary but no input holds the length"
                                   : "artifact outputs vary but no input does");
    return nullptr;
  }

  /// A quantized signature tensor: integers, one scale (finite, positive)
  /// and zero point (a value of the dtype) per tensor or per index of an
  /// axis within the rank.
  tsl_status checkQuantization(const char *role, fb::uoffset_t i,
                               const sc::TensorSignature &signature,
                               const sc::Quantization &quantization) {
    const char *name = signature.name()->c_str();
    const fb::Vector<double> &scales = *quantization.scales();
    const fb::Vector<int64_t> &zeroPoints = *quantization.zero_points();
    const fb::Vector<int64_t> &shape = *signature.shape();
    TSL_RETURN_IF_ERROR(spend(scales.size() + zeroPoints.size()));
    int64_t low, high;
    if (!integerRange(signature.dtype(), low, high))
      return invalid("artifact %s %" PRIu32 " ('%s'): a %s tensor cannot be quantized", role,
                     i, name, sc::EnumNameDType(signature.dtype()));
    int32_t axis = quantization.axis();
    if (axis < -1 || axis >= static_cast<int64_t>(shape.size()))
      return invalid("artifact %s %" PRIu32 " ('%s'): quantization axis %" PRId32
                     " is outside the rank %" PRIu32,
                     role, i, name, axis, shape.size());
    uint64_t expected = axis < 0 ? 1 : static_cast<uint64_t>(shape[axis]);
    if (scales.size() != expected || zeroPoints.size() != expected)
      return invalid("artifact %s %" PRIu32 " ('%s'): %" PRIu32 " scales and %" PRIu32
                     " zero points, %" PRIu64 " expected",
                     role, i, name, scales.size(), zeroPoints.size(), expected);
    // The Verifier aligns a vector's length, not its 8-byte elements.
    if ((expected > 0 &&
         reinterpret_cast<uintptr_t>(scales.data()) % alignof(double) != 0) ||
        (expected > 0 &&
         reinterpret_cast<uintptr_t>(zeroPoints.data()) % alignof(int64_t) != 0))
      return invalid("artifact %s %" PRIu32 " ('%s'): quantization parameters are not "
                     "8-byte aligned",
                     role, i, name);
    for (fb::uoffset_t c = 0; c < expected; ++c) {
      double scale = scales[c];
      if (!(scale > 0) || scale > 1e300)
        return invalid("artifact %s %" PRIu32 " ('%s'): scale %g is not a finite positive "
                       "number",
                       role, i, name, scale);
      if (zeroPoints[c] < low || zeroPoints[c] > high)
        return invalid("artifact %s %" PRIu32 " ('%s'): zero point %" PRId64
                       " is outside [%" PRId64 ", %" PRId64 "]",
                       role, i, name, zeroPoints[c], low, high);
    }
    return nullptr;
  }

  /// [offset, offset + size) must lie in the `limit` bytes of `region` and
  /// start 64-byte aligned, as kernels expect of every buffer.
  static tsl_status checkRange(fb::uoffset_t index, const char *kind,
                               uint64_t offset, uint64_t size, uint64_t limit,
                               const char *region) {
    if (offset % sc::kAlignment != 0)
      return invalid("artifact buffer %" PRIu32 ": %s offset %" PRIu64
                     " is not a multiple of %zu",
                     index, kind, offset, sc::kAlignment);
    uint64_t end;
    if (__builtin_add_overflow(offset, size, &end))
      return invalid("artifact buffer %" PRIu32 ": %s range [%" PRIu64
                     ", %" PRIu64 " + %" PRIu64 ") overflows",
                     index, kind, offset, offset, size);
    if (end > limit)
      return invalid("artifact buffer %" PRIu32 ": %s range [%" PRIu64
                     ", %" PRIu64 ") exceeds the %" PRIu64 " %s",
                     index, kind, offset, end, limit, region);
    return nullptr;
  }

  tsl_status checkBuffers() {
    const auto &buffers = *artifact.buffers();
    TSL_RETURN_IF_ERROR(spend(buffers.size()));

    uint64_t weightBytes = 0;
    if (const fb::Vector<uint8_t> *weights = artifact.weights()) {
      weightBytes = weights->size();
      // The file starts 64-byte aligned in memory, so this puts every
      // constant buffer on a 64-byte boundary. (FlatBuffers aligns no empty
      // vector, and an empty one holds no constant to misalign.)
      if (weightBytes != 0 &&
          reinterpret_cast<uintptr_t>(weights->data()) % sc::kAlignment != 0)
        return invalid("artifact weights: the data is not %zu-byte aligned "
                       "in the file",
                       sc::kAlignment);
    }

    for (fb::uoffset_t i = 0; i < buffers.size(); ++i) {
      const sc::Buffer &buffer = *buffers.Get(i);
      switch (buffer.kind()) {
      case sc::BufferKind_input:
      case sc::BufferKind_output: {
        bool isInput = buffer.kind() == sc::BufferKind_input;
        const char *role = isInput ? "input" : "output";
        const std::vector<uint64_t> &bytes = isInput ? inputBytes : outputBytes;
        if (buffer.index() >= bytes.size())
          return invalid("artifact buffer %" PRIu32 ": %s index %" PRIu32
                         " is out of range (the model has %zu %ss)",
                         i, role, buffer.index(), bytes.size(), role);
        if (buffer.size() != bytes[buffer.index()])
          return invalid("artifact buffer %" PRIu32 ": size %" PRIu64
                         " differs from the %" PRIu64 " bytes of %s %" PRIu32,
                         i, buffer.size(), bytes[buffer.index()], role,
                         buffer.index());
        break;
      }
      case sc::BufferKind_constant:
        TSL_RETURN_IF_ERROR(checkRange(i, "constant", buffer.offset(),
                                       buffer.size(), weightBytes,
                                       "weight bytes"));
        break;
      case sc::BufferKind_arena:
        TSL_RETURN_IF_ERROR(
            checkRange(i, "arena", buffer.offset(), buffer.size(),
                       artifact.memory_plan()->arena_size(), "arena bytes"));
        break;
      default:
        return invalid("artifact buffer %" PRIu32
                       ": kind %u is not a BufferKind",
                       i, static_cast<unsigned>(buffer.kind()));
      }
    }
    return nullptr;
  }

  tsl_status checkExecutables() {
    const auto &executables = *artifact.executables();
    TSL_RETURN_IF_ERROR(spend(executables.size()));
    for (fb::uoffset_t i = 0; i < executables.size(); ++i)
      TSL_RETURN_IF_ERROR(checkExecutable(i, *executables.Get(i)));
    return checkReplacements();
  }

  tsl_status checkExecutable(fb::uoffset_t index,
                             const sc::Executable &executable) {
    if (executable.device() > sc::DeviceKind_MAX)
      return invalid("artifact executable %" PRIu32
                     ": device %u is not a DeviceKind",
                     index, static_cast<unsigned>(executable.device()));
    if (executable.format() > sc::ExecutableFormat_MAX)
      return invalid("artifact executable %" PRIu32
                     ": format %u is not an ExecutableFormat",
                     index, static_cast<unsigned>(executable.format()));
    const char *format = sc::EnumNameExecutableFormat(executable.format());
    if (!formatRunsOn(executable.format(), executable.device()))
      return invalid("artifact executable %" PRIu32
                     ": a %s executable does not run on the %s device",
                     index, format,
                     sc::EnumNameDeviceKind(executable.device()));

    const fb::Vector<uint8_t> *binary = executable.binary();
    switch (executable.format()) {
    case sc::ExecutableFormat_elf_shared_object:
      if (!binary || binary->size() < SELFMAG ||
          std::memcmp(binary->data(), ELFMAG, SELFMAG) != 0)
        return invalid("artifact executable %" PRIu32
                       ": the binary is not an ELF shared object (it does not "
                       "start with \\x7fELF)",
                       index);
      break;
    case sc::ExecutableFormat_cuda_ptx:
    case sc::ExecutableFormat_cuda_cubin:
      if (!binary || binary->size() == 0)
        return invalid("artifact executable %" PRIu32
                       ": the %s binary is empty",
                       index, format);
      if (executable.format() == sc::ExecutableFormat_cuda_cubin &&
          (binary->size() < sizeof(Elf64_Ehdr) ||
           std::memcmp(binary->data(), ELFMAG, SELFMAG) != 0 ||
           binary->data()[EI_CLASS] != ELFCLASS64 ||
           (binary->data()[offsetof(Elf64_Ehdr, e_machine)] |
            binary->data()[offsetof(Elf64_Ehdr, e_machine) + 1] << 8) != EM_CUDA))
        return invalid("artifact executable %" PRIu32
                       ": the cuda_cubin binary is not a 64-bit CUDA ELF image (\\x7fELF, "
                       "machine EM_CUDA)",
                       index);
      break;
    case sc::ExecutableFormat_npu_command_stream:
      if (!executable.npu())
        return invalid("artifact executable %" PRIu32
                       ": the npu_command_stream has no npu program",
                       index);
      // The instructions are 4 words each (docs/npu/isa.md); the NPU
      // device decodes and checks each one when it loads them.
      if (executable.npu()->instructions()->size() % 4 != 0)
        return invalid("artifact executable %" PRIu32 ": the NPU program's %" PRIu32
                       " words are not whole 32-byte instructions",
                       index, executable.npu()->instructions()->size());
      if (reinterpret_cast<uintptr_t>(executable.npu()->instructions()->data()) %
              alignof(uint64_t) !=
          0)
        return invalid("artifact executable %" PRIu32
                       ": the NPU instructions are not 8-byte aligned",
                       index);
      break;
    }

    const auto &entries = *executable.entries();
    TSL_RETURN_IF_ERROR(spend(entries.size()));
    for (fb::uoffset_t e = 0; e < entries.size(); ++e) {
      const sc::KernelEntry &entry = *entries.Get(e);
      const fb::String &symbol = *entry.symbol();
      if (symbol.size() == 0)
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       ": the symbol is empty",
                       index, e);
      if (hasNulByte(symbol))
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       ": the symbol contains a NUL byte",
                       index, e);
      if (entry.kernel() && hasNulByte(*entry.kernel()))
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       ": the kernel name contains a NUL byte",
                       index, e);
      // Kernels take workgroup ranges as int64_t.
      if (entry.workgroup_count() == 0 ||
          entry.workgroup_count() > static_cast<uint64_t>(INT64_MAX))
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       " ('%s'): workgroup_count %" PRIu64
                       " is not in [1, 2^63)",
                       index, e, symbol.c_str(), entry.workgroup_count());
      if (entry.binding_count() > artifact.buffers()->size())
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       " ('%s'): binding_count %" PRIu32 " exceeds the %" PRIu32
                       " buffers",
                       index, e, symbol.c_str(), entry.binding_count(),
                       artifact.buffers()->size());
      if (entry.scratch_bytes() > sc::kMaxScratchBytes)
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       " ('%s'): scratch_bytes %" PRIu64
                       " exceeds the 1 GiB limit",
                       index, e, symbol.c_str(), entry.scratch_bytes());
      // Rows along the length split the workgroups (a CPU dispatch counts
      // the rows below a run's length in int64_t).
      uint64_t rowPositions = entry.length_row_positions(),
               rowWorkgroups = entry.length_row_workgroups();
      if ((rowPositions == 0) != (rowWorkgroups == 0) ||
          (rowWorkgroups != 0 && (entry.workgroup_count() % rowWorkgroups != 0 ||
                                  rowPositions > static_cast<uint64_t>(INT64_MAX))))
        return invalid(
            "artifact executable %" PRIu32 " entry %" PRIu32 " ('%s'): length rows of %" PRIu64
            " positions and %" PRIu64 " workgroups do not split its %" PRIu64 " workgroups",
            index, e, symbol.c_str(), rowPositions, rowWorkgroups, entry.workgroup_count());
      const fb::Vector<uint64_t> *sizes = entry.binding_sizes();
      uint32_t sizeCount = sizes ? sizes->size() : 0;
      if (sizeCount != entry.binding_count())
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       " ('%s'): %" PRIu32 " binding sizes for %" PRIu32 " bindings",
                       index, e, symbol.c_str(), sizeCount, entry.binding_count());
      // As for shapes: the Verifier aligns the length, not the elements.
      if (sizeCount > 0 && reinterpret_cast<uintptr_t>(sizes->data()) % alignof(uint64_t) != 0)
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       " ('%s'): the binding sizes are not 8-byte aligned",
                       index, e, symbol.c_str());
      if (const auto *launches = entry.cuda_launches())
        TSL_RETURN_IF_ERROR(checkCudaLaunches(index, e, entry, *launches));
      if (const sc::NpuProgram *program = executable.npu()) {
        uint64_t instructions = program->instructions()->size() / 4;
        uint64_t end = uint64_t(entry.npu_first_instruction()) + entry.npu_instruction_count();
        if (end > instructions)
          return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                         " ('%s'): NPU instructions up to %" PRIu64 " of %" PRIu64,
                         index, e, symbol.c_str(), end, instructions);
      }
    }
    return nullptr;
  }

  /// The launches of CUDA entry `e`: named kernels, grids and blocks the
  /// driver takes, and every parameter inside a binding or the scratch.
  tsl_status checkCudaLaunches(fb::uoffset_t index, fb::uoffset_t e, const sc::KernelEntry &entry,
                               const fb::Vector<fb::Offset<sc::CudaLaunch>> &launches) {
    TSL_RETURN_IF_ERROR(spend(launches.size()));
    const char *symbol = entry.symbol()->c_str();
    for (fb::uoffset_t l = 0; l < launches.size(); ++l) {
      const sc::CudaLaunch &launch = *launches.Get(l);
      if (!launch.function() || launch.function()->size() == 0 ||
          hasNulByte(*launch.function()) || !launch.grid() || !launch.block())
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       " ('%s') launch %" PRIu32 ": no kernel name, grid or block",
                       index, e, symbol, l);
      const sc::Dim3 &grid = *launch.grid(), &block = *launch.block();
      uint64_t threads = uint64_t(block.x()) * block.y() * block.z();
      if (!grid.x() || !grid.y() || !grid.z() || grid.x() > INT32_MAX || grid.y() > 65535 ||
          grid.z() > 65535 || threads == 0 || threads > 1024)
        return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                       " ('%s') launch %" PRIu32 ": grid %" PRIu32 "x%" PRIu32 "x%" PRIu32
                       " or block of %" PRIu64 " threads is outside CUDA's limits",
                       index, e, symbol, l, grid.x(), grid.y(), grid.z(), threads);
      if (!launch.arguments())
        continue;
      TSL_RETURN_IF_ERROR(spend(launch.arguments()->size()));
      for (const sc::CudaArgument *argument : *launch.arguments()) {
        bool scratch = argument->binding() == UINT32_MAX;
        uint64_t limit = scratch ? entry.scratch_bytes()
                         : argument->binding() < entry.binding_count()
                             ? entry.binding_sizes()->Get(argument->binding())
                             : 0;
        if ((!scratch && argument->binding() >= entry.binding_count()) ||
            (argument->offset() >= limit && !(argument->offset() == 0 && limit == 0)))
          return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                         " ('%s') launch %" PRIu32
                         ": a parameter points outside its binding or the scratch",
                         index, e, symbol, l);
      }
    }
    return nullptr;
  }

  /// An executable that replaces another computes the same entries, for
  /// buffers of the same sizes, on another device.
  tsl_status checkReplacements() {
    const auto &executables = *artifact.executables();
    for (fb::uoffset_t i = 0; i < executables.size(); ++i) {
      const sc::Executable &executable = *executables.Get(i);
      int32_t replaced = executable.replaces();
      if (replaced == -1)
        continue;
      if (replaced < 0 || uint32_t(replaced) >= executables.size())
        return invalid("artifact executable %" PRIu32 ": replaces executable %" PRId32
                       ", which does not exist",
                       i, replaced);
      const sc::Executable &original = *executables.Get(replaced);
      if (original.replaces() != -1 || original.device() == executable.device())
        return invalid("artifact executable %" PRIu32 ": replaces executable %" PRId32
                       ", which is on the same device or itself a replacement",
                       i, replaced);
      const auto &entries = *executable.entries(), &originals = *original.entries();
      if (entries.size() != originals.size())
        return invalid("artifact executable %" PRIu32 ": %" PRIu32
                       " entries replace executable %" PRId32 "'s %" PRIu32,
                       i, entries.size(), replaced, originals.size());
      for (fb::uoffset_t e = 0; e < entries.size(); ++e) {
        const fb::Vector<uint64_t> *sizes = entries.Get(e)->binding_sizes();
        const fb::Vector<uint64_t> *expected = originals.Get(e)->binding_sizes();
        bool same = sizes && expected && sizes->size() == expected->size() &&
                    std::equal(sizes->begin(), sizes->end(), expected->begin());
        if (!same)
          return invalid("artifact executable %" PRIu32 " entry %" PRIu32
                         ": binds other buffers than the entry it replaces",
                         i, e);
      }
    }
    return nullptr;
  }

  tsl_status checkSchedule() {
    const auto &schedule = *artifact.schedule();
    TSL_RETURN_IF_ERROR(spend(schedule.size()));
    for (fb::uoffset_t i = 0; i < schedule.size(); ++i) {
      const sc::ScheduleStep &step = *schedule.Get(i);
      if (const sc::DispatchStep *dispatch = step.step_as_DispatchStep())
        TSL_RETURN_IF_ERROR(checkDispatch(i, *dispatch));
      else if (const sc::CopyStep *copy = step.step_as_CopyStep())
        TSL_RETURN_IF_ERROR(checkCopy(i, *copy));
      else if (const sc::CheckStep *check = step.step_as_CheckStep())
        TSL_RETURN_IF_ERROR(checkCheck(i, *check));
      else
        return invalid("artifact schedule step %" PRIu32
                       ": type %u is not a Step",
                       i, static_cast<unsigned>(step.step_type()));
    }
    return nullptr;
  }

  tsl_status checkDispatch(fb::uoffset_t index, const sc::DispatchStep &step) {
    const auto &executables = *artifact.executables();
    if (step.executable() >= executables.size())
      return invalid("artifact schedule step %" PRIu32 ": executable %" PRIu32
                     " is out of range (the artifact has %" PRIu32
                     " executables)",
                     index, step.executable(), executables.size());
    const auto &entries = *executables.Get(step.executable())->entries();
    if (step.entry() >= entries.size())
      return invalid("artifact schedule step %" PRIu32 ": entry %" PRIu32
                     " is out of range (executable %" PRIu32 " has %" PRIu32
                     " entries)",
                     index, step.entry(), step.executable(), entries.size());
    const sc::KernelEntry &entry = *entries.Get(step.entry());
    const auto &bindings = *step.bindings();
    if (bindings.size() != entry.binding_count())
      return invalid("artifact schedule step %" PRIu32 ": %" PRIu32
                     " bindings, but entry %" PRIu32 " ('%s') of executable "
                     "%" PRIu32 " takes %" PRIu32,
                     index, bindings.size(), step.entry(),
                     entry.symbol()->c_str(), step.executable(),
                     entry.binding_count());
    TSL_RETURN_IF_ERROR(spend(bindings.size()));
    uint32_t bufferCount = artifact.buffers()->size();
    for (fb::uoffset_t b = 0; b < bindings.size(); ++b) {
      if (bindings[b] >= bufferCount)
        return invalid("artifact schedule step %" PRIu32 ": binding %" PRIu32
                       " names buffer %" PRIu32
                       ", which is out of range (the artifact has %" PRIu32
                       " buffers)",
                       index, b, bindings[b], bufferCount);
      // A kernel reads and writes exactly the bytes it was compiled for.
      uint64_t size = artifact.buffers()->Get(bindings[b])->size();
      uint64_t expected = entry.binding_sizes()->Get(b);
      if (size != expected)
        return invalid("artifact schedule step %" PRIu32 ": binding %" PRIu32 " is buffer %" PRIu32
                       " of %" PRIu64 " bytes, but entry '%s' was compiled for %" PRIu64 " bytes",
                       index, b, bindings[b], size, entry.symbol()->c_str(), expected);
    }
    return nullptr;
  }

  tsl_status checkCheck(fb::uoffset_t index, const sc::CheckStep &step) {
    const auto &buffers = *artifact.buffers();
    if (step.count() >= buffers.size())
      return invalid("artifact schedule step %" PRIu32 ": count buffer %" PRIu32
                     " is out of range (the artifact has %" PRIu32 " buffers)",
                     index, step.count(), buffers.size());
    uint64_t size = buffers.Get(step.count())->size();
    if (size != sizeof(int64_t))
      return invalid("artifact schedule step %" PRIu32 ": count buffer %" PRIu32 " has %" PRIu64
                     " bytes, not the 8 of an int64",
                     index, step.count(), size);
    return nullptr;
  }

  tsl_status checkCopy(fb::uoffset_t index, const sc::CopyStep &step) {
    const auto &buffers = *artifact.buffers();
    for (auto [role, buffer] : {std::pair{"source", step.source()},
                                std::pair{"destination", step.destination()}})
      if (buffer >= buffers.size())
        return invalid("artifact schedule step %" PRIu32 ": %s buffer %" PRIu32
                       " is out of range (the artifact has %" PRIu32
                       " buffers)",
                       index, role, buffer, buffers.size());
    for (auto [role, device] :
         {std::pair{"source_device", step.source_device()},
          std::pair{"destination_device", step.destination_device()}})
      if (device > sc::DeviceKind_MAX)
        return invalid("artifact schedule step %" PRIu32
                       ": %s %u is not a DeviceKind",
                       index, role, static_cast<unsigned>(device));

    const sc::Buffer &source = *buffers.Get(step.source());
    const sc::Buffer &destination = *buffers.Get(step.destination());
    // Constants are shared by every session of a module and inputs belong
    // to the caller: neither may be written.
    if (destination.kind() == sc::BufferKind_constant ||
        destination.kind() == sc::BufferKind_input)
      return invalid("artifact schedule step %" PRIu32
                     ": copies into buffer %" PRIu32
                     ", which is read-only (kind %s)",
                     index, step.destination(),
                     sc::EnumNameBufferKind(destination.kind()));
    if (source.size() != destination.size())
      return invalid("artifact schedule step %" PRIu32 ": copies the %" PRIu64
                     " bytes of buffer %" PRIu32 " into the %" PRIu64
                     " bytes of buffer %" PRIu32,
                     index, source.size(), step.source(), destination.size(),
                     step.destination());
    // memcpy needs disjoint memory. Distinct caller tensors are disjoint
    // (the session checks), so only one buffer twice or two arena ranges
    // can overlap.
    bool overlaps =
        step.source() == step.destination() ||
        (source.kind() == sc::BufferKind_arena &&
         destination.kind() == sc::BufferKind_arena && source.size() != 0 &&
         source.offset() < destination.offset() + destination.size() &&
         destination.offset() < source.offset() + source.size());
    if (overlaps)
      return invalid("artifact schedule step %" PRIu32
                     ": the source (buffer %" PRIu32
                     ") and the destination (buffer %" PRIu32 ") overlap",
                     index, step.source(), step.destination());
    return nullptr;
  }

  const sc::Artifact &artifact;
  uint64_t workLeft;
  size_t fileBytes;
  uint64_t maxArenaBytes;
  /// Byte size of each signature tensor, by index.
  std::vector<uint64_t> inputBytes, outputBytes;
};

} // namespace

tsl_status checkArtifactSize(uint64_t size, const char *what) {
  if (size == 0)
    return makeError(TSL_INVALID_ARTIFACT, "%s is empty", what);
  if (size < kHeaderBytes)
    return makeError(TSL_INVALID_ARTIFACT,
                     "%s is %" PRIu64 " bytes, too small for an artifact "
                     "header (%zu bytes)",
                     what, size, kHeaderBytes);
  if (size > sc::kMaxArtifactBytes)
    return makeError(TSL_INVALID_ARTIFACT,
                     "%s is %" PRIu64 " bytes, more than the %" PRIu64
                     " a FlatBuffers artifact can hold",
                     what, size, sc::kMaxArtifactBytes);
  return nullptr;
}

tsl_status verifyArtifact(const uint8_t *data, size_t size, uint64_t maxArenaBytes,
                          const sc::Artifact *&artifact) {
  assert(isBufferAligned(data) && "artifacts are verified in aligned memory");
  TSL_RETURN_IF_ERROR(checkArtifactSize(size, "the artifact"));
  if (!fb::BufferHasIdentifier(data, sc::ArtifactIdentifier()))
    return invalid("not a Tessel artifact: the file identifier (bytes 4 to 7) "
                   "is not \"%s\"",
                   sc::ArtifactIdentifier());

  fb::Verifier::Options options;
  options.max_depth = kMaxDepth;
  options.max_tables = kMaxTables;
  fb::Verifier verifier(data, size, options);
  if (!sc::VerifyArtifactBuffer(verifier))
    return invalid("artifact: the FlatBuffers structure is invalid (an offset "
                   "or length points outside the file, or a required field "
                   "is missing)");
  const sc::Artifact *root = sc::GetArtifact(data);

  // Before the checksum: a newer format may checksum differently, and
  // "unsupported" is the truer answer for it.
  if (root->format_version() < sc::kOldestFormatVersion ||
      root->format_version() > sc::kFormatVersion)
    return makeError(TSL_UNSUPPORTED,
                     "artifact format_version %" PRIu32
                     " is not supported (this runtime reads versions %" PRIu32 " to %" PRIu32 ")",
                     root->format_version(), sc::kOldestFormatVersion, sc::kFormatVersion);

  const sc::Integrity *integrity = root->integrity();
  if (!integrity)
    return invalid("artifact: the integrity checksum is missing");
  uint64_t expected = sc::integrityChecksum(data, size, *integrity);
  if (integrity->checksum() != expected)
    return invalid("artifact integrity: the stored checksum 0x%016" PRIx64
                   " does not match the file's 0x%016" PRIx64
                   "; the file is corrupt",
                   integrity->checksum(), expected);

  TSL_RETURN_IF_ERROR(SemanticChecker(size, maxArenaBytes, *root).check());
  artifact = root;
  return nullptr;
}

} // namespace tessel::runtime
