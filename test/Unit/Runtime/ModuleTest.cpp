//===- ModuleTest.cpp - Loading artifacts and reading their signature -----===//

#include "Fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;

TEST(ModuleTest, LoadsFromFile) {
  TempFile file(buildArtifact(addModel()));
  tsl_module *raw = nullptr;
  StatusResult status = take(tsl_module_load_file(file.path().c_str(), &raw));
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  ModulePtr module(raw);
  EXPECT_EQ(tsl_module_input_count(raw), 2u);
  EXPECT_EQ(tsl_module_output_count(raw), 1u);
}

TEST(ModuleTest, LoadFromMemoryCopiesTheBytes) {
  std::vector<uint8_t> bytes = buildArtifact(addModel());
  ModulePtr module = loadModule(bytes);
  ASSERT_TRUE(module);
  std::fill(bytes.begin(), bytes.end(), 0);
  bytes.clear();
  bytes.shrink_to_fit();

  SessionPtr session = createSession(module.get());
  TensorPtr x = floatTensor(std::vector<float>(kElements, 1.0f));
  TensorPtr y = floatTensor(std::vector<float>(kElements, 2.0f));
  tsl_tensor *inputs[] = {x.get(), y.get()};
  tsl_tensor *output = nullptr;
  ASSERT_EQ(take(tsl_session_run(session.get(), inputs, 2, &output, 1)).code,
            TSL_OK);
  TensorPtr z(output);
  EXPECT_EQ(floats(output), std::vector<float>(kElements, 3.0f));
}

TEST(ModuleTest, ReportsTheSignature) {
  ModulePtr module = loadModule(buildArtifact(addModel()));
  tsl_tensor_info info;
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 1, &info)).code, TSL_OK);
  EXPECT_STREQ(info.name, "y");
  EXPECT_EQ(info.dtype, TSL_F32);
  ASSERT_EQ(info.rank, 1u);
  EXPECT_EQ(info.shape[0], kElements);
  ASSERT_EQ(take(tsl_module_output_info(module.get(), 0, &info)).code, TSL_OK);
  EXPECT_STREQ(info.name, "z");
}

TEST(ModuleTest, ReportsHowQuantizedTensorsAreRead) {
  // x as 4 * kElements bytes quantized per tensor, z per index of axis 0.
  ArtifactSpec spec = addModel();
  spec.inputs[0] = {"x", schema::DType_u8, {4 * kElements}, QuantizationSpec{{0.5}, {128}, -1}};
  spec.outputs[0] = {"z", schema::DType_i32, {kElements},
                     QuantizationSpec{std::vector<double>(kElements, 0.25),
                                      std::vector<int64_t>(kElements, 0), 0}};
  ModulePtr module = loadModule(buildArtifact(spec));
  tsl_tensor_info info;
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 0, &info)).code, TSL_OK);
  ASSERT_EQ(info.quant_count, 1u);
  EXPECT_EQ(info.quant_axis, -1);
  EXPECT_EQ(info.quant_scales[0], 0.5);
  EXPECT_EQ(info.quant_zero_points[0], 128);
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 1, &info)).code, TSL_OK);
  EXPECT_EQ(info.quant_count, 0u);
  ASSERT_EQ(take(tsl_module_output_info(module.get(), 0, &info)).code, TSL_OK);
  ASSERT_EQ(info.quant_count, static_cast<size_t>(kElements));
  EXPECT_EQ(info.quant_axis, 0);
  EXPECT_EQ(info.quant_scales[kElements - 1], 0.25);
}

TEST(ModuleTest, SignatureIndexOutOfRangeIsRefused) {
  ModulePtr module = loadModule(buildArtifact(addModel()));
  tsl_tensor_info info;
  StatusResult status = take(tsl_module_output_info(module.get(), 1, &info));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("output index 1 is out of range"));
}

