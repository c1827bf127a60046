//===- tessel-run.cpp - Run a Tessel artifact, check it, time it ----------===//

#include "compiler/data/TensorFiles.h"
#include "tools/tessel-run/Compare.h"
#include "tools/tessel-run/HtmlReport.h"
#include "tools/tessel-run/MachinePeaks.h"
#include "tools/tessel-run/NpuStatistics.h"
#include "tools/tessel-run/ProfileData.h"
#include "tools/tessel-run/TestData.h"

#include "tessel/runtime.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include <unistd.h>

using tessel::data::formatShape;
using tessel::data::HostTensor;

namespace {

/// "[0, 3, 1]" for flat element `index` of `shape`.
std::string formatIndex(size_t index, const std::vector<int64_t> &shape) {
  std::vector<int64_t> position(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    position[i] = shape[i] ? index % shape[i] : 0;
    index = shape[i] ? index / shape[i] : 0;
  }
  return formatShape(position);
}

HostTensor toHost(const tsl::Tensor &tensor, const std::string &name) {
  HostTensor host;
  host.name = name;
  host.dtype = tensor.dtype();
  host.shape = tensor.shape();
  const auto *bytes = static_cast<const uint8_t *>(tensor.data());
  host.bytes.assign(bytes, bytes + tensor.byteSize());
  return host;
}

/// Deterministic inputs for timing runs without data: standard-normal
/// floats; integers in [0, 4) (valid indices into any axis of 4 or more,
/// which the run checks), bools 0 or 1. The varying length, dimension
/// `varyingAxis` (-1: none), holds `length`; the batch, another dynamic
/// dimension, `batch`.
HostTensor randomInput(const tsl::TensorInfo &info, unsigned seed, int64_t batch,
                       int32_t varyingAxis, int64_t length) {
  HostTensor tensor;
  tensor.name = info.name;
  tensor.dtype = info.dtype;
  tensor.shape = info.shape;
  for (size_t d = 0; d < tensor.shape.size(); ++d)
    if (tensor.shape[d] < 0)
      tensor.shape[d] = static_cast<int32_t>(d) == varyingAxis ? length : batch;
  tensor.bytes.resize(tensor.elementCount() * tsl_dtype_size(info.dtype));
  std::mt19937 generator(seed);
  if (info.dtype == TSL_F32) {
    std::normal_distribution<float> normal;
    auto *values = reinterpret_cast<float *>(tensor.bytes.data());
    for (size_t i = 0; i < tensor.elementCount(); ++i)
      values[i] = normal(generator);
  } else {
    // Little-endian: the low byte of each element holds its value.
    size_t elementBytes = tsl_dtype_size(info.dtype);
    unsigned range = info.dtype == TSL_BOOL ? 2 : 4;
    for (size_t i = 0; i < tensor.bytes.size(); i += elementBytes)
      tensor.bytes[i] = static_cast<uint8_t>(generator() % range);
  }
  return tensor;
}

/// " (quantized: scale 0.02, zero point 128)" for a quantized tensor.
std::string describeQuantization(const tsl::TensorInfo &info) {
  if (!info.quantized())
    return "";
  char text[128];
  if (info.quantAxis < 0)
    std::snprintf(text, sizeof(text), " (quantized: scale %.9g, zero point %lld)",
                  info.scales.front(), static_cast<long long>(info.zeroPoints.front()));
  else
    std::snprintf(text, sizeof(text), " (quantized along axis %d: %zu scales and zero points)",
                  info.quantAxis, info.scales.size());
  return text;
}

void printTensor(const HostTensor &tensor, const tsl::TensorInfo &info, size_t limit) {
  std::printf("output '%s' %s %s%s:", tensor.name.c_str(), formatShape(tensor.shape).c_str(),
              tsl_dtype_name(tensor.dtype), describeQuantization(info).c_str());
  size_t count = std::min(limit, tensor.elementCount());
  for (size_t i = 0; i < count; ++i)
    std::printf(" %.6g", tessel::run::elementAsDouble(tensor, i));
  if (count < tensor.elementCount())
    std::printf(" ... (%zu values)", tensor.elementCount());
  std::printf("\n");
}

/// ONNX's backend tests store bfloat16 tensors as uint16 (their bits): such
/// a tensor is taken as the bf16 tensor that the signature asks for.
void adoptBfloat16Bits(HostTensor &tensor, tsl_dtype wanted) {
  if (tensor.dtype == TSL_U16 && wanted == TSL_BF16)
    tensor.dtype = TSL_BF16;
}

/// The kernels that took the most time per run, one line per kernel (its
/// steps summed), longest first.
void printProfile(const std::vector<tsl_step_timing> &timings, size_t limit) {
  struct Total {
    uint64_t nanoseconds = 0;
    uint64_t steps = 0;
    uint64_t runs = 0;
  };
  std::map<std::string, Total> byName;
  double perRun = 0;
  for (const tsl_step_timing &timing : timings) {
    if (!timing.runs)
      continue;
    Total &total = byName[timing.name];
    total.nanoseconds += timing.total_nanoseconds;
    total.steps += 1;
    total.runs = timing.runs;
    perRun += double(timing.total_nanoseconds) / double(timing.runs);
  }
  std::vector<std::pair<std::string, Total>> sorted(byName.begin(), byName.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
    return a.second.nanoseconds > b.second.nanoseconds;
  });
  std::printf("profile: %.3f ms per run in %zu steps\n", perRun / 1e6, timings.size());
  std::printf("%10s %7s %6s  %s\n", "ms/run", "share", "steps", "kernel");
  for (size_t i = 0; i < std::min(limit, sorted.size()); ++i) {
    const auto &[name, total] = sorted[i];
    double milliseconds = double(total.nanoseconds) / double(total.runs) / 1e6;
    std::printf("%10.3f %6.1f%% %6llu  %s\n", milliseconds,
                perRun > 0 ? 100.0 * milliseconds * 1e6 / perRun : 0.0,
                static_cast<unsigned long long>(total.steps), name.c_str());
  }
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

/// Writes `text` to `path` through a temporary file beside it, so that a
/// failure leaves no partial page.
void writeFileAtomically(const std::string &path, const std::string &text) {
  namespace fs = std::filesystem;
  fs::path temporary = fs::path(path).concat(".tmp" + std::to_string(::getpid()));
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    file.close();
    if (!file) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw std::runtime_error("cannot write " + path);
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) {
    fs::remove(temporary, error);
    throw std::runtime_error("cannot write " + path + ": " + error.message());
  }
}

