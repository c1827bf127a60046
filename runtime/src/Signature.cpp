//===- Signature.cpp - Refusing artifacts not signed by a trusted key -----===//

#include "Signature.h"

#include "Status.h"

#include "runtime/schema/Signature.h"

#include <cstdio>
#include <optional>
#include <sodium.h>

namespace tessel::runtime {

namespace sc = tessel::schema;

namespace {

/// The first 8 bytes of a key in hex, enough to tell keys apart in a
/// message.
struct KeyPrefix {
  char text[17];
  explicit KeyPrefix(const uint8_t *key) {
    for (int i = 0; i < 8; ++i)
      std::snprintf(text + 2 * i, 3, "%02x", key[i]);
  }
};

bool isTrusted(const uint8_t *key, const tsl_load_options &options) {
  for (size_t i = 0; i < options.trusted_key_count; ++i)
    if (sodium_memcmp(key, options.trusted_keys + i * sc::kPublicKeyBytes, sc::kPublicKeyBytes) ==
        0)
      return true;
  return false;
}

} // namespace

tsl_status checkSignature(const uint8_t *data, size_t size, const tsl_load_options &options,
                          size_t &artifactSize) {
  std::optional<sc::SignatureBlock> block = sc::findSignatureBlock(data, size);
  artifactSize = block ? block->artifactSize : size;
  if (!options.require_signature)
    return nullptr;

  if (options.trusted_key_count == 0 || !options.trusted_keys)
    return makeError(TSL_INVALID_ARGUMENT, "signatures are required but no trusted key was given");
  if (!block)
    return makeError(TSL_INVALID_ARTIFACT,
                     "the artifact is not signed, and this runtime loads only artifacts "
                     "signed by a trusted key");
  if (!isTrusted(block->publicKey, options))
    return makeError(TSL_INVALID_ARTIFACT,
                     "the artifact is signed by key %s..., which is not one of the %zu "
                     "trusted keys",
                     KeyPrefix(block->publicKey).text, options.trusted_key_count);
  // sodium_init is idempotent and thread-safe; it only picks implementations.
  if (sodium_init() < 0)
    return makeError(TSL_INTERNAL, "libsodium could not be initialized");
  if (crypto_sign_verify_detached(block->signature, data, block->artifactSize, block->publicKey) !=
      0)
    return makeError(TSL_INVALID_ARTIFACT,
                     "the artifact's signature by key %s... does not match its contents: "
                     "the artifact was changed after it was signed",
                     KeyPrefix(block->publicKey).text);
  return nullptr;
}

} // namespace tessel::runtime
