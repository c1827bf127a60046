//===- CudaEmulator.cpp - The CUDA target's kernels, run on the host ------===//
//
// tessel-cuda-emulate checks, without a GPU, what the CUDA target decides
// about each kernel: its tiles, its launches and their grids, the flat
// thread index and its delinearization, the views rebuilt inside each
// launch, the scratch of its temporaries. It reads the kernels of a model
// (`tessel-compile --emit linalg`) and, for each kernel:
//
//   reference  bufferized and lowered to loops by upstream linalg alone;
//   emulated   the CUDA target's own lowering (Loops.h) and launches
//              (Launches.h), each launch run as loops over its blocks and
//              threads (one of the schedules a GPU may pick: the kernels
//              have no barriers).
//
// Both are JIT-compiled for the host with the same math lowering, run on the
// same pseudo-random inputs, and their outputs compared. Prints one line per
// kernel and a summary `N kernels: N match, N differ`; exits non-zero when any
// differs or fails to compile. What it cannot check is after the launches:
// the NVVM conversion and PTX (ptxas and the GPU checks cover those).
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "passes/Passes.h"
#include "targets/cuda/Launches.h"
#include "targets/cuda/Loops.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace mlir;

namespace {

llvm::cl::opt<std::string> inputFile(llvm::cl::Positional, llvm::cl::Required,
                                     llvm::cl::desc("<kernels.mlir>"));
llvm::cl::opt<std::string> onlyKernel("kernel", llvm::cl::desc("Check only this kernel"));

/// The threads per block the CUDA target launches with (CudaTarget.cpp).
constexpr unsigned kThreadsPerBlock = 256;

/// A module holding a copy of `kernel` alone.
OwningOpRef<ModuleOp> isolate(func::FuncOp kernel) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  OpBuilder builder(module->getBodyRegion());
  builder.clone(*kernel);
  return module;
}

/// Lowers a module of functions on buffers and loops to LLVM for the host,
/// memrefs passed as bare pointers.
LogicalResult lowerToHost(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return pm.run(module);
}

/// The reference: upstream's bufferization and loops, nothing of the CUDA
/// target's tiles or launches.
LogicalResult lowerReference(ModuleOp module) {
  if (failed(tessel::cuda::bufferizeKernels(module, tessel::ProductPrecision::F32)))
    return failure();
  PassManager pm(module.getContext());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  return pm.run(module);
}

/// The CUDA target's lowering and launches, the launches run as loops.
/// Counts the launches into `launches`.
LogicalResult lowerEmulated(ModuleOp module, unsigned &launches) {
  if (failed(tessel::cuda::lowerKernelsToLoops(module, tessel::ProductPrecision::F32)))
    return failure();
  for (auto kernel : module.getOps<func::FuncOp>()) {
    if (failed(tessel::cuda::formLaunches(kernel, kThreadsPerBlock)))
      return failure();
    launches += llvm::range_size(kernel.getBody().front().getOps<gpu::LaunchOp>());
    tessel::cuda::runLaunchesOnHost(kernel);
  }
  return success();
}

/// One buffer of a kernel's call, as bytes.
struct Buffer {
  std::vector<uint8_t> bytes;
  Type element;
};

/// Pseudo-random contents for an input: floats in [-1, 1], bytes over
/// their range; wider integers 0, which is an index within any axis (a
/// gather's indices would otherwise read out of bounds in both versions).
void fill(Buffer &buffer, std::mt19937 &random) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  unsigned width = buffer.element.getIntOrFloatBitWidth();
  size_t count = buffer.bytes.size() / std::max(1u, width / 8);
  for (size_t i = 0; i < count; ++i) {
    if (buffer.element.isF32()) {
      float value = real(random);
      std::memcpy(&buffer.bytes[i * 4], &value, 4);
    } else if (buffer.element.isF64()) {
      double value = real(random);
      std::memcpy(&buffer.bytes[i * 8], &value, 8);
    } else if (width == 8) {
      buffer.bytes[i] = static_cast<uint8_t>(random());
    } else if (width == 1) {
      buffer.bytes[i] = random() & 1;
    }
  }
}

