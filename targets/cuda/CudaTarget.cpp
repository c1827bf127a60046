//===- CudaTarget.cpp - PTX for NVIDIA GPUs -------------------------------===//
//
// The kernels, linalg on tensors, are bufferized; their large matrix
// products become tensor-core launches (TensorCoreProducts.cpp) and the rest
// parallel loops (Loops.cpp); every top-level loop nest becomes a GPU kernel
// with one thread per iteration (Launches.cpp). All are lowered through the
// gpu and nvvm dialects and LLVM's NVPTX backend to PTX, once per
// architecture asked for (Ptx.cpp). The executables replace the CPU's at
// load time where a GPU is present.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/CudaTarget.h"

#include "targets/cuda/Cubin.h"
#include "targets/cuda/Launches.h"
#include "targets/cuda/Loops.h"
#include "targets/cuda/Ptx.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace tessel {

namespace {

/// Threads per block of the elementwise launches: a multiple of the warp
/// that keeps every SM busy with several blocks.
constexpr unsigned kThreadsPerBlock = 256;

/// Math functions the NVPTX backend has no instruction for become
/// polynomials and arithmetic, so that f32 kernels need no libdevice
/// (Ptx.cpp links it for what is left, f64 exponentials and fmod).
LogicalResult expandMath(gpu::GPUModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  math::populateExpansionPatterns(patterns);
  populateMathPolynomialApproximationPatterns(patterns);
  return applyPatternsGreedily(module, std::move(patterns));
}

/// The conversion of upstream's convert-gpu-to-nvvm without its libdevice
/// calls: what math is left after expandMath (square roots, rounding,
/// absolute values) becomes LLVM intrinsics, which the NVPTX backend
/// turns into instructions.
LogicalResult convertToNvvm(gpu::GPUModuleOp gpuModule) {
  MLIRContext *context = gpuModule.getContext();
  LowerToLLVMOptions options(context);
  options.useBarePtrCallConv = true;
  LLVMTypeConverter converter(context, options);
  configureGpuToNVVMTypeConverter(converter);
  // The tokens of cp.async (TensorCoreProducts.cpp) name nothing at run
  // time; their ops lower to commit and wait instructions that take none.
  converter.addConversion([&](nvgpu::DeviceAsyncTokenType type) -> Type {
    return IntegerType::get(type.getContext(), 32);
  });
  RewritePatternSet patterns(context);
  arith::populateArithToLLVMConversionPatterns(converter, patterns);
  cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
  populateFuncToLLVMConversionPatterns(converter, patterns);
  populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
  populateMathToLLVMConversionPatterns(converter, patterns, /*approximateLog1p=*/true,
                                       /*benefit=*/2);
  populateGpuToNVVMConversionPatterns(converter, patterns);
  populateNVGPUToNVVMConversionPatterns(converter, patterns);
  populateVectorToLLVMConversionPatterns(converter, patterns);
  LLVMConversionTarget target(*context);
  configureGpuToNVVMConversionLegality(target);
  target.addLegalOp<LLVM::FAbsOp, LLVM::FCeilOp, LLVM::FFloorOp, LLVM::FTruncOp, LLVM::RoundEvenOp,
                    LLVM::RoundOp, LLVM::SqrtOp, LLVM::CopySignOp, LLVM::FRemOp, LLVM::FMAOp>();
  return applyPartialConversion(gpuModule, target, std::move(patterns));
}

/// Lowers the outlined kernels to the LLVM and NVVM dialects, memrefs
/// passed as bare pointers.
LogicalResult lowerToNvvm(gpu::GPUModuleOp gpuModule) {
  if (failed(expandMath(gpuModule)))
    return gpuModule.emitError("expanding the math functions of the CUDA kernels failed");
  PassManager pm(gpuModule.getContext(), gpu::GPUModuleOp::getOperationName());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  if (failed(pm.run(gpuModule)) || failed(convertToNvvm(gpuModule)))
    return failure();
  PassManager cleanup(gpuModule.getContext(), gpu::GPUModuleOp::getOperationName());
  cleanup.addPass(createReconcileUnrealizedCastsPass());
  cleanup.addPass(createCanonicalizerPass());
  return cleanup.run(gpuModule);
}

class CudaTarget : public Target {
public:
  CudaTarget(std::vector<const cuda::Architecture *> architectures, ProductPrecision precision,
             std::optional<std::string> ptxas)
      : architectures(std::move(architectures)), precision(precision), ptxas(std::move(ptxas)) {}

  llvm::StringRef name() const override { return "cuda"; }
  DeviceKind device() const override { return DeviceKind::Cuda; }
  bool replacesFallback() const override { return true; }
  bool loopsToRunTimeCounts() const override { return false; }
  bool roundsProductsItself() const override { return true; }

  FailureOr<Executable> compile(ModuleOp kernels, const TargetOptions &options) override {
    FailureOr<std::vector<Executable>> executables = compileAll(kernels, options);
    if (failed(executables))
      return failure();
    return std::move(executables->front());
  }

