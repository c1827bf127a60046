//===- Compiler.h - Compile an ONNX model into a Tessel artifact -*- C++ -*-===//
//
// The C++ compile API: ONNX file in, artifact (or an intermediate form) out.
// tessel-compile is a thin command line around it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_COMPILER_H
#define TESSEL_COMPILER_COMPILER_H

#include "compiler/artifact/Signing.h"
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/quantize/PostTraining.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>

namespace tessel {

/// What compileModel produces.
enum class EmitKind {
  Tessel,   // the tessel dialect after graph optimization and kernel formation
  Linalg,   // the shared linalg-on-tensors form
  LLVMIR,   // the target's optimized LLVM IR
  Assembly, // the target's assembly
  Artifact, // the .tsl file
  QdqOnnx,  // the graph as Tessel quantized it, as a QDQ ONNX model
  Npu,      // the NPU programs of the kernels placed on the NPU
  Ptx,      // the PTX of the CUDA kernels, one module per architecture
};

/// "tessel", "linalg", "llvm", "asm", "artifact", "qdq-onnx", "npu", "ptx": the
/// spellings of --emit, in that order.
std::vector<std::string> emitKindNames();
/// The EmitKind spelled `name`; std::nullopt for none.
std::optional<EmitKind> parseEmitKind(llvm::StringRef name);

struct CompileOptions {
  /// The targets, comma-separated, in the order placement tries them; the
  /// CPU (x86) is added last when missing ("npu" means "npu,x86").
  std::string target = "x86";
  /// The NPU's configuration file (--npu-config); the defaults when empty.
  std::string npuConfigFile;
  /// Receives the placement of the kernels when there are several targets.
  std::function<void(const std::string &)> placement;
  int optLevel = 3;
  /// CPU to generate code for; empty means the host.
  std::string cpu;
  /// GPU architectures of the CUDA target (--cuda-arch); empty means the
  /// target's default, sm_80 and sm_90.
  std::vector<std::string> cudaArchitectures;
  /// Add a cubin per CUDA architecture beside its PTX (--cuda-cubins),
  /// assembled by the CUDA toolkit's ptxas.
  bool cudaCubins = false;
  /// What matrix products and convolutions read their operands as
  /// (--precision: fp32, fp16 or bf16); they accumulate in f32. The CUDA
  /// target puts fp16 and bf16 products on the tensor cores, rounding their
  /// operands itself. Without it, bf16 makes the products with constant
  /// weights bf16 products for the CPU (VDPBF16PS, or FMAs of the widened
  /// halves), and the other values stay f32. With `quantize`, bf16 is what
  /// the accuracy budget keeps a layer in instead of f32.
  std::string precision = "fp16";
  ImportOptions import;
  /// Called at the start of each stage with a one-line description.
  std::function<void(llvm::StringRef)> progress;
  /// Quantize the float model after training (--quantize int8).
  std::optional<QuantizeOptions> quantize;
  /// Receives what quantization did, per layer.
  std::function<void(const QuantizationReport &)> quantizationReport;
  /// Signs the artifact (--sign); not owned.
  const SigningKey *signingKey = nullptr;
  /// Whether an intermediate form (--emit tessel, linalg) prints constants
  /// of more than 16 elements as dense_resource<__elided__>, which keeps the
  /// weights out of it but cannot be read back (--emit-all-constants).
  bool elideLargeConstants = true;
};

/// The names of the targets compileModel accepts.
std::vector<std::string> availableTargets();

/// Compiles `modelPath` and writes `emit` to `out`. An error carries every
/// diagnostic (for an unsupported model, every unsupported node); nothing is
/// written to `out` before the requested form is complete.
llvm::Error compileModel(llvm::StringRef modelPath, const CompileOptions &options,
                         EmitKind emit, llvm::raw_ostream &out);

/// Lists what in `modelPath` cannot be compiled, without compiling it
/// (`tessel-compile --check`).
llvm::Expected<SupportReport> checkModel(llvm::StringRef modelPath,
                                         const CompileOptions &options);

/// The version string recorded in artifacts.
llvm::StringRef compilerVersion();

} // namespace tessel

#endif // TESSEL_COMPILER_COMPILER_H
