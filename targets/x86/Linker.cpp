//===- Linker.cpp - In-process ELF linking with lld -----------------------===//

#include "targets/x86/Linker.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

LLD_HAS_DRIVER(elf)

namespace tessel::x86 {

namespace {
/// Removes a directory and the files in it when leaving scope.
class TemporaryDirectory {
public:
  explicit TemporaryDirectory(llvm::SmallString<128> path)
      : path(std::move(path)) {}
  ~TemporaryDirectory() { llvm::sys::fs::remove_directories(path); }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> result(path);
    llvm::sys::path::append(result, name);
    return std::string(result);
  }

private:
  llvm::SmallString<128> path;
};
} // namespace

llvm::Expected<std::vector<uint8_t>>
linkSharedObject(llvm::ArrayRef<llvm::SmallVector<char>> objects) {
  llvm::SmallString<128> directory;
  if (std::error_code error =
          llvm::sys::fs::createUniqueDirectory("tessel-link", directory))
    return llvm::createStringError(error, "cannot create a directory to link in");
  TemporaryDirectory scratch(directory);
  std::string output = scratch.file("kernels.so");
  std::vector<std::string> inputs;
  for (const llvm::SmallVector<char> &object : objects) {
    inputs.push_back(scratch.file("kernels" + std::to_string(inputs.size()) + ".o"));
    std::error_code error;
    llvm::raw_fd_ostream stream(inputs.back(), error);
    if (error)
      return llvm::createStringError(error, "cannot write %s", inputs.back().c_str());
    stream.write(object.data(), object.size());
  }

  // Undefined symbols (memcpy, memset) resolve against the runtime's libc
  // when the runtime loads the shared object.
  std::vector<const char *> args = {"ld.lld",          "-shared",      "--build-id=none",
                                    "--hash-style=gnu", "-z",           "noexecstack",
                                    "-z",               "relro",        "-O1",
                                    "-o",               output.c_str()};
  for (const std::string &input : inputs)
    args.push_back(input.c_str());
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream(diagnostics);
  lld::Result result;
  {
    // lld keeps global state for the duration of a link.
    static std::mutex linkMutex;
    std::lock_guard<std::mutex> lock(linkMutex);
    result = lld::lldMain(args, diagnosticStream, diagnosticStream,
                          {{lld::Gnu, &lld::elf::link}});
  }
  if (result.retCode != 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "lld failed: %s", diagnostics.c_str());

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> linked =
      llvm::MemoryBuffer::getFile(output);
  if (!linked)
    return llvm::createStringError(linked.getError(), "cannot read %s",
                                   output.c_str());
  llvm::StringRef bytes = (*linked)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

} // namespace tessel::x86
