//===- CpuDevice.cpp - The host CPU as a device ---------------------------===//
//
// Buffers are host memory, executables are shared objects whose entries
// follow KernelAbi.h, and a stream spreads each dispatch's workgroups over
// the session's thread pool, each thread with its own scratch.
//
//===----------------------------------------------------------------------===//

#include "CpuFeatures.h"
#include "Device.h"
#include "Memory.h"
#include "NearestRounding.h"
#include "SharedObject.h"
#include "ThreadPool.h"

#include "runtime/schema/KernelAbi.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

namespace tessel::runtime {

namespace {

/// Refuses an executable that uses an x86 extension this CPU lacks: its
/// first such instruction would kill the process with SIGILL.
tsl_status checkCpuFeatures(const schema::Executable &executable,
                            const std::string &what) {
  if (!executable.cpu_features())
    return nullptr;
  const char *architecture =
      executable.architecture() ? executable.architecture()->c_str() : "?";
  for (const flatbuffers::String *feature : *executable.cpu_features()) {
    std::optional<bool> present = hostHasCpuFeature(feature->string_view());
    if (!present)
      return makeError(TSL_INVALID_ARTIFACT,
                       "%s needs the CPU feature '%s', which this runtime "
                       "cannot check; update the runtime",
                       what.c_str(), feature->c_str());
    if (!*present)
      return makeError(TSL_UNSUPPORTED,
                       "%s was compiled for %s and uses %s, which this CPU "
                       "lacks or its OS does not enable; recompile with "
                       "--target-cpu for this machine",
                       what.c_str(), architecture, feature->c_str());
  }
  return nullptr;
}

struct CpuEntry {
  tsl_cpu_kernel_entry function;
  int64_t workgroupCount;
  /// Rows along the varying length (KernelEntry.length_row_positions):
  /// positions and workgroups per row; 0 when the entry has none.
  int64_t rowPositions;
  int64_t rowWorkgroups;
  /// For messages; points into the module's bytes.
  const char *symbol;
};

/// The workgroups of `kernel` that compute positions below `length`: the
/// rows that start below it, or all of them.
int64_t workgroupsBelow(const CpuEntry &kernel, int64_t length) {
  if (length < 0 || kernel.rowPositions == 0)
    return kernel.workgroupCount;
  // The verifier checked that rows of rowWorkgroups split the count.
  int64_t rows = length / kernel.rowPositions + (length % kernel.rowPositions != 0);
  int64_t allRows = kernel.workgroupCount / kernel.rowWorkgroups;
  return rows >= allRows ? kernel.workgroupCount : rows * kernel.rowWorkgroups;
}

class CpuExecutable final : public Executable {
public:
  CpuExecutable(std::unique_ptr<SharedObject> object,
                std::vector<CpuEntry> entries)
      : object(std::move(object)), entries(std::move(entries)) {}

  const CpuEntry &entry(uint32_t index) const { return entries[index]; }

private:
  /// Keeps the entries' code mapped.
  std::unique_ptr<SharedObject> object;
  /// Indexed like the artifact's KernelEntry list.
  std::vector<CpuEntry> entries;
};

class CpuStream final : public Stream {
public:
  CpuStream(unsigned workerCount, std::vector<AlignedBytes> scratch, size_t scratchBytes)
      : scratch(std::move(scratch)), scratchBytes(scratchBytes), pool(workerCount) {}

  tsl_status dispatch(const Executable &executable, uint32_t entry, const Bindings &bindings,
                      int64_t length, uint32_t step) override {
    const CpuEntry &kernel =
        static_cast<const CpuExecutable &>(executable).entry(entry);
    NearestRounding rounding; // the pool's workers keep it from their start
    int64_t count = workgroupsBelow(kernel, length);
    if (count == 0)
      return nullptr;
    auto run = [&](int64_t begin, int64_t end, unsigned thread) {
      tsl_cpu_kernel_call call{bindings.pointers, bindings.sizes, bindings.count, begin, end,
                               scratch[thread].get(), scratchBytes};
      return kernel.function(&call);
    };
    int32_t result = TSL_KERNEL_OK;
    if (count == 1 || pool.threadCount() == 1) {
      result = run(0, count, 0);
    } else {
      std::atomic<int32_t> firstFailure{TSL_KERNEL_OK};
      auto body = [&](uint64_t begin, uint64_t end, unsigned thread) {
        if (int32_t code = run(static_cast<int64_t>(begin), static_cast<int64_t>(end), thread))
          firstFailure.store(code, std::memory_order_relaxed);
      };
      pool.parallelFor(static_cast<uint64_t>(count), body);
      result = firstFailure.load(std::memory_order_relaxed);
    }
    if (result == TSL_KERNEL_OK)
      return nullptr;
    if (result == TSL_KERNEL_CALL_MISMATCH)
      return makeError(TSL_INVALID_ARTIFACT,
                       "schedule step %u: entry '%s' refused its call: the artifact binds "
                       "buffers, workgroups or scratch other than those it was compiled for",
                       step, kernel.symbol);
    return makeError(TSL_INTERNAL, "schedule step %u: entry '%s' returned the unknown status %d",
                     step, kernel.symbol, result);
  }

