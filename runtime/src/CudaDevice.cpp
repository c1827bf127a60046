//===- CudaDevice.cpp - An NVIDIA GPU through the CUDA driver API ---------===//
//
// The first GPU of the process, through the driver loaded with dlopen
// (cuda/Driver.h) and its primary context. Executables are PTX, JIT-compiled
// by the driver when loaded, the JIT's error log going into the status. An
// entry is a list of kernel launches whose parameters are bare device
// pointers into the dispatch's bindings or the stream's scratch; launches
// go onto the session's stream in order and synchronize() waits for them.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "cuda/Driver.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessel::runtime {

namespace {

using namespace cuda;
namespace sc = schema;

/// Driver buffers are aligned to at least this much.
constexpr size_t kDriverAlignment = 256;

struct CudaLaunchPlan {
  CUfunction function;
  unsigned grid[3], block[3], sharedBytes;
  /// Per parameter: the binding it points into (kScratch: the scratch) and
  /// the byte offset.
  std::vector<std::pair<uint32_t, uint64_t>> arguments;
};

constexpr uint32_t kScratch = UINT32_MAX;

struct CudaEntry {
  std::vector<CudaLaunchPlan> launches;
  const char *symbol;
};

class CudaExecutable final : public Executable {
public:
  CudaExecutable(const Driver &driver, CUmodule module, std::vector<CudaEntry> entries)
      : driver(driver), module(module), entries(std::move(entries)) {}
  ~CudaExecutable() override { driver.cuModuleUnload(module); }
  const CudaEntry &entry(uint32_t index) const { return entries[index]; }

private:
  const Driver &driver;
  CUmodule module;
  std::vector<CudaEntry> entries;
};

class CudaDevice;

class CudaStream final : public Stream {
public:
  CudaStream(CudaDevice &device, CUstream stream, CUdeviceptr scratch)
      : device(device), stream(stream), scratch(scratch) {}
  ~CudaStream() override;

  tsl_status dispatch(const Executable &executable, uint32_t entry, const Bindings &bindings,
                      int64_t length, uint32_t step) override;
  tsl_status synchronize() override;

private:
  CudaDevice &device;
  CUstream stream;
  CUdeviceptr scratch;
  /// Reused by every launch: the parameter values and their addresses.
  std::vector<CUdeviceptr> values;
  std::vector<void *> parameters;
};

class CudaDevice final : public Device {
public:
  CudaDevice(const Driver &driver, CUcontext context, int capability, unsigned multiprocessors,
             std::string name)
      : driver(driver), context(context), capability(capability), name(std::move(name)),
        info{kDriverAlignment, /*hostAccessible=*/false, multiprocessors, capability} {}

  const DeviceCapabilities &capabilities() const override { return info; }

  /// A failed driver call as a status: what was done, and the driver's
  /// own name and description of the error.
  tsl_status failure(CUresult result, const char *what) const {
    return makeError(result == 2 ? TSL_OUT_OF_MEMORY : TSL_INTERNAL, "cuda: %s failed: %s", what,
                     driver.describe(result).c_str());
  }

  /// Makes the device's context current on the calling thread: sessions
  /// may run on any thread.
  tsl_status enter() const {
    if (CUresult result = driver.cuCtxSetCurrent(context))
      return failure(result, "cuCtxSetCurrent");
    return nullptr;
  }

  tsl_status allocate(size_t bytes, size_t alignment, void *&buffer) override {
    TSL_RETURN_IF_ERROR(enter());
    // The driver aligns to 256 bytes; a larger alignment takes a larger
    // block whose start is remembered for the free.
    size_t extra = alignment > kDriverAlignment ? alignment : 0;
    CUdeviceptr base = 0;
    if (CUresult result = driver.cuMemAlloc(&base, std::max<size_t>(bytes, 1) + extra))
      return makeError(result == 2 ? TSL_OUT_OF_MEMORY : TSL_INTERNAL,
                       "cannot allocate %zu bytes of cuda memory: %s", bytes,
                       driver.describe(result).c_str());
    if (CUresult result = driver.cuMemsetD8(base, 0, std::max<size_t>(bytes, 1) + extra)) {
      driver.cuMemFree(base);
      return failure(result, "cuMemsetD8");
    }
    CUdeviceptr aligned = extra ? (base + alignment - 1) & ~CUdeviceptr(alignment - 1) : base;
    if (aligned != base) {
      std::lock_guard<std::mutex> lock(mutex);
      offsetBlocks[aligned] = base;
    }
    buffer = reinterpret_cast<void *>(aligned);
    return nullptr;
  }

