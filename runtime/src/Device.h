//===- Device.h - The interface every device implements ---------*- C++ -*-===//
//
// A device allocates and frees buffers, copies into, out of and within them,
// loads executables, dispatches their entries on a stream and reports what it
// can do. The session drives the host schedule through this interface only,
// so the CUDA device (libcuda through dlopen) and the NPU simulator slot in
// beside the CPU without the session changing.
//
// Devices are process-wide and thread-safe: one device serves every module
// and session. A Stream belongs to one session and is used by one thread at
// a time.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_DEVICE_H
#define TESSEL_RUNTIME_SRC_DEVICE_H

#include "Status.h"

#include "runtime/schema/Artifact.h"
#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessel::runtime {

/// The compute capability a CUDA executable was compiled for ("sm_90": 90);
/// -1 when its architecture is no "sm_NN".
int cudaArchitecture(const schema::Executable &executable);

/// Whether a GPU of compute capability `device` (86 for 8.6) runs CUDA
/// executable `executable`: PTX for its architecture or an older one (the
/// driver's JIT compiles it), a cubin only for its own major version and a
/// minor one no newer.
bool cudaRuns(const schema::Executable &executable, int device);

struct DeviceCapabilities {
  /// The least alignment of every buffer allocate() returns, and what
  /// memory bound to a dispatch must have.
  size_t bufferAlignment;
  /// Whether device buffers are plain host pointers, so that suitably
  /// aligned host memory can be bound to a dispatch without a copy.
  bool hostAccessible;
  /// Independent compute units: cores, streaming multiprocessors, arrays.
  unsigned computeUnits;
  /// A GPU's compute capability × 10 (90 for sm_90); 0 for other devices.
  int architecture = 0;
};

enum class CopyDirection { HostToDevice, DeviceToHost, DeviceToDevice };

/// An executable of the artifact, loaded onto its device. Its entries are
/// indexed like the artifact's KernelEntry list. Immutable, so one loaded
/// executable serves every session of a module at once.
class Executable {
public:
  virtual ~Executable();
};

/// Per-session resources of a stream.
struct StreamOptions {
  /// Threads that run a dispatch, the calling one included (at least 1).
  unsigned threadCount;
  /// Scratch every thread needs: the maximum over the entries it runs.
  size_t scratchBytes;
  /// Simulated devices: keep when each instruction of a dispatch ran.
  bool keepSpans = false;
};

/// The buffers of one dispatch: the entry's binding_count device buffers
/// and their byte sizes. The arrays may be reused once the call returns.
struct Bindings {
  void *const *pointers;
  const uint64_t *sizes;
  uint64_t count;
};

/// An ordered queue of dispatches. Not thread-safe: it belongs to one
/// session, which runs one call at a time.
class Stream {
public:
  virtual ~Stream();
  /// Runs entry `entry` of `executable` (loaded by this stream's device)
  /// with `bindings`; `step` (the schedule step) names it in errors. A
  /// device may leave out the entry's work past the run's varying `length`
  /// (--max-shape; -1 for a model without one) that the artifact marks as
  /// never read (KernelEntry.length_row_positions).
  virtual tsl_status dispatch(const Executable &executable, uint32_t entry,
                              const Bindings &bindings, int64_t length, uint32_t step) = 0;
  /// Returns once every dispatch enqueued so far has finished.
  virtual tsl_status synchronize() = 0;
  /// Adds what a simulated device counted for the last dispatch to
  /// `total` and, when the stream keeps spans, puts them in `spans`; false
  /// for a device that counts nothing.
  virtual bool addLastDispatchStatistics(tsl_npu_step_statistics & /*total*/,
                                         std::vector<tsl_npu_instruction_span> & /*spans*/) const {
    return false;
  }
};

class Device {
public:
  virtual ~Device();
  virtual const DeviceCapabilities &capabilities() const = 0;
  /// Zeroed device memory of `bytes` bytes, aligned to the larger of
  /// `alignment` (a power of two, at most 4096) and bufferAlignment.
  virtual tsl_status allocate(size_t bytes, size_t alignment,
                              void *&buffer) = 0;
  virtual void deallocate(void *buffer) = 0;
  virtual tsl_status copy(void *destination, const void *source, size_t bytes,
                          CopyDirection direction) = 0;
  /// Loads executable `index` of the artifact, which the verifier has
  /// checked targets this device.
  virtual tsl_status loadExecutable(const schema::Executable &executable,
                                    uint32_t index,
                                    std::unique_ptr<Executable> &loaded) = 0;
  virtual tsl_status createStream(const StreamOptions &options,
                                  std::unique_ptr<Stream> &stream) = 0;
};

/// The device of `kind` in this process, or null when there is none.
Device *findDevice(schema::DeviceKind kind);
/// Likewise, with `why` saying why there is none.
Device *findDevice(schema::DeviceKind kind, std::string &why);

/// The device of `kind` in this process; TSL_UNAVAILABLE saying why when
/// there is none.
tsl_status getDevice(schema::DeviceKind kind, Device *&device);

/// The device called `name` ("cpu", "cuda", "npu"); TSL_NOT_FOUND for a name
/// that is none of them.
tsl_status getDevice(const char *name, Device *&device);

/// The kind a device name ("cpu", "cuda", "npu") names; TSL_NOT_FOUND for
/// a name that is none of them.
tsl_status deviceKindNamed(const char *name, schema::DeviceKind &kind);

/// The process-wide CPU device (CpuDevice.cpp).
Device &getCpuDevice();

/// The process-wide NPU device, a simulator (NpuDevice.cpp).
Device &getNpuDevice();

/// The process's first NVIDIA GPU (CudaDevice.cpp), or null with `why`
/// saying so ("no CUDA driver found (...)", "no CUDA device").
Device *findCudaDevice(std::string &why);

/// The GPU's name and architecture ("NVIDIA H200, sm_90"), or why there is
/// none.
std::string describeCudaDevice();

/// A device buffer freed when this goes away.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    reset();
    device = other.device;
    data = other.data;
    size = other.size;
    other.device = nullptr;
    other.data = nullptr;
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  tsl_status allocate(Device &owner, size_t bytes, size_t alignment = 1) {
    reset();
    TSL_RETURN_IF_ERROR(owner.allocate(bytes, alignment, data));
    device = &owner;
    size = bytes;
    return nullptr;
  }
  void *get() const { return data; }
  size_t byteSize() const { return size; }

private:
  void reset() {
    if (device)
      device->deallocate(data);
    device = nullptr;
    data = nullptr;
    size = 0;
  }

  Device *device = nullptr;
  void *data = nullptr;
  size_t size = 0;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_DEVICE_H
