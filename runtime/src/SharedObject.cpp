//===- SharedObject.cpp - Loading an ELF shared object from memory --------===//

#include "SharedObject.h"

#include "Status.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tessel::runtime {

namespace {

/// Writes all of `bytes`, resuming after short writes and signals.
bool writeAll(int fd, const uint8_t *bytes, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

} // namespace

tsl_status SharedObject::load(const uint8_t *bytes, size_t size,
                              const std::string &what,
                              std::unique_ptr<SharedObject> &loaded) {
  int fd = ::memfd_create("tessel-executable", MFD_CLOEXEC);
  if (fd < 0)
    return makeError(TSL_IO_ERROR, "%s: cannot create an in-memory file: %s",
                     what.c_str(), std::strerror(errno));
  // From here the object owns the fd, whatever fails or throws.
  std::unique_ptr<SharedObject> object(new (std::nothrow) SharedObject(fd));
  if (!object) {
    ::close(fd);
    return outOfMemory();
  }
  if (!writeAll(fd, bytes, size))
    return makeError(TSL_IO_ERROR, "%s: cannot write the shared object: %s",
                     what.c_str(), std::strerror(errno));

  object->path = "/proc/self/fd/" + std::to_string(fd);
  object->handle = ::dlopen(object->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!object->handle) {
    const char *reason = ::dlerror();
    return makeError(TSL_INVALID_ARTIFACT,
                     "%s: the shared object does not load: %s", what.c_str(),
                     reason ? reason : "unknown dlopen error");
  }
  loaded = std::move(object);
  return nullptr;
}

SharedObject::~SharedObject() {
  if (handle) {
    ::dlclose(handle);
    // An object the loader keeps despite dlclose (one with STB_GNU_UNIQUE
    // symbols, say) still answers to its path; keeping the fd open forever
    // keeps that path from naming another object later.
    if (void *kept = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      ::dlclose(kept);
      return;
    }
  }
  ::close(fd);
}

void *SharedObject::lookup(const char *name) const {
  return ::dlsym(handle, name);
}

} // namespace tessel::runtime
