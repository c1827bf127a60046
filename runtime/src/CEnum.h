//===- CEnum.h - Reading enum arguments from C callers ----------*- C++ -*-===//
//
// C lets a caller pass any int where the API takes an enum (tsl_dtype,
// tsl_status_code), but in C++ reading an enum object whose value lies
// outside the enum's range is undefined. The API therefore looks at the bits
// of such an argument before it trusts the value.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_CENUM_H
#define TESSEL_RUNTIME_SRC_CENUM_H

#include <cstdint>
#include <cstring>

namespace tessel::runtime {

/// The value of a C enum argument, read without an enum-typed load.
template <typename Enum> uint32_t enumBits(const Enum &value) {
  static_assert(sizeof(Enum) == sizeof(uint32_t), "C enums are ints here");
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_CENUM_H
