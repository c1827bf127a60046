//===- Driver.cpp - The CUDA driver API, loaded with dlopen ---------------===//

#include "Driver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace tessel::runtime::cuda {

namespace {

struct LoadedDriver {
  Driver driver{};
  const Driver *usable = nullptr;
  std::string why;
};

/// Looks `name` up in `library` into `function`; false when it is absent.
template <typename Function>
bool resolve(void *library, const char *name, Function &function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  return function != nullptr;
}

LoadedDriver load() {
  LoadedDriver loaded;
  const char *path = std::getenv("TESSEL_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *error = dlerror();
    loaded.why = std::string("no CUDA driver found (") + (error ? error : path) + ")";
    return loaded;
  }
  Driver &d = loaded.driver;
  // The _v2 names are the 64-bit-size entry points every driver since
  // CUDA 4 exports; the plain names are kept for old binaries.
  const char *missing = nullptr;
  auto need = [&](const char *name, auto &function) {
    if (!missing && !resolve(library, name, function))
      missing = name;
  };
  need("cuInit", d.cuInit);
  need("cuDeviceGetCount", d.cuDeviceGetCount);
  need("cuDeviceGet", d.cuDeviceGet);
  need("cuDeviceGetAttribute", d.cuDeviceGetAttribute);
  need("cuDeviceGetName", d.cuDeviceGetName);
  need("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain);
  need("cuCtxSetCurrent", d.cuCtxSetCurrent);
  need("cuMemAlloc_v2", d.cuMemAlloc);
  need("cuMemFree_v2", d.cuMemFree);
  need("cuMemsetD8_v2", d.cuMemsetD8);
  need("cuMemcpyHtoD_v2", d.cuMemcpyHtoD);
  need("cuMemcpyDtoH_v2", d.cuMemcpyDtoH);
  need("cuMemcpyDtoD_v2", d.cuMemcpyDtoD);
  need("cuModuleLoadDataEx", d.cuModuleLoadDataEx);
  need("cuModuleUnload", d.cuModuleUnload);
  need("cuModuleGetFunction", d.cuModuleGetFunction);
  need("cuLaunchKernel", d.cuLaunchKernel);
  need("cuStreamCreate", d.cuStreamCreate);
  need("cuStreamDestroy_v2", d.cuStreamDestroy);
  need("cuStreamSynchronize", d.cuStreamSynchronize);
  need("cuGetErrorName", d.cuGetErrorName);
  need("cuGetErrorString", d.cuGetErrorString);
  if (missing) {
    loaded.why = std::string("the CUDA driver ") + path + " lacks " + missing;
    dlclose(library);
    return loaded;
  }
  // The library stays loaded for the life of the process: the device and
  // the memory it hands out outlive every module.
  loaded.usable = &loaded.driver;
  return loaded;
}

} // namespace

std::string Driver::describe(CUresult error) const {
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(error, &name);
  cuGetErrorString(error, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(error)) + " (" +
         (text ? text : "no description") + ")";
}

const Driver *loadDriver(std::string &why) {
  static LoadedDriver loaded = load();
  why = loaded.why;
  return loaded.usable ? &loaded.driver : nullptr;
}

} // namespace tessel::runtime::cuda
