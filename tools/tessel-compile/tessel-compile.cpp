//===- tessel-compile.cpp - Compile an ONNX model into a .tsl artifact ----===//

#include "compiler/Compiler.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <map>

namespace {

/// "1x3x224x224" -> {1, 3, 224, 224}.
std::optional<std::vector<int64_t>> parseDims(llvm::StringRef text) {
  std::vector<int64_t> dims;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, 'x');
  for (llvm::StringRef part : parts) {
    int64_t dim;
    if (part.getAsInteger(10, dim) || dim < 0)
      return std::nullopt;
    dims.push_back(dim);
  }
  return dims;
}

/// "3x4,2x4" -> {{3, 4}, {2, 4}}; "scalar" is a 0-d shape, "" no shape.
std::optional<std::vector<std::vector<int64_t>>> parseShapeList(llvm::StringRef text) {
  std::vector<std::vector<int64_t>> shapes;
  if (text.empty())
    return shapes;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  for (llvm::StringRef part : parts) {
    std::optional<std::vector<int64_t>> dims =
        part == "scalar" ? std::vector<int64_t>() : parseDims(part);
    if (!dims)
      return std::nullopt;
    shapes.push_back(*dims);
  }
  return shapes;
}

/// Parses each NAME=DIMS of option `flag` into `shapes`; false, after
/// saying so, for one that is not of the form `example`.
bool parseNamedShapes(const std::vector<std::string> &entries, llvm::StringRef flag,
                      llvm::StringRef example,
                      std::map<std::string, std::vector<int64_t>> &shapes) {
  for (const std::string &entry : entries) {
    auto [name, dims] = llvm::StringRef(entry).rsplit('=');
    std::optional<std::vector<int64_t>> parsed = parseDims(dims);
    if (name.empty() || !parsed) {
      llvm::errs() << "tessel-compile: " << flag << " expects " << example << ", got '" << entry
                   << "'\n";
      return false;
    }
    shapes[name.str()] = *parsed;
  }
  return true;
}

/// Writes `bytes` to `path` through a temporary file in the same
/// directory, so that a failure never leaves a partial artifact behind.
llvm::Error writeAtomically(const std::string &path, llvm::StringRef bytes) {
  llvm::SmallString<256> temporary;
  int fd;
  llvm::StringRef directory = llvm::sys::path::parent_path(path);
  llvm::SmallString<256> model(directory.empty() ? "." : directory);
  llvm::sys::path::append(model, llvm::sys::path::filename(path) + ".tmp-%%%%%%");
  if (std::error_code error = llvm::sys::fs::createUniqueFile(model, fd, temporary))
    return llvm::createStringError(error, "cannot create a file next to %s",
                                   path.c_str());
  {
    llvm::raw_fd_ostream stream(fd, /*shouldClose=*/true);
    stream << bytes;
    stream.close();
    if (stream.has_error()) {
      llvm::sys::fs::remove(temporary);
      return llvm::createStringError(stream.error(), "cannot write %s",
                                     path.c_str());
    }
  }
  if (std::error_code error = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return llvm::createStringError(error, "cannot write %s", path.c_str());
  }
  return llvm::Error::success();
}

/// Prints the compiler's stages on stderr, each with the time since the
/// start. On a terminal a stage's running sample count ("calibration:
/// 24/100 samples") rewrites its own line instead of adding one per step.
class ProgressPrinter {
public:
  explicit ProgressPrinter(bool terminal) : terminal(terminal) {}