/// The largest difference between two outputs, elementwise: absolute for
/// floats (NaN equal to NaN), and 1 for any integer that differs.
double difference(const Buffer &a, const Buffer &b) {
  double worst = 0;
  if (a.element.isF32() || a.element.isF64()) {
    bool single = a.element.isF32();
    size_t size = single ? 4 : 8, count = a.bytes.size() / size;
    for (size_t i = 0; i < count; ++i) {
      double x, y;
      if (single) {
        float fx, fy;
        std::memcpy(&fx, &a.bytes[i * 4], 4), std::memcpy(&fy, &b.bytes[i * 4], 4);
        x = fx, y = fy;
      } else {
        std::memcpy(&x, &a.bytes[i * 8], 8), std::memcpy(&y, &b.bytes[i * 8], 8);
      }
      if (std::isnan(x) && std::isnan(y))
        continue;
      double scaled = std::fabs(x - y) / std::max(1.0, std::fabs(y));
      worst = std::max(worst, std::isnan(scaled) ? INFINITY : scaled);
    }
    return worst;
  }
  return a.bytes == b.bytes ? 0 : 1;
}

/// Compiles `module` (one function, `name`) and calls it on `buffers`.
llvm::Error run(ModuleOp module, llvm::StringRef name, std::vector<Buffer> &buffers) {
  ExecutionEngineOptions options;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Less;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine = ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  std::vector<void *> pointers, arguments;
  for (Buffer &buffer : buffers)
    pointers.push_back(buffer.bytes.data());
  for (void *&pointer : pointers)
    arguments.push_back(&pointer);
  return (*engine)->invokePacked(name, arguments);
}

/// Checks one kernel; prints its line. False when it differs or fails.
bool checkKernel(func::FuncOp kernel) {
  std::string name = kernel.getSymName().str();
  size_t inputs = kernel.getNumArguments();
  OwningOpRef<ModuleOp> reference = isolate(kernel), emulated = isolate(kernel);
  unsigned launches = 0;
  if (failed(lowerReference(*reference)) || failed(lowerEmulated(*emulated, launches))) {
    llvm::outs() << name << ": the lowering failed\n";
    return false;
  }
  // The argument types after bufferization: the inputs, then the outputs.
  auto lowered = *emulated->getOps<func::FuncOp>().begin();
  std::vector<Buffer> referenceBuffers;
  for (Type type : lowered.getArgumentTypes()) {
    auto buffer = cast<MemRefType>(type);
    referenceBuffers.push_back(
        {std::vector<uint8_t>(tessel::cuda::bufferBytes(buffer)), buffer.getElementType()});
  }
  std::mt19937 random(1234);
  for (size_t i = 0; i < inputs && i < referenceBuffers.size(); ++i)
    fill(referenceBuffers[i], random);
  std::vector<Buffer> emulatedBuffers = referenceBuffers;
  if (failed(lowerToHost(*reference)) || failed(lowerToHost(*emulated))) {
    llvm::outs() << name << ": lowering to the host failed\n";
    return false;
  }
  for (auto [module, buffers] : {std::pair{reference.get(), &referenceBuffers},
                                 std::pair{emulated.get(), &emulatedBuffers}})
    if (llvm::Error error = run(module, name, *buffers)) {
      llvm::outs() << name << ": " << llvm::toString(std::move(error)) << "\n";
      return false;
    }
  double worst = 0;
  for (size_t i = inputs; i < referenceBuffers.size(); ++i)
    worst = std::max(worst, difference(emulatedBuffers[i], referenceBuffers[i]));
  bool match = worst <= 1e-5;
  llvm::outs() << name << ": " << launches << (launches == 1 ? " launch" : " launches") << ", "
               << (match ? "outputs match" : "OUTPUTS DIFFER") << " (largest relative difference "
               << llvm::format("%.3g", worst) << ")\n";
  return match;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "Runs the CUDA target's kernels on the host\n");
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
  unsigned checked = 0, matched = 0;
  for (auto kernel : module->getOps<func::FuncOp>()) {
    if (kernel.isDeclaration() || !kernel->hasAttr(tessel::kKernelAttrName) ||
        (!onlyKernel.empty() && kernel.getSymName() != onlyKernel))
      continue;
    ++checked;
    matched += checkKernel(kernel);
  }
  llvm::outs() << checked << " kernels: " << matched << " match, " << checked - matched
               << " differ\n";
  return checked && matched == checked ? 0 : 1;
}
