//===- HtmlReport.cpp - A profile as one self-contained HTML page ---------===//
//
// Plain HTML tables and inline SVG plots, drawn here rather than by a script
// library: the page must render the same in any browser, offline, years
// from now. Each section has colours of its own (the constants below),
// which is also how the browser test finds the sections in a screenshot.
//
//===----------------------------------------------------------------------===//

#include "tools/tessel-run/HtmlReport.h"
#include "tools/tessel-run/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string_view>

namespace tessel::run {

namespace {

constexpr const char *kHeaderColor = "#2b4c7e";
constexpr const char *kStripeColor = "#eef2f8";
constexpr const char *kBarColor = "#e07b39";
constexpr const char *kFloatPointColor = "#2a9d8f";
constexpr const char *kIntegerPointColor = "#8e44ad";
constexpr const char *kFloatRoofColor = "#c0392b";
constexpr const char *kIntegerRoofColor = "#6c3483";
constexpr const char *kBandwidthColor = "#6b7b8c";
constexpr const char *kBandwidthDashes[] = {" stroke-dasharray=\"2,3\"", " stroke-dasharray=\"6,3\"",
                                            ""};
constexpr const char *kQuantizationHeaderColor = "#1d6b57";
constexpr const char *kNpuHeaderColor = "#7a4b16";
constexpr const char *kNpuComputeColor = "#2e86ab";
constexpr const char *kNpuStallColor = "#d1495b";
constexpr const char *kArenaPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#edc948",
                                         "#b07aa1", "#76b7b2", "#ff9da7", "#9c755f"};
constexpr size_t kBarChartKernels = 20;
constexpr size_t kLabelledPoints = 5;

std::string escape(std::string_view text) {
  std::string result;
  for (char c : text) {
    switch (c) {
    case '&': result += "&amp;"; break;
    case '<': result += "&lt;"; break;
    case '>': result += "&gt;"; break;
    case '"': result += "&quot;"; break;
    default: result += c;
    }
  }
  return result;
}

std::string bytesText(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 3) {
    bytes /= 1024;
    ++unit;
  }
  return unit ? printed("%.1f %s", bytes, units[unit]) : printed("%.0f B", bytes);
}

/// Milliseconds with the digits that mean something at that size.
std::string millisecondsText(double nanoseconds) {
  double milliseconds = nanoseconds / 1e6;
  return printed(milliseconds >= 10 ? "%.2f" : milliseconds >= 0.1 ? "%.3f" : "%.4f",
                 milliseconds);
}

std::string nodesText(const KernelProfile &kernel) {
  return kernel.nodes.empty() ? kernel.name : joined(kernel.nodes);
}

std::string shortened(const std::string &text, size_t limit) {
  return text.size() <= limit ? text : text.substr(0, limit - 1) + "\u2026";
}

std::string rateText(const KernelProfile &kernel) {
  if (kernel.operations() <= 0)
    return "\u2014";
  return printed("%.1f %s", kernel.gigaOperationsPerSecond(),
                 kernel.isInteger() ? "GOP/s" : "GFLOP/s");
}

/// What bounds `kernel` on the roofline: its compute ceiling, or the
/// bandwidth of the fastest level that holds the bytes one dispatch binds
/// times its intensity, whichever is lower.
struct Bound {
  double gigaOperationsPerSecond = 0.0; // 0 when unknown
  std::string by;                       // "FP32", "INT8", "L2", "L3", "memory"
};

Bound boundOf(const KernelProfile &kernel, const MachinePeaks &peaks) {
  bool integer = kernel.isInteger();
  double ceiling = integer ? peaks.integerGops : peaks.floatGflops;
  double bandwidth = peaks.bandwidthFor(kernel.bytes / double(std::max<uint64_t>(1, kernel.steps)));
  if (ceiling <= 0 || bandwidth <= 0)
    return {};
  double streamed = bandwidth * kernel.intensity();
  if (ceiling <= streamed)
    return {ceiling, integer ? "INT8" : "FP32"};
  for (const MemoryLevel &level : peaks.memory)
    if (level.gigabytesPerSecond == bandwidth)
      return {streamed, level.name};
  return {streamed, "memory"};
}

