//===- ReplayMain.cpp - Running a fuzz target over files, without libFuzzer -===//
//
// Outside fuzzing builds, each fuzz target links this main instead of
// libFuzzer's, so that every build (and `make test`) replays the checked-in
// corpora and the regression inputs of past findings.
//
//   tessel-fuzz-X FILE_OR_FOLDER...   runs the target once per file
//
// Arguments starting with '-' are libFuzzer's options and are ignored, so
// that one command line (`-runs=0 FOLDER...`: run each input once) serves
// both kinds of build.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-')
      continue;
    fs::path path = argv[i];
    if (fs::is_directory(path)) {
      for (const fs::directory_entry &entry : fs::directory_iterator(path))
        if (entry.is_regular_file())
          files.push_back(entry.path());
    } else {
      files.push_back(path);
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path &file : files) {
    std::ifstream stream(file, std::ios::binary);
    if (!stream) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 2;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(stream)),
                               std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
