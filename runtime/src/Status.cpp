//===- Status.cpp - tsl_status --------------------------------------------===//

#include "Status.h"

#include "CEnum.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace {
char outOfMemoryMessage[] = "out of memory";
tsl_status_t outOfMemoryStatus = {TSL_OUT_OF_MEMORY, outOfMemoryMessage};
} // namespace

namespace tessel::runtime {

tsl_status outOfMemory() noexcept { return &outOfMemoryStatus; }

tsl_status makeError(tsl_status_code code, const char *format, ...) noexcept {
  va_list args;
  va_start(args, format);
  tsl_status status = makeErrorV(code, format, args);
  va_end(args);
  return status;
}

tsl_status makeErrorV(tsl_status_code code, const char *format,
                      va_list args) noexcept {
  va_list argsCopy;
  va_copy(argsCopy, args);
  int length = std::vsnprintf(nullptr, 0, format, args);
  if (length < 0) // an encoding error; keep the code, lose the text
    length = 0;

  auto *message = static_cast<char *>(std::malloc(length + 1));
  auto *status = new (std::nothrow) tsl_status_t{code, message};
  if (!message || !status) {
    va_end(argsCopy);
    std::free(message);
    delete status;
    return outOfMemory();
  }
  message[0] = '\0';
  std::vsnprintf(message, length + 1, format, argsCopy);
  va_end(argsCopy);
  return status;
}

} // namespace tessel::runtime

extern "C" {

tsl_status_code tsl_status_get_code(tsl_status status) {
  return status ? status->code : TSL_OK;
}

const char *tsl_status_get_message(tsl_status status) {
  return status ? status->message : "";
}

void tsl_status_free(tsl_status status) {
  if (!status || status == &outOfMemoryStatus)
    return;
  std::free(status->message);
  delete status;
}

const char *tsl_status_code_name(tsl_status_code code) {
  switch (tessel::runtime::enumBits(code)) {
  case TSL_OK:
    return "OK";
  case TSL_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case TSL_INVALID_ARTIFACT:
    return "INVALID_ARTIFACT";
  case TSL_UNSUPPORTED:
    return "UNSUPPORTED";
  case TSL_NOT_FOUND:
    return "NOT_FOUND";
  case TSL_IO_ERROR:
    return "IO_ERROR";
  case TSL_OUT_OF_MEMORY:
    return "OUT_OF_MEMORY";
  case TSL_UNAVAILABLE:
    return "UNAVAILABLE";
  case TSL_INTERNAL:
    return "INTERNAL";
  }
  return "UNKNOWN";
}

} // extern "C"