/// The HTML report of the profiled `session` of the artifact `bytes`,
/// under the roofline `peaks`.
void writeReport(const std::string &path, const std::string &artifactPath,
                 const std::vector<uint8_t> &bytes, const tsl::Module &module,
                 const tsl::Session &session, const tessel::run::MachinePeaks &peaks) {
  tessel::run::ProfileData profile =
      tessel::run::readProfile(bytes.data(), session.stepTimings());
  tessel::run::RunDescription run;
  run.artifactName = std::filesystem::path(artifactPath).filename().string();
  run.threads = peaks.threads;
  run.weightBytes = module.memory().weight_bytes;
  tessel::run::NpuStatistics npu =
      tessel::run::readNpuStatistics(bytes.data(), session.npuStatistics());
  writeFileAtomically(path, tessel::run::renderHtmlReport(profile, peaks, run, &npu));
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Run a Tessel artifact: check it against expected outputs, time it"};
  std::string artifact, testData, outputDir, report, npuStatsFile, npuTraceFile;
  std::vector<std::string> inputFiles;
  double rtol = 1e-3, atol = 1e-5;
  int bench = 0, warmup = 10;
  unsigned threads = 0;
  int64_t batch = 1, length = -1;
  bool print = false;
  size_t profile = 0;
  app.add_option("artifact", artifact, "Compiled model (.tsl)")->required();
  app.add_option("--test-data", testData,
                 "Folder with input_N.pb and optionally output_N.pb (ONNX test-data layout)");
  app.add_option("--input", inputFiles,
                 "Input tensor file (.npy or TensorProto .pb), in signature order");
  app.add_option("--output-dir", outputDir, "Write outputs there as output_N.npy");
  app.add_option("--rtol", rtol, "Relative tolerance of the comparison");
  app.add_option("--atol", atol, "Absolute tolerance of the comparison");
  app.add_option("--bench", bench, "Time this many runs and print the latency");
  app.add_option("--warmup", warmup, "Untimed runs before --bench");
  app.add_option("--threads", threads, "Threads per run (0: one per core)");
  app.add_option("--batch", batch,
                 "Samples in the generated inputs of a model compiled with --dynamic-batch "
                 "(timing without --input or --test-data)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--length", length,
                 "The varying length of the generated inputs of a model compiled with "
                 "--max-shape (default: its bound)")
      ->check(CLI::NonNegativeNumber);
  std::string device;
  app.add_option("--device", device,
                 "Device to run on: cpu, cuda or npu; fails when it is absent. Default: the "
                 "GPU where the artifact has CUDA code and one is present, else the CPU");
  app.add_flag("--print", print, "Print the outputs");
  app.add_option("--profile", profile,
                 "Time every step and print this many kernels that took longest (10 when no "
                 "number follows)")
      ->expected(0, 1)
      ->default_str("10");
  app.add_option("--report", report,
                 "Write the profile as a self-contained HTML page: kernels by ONNX node, "
                 "roofline, memory plan, quantization (profiles every run)");
  bool npuSummary = false;
  app.add_option("--npu-trace", npuTraceFile,
                 "Write the NPU's load, execute and store queues of the last run as a "
                 "Chrome/Perfetto trace (JSON; open in ui.perfetto.dev or chrome://tracing)");
  app.add_option("--npu-stats", npuStatsFile,
                 "Write what the simulated NPU counted as JSON: cycles, energy and DRAM bytes "
                 "per inference, and per layer (ONNX nodes) compute and stall cycles, MACs, "
                 "utilization, DRAM bytes, energy; prints the summary too");
  app.add_flag("--npu-summary", npuSummary,
               "Print the NPU's latency at its clock, throughput, power, utilization and DMA "
               "stalls, per layer");
  std::vector<std::string> trustedKeyFiles;
  app.add_option("--require-signature", trustedKeyFiles,
                 "Load the artifact only if it is signed by this Ed25519 public key (PEM, as "
                 "`openssl pkey -pubout` writes it); repeat to trust several keys");
  CLI11_PARSE(app, argc, argv);

  try {
    tsl::LoadOptions loadOptions;
    loadOptions.requireSignature = !trustedKeyFiles.empty();
    for (const std::string &file : trustedKeyFiles)
      loadOptions.trustedKeys.push_back(tsl::readPublicKey(file));
    // A report reads the artifact's tables: they come from the very bytes
    // the runtime verified and loaded.
    bool readsTables = !report.empty() || !npuStatsFile.empty() || !npuTraceFile.empty() ||
                       npuSummary || !testData.empty();
    std::vector<uint8_t> artifactBytes;
    if (readsTables)
      artifactBytes = readFile(artifact);
    tsl::Module module =
        !readsTables
            ? tsl::Module::load(artifact, loadOptions)
            : tsl::Module::fromMemory(artifactBytes.data(), artifactBytes.size(), loadOptions);
    std::vector<tsl::TensorInfo> inputInfos = module.inputs();
    std::vector<tsl::TensorInfo> outputInfos = module.outputs();

    std::vector<HostTensor> inputs, expected;
    std::vector<std::string> structuralProblems;
    namespace fs = std::filesystem;
    if (!testData.empty()) {
      inputs = tessel::run::readTestInputs(testData, artifactBytes.data(), inputInfos.size());
      tessel::run::ExpectedOutputs outputs =
          tessel::run::readTestOutputs(testData, artifactBytes.data(), outputInfos.size());
      expected = std::move(outputs.tensors);
      structuralProblems = std::move(outputs.structuralProblems);
      for (size_t i = 0; i < inputs.size() && i < inputInfos.size(); ++i)
        adoptBfloat16Bits(inputs[i], inputInfos[i].dtype);
      for (size_t i = 0; i < expected.size(); ++i)
        adoptBfloat16Bits(expected[i], outputInfos[i].dtype);
    }
    for (const std::string &file : inputFiles)
      inputs.push_back(tessel::data::readTensorFile(file));
    // Timing, profiling and NPU counts need no data: deterministic inputs
    // stand in.
    // A model's dynamic dimensions are the batch, the varying length, or
    // both.
    bool batched = false;
    for (size_t i = 0; i < inputInfos.size(); ++i)
      for (size_t d = 0; d < inputInfos[i].shape.size(); ++d)
        batched |=
            inputInfos[i].shape[d] < 0 && static_cast<int32_t>(d) != module.inputVaryingAxis(i);
    if (module.maxLength() > 0 && !batched && app.count("--batch")) {
      std::fprintf(stderr, "tessel-run: error: --batch: the model's dynamic dimension is a "
                           "varying length (tessel-compile --max-shape); give --length\n");
      return 2;
    }
    if (module.maxLength() == 0 && length >= 0) {
      std::fprintf(stderr, "tessel-run: error: --length: the model has no varying length "
                           "(tessel-compile --max-shape)\n");
      return 2;
    }
    if (inputs.empty() && (bench > 0 || profile > 0 || readsTables))
      for (size_t i = 0; i < inputInfos.size(); ++i)
        inputs.push_back(randomInput(inputInfos[i], 1234 + i, batch, module.inputVaryingAxis(i),
                                     length < 0 ? module.maxLength() : length));
    if (inputs.size() != inputInfos.size()) {
      std::fprintf(stderr,
                   "tessel-run: error: the model has %zu inputs but %zu were "
                   "given (use --test-data or --input)\n",
                   inputInfos.size(), inputs.size());
      return 1;
    }

    std::vector<tsl::Tensor> inputTensors;
    for (HostTensor &input : inputs)
      inputTensors.push_back(tsl::Tensor::wrap(input.dtype, input.shape,
                                               input.bytes.data(), input.bytes.size()));
    // The roofline is measured before the session exists: its thread pool
    // would compete for the cores.
    tessel::run::MachinePeaks peaks;
    if (!report.empty())
      peaks = tessel::run::measureMachinePeaks(
          threads ? threads : std::max(1u, std::thread::hardware_concurrency()));
    tsl::SessionOptions options;
    options.threadCount = threads;
    options.device = device;
    options.profile = profile > 0 || !report.empty();
    options.npuTrace = !npuTraceFile.empty();
    tsl::Session session(module, options);
    std::printf("device: %s (%s)\n", session.device().c_str(),
                tsl_device_description(session.device().c_str()));
    std::vector<tsl::Tensor> outputs = session.run(inputTensors);

    std::vector<HostTensor> results;
    for (size_t i = 0; i < outputs.size(); ++i)
      results.push_back(toHost(outputs[i], outputInfos[i].name));
    if (print)
      for (size_t i = 0; i < results.size(); ++i)
        printTensor(results[i], outputInfos[i], 16);
    if (!outputDir.empty()) {
      fs::create_directories(outputDir);
      for (size_t i = 0; i < results.size(); ++i)
        tessel::data::writeNpy(
            (fs::path(outputDir) / ("output_" + std::to_string(i) + ".npy")).string(),
            results[i]);
    }

    bool pass = structuralProblems.empty();
    for (const std::string &problem : structuralProblems)
      std::printf("%s\n", problem.c_str());
    for (size_t i = 0; i < expected.size(); ++i) {
      tessel::run::Comparison comparison =
          tessel::run::compareTensors(results[i], expected[i], rtol, atol);
      std::printf("output %zu '%s' %s: ", i, outputInfos[i].name.c_str(),
                  formatShape(results[i].shape).c_str());
      if (!comparison.structuralProblem.empty()) {
        std::printf("%s\n", comparison.structuralProblem.c_str());
      } else {
        std::printf("max abs error %.3g, max rel error %.3g, %zu of %zu outside "
                    "rtol %g atol %g\n",
                    comparison.maxAbsoluteError, comparison.maxRelativeError,
                    comparison.mismatchCount, results[i].elementCount(), rtol, atol);
        for (const tessel::run::Mismatch &mismatch : comparison.worst)
          std::printf("  at %s: got %.9g, expected %.9g\n",
                      formatIndex(mismatch.index, results[i].shape).c_str(),
                      mismatch.actual, mismatch.expected);
      }
      pass &= comparison.pass;
    }
    if (!expected.empty() || !structuralProblems.empty())
      std::printf("%s\n", pass ? "PASS" : "FAIL");

    if (bench > 0) {
      for (int i = 0; i < warmup; ++i)
        session.run(inputTensors, outputs);
      std::vector<double> times;
      for (int i = 0; i < bench; ++i) {
        auto start = std::chrono::steady_clock::now();
        session.run(inputTensors, outputs);
        times.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count());
      }
      std::sort(times.begin(), times.end());
      std::printf("latency median %.3f ms, min %.3f ms (%d runs)\n",
                  times[times.size() / 2], times.front(), bench);
      tsl_memory_info memory = module.memory();
      std::printf("memory: arena %llu bytes, weights %llu bytes, scratch %llu bytes per "
                  "thread\n",
                  static_cast<unsigned long long>(memory.arena_bytes),
                  static_cast<unsigned long long>(memory.weight_bytes),
                  static_cast<unsigned long long>(memory.scratch_bytes_per_thread));
    }
    if (profile > 0)
      printProfile(session.stepTimings(), profile);
    if (!report.empty()) {
      writeReport(report, artifact, artifactBytes, module, session, peaks);
      std::printf("report: wrote %s\n", report.c_str());
    }
    if (!npuStatsFile.empty() || !npuTraceFile.empty() || npuSummary) {
      tessel::run::NpuStatistics npu =
          tessel::run::readNpuStatistics(artifactBytes.data(), session.npuStatistics());
      if (npu.layers.empty())
        throw std::runtime_error("the model runs nothing on the NPU (compile it with "
                                 "--target npu)");
      std::fputs(tessel::run::npuSummary(npu).c_str(), stdout);
      if (!npuStatsFile.empty()) {
        writeFileAtomically(npuStatsFile, tessel::run::npuStatisticsJson(npu));
        std::printf("npu-stats: wrote %s\n", npuStatsFile.c_str());
      }
      if (!npuTraceFile.empty()) {
        writeFileAtomically(npuTraceFile, tessel::run::npuTraceJson(npu));
        std::printf("npu-trace: wrote %s\n", npuTraceFile.c_str());
      }
    }
    return pass ? 0 : 1;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "tessel-run: error: %s\n", error.what());
    return 1;
  }
}