  /// Every dispatch has finished by the time it returns.
  tsl_status synchronize() override { return nullptr; }

private:
  /// One buffer per thread of the pool, indexed like its threads.
  std::vector<AlignedBytes> scratch;
  size_t scratchBytes;
  /// Declared last so that its threads are joined before the scratch goes.
  ThreadPool pool;
};

class CpuDevice final : public Device {
public:
  CpuDevice()
      : info{kBufferAlignment,
             /*hostAccessible=*/true,
             std::max(1u, std::thread::hardware_concurrency())} {}

  const DeviceCapabilities &capabilities() const override { return info; }

  tsl_status allocate(size_t bytes, size_t alignment, void *&buffer) override {
    AlignedBytes memory = allocateAligned(
        bytes, std::max(alignment, kBufferAlignment), /*zero=*/true);
    if (!memory)
      return makeError(TSL_OUT_OF_MEMORY,
                       "cannot allocate %zu bytes of cpu memory", bytes);
    buffer = memory.release();
    return nullptr;
  }

  void deallocate(void *buffer) override { FreeDeleter()(buffer); }

  tsl_status copy(void *destination, const void *source, size_t bytes,
                  CopyDirection) override {
    if (bytes)
      std::memcpy(destination, source, bytes);
    return nullptr;
  }

  tsl_status loadExecutable(const schema::Executable &executable,
                            uint32_t index,
                            std::unique_ptr<Executable> &loaded) override {
    std::string what = "executable " + std::to_string(index);
    TSL_RETURN_IF_ERROR(checkCpuFeatures(executable, what));
    std::unique_ptr<SharedObject> object;
    TSL_RETURN_IF_ERROR(SharedObject::load(executable.binary()->data(),
                                           executable.binary()->size(), what,
                                           object));
    std::vector<CpuEntry> entries;
    entries.reserve(executable.entries()->size());
    for (const schema::KernelEntry *entry : *executable.entries()) {
      const char *symbol = entry->symbol()->c_str();
      void *address = object->lookup(symbol);
      if (!address)
        return makeError(TSL_INVALID_ARTIFACT,
                         "%s entry %zu: the shared object has no symbol '%s'",
                         what.c_str(), entries.size(), symbol);
      entries.push_back({reinterpret_cast<tsl_cpu_kernel_entry>(address),
                         static_cast<int64_t>(entry->workgroup_count()),
                         static_cast<int64_t>(entry->length_row_positions()),
                         static_cast<int64_t>(entry->length_row_workgroups()), symbol});
    }
    loaded =
        std::make_unique<CpuExecutable>(std::move(object), std::move(entries));
    return nullptr;
  }

  tsl_status createStream(const StreamOptions &options,
                          std::unique_ptr<Stream> &stream) override {
    std::vector<AlignedBytes> scratch;
    for (unsigned thread = 0; thread < options.threadCount; ++thread) {
      scratch.push_back(allocateAligned(options.scratchBytes, kBufferAlignment,
                                        /*zero=*/false));
      if (!scratch.back())
        return makeError(TSL_OUT_OF_MEMORY,
                         "cannot allocate %zu bytes of scratch for thread %u",
                         options.scratchBytes, thread);
    }
    try {
      stream = std::make_unique<CpuStream>(options.threadCount - 1, std::move(scratch),
                                           options.scratchBytes);
    } catch (const std::system_error &error) {
      return makeError(TSL_OUT_OF_MEMORY, "cannot start %u worker threads: %s",
                       options.threadCount - 1, error.what());
    }
    return nullptr;
  }

private:
  DeviceCapabilities info;
};

} // namespace

Device &getCpuDevice() {
  static CpuDevice device;
  return device;
}

} // namespace tessel::runtime
