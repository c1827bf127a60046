//===- Checksum.h - The artifact's integrity checksum -----------*- C++ -*-===//
//
// A fast 64-bit non-cryptographic checksum, shared by the artifact writer
// and the runtime's verifier. It detects corruption (a flipped bit in the
// weights keeps the FlatBuffer valid but changes this value); it does not
// authenticate. Four independent multiply-rotate lanes over 8-byte words
// keep it at several GB/s, so verifying a 100 MB model costs milliseconds.
//
// The function is part of the file format: changing it changes
// Artifact.format_version.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SCHEMA_CHECKSUM_H
#define TESSEL_RUNTIME_SCHEMA_CHECKSUM_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tessel::schema {

namespace detail {
constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;

inline uint64_t rotateLeft(uint64_t value, int bits) {
  return (value << bits) | (value >> (64 - bits));
}

inline uint64_t mixWord(uint64_t lane, uint64_t word) {
  return rotateLeft(lane + word * kPrime2, 31) * kPrime1;
}

inline uint64_t loadWord(const unsigned char *bytes) {
  uint64_t word;
  std::memcpy(&word, bytes, sizeof(word));
  return word; // little-endian hosts only, like the rest of the format
}
} // namespace detail

/// Checksum of `size` bytes; bytes [skipOffset, skipOffset + skipSize) are
/// read as zero (the checksum field itself).
inline uint64_t checksum64(const void *data, size_t size, size_t skipOffset = 0,
                           size_t skipSize = 0) {
  using namespace detail;
  const auto *bytes = static_cast<const unsigned char *>(data);
  auto byteAt = [&](size_t i) -> unsigned char {
    return i >= skipOffset && i - skipOffset < skipSize ? 0 : bytes[i];
  };
  auto wordAt = [&](size_t i) -> uint64_t {
    if (skipSize == 0 || i + 8 <= skipOffset || i >= skipOffset + skipSize)
      return loadWord(bytes + i);
    uint64_t word = 0;
    for (size_t k = 0; k < 8; ++k)
      word |= static_cast<uint64_t>(byteAt(i + k)) << (8 * k);
    return word;
  };

  uint64_t lanes[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  size_t i = 0;
  for (; i + 32 <= size; i += 32)
    for (int lane = 0; lane < 4; ++lane)
      lanes[lane] = mixWord(lanes[lane], wordAt(i + 8 * lane));
  uint64_t hash = rotateLeft(lanes[0], 1) + rotateLeft(lanes[1], 7) +
                  rotateLeft(lanes[2], 12) + rotateLeft(lanes[3], 18);
  hash += static_cast<uint64_t>(size);
  for (; i + 8 <= size; i += 8)
    hash = rotateLeft(hash ^ mixWord(0, wordAt(i)), 27) * kPrime1 + kPrime3;
  for (; i < size; ++i)
    hash = rotateLeft(hash ^ (byteAt(i) * kPrime3), 11) * kPrime1;
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

} // namespace tessel::schema

#endif // TESSEL_RUNTIME_SCHEMA_CHECKSUM_H
