//===- CppApiTest.cpp - The header-only C++ wrapper -----------------------===//

#include "Fixtures.h"

#include "tessel/runtime.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;

TEST(CppApiTest, LoadsAndRunsAModelFromAFile) {
  TempFile file(buildArtifact(addModel()));
  tsl::Module module = tsl::Module::load(file.path());
  tsl::Session session(module);
  std::vector<float> x(kElements, 2.0f), y(kElements, 0.5f);
  std::vector<tsl::Tensor> outputs =
      session.run({tsl::Tensor::wrap<float>({kElements}, x.data(), x.size()),
                   tsl::Tensor::wrap<float>({kElements}, y.data(), y.size())});
  ASSERT_EQ(outputs.size(), 1u);
  const float *z = outputs[0].data<float>();
  EXPECT_EQ(std::vector<float>(z, z + outputs[0].elementCount()),
            std::vector<float>(kElements, 2.5f));
}

TEST(CppApiTest, RunFillsOnlyTheEmptyOutputs) {
  std::vector<uint8_t> bytes = buildArtifact(pipelineModel());
  tsl::Module module = tsl::Module::fromMemory(bytes.data(), bytes.size());
  tsl::Session session(module, {/*threadCount=*/2, "cpu"});
  tsl::Tensor x = tsl::Tensor::allocate<float>({kElements});
  tsl::Tensor y = tsl::Tensor::allocate<float>({kElements});
  std::vector<tsl::Tensor> outputs = {y, tsl::Tensor()};
  session.run({x}, outputs);

  EXPECT_EQ(outputs[0].get(), y.get());
  ASSERT_TRUE(outputs[1]);
  std::vector<float> weights = pipelineWeights();
  for (int64_t i = 0; i < kElements; ++i) {
    EXPECT_EQ(y.data<float>()[i], 2.0f * weights[i]);
    EXPECT_EQ(outputs[1].data<float>()[i], weights[i]);
  }
}

TEST(CppApiTest, SignatureAccessorsCopyTheInfo) {
  std::vector<uint8_t> bytes = buildArtifact(addModel());
  tsl::Module module = tsl::Module::fromMemory(bytes.data(), bytes.size());
  std::vector<tsl::TensorInfo> inputs = module.inputs();
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].name, "x");
  EXPECT_EQ(inputs[1].name, "y");
  EXPECT_EQ(inputs[1].dtype, TSL_F32);
  EXPECT_EQ(inputs[1].shape, std::vector<int64_t>{kElements});
  EXPECT_EQ(module.output(0).name, "z");
  EXPECT_EQ(module.provenance("model_name"), "add");
}

TEST(CppApiTest, FailedCallThrowsErrorWithTheStatusCode) {
  try {
    tsl::Module::load("/nonexistent/model.tsl");
    FAIL() << "loading a missing file must throw";
  } catch (const tsl::Error &error) {
    EXPECT_EQ(error.code(), TSL_NOT_FOUND);
    EXPECT_THAT(error.what(), HasSubstr("NOT_FOUND: cannot open"));
  }
}

TEST(CppApiTest, WrongInputThrowsInvalidArgument) {
  std::vector<uint8_t> bytes = buildArtifact(addModel());
  tsl::Session session(tsl::Module::fromMemory(bytes.data(), bytes.size()));
  tsl::Tensor x = tsl::Tensor::allocate<float>({kElements});
  try {
    session.run({x});
    FAIL() << "one input for two must throw";
  } catch (const tsl::Error &error) {
    EXPECT_EQ(error.code(), TSL_INVALID_ARGUMENT);
  }
}

TEST(CppApiTest, TypedDataChecksTheDType) {
  tsl::Tensor tensor = tsl::Tensor::allocate<int32_t>({2, 2});
  EXPECT_NE(tensor.data<int32_t>(), nullptr);
  EXPECT_THROW(tensor.data<float>(), tsl::Error);
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(tensor.byteSize(), 16u);
}

TEST(CppApiTest, CopiesShareOneTensorAndMovesEmptyTheSource) {
  tsl::Tensor first = tsl::Tensor::allocate<float>({4});
  tsl::Tensor copy = first;
  EXPECT_EQ(copy.get(), first.get());
  copy.data<float>()[0] = 42.0f;
  EXPECT_EQ(first.data<float>()[0], 42.0f);

  tsl::Tensor moved = std::move(first);
  EXPECT_FALSE(first);
  EXPECT_EQ(moved.get(), copy.get());
}

} // namespace
} // namespace tessel::test
