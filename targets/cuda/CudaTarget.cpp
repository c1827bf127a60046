//===- CudaTarget.cpp - PTX for NVIDIA GPUs -------------------------------===//
//
// The kernels, linalg on tensors, are bufferized and lowered to parallel
// loops; every top-level loop nest becomes a GPU kernel with one thread per
// iteration (Launches.cpp), lowered through the gpu and nvvm dialects and
// LLVM's NVPTX backend to PTX, once per architecture asked for. The
// executables replace the CPU's at load time where a GPU is present.
//
//===----------------------------------------------------------------------===//

#include "targets/cuda/CudaTarget.h"

#include "targets/cuda/Launches.h"
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
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace tessel {

namespace {

/// Threads per block of the elementwise launches: a multiple of the warp
/// that keeps every SM busy with several blocks.
constexpr unsigned kThreadsPerBlock = 256;

/// Copies between buffers become linalg copies, so that they are loop
/// nests like every other computation and get launches of their own.
void copiesToLinalg(ModuleOp module) {
  SmallVector<memref::CopyOp> copies;
  module.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
  for (memref::CopyOp copy : copies) {
    OpBuilder builder(copy);
    linalg::makeMemRefCopyOp(builder, copy.getLoc(), copy.getSource(), copy.getTarget());
    copy.erase();
  }
}

/// Packs and unpacks (of weights the CPU's layout packed at compile time)
/// become transposes and reshapes, which lower to loops.
LogicalResult lowerPacking(ModuleOp module) {
  SmallVector<Operation *> packing;
  module.walk([&](Operation *op) {
    if (isa<linalg::PackOp, linalg::UnPackOp>(op))
      packing.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (Operation *op : packing) {
    rewriter.setInsertionPoint(op);
    bool lowered = isa<linalg::PackOp>(op)
                       ? succeeded(linalg::lowerPack(rewriter, cast<linalg::PackOp>(op)))
                       : succeeded(linalg::lowerUnPack(rewriter, cast<linalg::UnPackOp>(op)));
    if (!lowered)
      return op->emitError("the CUDA target cannot lower this packing");
  }
  return success();
}

/// The outputs of a product one thread computes, along its innermost M
/// and N dimensions, and the reduction it reads per step: a 4 x 4 tile
/// keeps 16 accumulators in registers and loads 8 values for 16 FMAs
/// where one output per thread loads 2 for 1.
constexpr int64_t kProductTile = 4;

/// The tile sizes of `op`'s loops when it is a matrix product: every loop
/// by 1 (an untiled parallel loop would run whole in each thread) but the
/// innermost M, N and K, by kProductTile. Empty for other ops.
/// (Convolutions tiled the same way made ptxas spill; they keep one output
/// per thread for now.)
SmallVector<int64_t> productTileSizes(linalg::LinalgOp op) {
  SmallVector<int64_t> sizes(op.getNumLoops(), 1);
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  // A tile divides its loop: partial tiles would leave loops of unknown
  // trip count in every thread, which neither unroll nor keep their
  // accumulators in registers.
  auto tile = [&](unsigned loop) {
    for (int64_t size = kProductTile; size > 1; size /= 2)
      if (extents[loop] % size == 0) {
        sizes[loop] = size;
        return;
      }
  };
  if (linalg::isaContractionOpInterface(op)) {
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
      return {};
    tile(dims->m.back()), tile(dims->n.back()), tile(dims->k.back());
    return sizes;
  }
  return {};
}

/// Tiles every matrix product (matmul, batched, named or generic) so
/// that each thread of its launch computes a kProductTile² block of
/// outputs: a parallel loop over the blocks around a loop over reduction
/// steps around the tile-sized product.
LogicalResult tileProducts(ModuleOp module) {
  SmallVector<linalg::LinalgOp> products;
  module.walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() && !op.hasDynamicShape() &&
        !productTileSizes(op).empty())
      products.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::LinalgOp op : products) {
    SmallVector<int64_t> sizes = productTileSizes(op);
    rewriter.setInsertionPoint(op);
    auto options = linalg::LinalgTilingOptions()
                       .setTileSizes(sizes)
                       .setLoopType(linalg::LinalgTilingLoopType::ParallelLoops);
    if (failed(linalg::tileLinalgOp(rewriter, op, options)))
      return op.emitError("the CUDA target cannot tile this product");
    rewriter.eraseOp(op);
  }
  return success();
}

/// Math functions the NVPTX backend has no instruction for become
/// polynomials and arithmetic: the kernels then need no libdevice.
LogicalResult expandMath(gpu::GPUModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  math::populateExpansionPatterns(patterns);
  populateMathPolynomialApproximationPatterns(patterns);
  return applyPatternsGreedily(module, std::move(patterns));
}

class CudaTarget : public Target {
public:
  explicit CudaTarget(std::vector<const cuda::Architecture *> architectures)
      : architectures(std::move(architectures)) {}

  llvm::StringRef name() const override { return "cuda"; }
  DeviceKind device() const override { return DeviceKind::Cuda; }
  bool replacesFallback() const override { return true; }

  FailureOr<Executable> compile(ModuleOp kernels, const TargetOptions &options) override {
    FailureOr<std::vector<Executable>> executables = compileAll(kernels, options);
    if (failed(executables))
      return failure();
    return std::move(executables->front());
  }

  FailureOr<std::vector<Executable>> compileAll(ModuleOp kernels,
                                                const TargetOptions &options) override {
    MLIRContext &context = *kernels.getContext();
    context.loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
    if (failed(lowerToLoops(kernels)))
      return failure();

    OpBuilder builder(kernels.getBodyRegion());
    auto gpuModule = gpu::GPUModuleOp::create(builder, kernels.getLoc(), "tessel_cuda");
    std::vector<KernelEntry> entries;
    for (auto kernel : llvm::to_vector(kernels.getOps<func::FuncOp>())) {
      if (kernel.isDeclaration())
        continue;
      KernelEntry entry;
      entry.kernel = entry.symbol = kernel.getSymName().str();
      for (Type type : kernel.getArgumentTypes()) {
        auto buffer = cast<MemRefType>(type);
        entry.bindingBytes.push_back(buffer.getNumElements() *
                                     llvm::divideCeil(buffer.getElementTypeBitWidth(), 8));
      }
      FailureOr<cuda::KernelLaunches> launches =
          cuda::outlineLaunches(kernel, gpuModule, kThreadsPerBlock);
      if (failed(launches))
        return failure();
      entry.scratchBytes = launches->scratchBytes;
      entry.cudaLaunches = std::move(launches->launches);
      entries.push_back(std::move(entry));
    }
    if (failed(lowerToNvvm(gpuModule)))
      return failure();

    // The kernels alone, in a module of their own, for translation.
    OwningOpRef<ModuleOp> device = ModuleOp::create(kernels.getLoc());
    OpBuilder deviceBuilder(device->getBodyRegion());
    for (Operation &op : gpuModule.getBody()->getOperations())
      deviceBuilder.clone(op);

    std::vector<Executable> executables;
    for (const cuda::Architecture *architecture : architectures) {
      FailureOr<std::string> ptx = cuda::emitPtx(*device, *architecture, options.optLevel);
      if (failed(ptx))
        return failure();
      if (options.ptx)
        *options.ptx << "// ---- " << architecture->name << "\n" << *ptx;
      Executable executable;
      executable.device = DeviceKind::Cuda;
      executable.format = ExecutableFormat::CudaPtx;
      executable.architecture = architecture->name;
      executable.binary.assign(ptx->begin(), ptx->end());
      executable.entries = entries;
      executable.replacesFallback = true;
      executables.push_back(std::move(executable));
    }
    return executables;
  }

private:
  /// Bufferizes `kernels` (kernel results become output bindings) and
  /// lowers their linalg ops to loops: scf.parallel over the parallel
  /// dimensions, scf.for over the reductions inside.
  static LogicalResult lowerToLoops(ModuleOp kernels) {
    if (failed(lowerPacking(kernels)))
      return failure();
    PassManager pm(kernels.getContext());
    pm.addPass(createLinalgElementwiseOpFusionPass());
    bufferization::OneShotBufferizePassOptions bufferize;
    bufferize.bufferizeFunctionBoundaries = true;
    bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
    pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
    bufferization::BufferResultsToOutParamsPassOptions outParams;
    outParams.hoistStaticAllocs = true;
    pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    if (failed(pm.run(kernels)))
      return failure();
    copiesToLinalg(kernels);
    if (failed(tileProducts(kernels)))
      return failure();
    PassManager loops(kernels.getContext());
    loops.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    loops.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    loops.addNestedPass<func::FuncOp>(createCSEPass());
    return loops.run(kernels);
  }

  /// Lowers the outlined kernels to the LLVM and NVVM dialects, memrefs
  /// passed as bare pointers.
  static LogicalResult lowerToNvvm(gpu::GPUModuleOp gpuModule) {
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

  /// The conversion of upstream's convert-gpu-to-nvvm without its libdevice
  /// calls: what math is left after expandMath (square roots, rounding,
  /// absolute values) becomes LLVM intrinsics, which the NVPTX backend
  /// turns into instructions.
  static LogicalResult convertToNvvm(gpu::GPUModuleOp gpuModule) {
    MLIRContext *context = gpuModule.getContext();
    LowerToLLVMOptions options(context);
    options.useBarePtrCallConv = true;
    LLVMTypeConverter converter(context, options);
    configureGpuToNVVMTypeConverter(converter);
    RewritePatternSet patterns(context);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns, /*approximateLog1p=*/true,
                                         /*benefit=*/2);
    populateGpuToNVVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*context);
    configureGpuToNVVMConversionLegality(target);
    target.addLegalOp<LLVM::FAbsOp, LLVM::FCeilOp, LLVM::FFloorOp, LLVM::FTruncOp,
                      LLVM::RoundEvenOp, LLVM::RoundOp, LLVM::SqrtOp, LLVM::CopySignOp,
                      LLVM::FRemOp, LLVM::FMAOp>();
    return applyPartialConversion(gpuModule, target, std::move(patterns));
  }

  std::vector<const cuda::Architecture *> architectures;
};

} // namespace

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
  return std::make_unique<CudaTarget>(std::move(architectures));
}

} // namespace tessel
