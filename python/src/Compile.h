//===- Compile.h - The compiler as the Python module sees it ----*- C++ -*-===//
//
// The compile API in standard types only. The nanobind module is built with
// RTTI (nanobind needs it) and the compiler without (as libMLIR/libLLVM
// are), so the two meet here and the module never includes an MLIR or LLVM
// header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PYTHON_COMPILE_H
#define TESSEL_PYTHON_COMPILE_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessel::python {

/// tessel.compile's arguments, with tessel-compile's meaning and defaults.
struct CompileRequest {
  std::string modelPath;
  std::string target = "x86";
  /// --npu-config: the NPU's configuration file; empty for the defaults.
  std::string npuConfig;
  std::string cpu;
  /// --cuda-arch: the CUDA target's architectures; empty for its default.
  std::vector<std::string> cudaArchitectures;
  /// --cuda-cubins: a cubin beside each architecture's PTX.
  bool cudaCubins = false;
  /// --precision: fp32, fp16 or bf16; empty for the compiler's default.
  std::string precision;
  int optLevel = 3;
  std::string emit = "artifact";
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, std::string> frozenInputs;
  bool dynamicBatch = false;
  /// --max-shape: input name -> its shape with bounds for symbolic dims.
  std::map<std::string, std::vector<int64_t>> maxShapes;
  /// Empty, or "int8" with a calibration folder.
  std::string quantize;
  std::string calibration;
  std::string calibrationMethod = "percentile";
  std::string activations = "u8";
  double minSqnrDb = 15.0;
  size_t calibrationSamples = 0;
  /// --sign: the Ed25519 private key (PEM) that signs the artifact; empty
  /// for none.
  std::string signingKey;
  /// Called with each stage's one-line description; may be empty.
  std::function<void(const std::string &)> progress;
};

struct CompileResult {
  /// The requested form; empty when `error` is set.
  std::string output;
  /// Every diagnostic of a failed compile.
  std::string error;
  /// What quantization did, per layer, as JSON (only with quantize).
  std::string quantizationReport;
};

/// Compiles as tessel-compile does; never throws for a bad model or option.
CompileResult compile(const CompileRequest &request);

std::vector<std::string> availableTargets();
std::vector<std::string> emitKindNames();
std::string compilerVersion();

} // namespace tessel::python

#endif // TESSEL_PYTHON_COMPILE_H
