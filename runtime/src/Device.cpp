//===- Device.cpp - Finding the devices of this process -------------------===//

#include "Device.h"

#include <cstring>

namespace tessel::runtime {

Executable::~Executable() = default;
Stream::~Stream() = default;
Device::~Device() = default;

Device *findDevice(schema::DeviceKind kind) {
  // The CUDA device comes later; until then a file that needs it is still
  // verified and loaded, and only running it is refused.
  switch (kind) {
  case schema::DeviceKind_cpu:
    return &getCpuDevice();
  case schema::DeviceKind_npu:
    return &getNpuDevice();
  default:
    return nullptr;
  }
}

tsl_status getDevice(schema::DeviceKind kind, Device *&device) {
  device = findDevice(kind);
  if (!device)
    return makeError(TSL_UNAVAILABLE, "this runtime has no %s device yet",
                     schema::EnumNameDeviceKind(kind));
  return nullptr;
}

tsl_status getDevice(const char *name, Device *&device) {
  if (!name)
    return makeError(TSL_INVALID_ARGUMENT, "the device name is NULL");
  for (schema::DeviceKind kind : schema::EnumValuesDeviceKind())
    if (std::strcmp(name, schema::EnumNameDeviceKind(kind)) == 0)
      return getDevice(kind, device);
  return makeError(TSL_NOT_FOUND,
                   "unknown device '%s' (expected cpu, cuda or npu)", name);
}

} // namespace tessel::runtime

extern "C" tsl_status tsl_device_check(const char *device) {
  using namespace tessel::runtime;
  return guard([&] {
    Device *found;
    return getDevice(device, found);
  });
}
