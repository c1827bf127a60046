//===- Compare.cpp - Compare outputs with expected tensors ----------------===//

#include "tools/tessel-run/Compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessel::run {

namespace {

template <typename T> T load(const HostTensor &tensor, size_t i) {
  T value;
  std::memcpy(&value, tensor.bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

float halfToFloat(uint16_t half) {
  uint32_t sign = (half & 0x8000u) << 16, exponent = (half >> 10) & 0x1f,
           mantissa = half & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else { // subnormal: normalize
    exponent = 113;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
  }
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// The value of an 8- or 4-bit float: `exponentBits` and `mantissaBits`
/// wide fields and the format's exponent bias. The "FN" formats have no
/// infinities and one NaN pattern per sign (all bits set); the "FNUZ" ones
/// have no negative zero and take its pattern (0x80) for their only NaN;
/// E2M1 has neither infinities nor NaN.
double minifloatToDouble(uint8_t bits, tsl_dtype dtype) {
  struct Format {
    int exponentBits, mantissaBits, bias;
  };
  Format format;
  switch (dtype) {
  case TSL_F8E4M3FN:
    format = {4, 3, 7};
    break;
  case TSL_F8E4M3FNUZ:
    format = {4, 3, 8};
    break;
  case TSL_F8E5M2:
    format = {5, 2, 15};
    break;
  case TSL_F8E5M2FNUZ:
    format = {5, 2, 16};
    break;
  default: // TSL_F4E2M1FN
    format = {2, 1, 1};
    break;
  }
  int width = 1 + format.exponentBits + format.mantissaBits;
  int exponentMax = (1 << format.exponentBits) - 1;
  bool negative = bits >> (width - 1) & 1;
  int exponent = bits >> format.mantissaBits & exponentMax;
  int mantissa = bits & ((1 << format.mantissaBits) - 1);
  bool fnuz = dtype == TSL_F8E4M3FNUZ || dtype == TSL_F8E5M2FNUZ;
  if (fnuz && bits == 0x80)
    return NAN;
  if (dtype == TSL_F8E4M3FN && exponent == exponentMax &&
      mantissa == (1 << format.mantissaBits) - 1)
    return NAN;
  if (dtype == TSL_F8E5M2 && exponent == exponentMax)
    return mantissa ? NAN : negative ? -INFINITY : INFINITY;
  double magnitude =
      exponent == 0
          ? std::ldexp(mantissa, 1 - format.bias - format.mantissaBits)
          : std::ldexp((1 << format.mantissaBits) + mantissa,
                       exponent - format.bias - format.mantissaBits);
  return negative ? -magnitude : magnitude;
}

} // namespace

double elementAsDouble(const HostTensor &tensor, size_t i) {
  switch (tensor.dtype) {
  case TSL_F32:
    return load<float>(tensor, i);
  case TSL_F64:
    return load<double>(tensor, i);
  case TSL_F16:
    return halfToFloat(load<uint16_t>(tensor, i));
  case TSL_BF16: {
    uint32_t bits = static_cast<uint32_t>(load<uint16_t>(tensor, i)) << 16;
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
  }
  case TSL_I8:
    return load<int8_t>(tensor, i);
  case TSL_I16:
    return load<int16_t>(tensor, i);
  case TSL_I32:
    return load<int32_t>(tensor, i);
  case TSL_I64:
    return static_cast<double>(load<int64_t>(tensor, i));
  case TSL_U8:
  case TSL_BOOL:
    return load<uint8_t>(tensor, i);
  case TSL_U16:
    return load<uint16_t>(tensor, i);
  case TSL_U32:
    return load<uint32_t>(tensor, i);
  case TSL_U64:
    return static_cast<double>(load<uint64_t>(tensor, i));
  case TSL_F8E4M3FN:
  case TSL_F8E4M3FNUZ:
  case TSL_F8E5M2:
  case TSL_F8E5M2FNUZ:
  case TSL_F4E2M1FN:
    return minifloatToDouble(load<uint8_t>(tensor, i), tensor.dtype);
  case TSL_I4:
  case TSL_I2:
    return load<int8_t>(tensor, i); // sign-extended by the reader and the runtime
  case TSL_U4:
  case TSL_U2:
    return load<uint8_t>(tensor, i);
  }
  return 0;
}

Comparison compareTensors(const HostTensor &actual, const HostTensor &expected,
                          double rtol, double atol) {
  Comparison result;
  if (actual.dtype != expected.dtype) {
    result.pass = false;
    result.structuralProblem = std::string("dtype ") + tsl_dtype_name(actual.dtype) +
                               " differs from the expected " +
                               tsl_dtype_name(expected.dtype);
    return result;
  }
  if (actual.shape != expected.shape) {
    auto format = [](const std::vector<int64_t> &shape) {
      std::string text = "[";
      for (size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
      return text + "]";
    };
    result.pass = false;
    result.structuralProblem = "shape " + format(actual.shape) +
                               " differs from the expected " + format(expected.shape);
    return result;
  }
  std::vector<std::pair<double, Mismatch>> violations;
  for (size_t i = 0, n = actual.elementCount(); i < n; ++i) {
    double a = elementAsDouble(actual, i), e = elementAsDouble(expected, i);
    if (std::isnan(a) && std::isnan(e))
      continue;
    double error = std::fabs(a - e);
    bool equal = a == e; // covers matching infinities
    if (!equal && !std::isnan(error)) {
      result.maxAbsoluteError = std::max(result.maxAbsoluteError, error);
      if (e != 0)
        result.maxRelativeError = std::max(result.maxRelativeError, error / std::fabs(e));
    }
    double allowed = atol + rtol * std::fabs(e);
    if (equal || error <= allowed)
      continue;
    ++result.mismatchCount;
    double excess = std::isnan(error) || std::isinf(error) ? INFINITY : error - allowed;
    violations.push_back({excess, Mismatch{i, a, e}});
  }
  result.pass = result.mismatchCount == 0;
  size_t keep = std::min<size_t>(5, violations.size());
  std::partial_sort(violations.begin(), violations.begin() + keep, violations.end(),
                    [](const auto &x, const auto &y) { return x.first > y.first; });
  for (size_t i = 0; i < keep; ++i)
    result.worst.push_back(violations[i].second);
  return result;
}

} // namespace tessel::run