/// Log-scale axis over whole decades.
struct LogAxis {
  double lowDecade, highDecade; // log10 of the ends
  double start, length;         // pixels
  bool inverted;                // y grows downwards

  static LogAxis covering(double low, double high, double start, double length, bool inverted) {
    double lowDecade = std::floor(std::log10(low)), highDecade = std::ceil(std::log10(high));
    if (highDecade <= lowDecade)
      highDecade = lowDecade + 1;
    return {lowDecade, highDecade, start, length, inverted};
  }
  double operator()(double value) const {
    double fraction = (std::log10(value) - lowDecade) / (highDecade - lowDecade);
    return inverted ? start + length * (1 - fraction) : start + length * fraction;
  }
};

std::string decadeLabel(double decade) {
  double value = std::pow(10.0, decade);
  return value >= 1 ? printed("%.0f", value) : printed("%g", value);
}

class Page {
public:
  Page(const ProfileData &profile, const MachinePeaks &peaks, const RunDescription &run,
       const NpuStatistics *npu)
      : profile(profile), peaks(peaks), run(run), npu(npu) {}

  std::string render() {
    head();
    summary();
    kernelTable();
    timeChart();
    roofline();
    memoryPlan();
    if (profile.quantization)
      quantization(*profile.quantization);
    if (npu && !npu->layers.empty())
      npuSection(*npu);
    html += "</body>\n</html>\n";
    return std::move(html);
  }

private:
  void head() {
    std::string title = profile.modelName.empty() ? run.artifactName
                                                  : profile.modelName + " (" + run.artifactName + ")";
    html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Tessel "
            "profile: " + escape(title) + "</title>\n<style>\n";
    html += "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px;color:#222;"
            "background:#fff;max-width:1240px}\n"
            "h1{font-size:22px;margin:0 0 12px}\n"
            "h2{font-size:17px;margin:32px 0 8px;border-bottom:1px solid #ccc}\n"
            "table{border-collapse:collapse;font-size:12px}\n";
    html += printed("th{background:%s;color:#fff;text-align:left;padding:4px 8px}\n", kHeaderColor);
    html += "td{padding:3px 8px;border-bottom:1px solid #dde;vertical-align:top}\n";
    html += printed("tbody tr:nth-child(even){background:%s}\n", kStripeColor);
    html += "td.num{text-align:right;white-space:nowrap}\n";
    html += printed("table.quantization th{background:%s}\n", kQuantizationHeaderColor);
    html += printed("table.npu th{background:%s}\n", kNpuHeaderColor);
    html += "dl.facts{display:grid;grid-template-columns:max-content auto;gap:3px 16px;"
            "font-size:13px;margin:0}\n"
            "dt{color:#555}dd{margin:0}\n"
            "svg text{font-family:'DejaVu Sans',Arial,sans-serif;font-size:11px;fill:#333}\n"
            "svg text.rank{font-weight:bold}\n"
            "p.caption{font-size:12px;color:#555;max-width:1100px}\n"
            "</style>\n</head>\n<body>\n";
    html += "<h1>Tessel profile: " + escape(title) + "</h1>\n";
  }

  void fact(const std::string &name, const std::string &value) {
    html += "<dt>" + escape(name) + "</dt><dd>" + escape(value) + "</dd>\n";
  }

  void summary() {
    html += "<section id=\"summary\">\n<dl class=\"facts\">\n";
    fact("Artifact", run.artifactName);
    if (!profile.compilerVersion.empty())
      fact("Compiled by", profile.compilerVersion);
    if (!profile.options.empty())
      fact("Options", profile.options);
    if (!profile.modelHash.empty())
      fact("Model hash", profile.modelHash);
    fact("CPU", peaks.cpuName);
    fact("Threads", std::to_string(run.threads));
    fact("Runs profiled", std::to_string(profile.runs));
    fact("Time per run", millisecondsText(profile.nanosecondsPerRun) +
                             printed(" ms in %u steps (", profile.stepCount) +
                             millisecondsText(profile.otherNanosecondsPerRun) +
                             " ms in copies and checks)");
    fact("Kernels", std::to_string(profile.kernels.size()));
    fact("Memory", "arena " + bytesText(double(profile.arenaBytes)) + ", weights " +
                       bytesText(double(run.weightBytes)));
    std::string reads;
    for (const MemoryLevel &level : peaks.memory)
      reads += (reads.empty() ? "" : ", ") + level.name +
               printed(" %.1f GB/s", level.gigabytesPerSecond) +
               (level.capacity ? " (holds " + bytesText(double(level.capacity)) + ")" : "");
    fact("Roofline, measured here",
         printed("FP32 %.1f GFLOP/s (%s), INT8 %.1f GOP/s (%s); reads from ", peaks.floatGflops,
                 peaks.floatSequence.c_str(), peaks.integerGops, peaks.integerSequence.c_str()) +
             reads + printed("; on %u thread%s", peaks.threads, peaks.threads == 1 ? "" : "s"));
    html += "</dl>\n</section>\n";
  }

