//===- Signing.cpp - Signing artifacts with an Ed25519 key ----------------===//

#include "compiler/artifact/Signing.h"

#include "runtime/schema/Signature.h"

#include "llvm/Support/MemoryBuffer.h"

#include <sodium.h>

namespace tessel {

namespace sc = tessel::schema;

llvm::Expected<SigningKey> SigningKey::readPem(llvm::StringRef path) {
  auto error = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "signing key '" + path + "': " + what);
  };
  // A PEM private key is about 120 bytes; a large file is not one.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    return error(file.getError().message());
  if ((*file)->getBufferSize() > 4096)
    return error("larger than any PEM private key");
  std::optional<std::array<uint8_t, 32>> seed = sc::ed25519SeedFromPem((*file)->getBuffer());
  if (!seed)
    return error("not an Ed25519 private key in PKCS#8 PEM form (as `openssl genpkey "
                 "-algorithm ed25519` writes it)");
  if (sodium_init() < 0)
    return error("libsodium could not be initialized");
  SigningKey key;
  key.secretKey = std::make_unique<std::array<uint8_t, 64>>();
  sc::PublicKey publicKey;
  crypto_sign_seed_keypair(publicKey.data(), key.secretKey->data(), seed->data());
  sodium_memzero(seed->data(), seed->size());
  return key;
}

SigningKey::~SigningKey() {
  if (secretKey)
    sodium_memzero(secretKey->data(), secretKey->size());
}

void SigningKey::sign(std::vector<uint8_t> &artifact) const {
  std::array<uint8_t, sc::kSignatureBytes> signature;
  crypto_sign_detached(signature.data(), nullptr, artifact.data(), artifact.size(),
                       secretKey->data());
  // libsodium keeps the public key in the secret key's second half.
  sc::appendSignatureBlock(artifact, secretKey->data() + 32, signature.data());
}

} // namespace tessel
