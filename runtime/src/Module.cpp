//===- Module.cpp - Loading and inspecting artifacts ----------------------===//

#include "Module.h"

#include "Signature.h"
#include "Status.h"
#include "Verifier.h"

#include "runtime/schema/Signature.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace tessel::runtime;
namespace sc = tessel::schema;

namespace {

/// Describes each tensor of `from` for callers, but the hidden one that
/// holds the varying length; a batched one reports its dimension 0 as -1,
/// a varying one its varying dimension, from a copy of its shape kept in
/// `reportedShapes`.
void describeSignature(const flatbuffers::Vector<flatbuffers::Offset<sc::TensorSignature>> &from,
                       std::vector<tsl_tensor_info> &to, std::vector<bool> &batched,
                       std::vector<int32_t> &varying,
                       std::vector<std::vector<int64_t>> &reportedShapes) {
  to.reserve(from.size());
  for (const sc::TensorSignature *signature : from) {
    // The verifier allows it on the last input alone.
    if (signature->holds_length())
      continue;
    const int64_t *shape = signature->shape()->data();
    batched.push_back(signature->batched());
    varying.push_back(signature->varying_axis());
    if (signature->batched() || signature->varying_axis() >= 0) {
      // Moving the outer vector keeps each inner vector's elements where
      // they are, so the pointer stays valid.
      reportedShapes.emplace_back(shape, shape + signature->shape()->size());
      if (signature->batched())
        reportedShapes.back()[0] = -1;
      if (signature->varying_axis() >= 0)
        reportedShapes.back()[signature->varying_axis()] = -1;
      shape = reportedShapes.back().data();
    }
    tsl_tensor_info info{signature->name()->c_str(),
                         static_cast<tsl_dtype>(signature->dtype()),
                         signature->shape()->size(),
                         shape,
                         0,
                         -1,
                         nullptr,
                         nullptr};
    if (const sc::Quantization *quantization = signature->quantization()) {
      info.quant_count = quantization->scales()->size();
      info.quant_axis = quantization->axis();
      info.quant_scales = quantization->scales()->data();
      info.quant_zero_points = quantization->zero_points()->data();
    }
    to.push_back(info);
  }
}

tsl_load_options optionsOrDefaults(const tsl_load_options *options) {
  tsl_load_options defaults;
  tsl_load_options_init(&defaults);
  return options ? *options : defaults;
}

/// Checks the signature `options` ask for, then verifies the artifact in
/// the `size` bytes at `data` (64-byte aligned).
tsl_status checkArtifact(const uint8_t *data, size_t size, const tsl_load_options &options,
                         const sc::Artifact *&artifact) {
  size_t artifactSize;
  TSL_RETURN_IF_ERROR(checkSignature(data, size, options, artifactSize));
  uint64_t maxArenaBytes = options.max_arena_bytes ? options.max_arena_bytes : sc::kMaxArenaBytes;
  return verifyArtifact(data, artifactSize, std::min(maxArenaBytes, sc::kMaxArenaBytes), artifact);
}

/// Whether executable `index` is the one to load among those that replace
/// the same executable on its device: for a GPU, the newest architecture
/// it can run, its cubin before its PTX (JIT-compiling the others would
/// only cost load time). Executables that replace none are always loaded.
bool isChosenReplacement(const sc::Artifact &artifact, flatbuffers::uoffset_t index,
                         const DeviceCapabilities &device) {
  const auto &executables = *artifact.executables();
  const sc::Executable &executable = *executables.Get(index);
  if (executable.replaces() < 0 || executable.device() != sc::DeviceKind_cuda)
    return true;
  if (!cudaRuns(executable, device.architecture))
    return false;
  // Newer architectures first, then a cubin before PTX.
  auto rank = [](const sc::Executable &candidate) {
    return std::make_pair(cudaArchitecture(candidate),
                          candidate.format() == sc::ExecutableFormat_cuda_cubin);
  };
  for (flatbuffers::uoffset_t other = 0; other < executables.size(); ++other) {
    const sc::Executable &sibling = *executables.Get(other);
    if (other == index || sibling.replaces() != executable.replaces() ||
        sibling.device() != executable.device() || !cudaRuns(sibling, device.architecture))
      continue;
    if (rank(sibling) > rank(executable) || (rank(sibling) == rank(executable) && other < index))
      return false;
  }
  return true;
}

/// The PTX of the same architecture as cubin `index`, replacing the same
/// executable; -1 when the artifact has none.
int64_t ptxBesideCubin(const sc::Artifact &artifact, flatbuffers::uoffset_t index) {
  const auto &executables = *artifact.executables();
  const sc::Executable &cubin = *executables.Get(index);
  for (flatbuffers::uoffset_t other = 0; other < executables.size(); ++other) {
    const sc::Executable &sibling = *executables.Get(other);
    if (sibling.format() == sc::ExecutableFormat_cuda_ptx &&
        sibling.replaces() == cubin.replaces() &&
        cudaArchitecture(sibling) == cudaArchitecture(cubin))
      return other;
  }
  return -1;
}

/// Verifies the `size` bytes in `bytes` and loads every executable whose
/// device this process has; the others are refused when a session needs
/// them.
tsl_status createModule(AlignedBytes bytes, size_t size, const tsl_load_options &options,
                        tsl_module **outModule) {
  const sc::Artifact *artifact;
  TSL_RETURN_IF_ERROR(checkArtifact(bytes.get(), size, options, artifact));

  auto module = std::make_unique<tsl_module_t>();
  module->bytes = std::move(bytes);
  module->artifact = artifact;
  describeSignature(*artifact->inputs(), module->inputs, module->inputBatched, module->inputVarying,
                    module->reportedShapes);
  describeSignature(*artifact->outputs(), module->outputs, module->outputBatched,
                    module->outputVarying, module->reportedShapes);
  module->artifactInputCount = artifact->inputs()->size();
  for (const sc::TensorSignature *input : *artifact->inputs())
    if (input->varying_axis() >= 0)
      module->lengthBound = (*input->shape())[input->varying_axis()];

  const auto &executables = *artifact->executables();
  module->executables.resize(executables.size());
  for (flatbuffers::uoffset_t i = 0; i < executables.size(); ++i) {
    const sc::Executable &executable = *executables.Get(i);
    Device *device = findDevice(executable.device());
    if (!device || !isChosenReplacement(*artifact, i, device->capabilities()))
      continue;
    tsl_status status = device->loadExecutable(executable, i, module->executables[i]);
    // A driver older than the toolkit whose ptxas assembled a cubin refuses
    // it; its JIT still compiles the PTX of the same architecture.
    int64_t ptx = status && executable.format() == sc::ExecutableFormat_cuda_cubin
                      ? ptxBesideCubin(*artifact, i)
                      : -1;
    if (ptx >= 0) {
      tsl_status_free(status);
      status = device->loadExecutable(*executables.Get(ptx), static_cast<uint32_t>(ptx),
                                      module->executables[ptx]);
    }
    TSL_RETURN_IF_ERROR(status);
  }
  *outModule = module.release();
  return nullptr;
}

/// A file opened for reading, closed on every path out, exceptions
/// included.
struct OpenFile {
  int fd = -1;
  uint64_t size = 0;
  ~OpenFile() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Opens `path` (`what` in messages), which must be a regular file: a FIFO
/// or a device would block or never end.
tsl_status openRegularFile(const char *path, const std::string &what, OpenFile &file) {
  file.fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (file.fd < 0)
    return makeError(errno == ENOENT ? TSL_NOT_FOUND : TSL_IO_ERROR, "cannot open %s: %s",
                     what.c_str(), std::strerror(errno));
  struct stat info;
  if (::fstat(file.fd, &info) != 0)
    return makeError(TSL_IO_ERROR, "cannot stat %s: %s", what.c_str(), std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return makeError(TSL_IO_ERROR, "%s is not a regular file", what.c_str());
  file.size = static_cast<uint64_t>(info.st_size);
  return nullptr;
}

/// Copies the caller's `size` bytes at `data` into memory with the
/// alignment the artifact's weights need.
tsl_status copyAligned(const void *data, size_t size, AlignedBytes &bytes) {
  TSL_RETURN_IF_ERROR(checkArtifactSize(size, "the buffer"));
  bytes = allocateAligned(size, kBufferAlignment, /*zero=*/false);
  if (!bytes)
    return makeError(TSL_OUT_OF_MEMORY, "cannot allocate %zu bytes for the artifact", size);
  std::memcpy(bytes.get(), data, size);
  return nullptr;
}

/// Reads all of `fd` (`size` bytes) into `bytes`.
tsl_status readAll(int fd, const std::string &what, uint8_t *bytes,
                   size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t count = ::read(fd, bytes + done, size - done);
    if (count < 0 && errno == EINTR)
      continue;
    if (count < 0)
      return makeError(TSL_IO_ERROR, "cannot read %s: %s", what.c_str(),
                       std::strerror(errno));
    if (count == 0)
      return makeError(TSL_IO_ERROR,
                       "%s ended after %zu of its %zu bytes (it shrank while "
                       "being read)",
                       what.c_str(), done, size);
    done += static_cast<size_t>(count);
  }
  return nullptr;
}

tsl_status loadFile(const char *path, const tsl_load_options &options, tsl_module **outModule) {
  std::string what = std::string("'") + path + "'";
  OpenFile file;
  TSL_RETURN_IF_ERROR(openRegularFile(path, what, file));
  TSL_RETURN_IF_ERROR(checkArtifactSize(file.size, what.c_str()));

  auto size = static_cast<size_t>(file.size);
  AlignedBytes bytes = allocateAligned(size, kBufferAlignment, /*zero=*/false);
  if (!bytes)
    return makeError(TSL_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s",
                     size, what.c_str());
  TSL_RETURN_IF_ERROR(readAll(file.fd, what, bytes.get(), size));
  return createModule(std::move(bytes), size, options, outModule);
}

tsl_status signatureInfo(const tsl_module *module, size_t index,
                         tsl_tensor_info *outInfo, bool input) {
  const char *role = input ? "input" : "output";
  if (!module || !outInfo)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_module_%s_info: module and out_info must not be NULL",
                     role);
  const std::vector<tsl_tensor_info> &infos =
      input ? module->inputs : module->outputs;
  if (index >= infos.size())
    return makeError(TSL_INVALID_ARGUMENT,
                     "%s index %zu is out of range (the model has %zu %ss)",
                     role, index, infos.size(), role);
  *outInfo = infos[index];
  return nullptr;
}

} // namespace