  void kernelTable() {
    html += "<section id=\"kernels\">\n<h2>Kernels</h2>\n";
    html += "<p class=\"caption\">Time per run of each kernel, longest first, with the ONNX "
            "nodes it computes. The rate counts the arithmetic of the kernel's loop nests; "
            "bytes are those of the buffers it binds (what it must read or write at least "
            "once). The roofline allows a kernel its compute ceiling or, if lower, its "
            "intensity times the bandwidth of the fastest level that holds the bytes of one "
            "dispatch; the last two columns say which ceiling bounds it and how close it "
            "comes.</p>\n";
    html += "<table class=\"kernels\">\n<thead><tr><th>#</th><th>Kernel</th><th>ONNX "
            "nodes</th><th>Dispatches</th><th>ms/run</th><th>Share</th><th>Rate</th>"
            "<th>Bytes</th><th>Ops/byte</th><th>Bound by</th><th>Of bound</th></tr></thead>\n"
            "<tbody>\n";
    for (size_t i = 0; i < profile.kernels.size(); ++i) {
      const KernelProfile &kernel = profile.kernels[i];
      Bound bound = boundOf(kernel, peaks);
      html += printed("<tr data-float-operations=\"%.0f\" data-integer-operations=\"%.0f\" "
                      "data-bytes=\"%.0f\">",
                      kernel.floatOperations, kernel.integerOperations, kernel.bytes) +
              "<td class=\"num\">" + std::to_string(i + 1) + "</td><td>" + escape(kernel.name) +
              "</td><td class=\"nodes\">" + escape(kernel.nodes.empty() ? "" : nodesText(kernel)) +
              "</td>";
      html += printed("<td class=\"num\">%llu</td><td class=\"num\">%s</td>"
                      "<td class=\"num share\">%.1f%%</td>",
                      static_cast<unsigned long long>(kernel.steps),
                      millisecondsText(kernel.nanosecondsPerRun).c_str(), share(kernel) * 100);
      html += "<td class=\"num\">" + rateText(kernel) + "</td><td class=\"num\">" +
              bytesText(kernel.bytes) + "</td>";
      html += kernel.operations() > 0 ? printed("<td class=\"num\">%.2f</td>", kernel.intensity())
                                      : std::string("<td class=\"num\">\u2014</td>");
      html += kernel.operations() > 0 && bound.gigaOperationsPerSecond > 0
                  ? "<td>" + bound.by + "</td>" +
                        printed("<td class=\"num\">%.0f%%</td>",
                                100 * kernel.gigaOperationsPerSecond() /
                                    bound.gigaOperationsPerSecond)
                  : std::string("<td>\u2014</td><td class=\"num\">\u2014</td>");
      html += "</tr>\n";
    }
    html += "</tbody>\n</table>\n</section>\n";
  }

  double share(const KernelProfile &kernel) const {
    return profile.nanosecondsPerRun > 0 ? kernel.nanosecondsPerRun / profile.nanosecondsPerRun
                                         : 0.0;
  }

