//===- TensorType.cpp - Element types and shapes --------------------------===//

#include "TensorType.h"

#include "CEnum.h"

namespace tessel::runtime {

bool isValidDType(uint32_t dtype) { return dtype <= TSL_U2; }

bool integerRange(uint32_t dtype, int64_t &low, int64_t &high) {
  int bits;
  bool isSigned;
  switch (dtype) {
  case TSL_I2: bits = 2, isSigned = true; break;
  case TSL_U2: bits = 2, isSigned = false; break;
  case TSL_I4: bits = 4, isSigned = true; break;
  case TSL_U4: bits = 4, isSigned = false; break;
  case TSL_I8: bits = 8, isSigned = true; break;
  case TSL_U8: bits = 8, isSigned = false; break;
  case TSL_I16: bits = 16, isSigned = true; break;
  case TSL_U16: bits = 16, isSigned = false; break;
  case TSL_I32: bits = 32, isSigned = true; break;
  case TSL_U32: bits = 32, isSigned = false; break;
  default:
    return false;
  }
  low = isSigned ? -(int64_t(1) << (bits - 1)) : 0;
  high = isSigned ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  return true;
}

void canonicalizeSubByteElements(tsl_dtype dtype, void *data, size_t bytes) {
  unsigned bits;
  bool isSigned = dtype == TSL_I4 || dtype == TSL_I2;
  switch (dtype) {
  case TSL_I4:
  case TSL_U4:
  case TSL_F4E2M1FN:
    bits = 4;
    break;
  case TSL_I2:
  case TSL_U2:
    bits = 2;
    break;
  default:
    return;
  }
  auto *elements = static_cast<uint8_t *>(data);
  unsigned shift = 8 - bits;
  for (size_t i = 0; i < bytes; ++i) {
    uint8_t high = static_cast<uint8_t>(elements[i] << shift);
    elements[i] = isSigned ? static_cast<uint8_t>(static_cast<int8_t>(high) >> shift)
                           : static_cast<uint8_t>(high >> shift);
  }
}

bool tensorByteSize(uint32_t dtype, const int64_t *shape, size_t rank,
                    size_t &bytes) {
  if (!isValidDType(dtype))
    return false;
  size_t size = tsl_dtype_size(static_cast<tsl_dtype>(dtype));
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0 ||
        __builtin_mul_overflow(size, static_cast<uint64_t>(shape[i]), &size))
      return false;
  }
  bytes = size;
  return true;
}

std::string formatShape(const int64_t *shape, size_t rank) {
  std::string text = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

} // namespace tessel::runtime

extern "C" {

size_t tsl_dtype_size(tsl_dtype dtype) {
  switch (tessel::runtime::enumBits(dtype)) {
  case TSL_F64:
  case TSL_I64:
  case TSL_U64:
    return 8;
  case TSL_F32:
  case TSL_I32:
  case TSL_U32:
    return 4;
  case TSL_F16:
  case TSL_BF16:
  case TSL_I16:
  case TSL_U16:
    return 2;
  case TSL_I8:
  case TSL_U8:
  case TSL_BOOL:
  case TSL_F8E4M3FN:
  case TSL_F8E4M3FNUZ:
  case TSL_F8E5M2:
  case TSL_F8E5M2FNUZ:
  case TSL_F4E2M1FN:
  case TSL_I4:
  case TSL_U4:
  case TSL_I2:
  case TSL_U2:
    return 1;
  }
  return 0;
}

const char *tsl_dtype_name(tsl_dtype dtype) {
  switch (tessel::runtime::enumBits(dtype)) {
  case TSL_F32:
    return "f32";
  case TSL_F64:
    return "f64";
  case TSL_F16:
    return "f16";
  case TSL_BF16:
    return "bf16";
  case TSL_I8:
    return "i8";
  case TSL_I16:
    return "i16";
  case TSL_I32:
    return "i32";
  case TSL_I64:
    return "i64";
  case TSL_U8:
    return "u8";
  case TSL_U16:
    return "u16";
  case TSL_U32:
    return "u32";
  case TSL_U64:
    return "u64";
  case TSL_BOOL:
    return "bool";
  case TSL_F8E4M3FN:
    return "f8e4m3fn";
  case TSL_F8E4M3FNUZ:
    return "f8e4m3fnuz";
  case TSL_F8E5M2:
    return "f8e5m2";
  case TSL_F8E5M2FNUZ:
    return "f8e5m2fnuz";
  case TSL_F4E2M1FN:
    return "f4e2m1fn";
  case TSL_I4:
    return "i4";
  case TSL_U4:
    return "u4";
  case TSL_I2:
    return "i2";
  case TSL_U2:
    return "u2";
  }
  return "invalid";
}

} // extern "C"
