//===- CacheGeometry.cpp - This machine's L1 data cache -------------------===//

#include "targets/x86/CacheGeometry.h"

#include "llvm/Support/MathExtras.h"

#include <fstream>
#include <optional>
#include <string>

namespace tessel::x86 {
namespace {

constexpr const char *kCacheDirectory = "/sys/devices/system/cpu/cpu0/cache";

std::optional<std::string> readWord(const std::string &path) {
  std::ifstream file(path);
  std::string word;
  if (!(file >> word))
    return std::nullopt;
  return word;
}

std::optional<int64_t> readNumber(const std::string &path) {
  std::optional<std::string> word = readWord(path);
  if (!word)
    return std::nullopt;
  try {
    size_t used = 0;
    int64_t value = std::stoll(*word, &used);
    if (used != word->size() || value <= 0)
      return std::nullopt;
    return value;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

} // namespace

bool CacheGeometry::isValid() const {
  return llvm::isPowerOf2_64(lineBytes) && llvm::isPowerOf2_64(l1Sets) && l1Ways >= 1;
}

CacheGeometry hostCacheGeometry() {
  CacheGeometry fallback;
  // index0, index1, ...: find the level-1 data cache among them.
  for (int index = 0; index < 8; ++index) {
    std::string directory = std::string(kCacheDirectory) + "/index" + std::to_string(index);
    std::optional<int64_t> level = readNumber(directory + "/level");
    std::optional<std::string> type = readWord(directory + "/type");
    if (!level || !type)
      break;
    if (*level != 1 || *type != "Data")
      continue;
    std::optional<int64_t> line = readNumber(directory + "/coherency_line_size");
    std::optional<int64_t> sets = readNumber(directory + "/number_of_sets");
    std::optional<int64_t> ways = readNumber(directory + "/ways_of_associativity");
    if (!line || !sets || !ways)
      return fallback;
    CacheGeometry found{*line, *sets, *ways};
    // More ways than any CPU has is a misreport (a hypervisor's), not a cache.
    return found.isValid() && found.l1Ways <= 64 ? found : fallback;
  }
  return fallback;
}

} // namespace tessel::x86
