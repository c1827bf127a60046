//===- TensorType.cpp - Element types and shapes --------------------------===//

#include "TensorType.h"

#include "CEnum.h"

namespace tessel::runtime {

bool isValidDType(uint32_t dtype) { return dtype <= TSL_BOOL; }

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
  }
  return "invalid";
}

} // extern "C"
