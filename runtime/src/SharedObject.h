//===- SharedObject.h - Loading a shared object from memory -----*- C++ -*-===//
//
// A CPU executable is a shared object embedded in the artifact. It is loaded
// through an anonymous in-memory file (memfd), so loading needs neither a
// writable directory nor leaves anything behind on disk.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_SHAREDOBJECT_H
#define TESSEL_RUNTIME_SRC_SHAREDOBJECT_H

#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tessel::runtime {

class SharedObject {
public:
  /// Loads the `size` bytes of an ELF shared object with RTLD_NOW |
  /// RTLD_LOCAL; `what` names it in messages ("executable 2").
  static tsl_status load(const uint8_t *bytes, size_t size,
                         const std::string &what,
                         std::unique_ptr<SharedObject> &loaded);

  SharedObject(const SharedObject &) = delete;
  SharedObject &operator=(const SharedObject &) = delete;
  /// Unloads the object (dlclose).
  ~SharedObject();

  /// The address of `name`, or null when the object does not define it.
  void *lookup(const char *name) const;

private:
  explicit SharedObject(int fd) : fd(fd) {}

  void *handle = nullptr;
  /// The memfd stays open while the object is loaded: the loader identifies
  /// objects by path, and closing the fd would let a later load reuse the
  /// same "/proc/self/fd/N" and be handed this object instead of its own.
  int fd;
  std::string path;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_SHAREDOBJECT_H