  void operator()(llvm::StringRef stage) {
    constexpr llvm::StringLiteral kSamples = " samples";
    auto [counted, total] = stage.rsplit('/');
    bool running = terminal && total.ends_with(kSamples) &&
                   !counted.ends_with(total.drop_back(kSamples.size()));
    llvm::errs() << (pendingLine ? "\r\033[K" : "") << llvm::format("[%6.2fs] ", elapsed()) << stage
                 << (running ? "" : "\n");
    pendingLine = running;
  }

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

private:
  bool terminal;
  bool pendingLine = false;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

/// --check: every node that cannot be compiled, then the count per op.
int checkSupport(const std::string &model, const tessel::CompileOptions &options) {
  llvm::Expected<tessel::SupportReport> report = tessel::checkModel(model, options);
  if (!report) {
    llvm::errs() << "tessel-compile: error: " << llvm::toString(report.takeError())
                 << "\n";
    return 1;
  }
  if (report->problems.empty()) {
    llvm::outs() << model << ": all " << report->nodeCount
                 << " nodes can be compiled (opset " << report->opset << ")\n";
    if (report->integerOps > 0 || !report->floatIslands.empty())
      llvm::outs() << "quantized:\n"
                   << tessel::formatFloatIslands(report->integerOps, report->floatIslands, "  ");
    return 0;
  }
  int64_t failing = 0;
  for (const auto &entry : report->failingNodesByOp)
    failing += entry.second;
  llvm::outs() << model << ": " << failing << " of " << report->nodeCount
               << " nodes cannot be compiled (opset " << report->opset << "):\n";
  for (const std::string &problem : report->problems)
    llvm::outs() << "  " << problem << "\n";
  llvm::outs() << "by op:\n";
  for (const auto &[op, count] : report->failingNodesByOp)
    llvm::outs() << llvm::format("  %-28s %lld node%s\n", op.c_str(),
                                 static_cast<long long>(count), count == 1 ? "" : "s");
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  // A crash, which is always a bug, prints where it happened.
  llvm::InitLLVM initialization(argc, argv);
  CLI::App app{"Compile an ONNX model ahead of time into a Tessel artifact (.tsl)"};
  std::string model, output;
  std::string target = "x86", cpu, emit = "artifact";
  int optLevel = 3;
  std::vector<std::string> shapes, maxShapes, statedShapes, frozen, sequences, absent;
  bool quiet = false, forceProgress = false, check = false, noBiasCorrection = false;
  bool dynamicBatch = false, emitAllConstants = false;
  std::string quantize, calibration, calibrationMethod = "percentile", activations = "u8",
              weightPairs = "auto";
  std::string quantizeReport;
  double percentile = 99.999, minSqnr = tessel::QuantizeOptions().minSqnrDb;
  size_t calibrationSamples = 0;
  app.add_option("model", model, "ONNX model file")->required();
  app.add_option("-o,--output", output,
                 "Output file (required for artifacts; '-' or absent prints "
                 "textual forms to stdout)");
  std::string npuConfig;
  app.add_option("--target", target,
                 "Devices to compile for, in the order kernels are placed on them: one or "
                 "more of " + llvm::join(tessel::availableTargets(), ", ") +
                     ", comma-separated; x86 runs what the others cannot and is added "
                     "last (npu means npu,x86)");
  app.add_option("--npu-config", npuConfig,
                 "The NPU's configuration: a JSON file with the keys of docs/npu/isa.md "
                 "section 2 (array size, dataflow, memories, DMA, clock, energy); default: "
                 "the ISA's defaults")
      ->check(CLI::ExistingFile);
  app.add_option("-O", optLevel, "Optimization level (-O0 .. -O3)")
      ->check(CLI::Range(0, 3));
  app.add_option("--target-cpu", cpu,
                 "CPU to generate code for (LLVM name, e.g. znver4, skylake-avx512); "
                 "default: this machine's");
  std::string cudaArchitectures;
  app.add_option("--cuda-arch", cudaArchitectures,
                 "GPU architectures of the CUDA target, comma-separated (sm_80, sm_86, sm_89, "
                 "sm_90); default: sm_80,sm_90");
  bool cudaCubins = false;
  app.add_flag("--cuda-cubins", cudaCubins,
               "Also assemble each CUDA architecture's PTX into a cubin with the CUDA toolkit's "
               "ptxas (on PATH, else in $CUDA_HOME/bin): a GPU of that architecture then loads "
               "its kernels without the driver's JIT. The PTX stays, for other GPUs");
  std::string precision = "fp16";
  app.add_option("--precision", precision,
                 "What matrix products and convolutions read their operands as; they "
                 "accumulate in f32, and the model's inputs and outputs keep their types. "
                 "CUDA: fp16 or bf16 on the tensor cores, fp32 on the FMA units (default: "
                 "fp16). CPU alone: bf16 for the products with constant weights (VDPBF16PS "
                 "or FMAs, whichever this CPU runs faster), f32 otherwise; with --quantize "
                 "int8, bf16 is what the accuracy budget keeps a layer in instead of f32")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--emit", emit,
                 "What to produce: the artifact, an intermediate form, or (qdq-onnx) the "
                 "graph as Tessel quantized it, as a QDQ ONNX model")
      ->check(CLI::IsMember(tessel::emitKindNames()));
  app.add_flag("--emit-all-constants", emitAllConstants,
               "With --emit tessel or linalg: print every constant in full, so that the "
               "output can be read back (by tessel-opt or tessel-cuda-emulate); by default "
               "constants of more than 16 elements print as dense_resource<__elided__>");
  app.add_option("--shape", shapes,
                 "Static shape for an input with symbolic dimensions: NAME=1x3x224x224");
  app.add_option("--max-shape", maxShapes,
                 "Bound an input's symbolic dimension instead of fixing it: NAME=32x1x64 "
                 "compiles one artifact for every size up to 32 of that dimension (a sequence "
                 "length, one symbol for all inputs). Runs pad to the bound; no node may let "
                 "positions along it meet, except LSTM, GRU and RNN, which read the length as "
                 "their sequence_lens");
  app.add_flag("--dynamic-batch", dynamicBatch,
               "Compile one artifact for any batch size: dimension 0 of the inputs where it "
               "is symbolic is the batch, and the model must keep its samples apart (no "
               "node may mix them); the artifact computes one sample at a time");
  app.add_option("--value-shape", statedShapes,
                 "State the shape of a graph output or intermediate value: NAME=2x3x4. A node "
                 "whose shape, axes or pads input is a graph input compiles for its stated "
                 "result shape and checks the input at run time");
  app.add_option("--sequence", sequences,
                 "Compile a sequence-typed graph input for tensors of the shapes given: "
                 "NAME=3x4,2x4 (one shape per tensor, 'scalar' for a 0-d one, nothing after = "
                 "for an empty sequence); each tensor is an input of the artifact, NAME[i]");
  app.add_option("--absent", absent,
                 "Compile an optional-typed graph input as holding nothing (by default it "
                 "holds its element)");
  app.add_option("--freeze-input", frozen,
                 "Give a graph input its value at compile time: NAME=VALUE.pb "
                 "(an ONNX TensorProto); it leaves the artifact's inputs");
  app.add_flag("--check", check,
               "Only report every node that cannot be compiled, with a summary per "
               "op; exit 1 if there is any");
  app.add_flag("-q,--quiet", quiet, "Print no progress");
  app.add_flag("--progress", forceProgress,
               "Print progress even when stderr is not a terminal (by default only on one)");
  app.add_option("--quantize", quantize,
                 "Quantize the float model after training (needs --calibration)")
      ->check(CLI::IsMember({"int8"}));
  app.add_option("--calibration", calibration,
                 "Calibration inputs: a folder of test_data_set_*/input_N.pb folders, "
                 "or of one .npy file per input (samples stacked on a leading axis)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--calibration-method", calibrationMethod,
                 "How each tensor's range is chosen from its histogram")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse"}));
  app.add_option("--calibration-percentile", percentile,
                 "Percentile kept by --calibration-method percentile")
      ->check(CLI::Range(50.0, 100.0));
  app.add_option("--calibration-samples", calibrationSamples,
                 "Use at most this many calibration samples (default: all)");
  app.add_option("--activations", activations,
                 "Activation type: u8 with a zero point, or s8 symmetric")
      ->check(CLI::IsMember({"u8", "s8"}));
  app.add_option("--weight-pairs", weightPairs,
                 "fit-i16: choose weight levels whose pairs of adjacent input channels fit "
                 "16-bit sums, so that x86 CPUs without VNNI multiply them exactly with "
                 "VPMADDUBSW (faster INT8, slightly coarser weights); auto (default): "
                 "fit-i16 where the target CPU lacks VNNI, for the layers doing at least "
                 "0.5% of the model's multiply-adds; any: the nearest levels")
      ->check(CLI::IsMember({"auto", "any", "fit-i16"}));
  app.add_flag("--no-bias-correction", noBiasCorrection,
               "Keep each bias as calibrated: do not correct it for the mean error its "
               "layer's quantized weights add (measured on the calibration inputs)");
  app.add_option("--min-sqnr", minSqnr,
                 "Keep in float a layer whose own quantization error leaves its output "
                 "below this SQNR (dB)");
  app.add_option("--quantize-report", quantizeReport,
                 "Write what quantization did per layer (precision, scales, SQNR) as JSON");
  std::string signingKeyPath;
  app.add_option("--sign", signingKeyPath,
                 "Sign the artifact with this Ed25519 private key (PEM, as `openssl genpkey "
                 "-algorithm ed25519` writes it); runtimes that require signatures load it "
                 "only if they trust the key");
  CLI11_PARSE(app, argc, argv);

