//===- FuzzInput.h - Handing fuzz inputs to readers that take paths -*- C++ -*-===//
//
// Tessel's readers take file paths (external data resolves against the
// model's folder), so each fuzz input is written to a file of its own in a
// private temporary folder first.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_FUZZ_FUZZINPUT_H
#define TESSEL_TEST_FUZZ_FUZZINPUT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::fuzz {

/// Writes `size` bytes to `fileName` in this process's temporary folder and
/// returns its path; aborts when the file cannot be written, which is a
/// problem of the machine, not a finding.
inline std::string writeInputFile(const uint8_t *data, size_t size, const char *fileName) {
  static const std::string folder = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string path =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/tessel-fuzz-" + std::to_string(::getpid());
    ::mkdir(path.c_str(), 0700);
    return path;
  }();
  std::string path = folder + "/" + fileName;
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

} // namespace tessel::fuzz

#endif // TESSEL_TEST_FUZZ_FUZZINPUT_H
