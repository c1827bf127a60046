//===- CudaEmulator.cpp - The CUDA target's kernels, run on the host ------===//
//
// tessel-cuda-emulate checks, without a GPU, the kernels the CUDA target
// generates: their tiles, launches and grids, the thread indices and their
// delinearization, the scratch of their temporaries, the tensor-core
// products' shared-memory tiles, barriers and mma fragments, and the row
// kernels' partial results and barriers, through the NVVM conversion and
// LLVM's optimizer. It reads the kernels of a model (`tessel-compile
// --emit linalg`) and runs each in two forms (KernelPair.h): upstream
// linalg's loops, and the CUDA target's kernels at `--precision`, their
// LLVM IR as the NVPTX backend gets it, run on the host block by block and
// thread by thread as the runtime launches them (DeviceProgram.h). They
// run on the same inputs and their outputs are compared.
//
// The inputs are either
//   - pseudo-random, each kernel alone (by default), or
//   - the model's own (`--input`, with --emit-all-constants): @main runs,
//     each kernel on what the emulated kernels before it computed
//     (ModelRun.h), and the model's outputs go to `--output-dir` as
//     output_N.npy, for a comparison with the x86 executable's.
//
// Prints one line per kernel (per call with --input) and a summary, `N
// kernels: N match, N differ` (`N calls of M kernels: ...` with --input);
// exits non-zero when any differs or fails. What it cannot check is the
// NVPTX backend's instruction selection and the PTX (ptxas and the GPU
// checks cover those).
//
//===----------------------------------------------------------------------===//

#include "KernelPair.h"
#include "ModelRun.h"

#include "compiler/Registration.h"
#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/TargetSelect.h"

#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <vector>

using namespace mlir;
using namespace tessel::cuda::emulator;

namespace {

llvm::cl::opt<std::string> inputFile(llvm::cl::Positional, llvm::cl::Required,
                                     llvm::cl::desc("<kernels.mlir>"));
llvm::cl::opt<std::string> onlyKernel("kernel", llvm::cl::desc("Check only this kernel"));
llvm::cl::opt<std::string> precisionName(
    "precision", llvm::cl::init("fp32"),
    llvm::cl::desc("What the matrix products read their operands as: fp32, fp16 or bf16"));
llvm::cl::opt<bool> removeBarriers(
    "remove-barriers",
    llvm::cl::desc("Remove the barriers of the launches before running them (a check that the "
                   "emulator sees a race between warps)"));
llvm::cl::opt<bool> removeCopyWaits(
    "remove-copy-waits",
    llvm::cl::desc("Remove the waits for cp.async's copies before running the launches (a check "
                   "that the emulator sees the copies land only when waited for)"));
llvm::cl::list<std::string> modelInputs(
    "input",
    llvm::cl::desc("Run the model's @main on this input (.npy or TensorProto .pb; one per input, "
                   "in order) instead of each kernel on pseudo-random inputs"));
llvm::cl::opt<std::string>
    outputDir("output-dir",
              llvm::cl::desc("With --input: write the model's outputs there as output_N.npy"));
llvm::cl::opt<std::string> referenceOutputDir(
    "reference-output-dir",
    llvm::cl::desc("Run the model's @main (on --input) and write there the outputs of the "
                   "reference kernels run one after "
                   "the other (upstream linalg's loops, the operands rounded as the emulated "
                   "kernels round them)"));

/// Pseudo-random contents for an input: floats in [-1, 1] (rounded to the
/// element type), bytes over their range; wider integers 0, which is an
/// index within any axis (a gather's indices would otherwise read out of
/// bounds in both versions).
void fill(Buffer &buffer, std::mt19937 &random) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  unsigned width = buffer.element.getIntOrFloatBitWidth();
  size_t bytes = std::max(1u, width / 8), count = buffer.bytes.size() / bytes;
  auto floating = dyn_cast<FloatType>(buffer.element);
  for (size_t i = 0; i < count; ++i) {
    if (floating) {
      llvm::APFloat value(real(random));
      bool inexact;
      value.convert(floating.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &inexact);
      uint64_t bits = value.bitcastToAPInt().getZExtValue();
      std::memcpy(&buffer.bytes[i * bytes], &bits, bytes); // little-endian
    } else if (width == 8) {
      buffer.bytes[i] = static_cast<uint8_t>(random());
    } else if (width == 1) {
      buffer.bytes[i] = random() & 1;
    }
  }
}

/// Checks one kernel on pseudo-random inputs; prints its line. False when
/// it differs or fails.
bool checkKernel(func::FuncOp kernel, const EmulationOptions &options) {
  llvm::StringRef name = kernel.getSymName();
  llvm::Expected<std::unique_ptr<KernelPair>> pair = KernelPair::compile(kernel, options);
  if (!pair) {
    llvm::outs() << name << ": " << llvm::toString(pair.takeError()) << "\n";
    return false;
  }
  std::vector<Buffer> inputs = (*pair)->inputBuffers();
  std::vector<const Buffer *> arguments;
  std::mt19937 random(1234);
  for (Buffer &input : inputs) {
    fill(input, random);
    arguments.push_back(&input);
  }
  llvm::Expected<KernelComparison> comparison = (*pair)->run(arguments);
  if (!comparison) {
    llvm::outs() << name << ": " << llvm::toString(comparison.takeError()) << "\n";
    return false;
  }
  (*pair)->printComparison(llvm::outs(), name, *comparison);
  return comparison->match;
}