  void deallocate(void *buffer) override {
    if (!buffer || enter())
      return;
    auto address = reinterpret_cast<CUdeviceptr>(buffer);
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto found = offsetBlocks.find(address);
      if (found != offsetBlocks.end()) {
        address = found->second;
        offsetBlocks.erase(found);
      }
    }
    driver.cuMemFree(address);
  }

  tsl_status copy(void *destination, const void *source, size_t bytes,
                  CopyDirection direction) override {
    if (!bytes)
      return nullptr;
    TSL_RETURN_IF_ERROR(enter());
    CUresult result = CUDA_SUCCESS;
    switch (direction) {
    case CopyDirection::HostToDevice:
      result = driver.cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(destination), source, bytes);
      break;
    case CopyDirection::DeviceToHost:
      result = driver.cuMemcpyDtoH(destination, reinterpret_cast<CUdeviceptr>(source), bytes);
      break;
    case CopyDirection::DeviceToDevice:
      result = driver.cuMemcpyDtoD(reinterpret_cast<CUdeviceptr>(destination),
                                   reinterpret_cast<CUdeviceptr>(source), bytes);
      break;
    }
    if (result)
      return failure(result, "copying between host and device");
    return nullptr;
  }

  tsl_status loadExecutable(const sc::Executable &executable, uint32_t index,
                            std::unique_ptr<Executable> &loaded) override {
    // PTX for a newer GPU than this one, or a cubin of another, cannot run
    // here (the module loads only the best executable this GPU can run,
    // Module.cpp).
    if (cudaArchitecture(executable) < 0)
      return makeError(TSL_INVALID_ARTIFACT,
                       "executable %u: '%s' is no CUDA architecture (expected sm_NN)", index,
                       executable.architecture() ? executable.architecture()->c_str() : "");
    if (!cudaRuns(executable, capability))
      return nullptr;
    TSL_RETURN_IF_ERROR(enter());
    bool cubin = executable.format() == sc::ExecutableFormat_cuda_cubin;
    // The driver reads PTX as a NUL-terminated string, a cubin as it is.
    std::string image(reinterpret_cast<const char *>(executable.binary()->data()),
                      executable.binary()->size());
    char errorLog[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog) - 1)};
    CUmodule module = nullptr;
    if (CUresult result = driver.cuModuleLoadDataEx(&module, image.c_str(), 2, options, values))
      return makeError(TSL_UNSUPPORTED, "executable %u (%s %s): %s: %s%s%s", index,
                       executable.architecture()->c_str(), cubin ? "cubin" : "PTX",
                       cubin ? "the CUDA driver could not load it" : "the CUDA driver's JIT failed",
                       driver.describe(result).c_str(), errorLog[0] ? ": " : "", errorLog);
    std::vector<CudaEntry> entries;
    for (const sc::KernelEntry *entry : *executable.entries()) {
      CudaEntry loadedEntry{{}, entry->symbol()->c_str()};
      if (entry->cuda_launches())
        for (const sc::CudaLaunch *launch : *entry->cuda_launches()) {
          CudaLaunchPlan plan{};
          if (CUresult result = driver.cuModuleGetFunction(&plan.function, module,
                                                           launch->function()->c_str())) {
            driver.cuModuleUnload(module);
            return makeError(TSL_INVALID_ARTIFACT,
                             "executable %u entry '%s': the module has no kernel '%s': %s", index,
                             loadedEntry.symbol, launch->function()->c_str(),
                             driver.describe(result).c_str());
          }
          plan.grid[0] = launch->grid()->x(), plan.grid[1] = launch->grid()->y(),
          plan.grid[2] = launch->grid()->z();
          plan.block[0] = launch->block()->x(), plan.block[1] = launch->block()->y(),
          plan.block[2] = launch->block()->z();
          plan.sharedBytes = launch->dynamic_shared_memory();
          if (launch->arguments())
            for (const sc::CudaArgument *argument : *launch->arguments())
              plan.arguments.emplace_back(argument->binding(), argument->offset());
          loadedEntry.launches.push_back(std::move(plan));
        }
      entries.push_back(std::move(loadedEntry));
    }
    loaded = std::make_unique<CudaExecutable>(driver, module, std::move(entries));
    return nullptr;
  }

  tsl_status createStream(const StreamOptions &options,
                          std::unique_ptr<Stream> &stream) override {
    TSL_RETURN_IF_ERROR(enter());
    CUstream handle = nullptr;
    if (CUresult result = driver.cuStreamCreate(&handle, 0))
      return failure(result, "cuStreamCreate");
    void *scratch = nullptr;
    if (options.scratchBytes)
      if (tsl_status status = allocate(options.scratchBytes, kDriverAlignment, scratch)) {
        driver.cuStreamDestroy(handle);
        return status;
      }
    stream = std::make_unique<CudaStream>(*this, handle, reinterpret_cast<CUdeviceptr>(scratch));
    return nullptr;
  }

  const Driver &driver;
  CUcontext context;
  int capability;
  std::string name;