  void timeChart() {
    size_t count = std::min(kBarChartKernels, profile.kernels.size());
    const double labelWidth = 400, barSpace = 600, rowHeight = 22, width = 1140;
    double height = rowHeight * double(count) + 10;
    double longest = count ? profile.kernels.front().nanosecondsPerRun : 0.0;
    html += "<section id=\"time\">\n<h2>Where the time goes</h2>\n";
    html += printed("<p class=\"caption\">The %zu kernels that took longest, by the ONNX nodes "
                    "they compute.</p>\n",
                    count);
    html += printed("<svg id=\"time-chart\" width=\"%.0f\" height=\"%.0f\" "
                    "xmlns=\"http://www.w3.org/2000/svg\">\n",
                    width, height);
    for (size_t i = 0; i < count; ++i) {
      const KernelProfile &kernel = profile.kernels[i];
      double y = 5 + rowHeight * double(i);
      double length = longest > 0 ? std::max(1.0, barSpace * kernel.nanosecondsPerRun / longest)
                                  : 1.0;
      html += printed("<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", labelWidth - 8,
                      y + 13) +
              escape(shortened(nodesText(kernel), 60)) + "</text>\n";
      html += printed("<rect class=\"bar\" x=\"%.0f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" "
                      "fill=\"%s\"><title>",
                      labelWidth, y, length, kBarColor) +
              escape(nodesText(kernel)) + "</title></rect>\n";
      html += printed("<text x=\"%.1f\" y=\"%.1f\">%s ms (%.1f%%)</text>\n",
                      labelWidth + length + 6, y + 13,
                      millisecondsText(kernel.nanosecondsPerRun).c_str(), share(kernel) * 100);
    }
    html += "</svg>\n</section>\n";
  }

  void roofline() {
    const double width = 1140, height = 540, left = 80, right = 250, top = 20, bottom = 50;
    std::vector<const KernelProfile *> points;
    for (const KernelProfile &kernel : profile.kernels)
      if (kernel.operations() > 0 && kernel.bytes > 0 && kernel.nanosecondsPerRun > 0)
        points.push_back(&kernel);
    double ceiling = std::max(peaks.floatGflops, peaks.integerGops);
    double xLow = 1e300, xHigh = 0, yLow = 1e300, yHigh = ceiling;
    for (const KernelProfile *kernel : points) {
      xLow = std::min(xLow, kernel->intensity());
      xHigh = std::max(xHigh, kernel->intensity());
      yLow = std::min(yLow, kernel->gigaOperationsPerSecond());
      yHigh = std::max(yHigh, kernel->gigaOperationsPerSecond());
    }
    // Room for every ridge: where each bandwidth meets each ceiling.
    for (const MemoryLevel &level : peaks.memory)
      for (double peak : {peaks.floatGflops, peaks.integerGops})
        if (peak > 0 && level.gigabytesPerSecond > 0) {
          xLow = std::min(xLow, peak / level.gigabytesPerSecond / 4);
          xHigh = std::max(xHigh, peak / level.gigabytesPerSecond * 4);
        }
    if (xHigh <= 0) {
      xLow = 0.01;
      xHigh = 1000;
    }
    if (yHigh <= 0)
      yHigh = 1000;
    yLow = std::min(yLow / 2, yHigh / 100);
    LogAxis x = LogAxis::covering(xLow, xHigh, left, width - left - right, false);
    LogAxis y = LogAxis::covering(yLow, yHigh * 1.5, top, height - top - bottom, true);

    html += "<section id=\"roofline\">\n<h2>Roofline</h2>\n";
    html += printed(
        "<p class=\"caption\">Each kernel (circle area: its share of the time) at its arithmetic "
        "intensity and achieved rate, under the ceilings measured on this machine with %u "
        "thread%s: FP32 and INT8 compute, and the read bandwidth of each memory level. The %zu "
        "longest kernels carry their rank in the table. %zu of %zu kernels do arithmetic; the "
        "others move data and are not plotted.</p>\n",
        peaks.threads, peaks.threads == 1 ? "" : "s", kLabelledPoints, points.size(),
        profile.kernels.size());
    html += printed("<svg id=\"roofline-plot\" width=\"%.0f\" height=\"%.0f\" "
                    "xmlns=\"http://www.w3.org/2000/svg\">\n",
                    width, height);
    double plotRight = width - right, plotBottom = height - bottom;
    for (double decade = x.lowDecade; decade <= x.highDecade; ++decade) {
      double px = x(std::pow(10.0, decade));
      html += printed("<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#e3e3e3\"/>"
                      "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">",
                      px, top, px, plotBottom, px, plotBottom + 16) +
              decadeLabel(decade) + "</text>\n";
    }
    for (double decade = y.lowDecade; decade <= y.highDecade; ++decade) {
      double py = y(std::pow(10.0, decade));
      html += printed("<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>"
                      "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">",
                      left, py, plotRight, py, left - 6, py + 4) +
              decadeLabel(decade) + "</text>\n";
    }
    html += printed("<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                    "stroke=\"#888\"/>\n",
                    left, top, plotRight - left, plotBottom - top);
    html += printed("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">arithmetic intensity "
                    "(operations per byte bound)</text>\n",
                    (left + plotRight) / 2, height - 10);
    html += printed("<text transform=\"translate(18,%.0f) rotate(-90)\" text-anchor=\"middle\">"
                    "G operations per second</text>\n",
                    (top + plotBottom) / 2);

    for (size_t i = 0; i < peaks.memory.size(); ++i)
      bandwidthLine(x, y, peaks.memory[i], ceiling, kBandwidthDashes[i % std::size(kBandwidthDashes)]);
    computeCeiling(x, y, peaks.floatGflops, kFloatRoofColor, "", "FP32");
    computeCeiling(x, y, peaks.integerGops, kIntegerRoofColor, " stroke-dasharray=\"7,4\"", "INT8");

    for (size_t i = 0; i < points.size(); ++i) {
      const KernelProfile &kernel = *points[i];
      double px = x(kernel.intensity()), py = y(kernel.gigaOperationsPerSecond());
      html += printed("<circle class=\"kernel\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" "
                      "stroke=\"#fff\"><title>",
                      px, py, 4 + 14 * std::sqrt(share(kernel)),
                      kernel.isInteger() ? kIntegerPointColor : kFloatPointColor) +
              escape(nodesText(kernel)) + ": " + rateText(kernel) +
              printed(", %.2f ops/byte", kernel.intensity()) + "</title></circle>\n";
      size_t rank = &kernel - profile.kernels.data() + 1;
      if (rank <= kLabelledPoints)
        html += printed("<text class=\"rank\" x=\"%.1f\" y=\"%.1f\">%zu</text>\n", px - 3,
                        py - 8 - 14 * std::sqrt(share(kernel)), rank);
    }
    legend(plotRight + 16, top + 10);
    html += "</svg>\n</section>\n";
  }

