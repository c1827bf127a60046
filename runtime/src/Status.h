//===- Status.h - Creating statuses and guarding the C API ------*- C++ -*-===//
//
// Internal code reports errors the way the C API does: a tsl_status that is
// NULL on success and owned by whoever receives it. Exceptions from the
// standard library (std::bad_alloc above all) are turned into statuses at
// the API boundary by guard(), so none ever reaches a C caller.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_STATUS_H
#define TESSEL_RUNTIME_SRC_STATUS_H

#include "tessel/runtime.h"

#include <cstdarg>
#include <exception>
#include <new>

struct tsl_status_t {
  tsl_status_code code;
  /// malloc'd, except in the static out-of-memory status.
  char *message;
};

namespace tessel::runtime {

/// An error with a printf-style message. Never throws; when even the status
/// cannot be allocated, returns the shared out-of-memory status.
tsl_status makeError(tsl_status_code code, const char *format, ...) noexcept
    __attribute__((format(printf, 2, 3)));

/// makeError with its arguments in a va_list.
tsl_status makeErrorV(tsl_status_code code, const char *format,
                      va_list args) noexcept
    __attribute__((format(printf, 2, 0)));

/// The status for an allocation that failed with no more detail to give. It
/// needs no memory, so it can be returned when none is left.
tsl_status outOfMemory() noexcept;

/// Runs `body` (returning tsl_status) and converts any exception it throws
/// into a status.
template <typename Body> tsl_status guard(Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return outOfMemory();
  } catch (const std::exception &error) {
    return makeError(TSL_INTERNAL, "unexpected exception: %s", error.what());
  } catch (...) {
    return makeError(TSL_INTERNAL, "unexpected exception");
  }
}

} // namespace tessel::runtime

/// Returns the status of `expr` from the enclosing function when it is an
/// error.
#define TSL_RETURN_IF_ERROR(expr)                                              \
  do {                                                                         \
    if (tsl_status tslStatus_ = (expr))                                        \
      return tslStatus_;                                                       \
  } while (false)

#endif // TESSEL_RUNTIME_SRC_STATUS_H