private:
  DeviceCapabilities info;
  std::mutex mutex;
  std::unordered_map<CUdeviceptr, CUdeviceptr> offsetBlocks;
};

CudaStream::~CudaStream() {
  if (device.enter())
    return;
  device.driver.cuStreamSynchronize(stream);
  device.driver.cuStreamDestroy(stream);
  if (scratch)
    device.deallocate(reinterpret_cast<void *>(scratch));
}

tsl_status CudaStream::dispatch(const Executable &executable, uint32_t entry,
                                const Bindings &bindings, int64_t /*length*/, uint32_t step) {
  const CudaEntry &kernel = static_cast<const CudaExecutable &>(executable).entry(entry);
  TSL_RETURN_IF_ERROR(device.enter());
  for (const CudaLaunchPlan &launch : kernel.launches) {
    values.clear();
    for (auto [binding, offset] : launch.arguments) {
      CUdeviceptr base = binding == kScratch
                             ? scratch
                             : reinterpret_cast<CUdeviceptr>(bindings.pointers[binding]);
      values.push_back(base + offset);
    }
    parameters.clear();
    for (CUdeviceptr &value : values)
      parameters.push_back(&value);
    if (CUresult result = device.driver.cuLaunchKernel(
            launch.function, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0],
            launch.block[1], launch.block[2], launch.sharedBytes, stream, parameters.data(),
            nullptr))
      return makeError(TSL_INTERNAL, "schedule step %u: launching a kernel of entry '%s' failed: %s",
                       step, kernel.symbol, device.driver.describe(result).c_str());
  }
  return nullptr;
}

tsl_status CudaStream::synchronize() {
  TSL_RETURN_IF_ERROR(device.enter());
  if (CUresult result = device.driver.cuStreamSynchronize(stream))
    return makeError(TSL_INTERNAL, "cuda: a kernel failed: %s",
                     device.driver.describe(result).c_str());
  return nullptr;
}

struct FoundDevice {
  std::unique_ptr<CudaDevice> device;
  std::string why;
};

FoundDevice findFirstGpu() {
  FoundDevice found;
  const Driver *driver = loadDriver(found.why);
  if (!driver)
    return found;
  if (CUresult result = driver->cuInit(0)) {
    found.why = result == CUDA_ERROR_NO_DEVICE ? "no CUDA device"
                                               : "the CUDA driver failed to start: " +
                                                     driver->describe(result);
    return found;
  }
  int count = 0;
  if (driver->cuDeviceGetCount(&count) || count == 0) {
    found.why = "no CUDA device";
    return found;
  }
  CUdevice gpu = 0;
  CUcontext context = nullptr;
  int major = 0, minor = 0, multiprocessors = 0;
  char name[256] = {0};
  CUresult result = driver->cuDeviceGet(&gpu, 0);
  if (!result)
    result = driver->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, gpu);
  if (!result)
    result = driver->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, gpu);
  if (!result)
    result = driver->cuDeviceGetAttribute(&multiprocessors,
                                          CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, gpu);
  if (!result)
    result = driver->cuDeviceGetName(name, sizeof(name) - 1, gpu);
  if (!result)
    result = driver->cuDevicePrimaryCtxRetain(&context, gpu);
  if (result) {
    found.why = "the CUDA device cannot be opened: " + driver->describe(result);
    return found;
  }
  found.device = std::make_unique<CudaDevice>(*driver, context, major * 10 + minor,
                                              std::max(1, multiprocessors), name);
  return found;
}

const FoundDevice &theGpu() {
  static FoundDevice found = findFirstGpu();
  return found;
}

} // namespace

Device *findCudaDevice(std::string &why) {
  const FoundDevice &found = theGpu();
  why = found.why;
  return found.device.get();
}

std::string describeCudaDevice() {
  const FoundDevice &found = theGpu();
  if (!found.device)
    return found.why;
  return found.device->name + ", sm_" + std::to_string(found.device->capability);
}

} // namespace tessel::runtime
