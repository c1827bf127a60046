//===- StatusTest.cpp - Statuses and element types ------------------------===//

#include "tessel/runtime.h"

#include <gtest/gtest.h>

namespace {

TEST(StatusTest, NullStatusIsSuccess) {
  EXPECT_EQ(tsl_status_get_code(nullptr), TSL_OK);
  EXPECT_STREQ(tsl_status_get_message(nullptr), "");
  tsl_status_free(nullptr);
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  tsl_status status = tsl_device_check("tpu");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(tsl_status_get_code(status), TSL_NOT_FOUND);
  EXPECT_STRNE(tsl_status_get_message(status), "");
  tsl_status_free(status);
}

TEST(StatusTest, CodeNamesMatchTheEnum) {
  EXPECT_STREQ(tsl_status_code_name(TSL_OK), "OK");
  EXPECT_STREQ(tsl_status_code_name(TSL_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_STREQ(tsl_status_code_name(TSL_INVALID_ARTIFACT), "INVALID_ARTIFACT");
  EXPECT_STREQ(tsl_status_code_name(TSL_UNSUPPORTED), "UNSUPPORTED");
  EXPECT_STREQ(tsl_status_code_name(TSL_NOT_FOUND), "NOT_FOUND");
  EXPECT_STREQ(tsl_status_code_name(TSL_IO_ERROR), "IO_ERROR");
  EXPECT_STREQ(tsl_status_code_name(TSL_OUT_OF_MEMORY), "OUT_OF_MEMORY");
  EXPECT_STREQ(tsl_status_code_name(TSL_UNAVAILABLE), "UNAVAILABLE");
  EXPECT_STREQ(tsl_status_code_name(TSL_INTERNAL), "INTERNAL");
}

TEST(StatusTest, DTypeSizesAndNames) {
  EXPECT_EQ(tsl_dtype_size(TSL_F32), 4u);
  EXPECT_EQ(tsl_dtype_size(TSL_F64), 8u);
  EXPECT_EQ(tsl_dtype_size(TSL_BF16), 2u);
  EXPECT_EQ(tsl_dtype_size(TSL_U8), 1u);
  EXPECT_EQ(tsl_dtype_size(TSL_BOOL), 1u);
  EXPECT_STREQ(tsl_dtype_name(TSL_F16), "f16");
  EXPECT_STREQ(tsl_dtype_name(TSL_I64), "i64");
  EXPECT_STREQ(tsl_dtype_name(TSL_BOOL), "bool");
  // The small types take a byte per element.
  EXPECT_EQ(tsl_dtype_size(TSL_F8E4M3FN), 1u);
  EXPECT_EQ(tsl_dtype_size(TSL_I4), 1u);
  EXPECT_EQ(tsl_dtype_size(TSL_U2), 1u);
  EXPECT_STREQ(tsl_dtype_name(TSL_F8E5M2FNUZ), "f8e5m2fnuz");
  EXPECT_STREQ(tsl_dtype_name(TSL_F4E2M1FN), "f4e2m1fn");
  EXPECT_STREQ(tsl_dtype_name(TSL_I2), "i2");
}

TEST(StatusTest, DTypeOutsideTheEnumIsInvalid) {
  // 22 is no enumerator, yet within the enum's range, so a valid C++ value.
  auto outside = static_cast<tsl_dtype>(22);
  EXPECT_EQ(tsl_dtype_size(outside), 0u);
  EXPECT_STREQ(tsl_dtype_name(outside), "invalid");
}

} // namespace
