//===- ArtifactWriterTest.cpp - The writer refuses what no runtime loads --===//
//
// The runtime's verifier refuses kernels that need more than 1 GiB of
// scratch and files past FlatBuffers' 2 GiB; the writer must refuse to
// write such artifacts in the first place, saying why.
//
//===----------------------------------------------------------------------===//

#include "compiler/artifact/ArtifactWriter.h"

#include "runtime/schema/Artifact.h"
#include "tessel/runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessel {
namespace {

using ::testing::HasSubstr;

/// One kernel of `scratchBytes`, dispatched once on a 64-byte input and
/// output, beside `weightBytes` of weights.
struct SmallModel {
  explicit SmallModel(uint64_t weightBytes, int64_t scratchBytes) {
    plan.buffers = {{BufferKind::Input, 0, 0, 64}, {BufferKind::Output, 0, 0, 64}};
    plan.steps = {DispatchPlan{"k0", {0, 1}}};
    plan.weights.resize(weightBytes);
    Executable executable;
    KernelEntry entry;
    entry.kernel = "k0";
    entry.symbol = "k0_entry";
    entry.scratchBytes = scratchBytes;
    entry.bindingBytes = {64, 64};
    executable.entries = {entry};
    contents.inputs = {{"x", schema::DType_f32, {16}, std::nullopt}};
    contents.outputs = {{"y", schema::DType_f32, {16}, std::nullopt}};
    contents.plan = &plan;
    contents.executables.push_back(std::move(executable));
  }

  /// The writer's error message, or "" when it wrote the artifact.
  std::string error() const {
    llvm::Expected<std::vector<uint8_t>> bytes = serializeArtifact(contents);
    if (bytes)
      return "";
    return llvm::toString(bytes.takeError());
  }

  HostPlan plan;
  ArtifactContents contents;
};

TEST(ArtifactWriterTest, ScratchWithinTheRuntimeLimitIsWritten) {
  EXPECT_EQ(SmallModel(0, int64_t(1) << 30).error(), "");
}

TEST(ArtifactWriterTest, ScratchAboveTheRuntimeLimitIsRefused) {
  EXPECT_EQ(SmallModel(0, (int64_t(1) << 30) + 1).error(),
            "kernel k0 needs 1073741825 bytes of scratch per thread; the runtime loads kernels "
            "that need at most 1 GiB");
}

TEST(ArtifactWriterTest, WeightsBeyondWhatAFlatBufferHoldsAreRefused) {
  uint64_t weights = schema::kMaxArtifactBytes;
  EXPECT_THAT(SmallModel(weights, 0).error(),
              HasSubstr("the model's weights and code take " + std::to_string(weights) +
                        " bytes; an artifact (a FlatBuffer) holds at most 2 GiB"));
}

} // namespace
} // namespace tessel
