//===- Compile.cpp - The compiler as the Python module sees it ------------===//

#include "Compile.h"

#include "compiler/Compiler.h"
#include "compiler/quantize/Histogram.h"

namespace tessel::python {

namespace {

/// The options of `request`, or why they are wrong.
std::optional<std::string> toOptions(const CompileRequest &request, CompileOptions &options) {
  options.target = request.target;
  options.npuConfigFile = request.npuConfig;
  options.cpu = request.cpu;
  options.cudaArchitectures = request.cudaArchitectures;
  options.cudaCubins = request.cudaCubins;
  if (!request.precision.empty())
    options.precision = request.precision;
  if (request.optLevel < 0 || request.optLevel > 3)
    return "opt_level must be 0 to 3, not " + std::to_string(request.optLevel);
  options.optLevel = request.optLevel;
  options.import.inputShapes = request.shapes;
  options.import.frozenInputs = request.frozenInputs;
  options.import.dynamicBatch = request.dynamicBatch;
  options.import.maxShapes = request.maxShapes;
  if (request.progress)
    options.progress = [&request](llvm::StringRef stage) { request.progress(stage.str()); };
  if (request.quantize.empty()) {
    if (!request.calibration.empty())
      return std::string("calibration needs quantize=\"int8\"");
    return std::nullopt;
  }
  if (request.quantize != "int8")
    return "quantize must be \"int8\", not \"" + request.quantize + "\"";
  if (request.calibration.empty())
    return std::string("quantize=\"int8\" needs calibration (a folder of inputs)");
  QuantizeOptions &quantize = options.quantize.emplace();
  quantize.calibrationDirectory = request.calibration;
  quantize.sampleLimit = request.calibrationSamples;
  if (!quantize::parseCalibrationMethod(request.calibrationMethod, quantize.method))
    return "calibration_method must be minmax, percentile, entropy or mse, not \"" +
           request.calibrationMethod + "\"";
  if (request.activations != "u8" && request.activations != "s8")
    return "activations must be \"u8\" or \"s8\", not \"" + request.activations + "\"";
  quantize.signedActivations = request.activations == "s8";
  quantize.minSqnrDb = request.minSqnrDb;
  return std::nullopt;
}

} // namespace

CompileResult compile(const CompileRequest &request) {
  CompileResult result;
  CompileOptions options;
  if (std::optional<std::string> problem = toOptions(request, options)) {
    result.error = *problem;
    return result;
  }
  std::optional<EmitKind> emit = parseEmitKind(request.emit);
  if (!emit) {
    result.error = "unknown emit kind \"" + request.emit + "\"";
    return result;
  }
  // The key is read before the compile, which can take minutes, starts.
  std::optional<SigningKey> signingKey;
  if (!request.signingKey.empty()) {
    if (*emit != EmitKind::Artifact) {
      result.error = "sign signs artifacts; it does not apply to emit=\"" + request.emit + "\"";
      return result;
    }
    llvm::Expected<SigningKey> key = SigningKey::readPem(request.signingKey);
    if (!key) {
      result.error = llvm::toString(key.takeError());
      return result;
    }
    signingKey = std::move(*key);
    options.signingKey = &*signingKey;
  }
  if (options.quantize)
    options.quantizationReport = [&result](const QuantizationReport &report) {
      result.quantizationReport = report.json();
    };
  std::string output;
  llvm::raw_string_ostream stream(output);
  if (llvm::Error error = compileModel(request.modelPath, options, *emit, stream)) {
    result.error = llvm::toString(std::move(error));
    return result;
  }
  result.output = std::move(output);
  return result;
}

std::vector<std::string> availableTargets() { return tessel::availableTargets(); }

std::vector<std::string> emitKindNames() { return tessel::emitKindNames(); }

std::string compilerVersion() { return tessel::compilerVersion().str(); }

} // namespace tessel::python
