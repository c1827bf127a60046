//===- Text.h - Formatting shared by tessel-run's outputs ------*- C++ -*-===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_TEXT_H
#define TESSEL_TOOLS_TESSEL_RUN_TEXT_H

#include <string>
#include <vector>

namespace tessel::run {

/// printf into a string of whatever length it takes.
std::string printed(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// `names` separated by ", ".
std::string joined(const std::vector<std::string> &names);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_TEXT_H