  /// A compute ceiling, across the plot.
  void computeCeiling(const LogAxis &x, const LogAxis &y, double peak, const char *color,
                      const char *dash, const char *label) {
    if (peak <= 0)
      return;
    double xStart = std::pow(10.0, x.lowDecade), xEnd = std::pow(10.0, x.highDecade);
    html += printed("<polyline class=\"roof\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"%s "
                    "points=\"%.1f,%.1f %.1f,%.1f\"/>\n",
                    color, dash, x(xStart), y(peak), x(xEnd), y(peak));
    html += printed("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s %.0f</text>\n",
                    x(xEnd) - 4, y(peak) - 5, label, peak);
  }

  /// What `level` delivers at each intensity, up to the highest ceiling.
  void bandwidthLine(const LogAxis &x, const LogAxis &y, const MemoryLevel &level,
                     double ceiling, const char *dash) {
    double bandwidth = level.gigabytesPerSecond;
    if (bandwidth <= 0 || ceiling <= 0)
      return;
    double yStart = std::max(bandwidth * std::pow(10.0, x.lowDecade), std::pow(10.0, y.lowDecade));
    double xStart = yStart / bandwidth, xEnd = ceiling / bandwidth;
    html += printed("<polyline class=\"bandwidth\" fill=\"none\" stroke=\"%s\" "
                    "stroke-width=\"1.5\"%s points=\"%.1f,%.1f %.1f,%.1f\"/>\n",
                    kBandwidthColor, dash, x(xStart), y(yStart), x(xEnd), y(ceiling));
    html += printed("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                    "transform=\"rotate(%.1f %.1f %.1f)\">",
                    x(xEnd) - 6, y(ceiling) + 14, slopeDegrees(x, y), x(xEnd) - 6,
                    y(ceiling) + 14) +
            escape(level.name) + printed(" %.0f GB/s", bandwidth) + "</text>\n";
  }

