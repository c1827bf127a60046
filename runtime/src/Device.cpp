//===- Device.cpp - Finding the devices of this process -------------------===//

#include "Device.h"

#include <cstring>
#include <string>

namespace tessel::runtime {

Executable::~Executable() = default;
Stream::~Stream() = default;
Device::~Device() = default;

int cudaArchitecture(const schema::Executable &executable) {
  if (!executable.architecture())
    return -1;
  const char *text = executable.architecture()->c_str();
  if (std::strncmp(text, "sm_", 3) != 0 || !text[3])
    return -1;
  int value = 0;
  for (const char *c = text + 3; *c; ++c) {
    if (*c < '0' || *c > '9' || value > 10000)
      return -1;
    value = value * 10 + (*c - '0');
  }
  return value;
}

bool cudaRuns(const schema::Executable &executable, int device) {
  int architecture = cudaArchitecture(executable);
  if (architecture < 0 || architecture > device)
    return false;
  return executable.format() != schema::ExecutableFormat_cuda_cubin ||
         architecture / 10 == device / 10;
}

Device *findDevice(schema::DeviceKind kind, std::string &why) {
  switch (kind) {
  case schema::DeviceKind_cpu:
    return &getCpuDevice();
  case schema::DeviceKind_npu:
    return &getNpuDevice();
  case schema::DeviceKind_cuda:
    return findCudaDevice(why);
  default:
    why = "this runtime has none";
    return nullptr;
  }
}

Device *findDevice(schema::DeviceKind kind) {
  std::string why;
  return findDevice(kind, why);
}

tsl_status getDevice(schema::DeviceKind kind, Device *&device) {
  std::string why;
  device = findDevice(kind, why);
  if (device)
    return nullptr;
  return makeError(TSL_UNAVAILABLE, "the %s device is not available: %s",
                   schema::EnumNameDeviceKind(kind), why.c_str());
}

tsl_status deviceKindNamed(const char *name, schema::DeviceKind &kind) {
  if (!name)
    return makeError(TSL_INVALID_ARGUMENT, "the device name is NULL");
  for (schema::DeviceKind candidate : schema::EnumValuesDeviceKind())
    if (std::strcmp(name, schema::EnumNameDeviceKind(candidate)) == 0) {
      kind = candidate;
      return nullptr;
    }
  return makeError(TSL_NOT_FOUND, "unknown device '%s' (expected cpu, cuda or npu)", name);
}

tsl_status getDevice(const char *name, Device *&device) {
  schema::DeviceKind kind;
  TSL_RETURN_IF_ERROR(deviceKindNamed(name, kind));
  return getDevice(kind, device);
}

} // namespace tessel::runtime

extern "C" const char *tsl_device_description(const char *device) {
  using namespace tessel::runtime;
  if (!device)
    return "";
  // Computed once: the devices of a process do not change.
  static const std::string cuda = describeCudaDevice();
  if (std::strcmp(device, "cuda") == 0)
    return cuda.c_str();
  if (std::strcmp(device, "cpu") == 0)
    return "the host CPU";
  if (std::strcmp(device, "npu") == 0)
    return "the NPU simulator";
  return "";
}

extern "C" tsl_status tsl_device_check(const char *device) {
  using namespace tessel::runtime;
  return guard([&] {
    Device *found;
    return getDevice(device, found);
  });
}
