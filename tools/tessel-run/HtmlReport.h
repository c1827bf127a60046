//===- HtmlReport.h - A profile as one self-contained HTML page -*- C++ -*-===//
//
// `tessel-run m.tsl --profile --report FILE.html`: the kernels' time keyed by
// the ONNX nodes they compute (a table and a bar chart), each kernel's
// achieved rate against the machine's roofline, the memory plan as buffers
// over time in the arena, the quantization the compiler recorded and, for a
// model placed partly on the NPU, what the simulated NPU did per layer. One
// file with inline CSS and SVG, no script and nothing fetched, so that it
// can be mailed, archived and opened anywhere.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_HTMLREPORT_H
#define TESSEL_TOOLS_TESSEL_RUN_HTMLREPORT_H

#include "tools/tessel-run/MachinePeaks.h"
#include "tools/tessel-run/NpuStatistics.h"
#include "tools/tessel-run/ProfileData.h"

#include <string>

namespace tessel::run {

/// What the page says about the run beside the profile.
struct RunDescription {
  std::string artifactName;
  unsigned threads = 1;
  uint64_t weightBytes = 0;
};

/// The page; `npu` (null or without layers for a model that runs nothing
/// on the NPU) adds its section.
std::string renderHtmlReport(const ProfileData &profile, const MachinePeaks &peaks,
                             const RunDescription &run, const NpuStatistics *npu = nullptr);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_HTMLREPORT_H