  /// The on-screen angle of a line of slope 1 in log-log space.
  static double slopeDegrees(const LogAxis &x, const LogAxis &y) {
    double dx = x.length / (x.highDecade - x.lowDecade);
    double dy = y.length / (y.highDecade - y.lowDecade);
    return -std::atan2(dy, dx) * 180 / M_PI;
  }

  void legend(double x, double y) {
    auto line = [&](double at, const char *color, const char *dash, const char *text) {
      html += printed("<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                      "stroke-width=\"2.5\"%s/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                      x, at, x + 28, at, color, dash, x + 36, at + 4, text);
    };
    auto dot = [&](double at, const char *color, const char *text) {
      html += printed("<circle cx=\"%.0f\" cy=\"%.0f\" r=\"6\" fill=\"%s\"/>"
                      "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                      x + 14, at, color, x + 36, at + 4, text);
    };
    line(y, kFloatRoofColor, "", "FP32 FMA peak");
    line(y + 22, kIntegerRoofColor, " stroke-dasharray=\"7,4\"", "INT8 dot-product peak");
    line(y + 44, kBandwidthColor, "", "read bandwidth");
    dot(y + 66, kFloatPointColor, "float kernel");
    dot(y + 88, kIntegerPointColor, "integer kernel");
  }

  void memoryPlan() {
    const double width = 1140, height = 420, left = 80, right = 20, top = 20, bottom = 40;
    double plotWidth = width - left - right, plotHeight = height - top - bottom;
    double steps = std::max<double>(1, profile.stepCount);
    double arena = std::max<double>(1, double(profile.arenaBytes));
    html += "<section id=\"memory\">\n<h2>Memory plan</h2>\n";
    html += printed("<p class=\"caption\">The session's arena (%s) over the schedule's %u steps: "
                    "each rectangle is one intermediate tensor, at its offset, from the first step "
                    "that uses it to the last. Tensors alive at the same step never share "
                    "bytes; the others reuse them.</p>\n",
                    bytesText(double(profile.arenaBytes)).c_str(), profile.stepCount);
    html += printed("<svg id=\"memory-plan\" width=\"%.0f\" height=\"%.0f\" "
                    "xmlns=\"http://www.w3.org/2000/svg\">\n",
                    width, height);
    html += printed("<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" "
                    "stroke=\"#888\"/>\n",
                    left, top, plotWidth, plotHeight);
    for (int tick = 0; tick <= 4; ++tick) {
      double py = top + plotHeight * tick / 4;
      html += printed("<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", left - 6, py + 4) +
              bytesText(arena * tick / 4) + "</text>\n";
    }
    int stepTick = std::max(1, int(std::ceil(steps / 10)));
    for (int step = 0; step <= int(steps); step += stepTick) {
      double px = left + plotWidth * step / steps;
      html += printed("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", px,
                      top + plotHeight + 16, step);
    }
    html += printed("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">schedule step</text>\n",
                    left + plotWidth / 2, height - 6);
    for (size_t i = 0; i < profile.arena.size(); ++i) {
      const ArenaLifetime &buffer = profile.arena[i];
      double x0 = left + plotWidth * buffer.firstStep / steps;
      double x1 = left + plotWidth * (buffer.lastStep + 1) / steps;
      double y0 = top + plotHeight * double(buffer.offset) / arena;
      double h = std::max(1.0, plotHeight * double(buffer.size) / arena);
      html += printed("<rect class=\"buffer\" data-offset=\"%llu\" data-size=\"%llu\" "
                      "data-first=\"%u\" data-last=\"%u\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                      "height=\"%.1f\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>",
                      static_cast<unsigned long long>(buffer.offset),
                      static_cast<unsigned long long>(buffer.size), buffer.firstStep,
                      buffer.lastStep, x0, y0, std::max(1.0, x1 - x0), h,
                      kArenaPalette[i % std::size(kArenaPalette)]) +
              escape(buffer.producer.empty() ? "buffer" : buffer.producer) + ": " +
              bytesText(double(buffer.size)) +
              printed(" at offset %llu, steps %u to %u",
                      static_cast<unsigned long long>(buffer.offset), buffer.firstStep,
                      buffer.lastStep) +
              "</title></rect>\n";
    }
    html += "</svg>\n</section>\n";
  }

  static std::string decibels(double value) {
    return std::isinf(value) ? std::string("exact") : printed("%.1f", value);
  }

  void quantization(const QuantizationRecord &record) {
    html += "<section id=\"quantization\">\n<h2>Quantization</h2>\n";
    html += "<p class=\"caption\">" +
            escape(printed("Post-training INT8 quantization calibrated with %s on %llu samples; "
                           "layers whose quantized output fell below %.1f dB SQNR were kept in "
                           "float. %lld ops compute on quantized tensors.",
                           record.method.c_str(), static_cast<unsigned long long>(record.samples),
                           record.minSqnrDb, static_cast<long long>(record.integerOps))) +
            "</p>\n<dl class=\"facts\">\n";
    for (const auto &[name, sqnr] : record.outputs)
      fact("Output '" + name + "' SQNR", decibels(sqnr) + (std::isinf(sqnr) ? "" : " dB"));
    html += "</dl>\n<table class=\"quantization\">\n<thead><tr><th>ONNX node</th><th>Op</th>"
            "<th>Precision</th><th>SQNR (dB)</th><th>Added (dB)</th><th>Input scale, zero "
            "point</th><th>Output scale, zero point</th><th>Weight scales</th></tr></thead>\n"
            "<tbody>\n";
    auto scale = [](double value, int64_t zeroPoint) {
      return value > 0 ? printed("%.6g, %lld", value, static_cast<long long>(zeroPoint))
                       : std::string("\u2014");
    };
    for (const LayerRecord &layer : record.layers)
      html += "<tr><td>" + escape(layer.node) + "</td><td>" + escape(layer.op) +
              "</td><td class=\"precision\">" + escape(layer.precision) + "</td><td class=\"num\">" +
              decibels(layer.sqnrDb) + "</td><td class=\"num\">" + decibels(layer.addedSqnrDb) +
              "</td><td class=\"num\">" + scale(layer.inputScale, layer.inputZeroPoint) +
              "</td><td class=\"num\">" + scale(layer.outputScale, layer.outputZeroPoint) +
              "</td><td class=\"num\">" +
              (layer.weightScaleMax > 0
                   ? printed("%.3g to %.3g", layer.weightScaleMin, layer.weightScaleMax)
                   : std::string("\u2014")) +
              "</td></tr>\n";
    html += "</tbody>\n</table>\n";
    if (!record.floatIslands.empty()) {
      html += "<p class=\"caption\">Left in float between quantized ops:</p>\n<ul>\n";
      for (const std::string &island : record.floatIslands)
        html += "<li>" + escape(island) + "</li>\n";
      html += "</ul>\n";
    }
    html += "</section>\n";
  }

  void npuSection(const NpuStatistics &statistics) {
    double seconds = statistics.latencySeconds();
    html += "<section id=\"npu\">\n<h2>NPU (simulated)</h2>\n";
    html += "<p class=\"caption\">What the simulator charged each layer placed on the NPU, "
            "per inference: its cycles, split into the execute engine's work and its stalls "
            "waiting for data; utilization is the layer's MACs over what the array could do in "
            "its cycles.</p>\n<dl class=\"facts\">\n";
    fact("Array", printed("%ux%u at %u MHz", statistics.arrayRows, statistics.arrayColumns,
                          statistics.clockMhz));
    fact("Latency", printed("%.0f cycles, %.3f ms (%.1f inferences/s)", statistics.totalCycles,
                            seconds * 1e3, seconds > 0 ? 1 / seconds : 0.0));
    fact("Energy", printed("%.3f mJ, average power %.3f W", statistics.energyPj * 1e-9,
                           seconds > 0 ? statistics.energyPj * 1e-12 / seconds : 0.0));
    fact("Utilization", printed("%.1f%% (MAC-weighted); stalled on DMA %.1f%% of cycles",
                                100 * statistics.macWeightedUtilization(),
                                statistics.totalCycles > 0
                                    ? 100 * statistics.stallCycles / statistics.totalCycles
                                    : 0.0));
    fact("DRAM", bytesText(statistics.dramBytes) + " per inference, " +
                     printed("%.2f", statistics.bindingBytes > 0
                                         ? statistics.dramBytes / statistics.bindingBytes
                                         : 0.0) +
                     "x its layers' bindings once");
    html += "</dl>\n<table class=\"npu\">\n<thead><tr><th>ONNX nodes</th><th>Kernel</th>"
            "<th>Cycles</th><th>Share</th><th>Utilization</th><th>Stall</th><th>DRAM</th>"
            "<th>Energy (uJ)</th></tr></thead>\n<tbody>\n";
    auto percent = [](double part, double whole) {
      return printed("%.1f%%", whole > 0 ? 100 * part / whole : 0.0);
    };
    for (const NpuLayer &layer : statistics.layers)
      html += "<tr><td class=\"nodes\">" + escape(layer.name()) + "</td><td>" +
              escape(layer.kernel) + "</td>" +
              printed("<td class=\"num\">%.0f</td>", layer.totalCycles) + "<td class=\"num\">" +
              percent(layer.totalCycles, statistics.totalCycles) + "</td><td class=\"num\">" +
              printed("%.1f%%", 100 * layer.utilization) + "</td><td class=\"num\">" +
              percent(layer.stallCycles, layer.totalCycles) + "</td><td class=\"num\">" +
              bytesText(layer.dramBytes) + "</td>" +
              printed("<td class=\"num\">%.3f</td></tr>\n", layer.energyPj * 1e-6);
    html += "</tbody>\n</table>\n";
    npuCycleChart(statistics);
    html += "</section>\n";
  }

  /// One bar per layer, in schedule order: its compute cycles, then its
  /// stalls.
  void npuCycleChart(const NpuStatistics &statistics) {
    const double labelWidth = 400, barSpace = 600, rowHeight = 16, width = 1140;
    double longest = 0;
    for (const NpuLayer &layer : statistics.layers)
      longest = std::max(longest, layer.totalCycles);
    double height = rowHeight * double(statistics.layers.size()) + 30;
    html += printed("<svg id=\"npu-cycles\" width=\"%.0f\" height=\"%.0f\" "
                    "xmlns=\"http://www.w3.org/2000/svg\">\n",
                    width, height);
    html += printed("<rect x=\"%.0f\" y=\"2\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                    "<text x=\"%.0f\" y=\"11\">compute</text>"
                    "<rect x=\"%.0f\" y=\"2\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                    "<text x=\"%.0f\" y=\"11\">stalled on DMA</text>\n",
                    labelWidth, kNpuComputeColor, labelWidth + 14, labelWidth + 90,
                    kNpuStallColor, labelWidth + 104);
    for (size_t i = 0; i < statistics.layers.size(); ++i) {
      const NpuLayer &layer = statistics.layers[i];
      double y = 20 + rowHeight * double(i);
      double scale = longest > 0 ? barSpace / longest : 0.0;
      double compute = std::max(1.0, layer.computeCycles * scale);
      double stall = layer.stallCycles * scale;
      html += printed("<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", labelWidth - 8,
                      y + 11) +
              escape(shortened(layer.name(), 60)) + "</text>\n";
      html += printed("<rect class=\"compute\" x=\"%.0f\" y=\"%.1f\" width=\"%.1f\" "
                      "height=\"12\" fill=\"%s\"/>",
                      labelWidth, y, compute, kNpuComputeColor);
      html += printed("<rect class=\"stall\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                      "height=\"12\" fill=\"%s\"/>\n",
                      labelWidth + compute, y, stall, kNpuStallColor);
    }
    html += "</svg>\n";
  }

  const ProfileData &profile;
  const MachinePeaks &peaks;
  const RunDescription &run;
  const NpuStatistics *npu;
  std::string html;
};

} // namespace

std::string renderHtmlReport(const ProfileData &profile, const MachinePeaks &peaks,
                             const RunDescription &run, const NpuStatistics *npu) {
  return Page(profile, peaks, run, npu).render();
}

} // namespace tessel::run
