//===- Text.cpp - Formatting shared by tessel-run's outputs ---------------===//

#include "tools/tessel-run/Text.h"

#include <cstdarg>
#include <cstdio>

namespace tessel::run {

std::string printed(const char *format, ...) {
  va_list arguments, again;
  va_start(arguments, format);
  va_copy(again, arguments);
  int length = std::vsnprintf(nullptr, 0, format, arguments);
  va_end(arguments);
  std::string text(length > 0 ? size_t(length) : 0, '\0');
  std::vsnprintf(text.data(), text.size() + 1, format, again);
  va_end(again);
  return text;
}

std::string joined(const std::vector<std::string> &names) {
  std::string result;
  for (const std::string &name : names)
    result += (result.empty() ? "" : ", ") + name;
  return result;
}

} // namespace tessel::run