/// Checks every kernel of `module` (or --kernel) on pseudo-random inputs.
int checkEachKernel(ModuleOp module, const EmulationOptions &options) {
  unsigned checked = 0, matched = 0;
  for (auto kernel : module.getOps<func::FuncOp>()) {
    if (kernel.isDeclaration() || !kernel->hasAttr(tessel::kKernelAttrName) ||
        (!onlyKernel.empty() && kernel.getSymName() != onlyKernel))
      continue;
    ++checked;
    // A public function keeps its results through bufferization, so its
    // call would not match the buffers passed to it.
    if (!kernel.isPrivate()) {
      llvm::outs() << kernel.getSymName()
                   << ": not a private function (kernels are, as tessel-compile --emit linalg "
                      "writes them)\n";
      continue;
    }
    matched += checkKernel(kernel, options);
  }
  llvm::outs() << checked << " kernels: " << matched << " match, " << checked - matched
               << " differ\n";
  return checked && matched == checked ? 0 : 1;
}

/// Writes `outputs` into `folder` as output_N.npy. False, with a message,
/// when it cannot.
bool writeOutputs(const std::string &folder, const std::vector<tessel::data::HostTensor> &outputs) {
  try {
    std::filesystem::create_directories(folder);
    for (auto [index, output] : llvm::enumerate(outputs)) {
      std::string name = "output_" + std::to_string(index) + ".npy";
      tessel::data::HostTensor file = output;
      // (NumPy has no bf16, 8-bit floats or sub-byte integers: their bits
      // go out as unsigned integers of their size.)
      if (!tessel::data::hasNpyType(file.dtype))
        file.dtype = tsl_dtype_size(file.dtype) == 2 ? TSL_U16 : TSL_U8;
      tessel::data::writeNpy((std::filesystem::path(folder) / name).string(), file);
      llvm::outs() << "wrote " << folder << "/" << name << " (" << output.name << ", "
                   << tessel::data::formatShape(output.shape)
                   << (file.dtype == output.dtype
                           ? ""
                           : std::string(", the bits of its ") + tsl_dtype_name(output.dtype))
                   << ")\n";
    }
  } catch (const std::exception &error) {
    llvm::errs() << "error: " << error.what() << "\n";
    return false;
  }
  return true;
}

/// Runs the model on --input, checks each kernel call, writes its outputs
/// to --output-dir (and --reference-output-dir).
int runWholeModel(ModuleOp module, const EmulationOptions &options) {
  std::vector<tessel::data::HostTensor> inputs;
  for (const std::string &path : modelInputs) {
    try {
      inputs.push_back(tessel::data::readTensorFile(path));
    } catch (const std::exception &error) {
      llvm::errs() << "error: " << error.what() << "\n";
      return 1;
    }
  }
  unsigned calls = 0, matched = 0;
  llvm::StringSet<> kernels;
  llvm::Expected<ModelOutputs> outputs = runModel(
      module, options, inputs, !referenceOutputDir.empty(),
      [&](llvm::StringRef kernel, const KernelPair &pair, const KernelComparison &comparison) {
        pair.printComparison(llvm::outs(), kernel, comparison);
        ++calls;
        matched += comparison.match;
        kernels.insert(kernel);
      });
  if (!outputs) {
    llvm::outs().flush();
    llvm::errs() << "error: " << llvm::toString(outputs.takeError()) << "\n";
    return 1;
  }
  llvm::outs() << calls << " calls of " << kernels.size() << " kernels: " << matched << " match, "
               << calls - matched << " differ\n";
  if ((!outputDir.empty() && !writeOutputs(outputDir, outputs->emulated)) ||
      (!referenceOutputDir.empty() && !writeOutputs(referenceOutputDir, outputs->reference)))
    return 1;
  return calls && matched == calls ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "Runs the CUDA target's kernels on the host\n");
  std::optional<tessel::ProductPrecision> precision = tessel::parseProductPrecision(precisionName);
  if (!precision) {
    llvm::errs() << "error: unknown --precision '" << precisionName
                 << "' (known: fp32, fp16, bf16)\n";
    return 2;
  }
  // (A model without inputs runs whole when its outputs are asked for.)
  bool wholeModel = !modelInputs.empty() || !outputDir.empty() || !referenceOutputDir.empty();
  if (wholeModel && !onlyKernel.empty()) {
    llvm::errs() << "error: --kernel checks one kernel on pseudo-random inputs; --input and "
                    "--output-dir run the whole model\n";
    return 2;
  }
  EmulationOptions options{*precision, {removeBarriers, removeCopyWaits}};
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  tessel::registerCompilerDialects(registry);
  registry.insert<gpu::GPUDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &context);
  if (!module)
    return 1;
  return modelInputs.empty() ? checkEachKernel(*module, options) : runWholeModel(*module, options);
}