  tessel::CompileOptions options;
  options.target = target;
  options.npuConfigFile = npuConfig;
  // Where each kernel runs, when there is a choice: on stdout with the
  // quantization table, unless the compiled form itself goes there.
  bool formToStdout = emit != "artifact" && emit != "qdq-onnx" && (output.empty() || output == "-");
  options.placement = [&, formToStdout](const std::string &placement) {
    (formToStdout ? llvm::errs() : llvm::outs()) << placement;
  };
  options.optLevel = optLevel;
  options.cpu = cpu;
  options.import.dynamicBatch = dynamicBatch;
  options.elideLargeConstants = !emitAllConstants;
  options.precision = precision;
  llvm::SmallVector<llvm::StringRef> architectures;
  llvm::StringRef(cudaArchitectures).split(architectures, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef architecture : architectures)
    options.cudaArchitectures.push_back(architecture.trim().str());
  options.cudaCubins = cudaCubins;
  if (app.count("--cuda-arch") && options.cudaArchitectures.empty()) {
    llvm::errs() << "tessel-compile: error: --cuda-arch names no architecture\n";
    return 1;
  }
  if (!parseNamedShapes(shapes, "--shape", "NAME=1x3x224x224", options.import.inputShapes) ||
      !parseNamedShapes(maxShapes, "--max-shape", "NAME=32x1x64", options.import.maxShapes) ||
      !parseNamedShapes(statedShapes, "--value-shape", "NAME=2x3x4", options.import.statedShapes))
    return 2;
  for (const std::string &entry : sequences) {
    auto [name, list] = llvm::StringRef(entry).split('=');
    std::optional<std::vector<std::vector<int64_t>>> parsed = parseShapeList(list);
    if (name.empty() || !llvm::StringRef(entry).contains('=') || !parsed) {
      llvm::errs() << "tessel-compile: --sequence expects NAME=3x4,2x4, got '" << entry << "'\n";
      return 2;
    }
    options.import.sequenceShapes[name.str()] = *parsed;
  }
  options.import.absentInputs.insert(absent.begin(), absent.end());
  for (const std::string &entry : frozen) {
    auto [name, file] = llvm::StringRef(entry).split('=');
    if (name.empty() || file.empty()) {
      llvm::errs() << "tessel-compile: --freeze-input expects NAME=VALUE.pb, got '"
                   << entry << "'\n";
      return 2;
    }
    options.import.frozenInputs[name.str()] = file.str();
  }
  if (check)
    return checkSupport(model, options);
  if (!quantize.empty() && calibration.empty()) {
    llvm::errs() << "tessel-compile: --quantize int8 needs --calibration DIR\n";
    return 2;
  }
  if (quantize.empty() && (!calibration.empty() || !quantizeReport.empty())) {
    llvm::errs() << "tessel-compile: --calibration and --quantize-report need --quantize int8\n";
    return 2;
  }
  std::string reportJson;
  if (!quantize.empty()) {
    tessel::QuantizeOptions &quantizeOptions = options.quantize.emplace();
    quantizeOptions.calibrationDirectory = calibration;
    quantizeOptions.sampleLimit = calibrationSamples;
    tessel::quantize::parseCalibrationMethod(calibrationMethod, quantizeOptions.method);
    quantizeOptions.percentile = percentile;
    quantizeOptions.signedActivations = activations == "s8";
    quantizeOptions.weightPairs = *tessel::parseWeightPairs(weightPairs);
    quantizeOptions.minSqnrDb = minSqnr;
    quantizeOptions.biasCorrection = !noBiasCorrection;
    bool textToStdout =
        emit != "artifact" && emit != "qdq-onnx" && (output.empty() || output == "-");
    options.quantizationReport = [&, textToStdout](const tessel::QuantizationReport &report) {
      (textToStdout ? llvm::errs() : llvm::outs()) << report.table();
      reportJson = report.json();
    };
  }
  bool terminal = llvm::errs().is_displayed();
  bool showProgress = !quiet && (terminal || forceProgress);
  ProgressPrinter progress(terminal);
  if (showProgress)
    options.progress = [&](llvm::StringRef stage) { progress(stage); };

