//===- Signing.h - Signing artifacts with an Ed25519 key --------*- C++ -*-===//
//
// `tessel-compile --sign KEY` appends a signature block to the artifact
// (runtime/schema/Signature.h); runtimes told to require signatures load
// only artifacts signed by a key they trust (docs/security.md).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ARTIFACT_SIGNING_H
#define TESSEL_COMPILER_ARTIFACT_SIGNING_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace tessel {

/// An Ed25519 key pair, its secret half wiped from memory when it goes.
class SigningKey {
public:
  /// Reads the PKCS#8 PEM file `openssl genpkey -algorithm ed25519` writes.
  static llvm::Expected<SigningKey> readPem(llvm::StringRef path);

  SigningKey(SigningKey &&) = default;
  SigningKey &operator=(SigningKey &&) = default;
  ~SigningKey();

  /// Appends the block that signs all of `artifact`.
  void sign(std::vector<uint8_t> &artifact) const;

private:
  SigningKey() = default;

  /// libsodium's secret key: the seed, then the public key.
  std::unique_ptr<std::array<uint8_t, 64>> secretKey;
};

} // namespace tessel

#endif // TESSEL_COMPILER_ARTIFACT_SIGNING_H