size_t tessel::runtime::cpuScratchBytes(const sc::Artifact &artifact) {
  uint64_t bytes = 0;
  for (const sc::Executable *executable : *artifact.executables())
    if (executable->device() == sc::DeviceKind_cpu)
      for (const sc::KernelEntry *entry : *executable->entries())
        bytes = std::max(bytes, entry->scratch_bytes());
  return bytes;
}

extern "C" {

void tsl_load_options_init(tsl_load_options *options) {
  if (options)
    *options = tsl_load_options{0, nullptr, 0, 0};
}

tsl_status tsl_module_load_file_with_options(const char *path, const tsl_load_options *options,
                                             tsl_module **out_module) {
  if (!path || !out_module)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_module_load_file: path and out_module must not be NULL");
  return guard([&] { return loadFile(path, optionsOrDefaults(options), out_module); });
}

tsl_status tsl_module_load_file(const char *path, tsl_module **out_module) {
  return tsl_module_load_file_with_options(path, nullptr, out_module);
}

tsl_status tsl_module_load_memory_with_options(const void *data, size_t size,
                                               const tsl_load_options *options,
                                               tsl_module **out_module) {
  if ((!data && size) || !out_module)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_module_load_memory: data and out_module must not be NULL");
  return guard([&]() -> tsl_status {
    // The copy gives the artifact the alignment its weights need and
    // frees the caller's memory as soon as this returns.
    AlignedBytes bytes;
    TSL_RETURN_IF_ERROR(copyAligned(data, size, bytes));
    return createModule(std::move(bytes), size, optionsOrDefaults(options), out_module);
  });
}

tsl_status tsl_module_load_memory(const void *data, size_t size, tsl_module **out_module) {
  return tsl_module_load_memory_with_options(data, size, nullptr, out_module);
}

tsl_status tsl_artifact_verify(const void *data, size_t size, const tsl_load_options *options) {
  if (!data && size)
    return makeError(TSL_INVALID_ARGUMENT, "tsl_artifact_verify: data must not be NULL");
  return guard([&]() -> tsl_status {
    AlignedBytes bytes;
    TSL_RETURN_IF_ERROR(copyAligned(data, size, bytes));
    const sc::Artifact *artifact;
    return checkArtifact(bytes.get(), size, optionsOrDefaults(options), artifact);
  });
}

tsl_status tsl_public_key_read_file(const char *path, uint8_t out_key[32]) {
  if (!path || !out_key)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_public_key_read_file: path and out_key must not be NULL");
  return guard([&]() -> tsl_status {
    std::string what = std::string("'") + path + "'";
    OpenFile file;
    TSL_RETURN_IF_ERROR(openRegularFile(path, what, file));
    // A PEM public key is about 113 bytes; past 4 KiB is not read.
    std::string text(std::min<uint64_t>(file.size, 4096), '\0');
    TSL_RETURN_IF_ERROR(
        readAll(file.fd, what, reinterpret_cast<uint8_t *>(text.data()), text.size()));
    std::optional<sc::PublicKey> key = sc::ed25519PublicKeyFromPem(text);
    if (!key)
      return makeError(TSL_INVALID_ARGUMENT,
                       "%s is not an Ed25519 public key in PEM form (as `openssl pkey -in "
                       "key.pem -pubout` writes it)",
                       what.c_str());
    std::memcpy(out_key, key->data(), key->size());
    return nullptr;
  });
}

void tsl_module_retain(tsl_module *module) {
  if (module)
    module->references.fetch_add(1, std::memory_order_relaxed);
}

void tsl_module_release(tsl_module *module) {
  if (module && module->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete module;
}

size_t tsl_module_input_count(const tsl_module *module) {
  return module ? module->inputs.size() : 0;
}

int64_t tsl_module_max_length(const tsl_module *module) { return module ? module->lengthBound : 0; }

int32_t tsl_module_input_varying_axis(const tsl_module *module, size_t index) {
  if (!module || index >= module->inputVarying.size())
    return -1;
  return module->inputVarying[index];
}

int32_t tsl_module_output_varying_axis(const tsl_module *module, size_t index) {
  if (!module || index >= module->outputVarying.size())
    return -1;
  return module->outputVarying[index];
}

size_t tsl_module_output_count(const tsl_module *module) {
  return module ? module->outputs.size() : 0;
}

tsl_status tsl_module_input_info(const tsl_module *module, size_t index,
                                 tsl_tensor_info *out_info) {
  return signatureInfo(module, index, out_info, /*input=*/true);
}

tsl_status tsl_module_output_info(const tsl_module *module, size_t index,
                                  tsl_tensor_info *out_info) {
  return signatureInfo(module, index, out_info, /*input=*/false);
}

const char *tsl_module_provenance(const tsl_module *module, const char *key) {
  const sc::Provenance *provenance =
      module ? module->artifact->provenance() : nullptr;
  if (!provenance || !key)
    return "";
  const flatbuffers::String *value = nullptr;
  if (std::strcmp(key, "compiler_version") == 0)
    value = provenance->compiler_version();
  else if (std::strcmp(key, "model_hash") == 0)
    value = provenance->model_hash();
  else if (std::strcmp(key, "options") == 0)
    value = provenance->options();
  else if (std::strcmp(key, "model_name") == 0)
    value = provenance->model_name();
  return value ? value->c_str() : "";
}

tsl_status tsl_module_memory_info(const tsl_module *module, tsl_memory_info *out_info) {
  if (!module || !out_info)
    return makeError(TSL_INVALID_ARGUMENT,
                     "tsl_module_memory_info: module and out_info must not be NULL");
  const sc::Artifact &artifact = *module->artifact;
  out_info->arena_bytes = artifact.memory_plan()->arena_size();
  out_info->weight_bytes = artifact.weights() ? artifact.weights()->size() : 0;
  out_info->scratch_bytes_per_thread = cpuScratchBytes(artifact);
  return nullptr;
}

} // extern "C"