  tessel::EmitKind kind = *tessel::parseEmitKind(emit);
  if (kind == tessel::EmitKind::Artifact && (output.empty() || output == "-")) {
    llvm::errs() << "tessel-compile: an artifact needs an output file (-o model.tsl)\n";
    return 2;
  }
  if (kind == tessel::EmitKind::QdqOnnx && (output.empty() || output == "-")) {
    llvm::errs() << "tessel-compile: --emit qdq-onnx needs an output file (-o model_int8.onnx)\n";
    return 2;
  }

  // The key is read before the compile, which can take minutes, starts.
  std::optional<tessel::SigningKey> signingKey;
  if (!signingKeyPath.empty()) {
    if (kind != tessel::EmitKind::Artifact) {
      llvm::errs() << "tessel-compile: --sign signs artifacts; it does not apply to --emit " << emit
                   << "\n";
      return 2;
    }
    llvm::Expected<tessel::SigningKey> key = tessel::SigningKey::readPem(signingKeyPath);
    if (!key) {
      llvm::errs() << "tessel-compile: error: " << llvm::toString(key.takeError()) << "\n";
      return 1;
    }
    signingKey = std::move(*key);
    options.signingKey = &*signingKey;
  }

  std::string result;
  llvm::raw_string_ostream stream(result);
  if (llvm::Error error = tessel::compileModel(model, options, kind, stream)) {
    llvm::errs() << "tessel-compile: error: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }
  if (!quantizeReport.empty())
    if (llvm::Error error = writeAtomically(quantizeReport, reportJson)) {
      llvm::errs() << "tessel-compile: error: " << llvm::toString(std::move(error)) << "\n";
      return 1;
    }
  if (output.empty() || output == "-") {
    llvm::outs() << result;
    return 0;
  }
  if (llvm::Error error = writeAtomically(output, result)) {
    llvm::errs() << "tessel-compile: error: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }
  if (showProgress)
    llvm::errs() << llvm::format("[%6.2fs] ", progress.elapsed()) << "wrote " << output << " ("
                 << llvm::format("%.2f", result.size() / 1e6) << " MB)\n";
  return 0;
}