  FailureOr<std::vector<Executable>> compileAll(ModuleOp kernels,
                                                const TargetOptions &options) override {
    kernels.getContext()->loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
    if (failed(cuda::lowerKernelsToLoops(kernels, precision)))
      return failure();
    FailureOr<cuda::DeviceKernels> device = cuda::outlineDeviceKernels(kernels);
    if (failed(device))
      return failure();
    std::vector<Executable> executables;
    auto add = [&](ExecutableFormat format, const cuda::Architecture &architecture,
                   llvm::ArrayRef<uint8_t> binary) {
      Executable executable;
      executable.device = DeviceKind::Cuda;
      executable.format = format;
      executable.architecture = architecture.name;
      executable.binary.assign(binary.begin(), binary.end());
      executable.entries = device->entries;
      executable.replacesFallback = true;
      executables.push_back(std::move(executable));
    };
    for (const cuda::Architecture *architecture : architectures) {
      FailureOr<std::string> ptx = cuda::emitPtx(*device->module, *architecture, options.optLevel);
      if (failed(ptx))
        return failure();
      if (options.ptx)
        *options.ptx << "// ---- " << architecture->name << "\n" << *ptx;
      add(ExecutableFormat::CudaPtx, *architecture,
          llvm::ArrayRef(reinterpret_cast<const uint8_t *>(ptx->data()), ptx->size()));
      // (--emit ptx prints the PTX alone.)
      if (!ptxas || options.ptx)
        continue;
      FailureOr<std::vector<uint8_t>> cubin =
          cuda::assembleCubin(*ptxas, *ptx, *architecture, options.optLevel, kernels.getLoc());
      if (failed(cubin))
        return failure();
      add(ExecutableFormat::CudaCubin, *architecture, *cubin);
    }
    return executables;
  }

private:
  std::vector<const cuda::Architecture *> architectures;
  ProductPrecision precision;
  /// The ptxas that assembles a cubin beside each PTX (--cuda-cubins).
  std::optional<std::string> ptxas;
};

} // namespace

namespace cuda {

FailureOr<DeviceKernels> outlineDeviceKernels(ModuleOp kernels) {
  kernels.getContext()->loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
  OpBuilder builder(kernels.getBodyRegion());
  auto gpuModule = gpu::GPUModuleOp::create(builder, kernels.getLoc(), "tessel_cuda");
  DeviceKernels device;
  for (auto kernel : llvm::to_vector(kernels.getOps<func::FuncOp>())) {
    if (kernel.isDeclaration())
      continue;
    KernelEntry entry;
    entry.kernel = entry.symbol = kernel.getSymName().str();
    for (Type type : kernel.getArgumentTypes())
      entry.bindingBytes.push_back(bufferBytes(cast<MemRefType>(type)));
    if (failed(formLaunches(kernel, kThreadsPerBlock)))
      return failure();
    FailureOr<KernelLaunches> launches = outlineLaunches(kernel, gpuModule);
    if (failed(launches))
      return failure();
    entry.scratchBytes = launches->scratchBytes;
    entry.cudaLaunches = std::move(launches->launches);
    device.entries.push_back(std::move(entry));
  }
  if (failed(lowerToNvvm(gpuModule)))
    return failure();

  // The kernels alone, in a module of their own, for translation.
  device.module = ModuleOp::create(kernels.getLoc());
  OpBuilder deviceBuilder(device.module->getBodyRegion());
  for (Operation &op : gpuModule.getBody()->getOperations())
    deviceBuilder.clone(op);
  return device;
}

} // namespace cuda

std::optional<ProductPrecision> parseProductPrecision(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ProductPrecision>>(name)
      .Case("fp32", ProductPrecision::F32)
      .Case("fp16", ProductPrecision::F16)
      .Case("bf16", ProductPrecision::BF16)
      .Default(std::nullopt);
}

llvm::Expected<std::unique_ptr<Target>> createCudaTarget(const TargetOptions &options) {
  std::vector<const cuda::Architecture *> architectures;
  for (const std::string &name : options.cudaArchitectures) {
    const cuda::Architecture *architecture = cuda::findArchitecture(name);
    if (!architecture)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unknown CUDA architecture '" + name +
                                         "' (known: " + cuda::knownArchitectures() + ")");
    if (!llvm::is_contained(architectures, architecture))
      architectures.push_back(architecture);
  }
  if (architectures.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--cuda-arch names no architecture");
  std::optional<std::string> ptxas;
  if (options.cudaCubins && !(ptxas = cuda::findPtxas()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--cuda-cubins needs the CUDA toolkit's ptxas, which is neither "
        "on PATH nor in $CUDA_HOME/bin (by default /usr/local/cuda/bin)");
  return std::make_unique<CudaTarget>(std::move(architectures), options.cudaPrecision,
                                      std::move(ptxas));
}

} // namespace tessel