TEST(ModuleTest, ReportsTheProvenance) {
  ModulePtr module = loadModule(buildArtifact(addModel()));
  EXPECT_STREQ(tsl_module_provenance(module.get(), "compiler_version"),
               "tessel-test 0.1");
  EXPECT_STREQ(tsl_module_provenance(module.get(), "model_hash"),
               "0123456789abcdef");
  EXPECT_STREQ(tsl_module_provenance(module.get(), "options"), "--target=x86");
  EXPECT_STREQ(tsl_module_provenance(module.get(), "model_name"), "add");
  EXPECT_STREQ(tsl_module_provenance(module.get(), "colour"), "");
}

TEST(ModuleTest, ReportsTheMemoryItNeeds) {
  // The pipeline model: a two-tensor arena, two tensors of weights and the
  // scale2 kernel's four floats of scratch.
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  ASSERT_TRUE(module);
  const uint64_t tensorBytes = kElements * sizeof(float);
  tsl_memory_info info;
  ASSERT_EQ(take(tsl_module_memory_info(module.get(), &info)).code, TSL_OK);
  EXPECT_EQ(info.arena_bytes, 2 * tensorBytes);
  EXPECT_EQ(info.weight_bytes, 2 * tensorBytes);
  EXPECT_EQ(info.scratch_bytes_per_thread, 4 * sizeof(float));
  EXPECT_EQ(take(tsl_module_memory_info(nullptr, &info)).code, TSL_INVALID_ARGUMENT);
}

TEST(ModuleTest, MissingFileIsNotFound) {
  tsl_module *raw = nullptr;
  StatusResult status =
      take(tsl_module_load_file("/nonexistent/model.tsl", &raw));
  EXPECT_EQ(status.code, TSL_NOT_FOUND);
  EXPECT_THAT(status.message, HasSubstr("/nonexistent/model.tsl"));
  EXPECT_EQ(raw, nullptr);
}

TEST(ModuleTest, DirectoryIsAnIoError) {
  tsl_module *raw = nullptr;
  StatusResult status = take(tsl_module_load_file("/", &raw));
  EXPECT_EQ(status.code, TSL_IO_ERROR);
  EXPECT_THAT(status.message, HasSubstr("not a regular file"));
}

TEST(ModuleTest, EmptyFileIsRefused) {
  TempFile file({});
  tsl_module *raw = nullptr;
  StatusResult status = take(tsl_module_load_file(file.path().c_str(), &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("is empty"));
}

TEST(ModuleTest, EmptyMemoryIsRefused) {
  tsl_module *raw = nullptr;
  StatusResult status = take(tsl_module_load_memory(nullptr, 0, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("is empty"));
}

TEST(ModuleTest, InputShorterThanAHeaderIsRefused) {
  StatusResult status = loadStatus({'T', 'S', 'L', '1', 0});
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("5 bytes, too small"));
}

TEST(ModuleTest, NullArgumentsAreRefused) {
  tsl_module *raw = nullptr;
  EXPECT_EQ(take(tsl_module_load_file(nullptr, &raw)).code,
            TSL_INVALID_ARGUMENT);
  EXPECT_EQ(take(tsl_module_load_memory(nullptr, 64, &raw)).code,
            TSL_INVALID_ARGUMENT);
  std::vector<uint8_t> bytes = buildArtifact(addModel());
  EXPECT_EQ(
      take(tsl_module_load_memory(bytes.data(), bytes.size(), nullptr)).code,
      TSL_INVALID_ARGUMENT);
}

TEST(ModuleTest, SessionKeepsItsModuleAlive) {
  ModulePtr module = loadModule(buildArtifact(addModel()));
  SessionPtr session = createSession(module.get());
  module.reset();

  TensorPtr x = floatTensor(std::vector<float>(kElements, 4.0f));
  TensorPtr y = floatTensor(std::vector<float>(kElements, -1.0f));
  tsl_tensor *inputs[] = {x.get(), y.get()};
  tsl_tensor *output = nullptr;
  ASSERT_EQ(take(tsl_session_run(session.get(), inputs, 2, &output, 1)).code,
            TSL_OK);
  TensorPtr z(output);
  EXPECT_EQ(floats(output), std::vector<float>(kElements, 3.0f));
}

} // namespace
} // namespace tessel::test
