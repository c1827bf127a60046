//===- SignatureTest.cpp - Signed artifacts and the caller's limits -------===//
//
// Signatures are made here with libsodium directly, the way the compiler's
// --sign makes them, and checked by the runtime's load options.
//
//===----------------------------------------------------------------------===//

#include "Fixtures.h"

#include "runtime/schema/Signature.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sodium.h>

#include <array>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;

struct KeyPair {
  std::array<uint8_t, 32> publicKey;
  std::array<uint8_t, 64> secretKey;
};

/// A key pair derived from a fixed seed, so that failures reproduce.
KeyPair keyPair(uint8_t seedByte) {
  EXPECT_GE(sodium_init(), 0);
  std::array<uint8_t, 32> seed;
  seed.fill(seedByte);
  KeyPair keys;
  crypto_sign_seed_keypair(keys.publicKey.data(), keys.secretKey.data(), seed.data());
  return keys;
}

std::vector<uint8_t> signedArtifact(const KeyPair &keys) {
  std::vector<uint8_t> bytes = buildArtifact(addModel());
  std::array<uint8_t, schema::kSignatureBytes> signature;
  crypto_sign_detached(signature.data(), nullptr, bytes.data(), bytes.size(),
                       keys.secretKey.data());
  schema::appendSignatureBlock(bytes, keys.publicKey.data(), signature.data());
  return bytes;
}

tsl_load_options requiring(const std::vector<uint8_t> &trustedKeys) {
  tsl_load_options options;
  tsl_load_options_init(&options);
  options.require_signature = 1;
  options.trusted_keys = trustedKeys.data();
  options.trusted_key_count = trustedKeys.size() / 32;
  return options;
}

StatusResult verify(const std::vector<uint8_t> &bytes, const tsl_load_options &options) {
  return take(tsl_artifact_verify(bytes.data(), bytes.size(), &options));
}

TEST(SignatureTest, SignedArtifactLoadsWithATrustedKeyAndRuns) {
  KeyPair keys = keyPair(1), other = keyPair(2);
  std::vector<uint8_t> trusted(other.publicKey.begin(), other.publicKey.end());
  trusted.insert(trusted.end(), keys.publicKey.begin(), keys.publicKey.end());
  tsl_load_options options = requiring(trusted);
  std::vector<uint8_t> bytes = signedArtifact(keys);
  tsl_module *raw = nullptr;
  StatusResult status =
      take(tsl_module_load_memory_with_options(bytes.data(), bytes.size(), &options, &raw));
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  ModulePtr module(raw);

  SessionPtr session = createSession(module.get());
  TensorPtr x = floatTensor(std::vector<float>(kElements, 1.0f));
  TensorPtr y = floatTensor(std::vector<float>(kElements, 2.0f));
  tsl_tensor *inputs[] = {x.get(), y.get()};
  tsl_tensor *output = nullptr;
  ASSERT_EQ(take(tsl_session_run(session.get(), inputs, 2, &output, 1)).code, TSL_OK);
  TensorPtr z(output);
  EXPECT_EQ(static_cast<const float *>(tsl_tensor_data(z.get()))[0], 3.0f);
}

TEST(SignatureTest, SignedArtifactLoadsWhenSignaturesAreNotRequired) {
  std::vector<uint8_t> bytes = signedArtifact(keyPair(1));
  EXPECT_TRUE(loadModule(bytes));
}

TEST(SignatureTest, UnsignedArtifactIsRefused) {
  KeyPair keys = keyPair(1);
  std::vector<uint8_t> trusted(keys.publicKey.begin(), keys.publicKey.end());
  StatusResult status = verify(buildArtifact(addModel()), requiring(trusted));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("the artifact is not signed"));
}

TEST(SignatureTest, ArtifactSignedByAnUntrustedKeyIsRefused) {
  KeyPair trustedKeys = keyPair(1);
  std::vector<uint8_t> trusted(trustedKeys.publicKey.begin(), trustedKeys.publicKey.end());
  StatusResult status = verify(signedArtifact(keyPair(2)), requiring(trusted));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("which is not one of the 1 trusted keys"));
}

TEST(SignatureTest, RequiringSignaturesWithoutKeysIsAnError) {
  std::vector<uint8_t> none;
  StatusResult status = verify(signedArtifact(keyPair(1)), requiring(none));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("no trusted key was given"));
}

// Whatever byte changes (the artifact, the key, the signature, the size or
// the magic of the block), the artifact is refused.
TEST(SignatureTest, EveryChangedByteIsRefused) {
  KeyPair keys = keyPair(1);
  std::vector<uint8_t> trusted(keys.publicKey.begin(), keys.publicKey.end());
  tsl_load_options options = requiring(trusted);
  std::vector<uint8_t> bytes = signedArtifact(keys);
  ASSERT_EQ(verify(bytes, options).code, TSL_OK);
  size_t accepted = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> changed = bytes;
    changed[i] ^= 0xA5;
    StatusResult status = verify(changed, options);
    if (status.code == TSL_OK) {
      ++accepted;
      ADD_FAILURE() << "byte " << i << " of " << bytes.size() << " changed and accepted";
    } else {
      EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT) << status.message;
    }
  }
  EXPECT_EQ(accepted, 0u);
}

TEST(SignatureTest, TruncatedOrExtendedSignedArtifactIsRefused) {
  KeyPair keys = keyPair(1);
  std::vector<uint8_t> trusted(keys.publicKey.begin(), keys.publicKey.end());
  std::vector<uint8_t> bytes = signedArtifact(keys);
  std::vector<uint8_t> shorter(bytes.begin(), bytes.end() - 1);
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(verify(shorter, requiring(trusted)).code, TSL_INVALID_ARTIFACT);
  EXPECT_EQ(verify(longer, requiring(trusted)).code, TSL_INVALID_ARTIFACT);
}

TEST(SignatureTest, PublicKeyIsReadFromPem) {
  KeyPair keys = keyPair(3);
  // SubjectPublicKeyInfo of RFC 8410, as `openssl pkey -pubout` writes it.
  std::vector<uint8_t> der = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                              0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
  der.insert(der.end(), keys.publicKey.begin(), keys.publicKey.end());
  char base64[128];
  sodium_bin2base64(base64, sizeof(base64), der.data(), der.size(), sodium_base64_VARIANT_ORIGINAL);
  std::string pem =
      std::string("-----BEGIN PUBLIC KEY-----\n") + base64 + "\n-----END PUBLIC KEY-----\n";
  TempFile file(std::vector<uint8_t>(pem.begin(), pem.end()));
  std::array<uint8_t, 32> key{};
  StatusResult status = take(tsl_public_key_read_file(file.path().c_str(), key.data()));
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  EXPECT_EQ(key, keys.publicKey);

  std::string privatePem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  TempFile wrong(std::vector<uint8_t>(privatePem.begin(), privatePem.end()));
  status = take(tsl_public_key_read_file(wrong.path().c_str(), key.data()));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("is not an Ed25519 public key in PEM form"));
}

TEST(SignatureTest, ArenaLargerThanTheCallersLimitIsRefused) {
  std::vector<uint8_t> bytes = buildArtifact(pipelineModel());
  tsl_load_options options;
  tsl_load_options_init(&options);
  options.max_arena_bytes = 16;
  StatusResult status = verify(bytes, options);
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("exceeds the limit of 16 bytes the caller set"));
  options.max_arena_bytes = 0;
  EXPECT_EQ(verify(bytes, options).code, TSL_OK);
}

} // namespace
} // namespace tessel::test
