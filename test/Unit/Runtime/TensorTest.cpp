//===- TensorTest.cpp - Allocating and wrapping tensors -------------------===//

#include "Fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;

TEST(TensorTest, AllocateGivesZeroedAlignedMemory) {
  int64_t shape[] = {3, 5, 7};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_I16, shape, 3, &raw)).code, TSL_OK);
  TensorPtr tensor(raw);
  EXPECT_EQ(tsl_tensor_dtype(raw), TSL_I16);
  ASSERT_EQ(tsl_tensor_rank(raw), 3u);
  EXPECT_EQ(tsl_tensor_shape(raw)[2], 7);
  ASSERT_EQ(tsl_tensor_byte_size(raw), 3u * 5 * 7 * 2);
  auto *bytes = static_cast<const uint8_t *>(tsl_tensor_data(raw));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes) % 64, 0u);
  for (size_t i = 0; i < tsl_tensor_byte_size(raw); ++i)
    ASSERT_EQ(bytes[i], 0) << "byte " << i;
}

TEST(TensorTest, ScalarHasRankZeroAndOneElement) {
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_F64, nullptr, 0, &raw)).code, TSL_OK);
  TensorPtr tensor(raw);
  EXPECT_EQ(tsl_tensor_rank(raw), 0u);
  EXPECT_EQ(tsl_tensor_byte_size(raw), 8u);
}

TEST(TensorTest, EmptyTensorHasZeroBytes) {
  int64_t shape[] = {4, 0};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_F32, shape, 2, &raw)).code, TSL_OK);
  TensorPtr tensor(raw);
  EXPECT_EQ(tsl_tensor_byte_size(raw), 0u);
}

TEST(TensorTest, AllocateRefusesNegativeDimension) {
  int64_t shape[] = {2, -1};
  tsl_tensor *raw = nullptr;
  StatusResult status = take(tsl_tensor_allocate(TSL_F32, shape, 2, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("[2, -1]"));
  EXPECT_EQ(raw, nullptr);
}

TEST(TensorTest, AllocateRefusesShapeWhoseSizeOverflows) {
  int64_t shape[] = {INT64_MAX, 4};
  tsl_tensor *raw = nullptr;
  StatusResult status = take(tsl_tensor_allocate(TSL_F32, shape, 2, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(raw, nullptr);
}

TEST(TensorTest, AllocateRefusesDTypeOutsideTheEnum) {
  // 22 is no enumerator, yet within the enum's range, so a valid C++ value.
  int64_t shape[] = {4};
  tsl_tensor *raw = nullptr;
  StatusResult status =
      take(tsl_tensor_allocate(static_cast<tsl_dtype>(22), shape, 1, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("dtype 22"));
}

TEST(TensorTest, AllocateRefusesNullShapeWithRank) {
  tsl_tensor *raw = nullptr;
  StatusResult status = take(tsl_tensor_allocate(TSL_F32, nullptr, 2, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
}

TEST(TensorTest, WrapUsesCallerMemoryInPlace) {
  std::vector<int32_t> values = {1, 2, 3, 4, 5, 6};
  int64_t shape[] = {2, 3};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_wrap(TSL_I32, shape, 2, values.data(),
                                 values.size() * sizeof(int32_t), &raw))
                .code,
            TSL_OK);
  TensorPtr tensor(raw);
  EXPECT_EQ(tsl_tensor_data(raw), values.data());
  EXPECT_EQ(tsl_tensor_byte_size(raw), 24u);
}

TEST(TensorTest, WrapRefusesByteSizeThatDiffersFromTheShape) {
  std::vector<float> values(6);
  int64_t shape[] = {2, 3};
  tsl_tensor *raw = nullptr;
  StatusResult status =
      take(tsl_tensor_wrap(TSL_F32, shape, 2, values.data(), 20, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("byte_size is 20"));
  EXPECT_THAT(status.message, HasSubstr("24 bytes"));
  EXPECT_EQ(raw, nullptr);
}

TEST(TensorTest, WrapRefusesNullData) {
  int64_t shape[] = {2};
  tsl_tensor *raw = nullptr;
  StatusResult status =
      take(tsl_tensor_wrap(TSL_F32, shape, 1, nullptr, 8, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
}

TEST(TensorTest, RetainKeepsTheTensorAliveUntilTheLastRelease) {
  TensorPtr tensor = floatTensor({1, 2, 3});
  tsl_tensor_retain(tensor.get());
  tsl_tensor *second = tensor.get();
  tensor.reset();
  EXPECT_EQ(floats(second), (std::vector<float>{1, 2, 3}));
  tsl_tensor_release(second);
}

} // namespace
} // namespace tessel::test
