//===- CorruptArtifactTest.cpp - Damaged files are refused, never run -----===//
//
// Every damaged variant of a valid artifact must come back as an error
// status: no crash, no hang and no module.
//
//===----------------------------------------------------------------------===//

#include "Fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;

class CorruptArtifactTest : public ::testing::Test {
protected:
  void SetUp() override {
    valid = buildArtifact(pipelineModel());
    ASSERT_EQ(loadStatus(valid).code, TSL_OK) << "the baseline must load";
  }

  /// Loads `valid` with bit `bit` of byte `byte` flipped.
  StatusResult loadFlipped(size_t byte, int bit) const {
    std::vector<uint8_t> bytes = valid;
    bytes[byte] ^= static_cast<uint8_t>(1u << bit);
    return loadStatus(bytes);
  }

  std::vector<uint8_t> valid;
};

TEST_F(CorruptArtifactTest, EveryTruncationIsRefused) {
  for (size_t length = 0; length < valid.size(); ++length) {
    std::vector<uint8_t> truncated(valid.begin(), valid.begin() + length);
    StatusResult status = loadStatus(truncated);
    ASSERT_NE(status.code, TSL_OK) << "truncated to " << length << " bytes";
    EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT) << status.message;
  }
}

TEST_F(CorruptArtifactTest, TruncatedFileOnDiskIsRefused) {
  TempFile file(
      std::vector<uint8_t>(valid.begin(), valid.begin() + valid.size() / 2));
  tsl_module *module = nullptr;
  StatusResult status =
      take(tsl_module_load_file(file.path().c_str(), &module));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_EQ(module, nullptr);
}

TEST_F(CorruptArtifactTest, EveryBitFlipInTheHeaderIsRefused) {
  // The root offset, the identifier, the root table and its vtable.
  size_t header = std::min<size_t>(256, valid.size());
  for (size_t byte = 0; byte < header; ++byte)
    for (int bit = 0; bit < 8; ++bit)
      ASSERT_NE(loadFlipped(byte, bit).code, TSL_OK)
          << "bit " << bit << " of byte " << byte;
}

TEST_F(CorruptArtifactTest, BitFlipsThroughoutTheFileAreRefused) {
  // A prime stride visits the weights, the embedded shared object and every
  // table at varied positions within their words.
  for (size_t byte = 0; byte < valid.size(); byte += 37)
    for (int bit = 0; bit < 8; ++bit)
      ASSERT_NE(loadFlipped(byte, bit).code, TSL_OK)
          << "bit " << bit << " of byte " << byte;
}

TEST_F(CorruptArtifactTest, FlippedWeightBitFailsTheChecksum) {
  std::vector<float> weights = pipelineWeights();
  auto position =
      std::search(valid.begin(), valid.end(),
                  reinterpret_cast<const uint8_t *>(weights.data()),
                  reinterpret_cast<const uint8_t *>(weights.data() + 1));
  ASSERT_NE(position, valid.end());
  StatusResult status = loadFlipped(position - valid.begin(), 3);
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("checksum"));
}

TEST_F(CorruptArtifactTest, WrongIdentifierIsRefused) {
  std::vector<uint8_t> bytes = valid;
  std::memcpy(bytes.data() + 4, "ONNX", 4);
  StatusResult status = loadStatus(bytes);
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("file identifier"));
}

TEST_F(CorruptArtifactTest, MissingChecksumIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.withIntegrity = false;
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("integrity checksum is missing"));
}

TEST_F(CorruptArtifactTest, NewerFormatVersionIsUnsupported) {
  ArtifactSpec spec = pipelineModel();
  spec.formatVersion = schema::kFormatVersion + 1;
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_UNSUPPORTED);
  EXPECT_THAT(status.message, HasSubstr("format_version 4 is not supported (this runtime reads "
                                        "versions 2 to 3)"));
}

TEST_F(CorruptArtifactTest, OldestFormatVersionStillLoads) {
  ArtifactSpec spec = pipelineModel();
  spec.formatVersion = schema::kOldestFormatVersion;
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_OK) << status.message;
}

TEST_F(CorruptArtifactTest, FormatVersionBeforeTheOldestIsUnsupported) {
  ArtifactSpec spec = pipelineModel();
  spec.formatVersion = schema::kOldestFormatVersion - 1;
  EXPECT_EQ(loadStatus(buildArtifact(spec)).code, TSL_UNSUPPORTED);
}

TEST_F(CorruptArtifactTest, FormatVersionZeroIsUnsupported) {
  ArtifactSpec spec = pipelineModel();
  spec.formatVersion = 0;
  EXPECT_EQ(loadStatus(buildArtifact(spec)).code, TSL_UNSUPPORTED);
}

TEST_F(CorruptArtifactTest, RandomBytesAreRefused) {
  std::vector<uint8_t> noise(valid.size());
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  for (uint8_t &byte : noise) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    byte = static_cast<uint8_t>(state >> 56);
  }
  std::memcpy(noise.data() + 4, "TSL1", 4);
  EXPECT_EQ(loadStatus(noise).code, TSL_INVALID_ARTIFACT);
}

} // namespace
} // namespace tessel::test
