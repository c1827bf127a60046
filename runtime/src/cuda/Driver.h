//===- Driver.h - The CUDA driver API, loaded with dlopen -------*- C++ -*-===//
//
// The runtime never links libcuda: a runtime built anywhere must load and
// run on machines without a GPU. The few driver functions it calls are
// looked up once in libcuda.so.1 (or $TESSEL_CUDA_DRIVER, for tests that
// bring a stub driver), with the driver's own C types spelled here.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_CUDA_DRIVER_H
#define TESSEL_RUNTIME_SRC_CUDA_DRIVER_H

#include <cstddef>
#include <string>

namespace tessel::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

enum CUdevice_attribute {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

enum CUjit_option {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/// The driver functions the CUDA device calls.
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr pointer);
  CUresult (*cuMemsetD8)(CUdeviceptr pointer, unsigned char value, size_t count);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr destination, const void *source, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void *destination, CUdeviceptr source, size_t bytes);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr destination, CUdeviceptr source, size_t bytes);
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned optionCount,
                                 CUjit_option *options, void **values);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX, unsigned gridY, unsigned gridZ,
                             unsigned blockX, unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, CUstream stream, void **parameters,
                             void **extra);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);

  /// "CUDA_ERROR_... (text)" for `error`.
  std::string describe(CUresult error) const;
};

/// The driver, loaded on first use; null with `why` set when there is no
/// driver or it lacks a function.
const Driver *loadDriver(std::string &why);

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_SRC_CUDA_DRIVER_H
