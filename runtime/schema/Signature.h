//===- Signature.h - Signed artifacts: the block and the keys ---*- C++ -*-===//
//
// What the signer (tessel-compile --sign) and the runtime's signature check
// share. A signed artifact is the artifact's bytes followed by a block:
//
//   public key (32) | Ed25519 signature (64) | artifact size (8, LE) | "TSLSIGN1"
//
// The signature covers exactly the artifact's bytes, so it is checked
// before any of them is parsed, and `openssl pkeyutl -verify -rawin` checks
// it too. The block sits outside the FlatBuffer: signing leaves the
// artifact's checksum and format version alone.
//
// Keys are the PEM files OpenSSL writes for Ed25519:
//   openssl genpkey -algorithm ed25519 -out key.pem     (PKCS#8, secret)
//   openssl pkey -in key.pem -pubout -out key.pub.pem   (SubjectPublicKeyInfo)
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SCHEMA_SIGNATURE_H
#define TESSEL_RUNTIME_SCHEMA_SIGNATURE_H

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessel::schema {

inline constexpr size_t kPublicKeyBytes = 32;
inline constexpr size_t kSignatureBytes = 64;
inline constexpr char kSignatureMagic[8] = {'T', 'S', 'L', 'S', 'I', 'G', 'N', '1'};
inline constexpr size_t kSignatureBlockBytes =
    kPublicKeyBytes + kSignatureBytes + sizeof(uint64_t) + sizeof(kSignatureMagic);

using PublicKey = std::array<uint8_t, kPublicKeyBytes>;

/// The block at the end of a signed artifact, pointing into its bytes.
struct SignatureBlock {
  const uint8_t *publicKey;
  const uint8_t *signature;
  /// The signed artifact: the bytes before the block.
  size_t artifactSize;
};

/// The block `bytes` end with, if they end with one that covers all the
/// bytes before it.
inline std::optional<SignatureBlock> findSignatureBlock(const uint8_t *bytes, size_t size) {
  if (size < kSignatureBlockBytes)
    return std::nullopt;
  const uint8_t *block = bytes + size - kSignatureBlockBytes;
  const uint8_t *sizeField = block + kPublicKeyBytes + kSignatureBytes;
  if (std::memcmp(sizeField + sizeof(uint64_t), kSignatureMagic, sizeof(kSignatureMagic)) != 0)
    return std::nullopt;
  uint64_t artifactSize;
  std::memcpy(&artifactSize, sizeField, sizeof(artifactSize)); // little-endian hosts only
  if (artifactSize != size - kSignatureBlockBytes)
    return std::nullopt;
  return SignatureBlock{block, block + kPublicKeyBytes, static_cast<size_t>(artifactSize)};
}

/// Appends the block that signs all of `artifact` with `signature` by the
/// holder of `publicKey`.
inline void appendSignatureBlock(std::vector<uint8_t> &artifact, const uint8_t *publicKey,
                                 const uint8_t *signature) {
  uint64_t artifactSize = artifact.size();
  artifact.insert(artifact.end(), publicKey, publicKey + kPublicKeyBytes);
  artifact.insert(artifact.end(), signature, signature + kSignatureBytes);
  const auto *sizeBytes = reinterpret_cast<const uint8_t *>(&artifactSize);
  artifact.insert(artifact.end(), sizeBytes, sizeBytes + sizeof(artifactSize));
  artifact.insert(artifact.end(), kSignatureMagic, kSignatureMagic + sizeof(kSignatureMagic));
}

namespace detail {

/// The DER that precedes the 32 key bytes in OpenSSL's Ed25519 PEM files
/// (RFC 8410): a PKCS#8 PrivateKeyInfo holding the seed, and a
/// SubjectPublicKeyInfo holding the public key.
inline constexpr uint8_t kPrivateKeyPrefix[] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
                                                0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};
inline constexpr uint8_t kPublicKeyPrefix[] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                               0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

inline int base64Value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/// The bytes of the one PEM section labelled `label`, or nullopt.
inline std::optional<std::vector<uint8_t>> decodePem(std::string_view text,
                                                     std::string_view label) {
  std::string begin = "-----BEGIN " + std::string(label) + "-----";
  std::string end = "-----END " + std::string(label) + "-----";
  size_t start = text.find(begin);
  if (start == std::string_view::npos)
    return std::nullopt;
  start += begin.size();
  size_t stop = text.find(end, start);
  if (stop == std::string_view::npos)
    return std::nullopt;
  std::vector<uint8_t> bytes;
  uint32_t bits = 0;
  int bitCount = 0;
  bool padding = false;
  for (char c : text.substr(start, stop - start)) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
      continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int value = base64Value(c);
    if (value < 0 || padding)
      return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    bitCount += 6;
    if (bitCount >= 8) {
      bitCount -= 8;
      bytes.push_back(static_cast<uint8_t>(bits >> bitCount));
    }
  }
  return bytes;
}

template <size_t PrefixSize>
std::optional<std::array<uint8_t, 32>>
keyAfterPrefix(const std::optional<std::vector<uint8_t>> &der,
               const uint8_t (&prefix)[PrefixSize]) {
  if (!der || der->size() != PrefixSize + 32 || std::memcmp(der->data(), prefix, PrefixSize) != 0)
    return std::nullopt;
  std::array<uint8_t, 32> key;
  std::memcpy(key.data(), der->data() + PrefixSize, key.size());
  return key;
}

} // namespace detail

/// The 32-byte seed of an Ed25519 private key in PKCS#8 PEM, or nullopt.
inline std::optional<std::array<uint8_t, 32>> ed25519SeedFromPem(std::string_view text) {
  return detail::keyAfterPrefix(detail::decodePem(text, "PRIVATE KEY"), detail::kPrivateKeyPrefix);
}

/// The Ed25519 public key of a SubjectPublicKeyInfo PEM, or nullopt.
inline std::optional<PublicKey> ed25519PublicKeyFromPem(std::string_view text) {
  return detail::keyAfterPrefix(detail::decodePem(text, "PUBLIC KEY"), detail::kPublicKeyPrefix);
}

} // namespace tessel::schema

#endif // TESSEL_RUNTIME_SCHEMA_SIGNATURE_H
