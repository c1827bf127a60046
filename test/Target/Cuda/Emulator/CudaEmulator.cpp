//===- CudaEmulator.cpp - The CUDA target's kernels, run on the host ------===//
//
// tessel-cuda-emulate checks, without a GPU, what the CUDA target decides
// about each kernel: its tiles, its launches and their grids, the flat
// thread index and its delinearization, the views rebuilt inside each
// launch, the scratch of its temporaries, the tensor-core products'
// shared-memory tiles, barriers and mma fragments, and the row kernels'
// partial results and barriers. It reads the kernels of a model
// (`tessel-compile --emit linalg`) and, for each kernel:
//
//   reference  bufferized and lowered to loops by upstream linalg alone,
//              the operands of the products that take the tensor cores
//              rounded to the precision they read (as the kernels round
//              them);
//   emulated   the CUDA target's own lowering (Loops.h) and launches
//              (Launches.h) at `--precision`. A launch whose threads never
//              meet runs as loops over its blocks and threads (one of the
//              schedules a GPU may pick). One that has barriers or warp
//              instructions (the tensor-core products, the row kernels of
//              reductions, Softmax and LayerNorm) runs each block's
//              threads as fibers that meet at them (ThreadFunctions.h,
//              BlockThreads.h), and its ldmatrix and mma.sync execute per
//              warp as the PTX ISA defines them (WarpInstructions.h).
//
// Both are JIT-compiled for the host with the same math lowering, run on the
// same pseudo-random inputs, and their outputs compared. Prints one line per
// kernel and a summary `N kernels: N match, N differ`; exits non-zero when any
// differs or fails to compile. What it cannot check is after the launches:
// the NVVM conversion and PTX (ptxas and the GPU checks cover those).
//
//===----------------------------------------------------------------------===//

#include "HostCalls.h"
#include "ThreadFunctions.h"

#include "compiler/Registration.h"
#include "passes/Passes.h"
#include "targets/cuda/CudaTarget.h"
#include "targets/cuda/Launches.h"
#include "targets/cuda/Loops.h"
#include "targets/cuda/RowKernels.h"
#include "targets/cuda/TensorCoreProducts.h"

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
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/APFloat.h"
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
llvm::cl::opt<std::string> precisionName(
    "precision", llvm::cl::init("fp32"),
    llvm::cl::desc("What the matrix products read their operands as: fp32, fp16 or bf16"));
llvm::cl::opt<bool> removeBarriers(
    "remove-barriers",
    llvm::cl::desc("Remove the barriers of the launches before running them (a check that the "
                   "emulator sees a race between warps)"));

/// The precision the kernels are lowered at (--precision).
tessel::ProductPrecision precision = tessel::ProductPrecision::F32;

/// The threads per block the CUDA target launches with (CudaTarget.cpp).
constexpr unsigned kThreadsPerBlock = 256;

/// A module holding a copy of `kernel` alone.
OwningOpRef<ModuleOp> isolate(func::FuncOp kernel) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  OpBuilder builder(module->getBodyRegion());
  builder.clone(*kernel);
  return module;
}

/// Makes every integer division and remainder by a divisor that is not a
/// constant divide by 1 where the divisor is 0. The emulator's wider
/// integer inputs are zeros, and the host traps on a division by zero
/// where the GPU gives some value: a Div or Mod node, or a Slice's step,
/// would end the run. Both the reference and the emulated kernels get the
/// same guard, so they still compute the same.
void guardIntegerDivisions(ModuleOp module) {
  module.walk([](Operation *op) {
    if (!isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp, arith::CeilDivSIOp,
             arith::CeilDivUIOp, arith::FloorDivSIOp>(op) ||
        matchPattern(op->getOperand(1), m_Constant()))
      return;
    Value divisor = op->getOperand(1);
    Type type = divisor.getType();
    if (!type.isIntOrIndex()) // (vectors are left as they are)
      return;
    OpBuilder builder(op);
    Location loc = op->getLoc();
    Value zero = arith::ConstantOp::create(builder, loc, builder.getZeroAttr(type));
    Value one = arith::ConstantOp::create(builder, loc, builder.getIntegerAttr(type, 1));
    Value isZero = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, divisor, zero);
    op->setOperand(1, arith::SelectOp::create(builder, loc, isZero, one, divisor));
  });
}

/// Lowers a module of functions on buffers and loops to LLVM for the host,
/// memrefs passed as bare pointers.
LogicalResult lowerToHost(ModuleOp module) {
  guardIntegerDivisions(module);
  PassManager pm(module.getContext());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true; // bf16 roundings as integer arithmetic
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
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

/// Rounds the f32 operands of `product` to `operandType` and back, as the
/// tensor cores read them.
void roundOperands(linalg::LinalgOp product, Type operandType) {
  Block &body = product->getRegion(0).front();
  OpBuilder builder = OpBuilder::atBlockBegin(&body);
  for (unsigned i = 0; i < 2; ++i) {
    BlockArgument operand = body.getArgument(i);
    if (!operand.getType().isF32())
      continue;
    Value rounded = arith::TruncFOp::create(builder, product.getLoc(), operandType, operand);
    Value widened = arith::ExtFOp::create(builder, product.getLoc(), operand.getType(), rounded);
    operand.replaceAllUsesExcept(widened, rounded.getDefiningOp());
  }
}

/// The sums that a kernel's launches compute in another order than the
/// reference's loops, for the tolerance of its outputs (toleranceOf): the
/// tensor-core products' and the row kernels' reductions.
struct ReorderedSums {
  /// The terms of the deepest of those sums; 0 when there is none.
  int64_t depth = 0;
  /// Whether a product reads what the kernel computes from another
  /// product's result (attention's probabilities).
  bool readsComputedOperand = false;
  /// What the products read their operands as.
  Type operandType;
};

/// Whether one of `products` reads a buffer that the kernel computes from
/// another one's result (through elementwise ops, a softmax), following
/// the ops of each kernel function in order.
bool readsProductResult(ModuleOp module, ArrayRef<linalg::LinalgOp> products) {
  llvm::DenseSet<Value> fromProducts;
  bool reads = false;
  module.walk([&](linalg::LinalgOp op) {
    bool isProduct = llvm::is_contained(products, op);
    bool readsOne = llvm::any_of(op.getDpsInputs(), [&](Value input) {
      return fromProducts.contains(tessel::cuda::rootBuffer(input));
    });
    reads |= isProduct && readsOne;
    if (isProduct || readsOne)
      for (Value init : op.getDpsInits())
        fromProducts.insert(tessel::cuda::rootBuffer(init));
  });
  return reads;
}

/// The reference: upstream's bufferization and loops, nothing of the CUDA
/// target's tiles or launches; the products that take the tensor cores
/// read their operands rounded. Describes those products in `products`.
LogicalResult lowerReference(ModuleOp module, ReorderedSums &summary) {
  if (failed(tessel::cuda::bufferizeKernels(module, precision)))
    return failure();
  SmallVector<linalg::LinalgOp> products;
  summary = ReorderedSums();
  module.walk([&](linalg::LinalgOp op) {
    bool product = tessel::cuda::takesTensorCores(op, precision);
    if (product)
      products.push_back(op);
    // (A maximum or minimum is the same in any order.)
    bool rowSum = tessel::cuda::reducesAcrossThreads(op) &&
                  isa_and_present<arith::AddFOp, arith::MulFOp>(
                      op.getBlock()->getTerminator()->getOperand(0).getDefiningOp());
    if (!product && !rowSum)
      return;
    int64_t terms = 1;
    for (auto [range, iterator] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
      if (iterator == utils::IteratorType::reduction)
        terms *= range;
    summary.depth = std::max(summary.depth, terms);
  });
  summary.readsComputedOperand = readsProductResult(module, products);
  summary.operandType = tessel::cuda::operandTypeOf(module.getContext(), precision);
  for (linalg::LinalgOp product : products)
    roundOperands(product, summary.operandType);
  PassManager pm(module.getContext());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  return pm.run(module);
}

/// The CUDA target's lowering and launches: those whose threads meet become
/// thread functions (`threaded`), the others loops. Counts the launches
/// into `launches`.
LogicalResult lowerEmulated(ModuleOp module, unsigned &launches,
                            std::vector<tessel::cuda::emulator::ThreadedLaunch> &threaded) {
  if (failed(tessel::cuda::lowerKernelsToLoops(module, precision)))
    return failure();
  for (auto kernel : llvm::to_vector(module.getOps<func::FuncOp>())) {
    if (failed(tessel::cuda::formLaunches(kernel, kThreadsPerBlock)))
      return failure();
    launches += llvm::range_size(kernel.getBody().front().getOps<gpu::LaunchOp>());
    if (removeBarriers)
      kernel.walk([](gpu::BarrierOp barrier) { barrier.erase(); });
    if (failed(tessel::cuda::emulator::outlineSynchronizingLaunches(kernel, threaded)))
      return failure();
    tessel::cuda::runLaunchesOnHost(kernel);
  }
  return success();
}

/// One buffer of a kernel's call, as bytes.
struct Buffer {
  std::vector<uint8_t> bytes;
  Type element;
};

/// The IEEE semantics of a floating-point element type, or null.
const llvm::fltSemantics *semanticsOf(Type element) {
  auto floating = dyn_cast<FloatType>(element);
  return floating ? &floating.getFloatSemantics() : nullptr;
}

/// Pseudo-random contents for an input: floats in [-1, 1] (rounded to the
/// element type), bytes over their range; wider integers 0, which is an
/// index within any axis (a gather's indices would otherwise read out of
/// bounds in both versions).
void fill(Buffer &buffer, std::mt19937 &random) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  unsigned width = buffer.element.getIntOrFloatBitWidth();
  size_t bytes = std::max(1u, width / 8), count = buffer.bytes.size() / bytes;
  const llvm::fltSemantics *semantics = semanticsOf(buffer.element);
  for (size_t i = 0; i < count; ++i) {
    if (semantics) {
      llvm::APFloat value(real(random));
      bool inexact;
      value.convert(*semantics, llvm::APFloat::rmNearestTiesToEven, &inexact);
      uint64_t bits = value.bitcastToAPInt().getZExtValue();
      std::memcpy(&buffer.bytes[i * bytes], &bits, bytes); // little-endian
    } else if (width == 8) {
      buffer.bytes[i] = static_cast<uint8_t>(random());
    } else if (width == 1) {
      buffer.bytes[i] = random() & 1;
    }
  }
}

/// Element `i` of a floating-point buffer.
double elementOf(const Buffer &buffer, const llvm::fltSemantics &semantics, size_t i) {
  unsigned width = llvm::APFloat::getSizeInBits(semantics);
  uint64_t bits = 0;
  std::memcpy(&bits, &buffer.bytes[i * width / 8], width / 8);
  llvm::APFloat value(semantics, llvm::APInt(width, bits));
  bool inexact;
  value.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &inexact);
  return value.convertToDouble();
}

/// The largest difference between two outputs, elementwise: relative to
/// max(1, |expected|) for floats (NaN equal to NaN), and 1 for any integer
/// that differs.
double difference(const Buffer &a, const Buffer &b) {
  const llvm::fltSemantics *semantics = semanticsOf(a.element);
  if (!semantics)
    return a.bytes == b.bytes ? 0 : 1;
  double worst = 0;
  size_t count = a.bytes.size() * 8 / llvm::APFloat::getSizeInBits(*semantics);
  for (size_t i = 0; i < count; ++i) {
    double x = elementOf(a, *semantics, i), y = elementOf(b, *semantics, i);
    // (Equal infinities too: the maximum of an empty set is -inf.)
    if (x == y || (std::isnan(x) && std::isnan(y)))
      continue;
    double scaled = std::fabs(x - y) / std::max(1.0, std::fabs(y));
    worst = std::max(worst, std::isnan(scaled) ? INFINITY : scaled);
  }
  return worst;
}

/// The unit of rounding of a floating-point type (2^-23 for f32).
double unitOf(const llvm::fltSemantics &semantics) {
  return std::ldexp(1.0, 1 - int(llvm::APFloat::semanticsPrecision(semantics)));
}

/// How far an output of `element` may be from the reference, relative to
/// max(1, |reference|), when the launches compute `sums` in another order
/// (none where `threaded` is false):
///   - 1e-5 where every launch computes as the reference does, in the same
///     order (only f32 rounding of the math's expansions differs);
///   - the tensor cores sum the same rounded products in another order
///     (16-term chunks in an mma, then 32-deep steps), and a row
///     kernel's threads a row's terms (strided partial sums, then a
///     tree). Two orders of f32 sums of `depth` terms differ by up to
///     about depth units of f32 rounding (2^-24) of the partial sums:
///     3.4e-5 at 576 terms, where 1.4e-5 is seen, and 2.7e-4 at 4608
///     (ResNet-50's last 3 x 3 convolutions), where 9.6e-5 is;
///   - a product that reads what another computed (attention's
///     probabilities, the softmax of a product) rounds that operand to
///     16 bits, and the two sums' last bits may round it to neighbouring
///     values: up to one unit of the operand type in each term (2^-10 for
///     fp16, where attention's outputs show 6e-5);
///   - an output of a 16-bit type may round to the neighbouring value: two
///     units of its rounding.
/// A wrong fragment, tile, edge or missing barrier gives differences of
/// the outputs' own size (1 and more) or NaN.
double toleranceOf(Type element, const ReorderedSums &sums, bool threaded) {
  if (!threaded || sums.depth == 0)
    return 1e-5;
  const llvm::fltSemantics *semantics = semanticsOf(element);
  if (!semantics)
    return 0; // integers match exactly
  double tolerance = std::max({1e-5, std::ldexp(double(sums.depth), -24), 2 * unitOf(*semantics)});
  if (sums.readsComputedOperand)
    tolerance = std::max(tolerance, unitOf(*semanticsOf(sums.operandType)));
  return tolerance;
}

/// Compiles `module` (its kernel `name`, and the thread functions of its
/// `threaded` launches) and calls the kernel on `buffers`.
llvm::Error run(ModuleOp module, llvm::StringRef name, std::vector<Buffer> &buffers,
                const std::vector<tessel::cuda::emulator::ThreadedLaunch> *threaded) {
  ExecutionEngineOptions options;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Less;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine = ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols(tessel::cuda::emulator::hostCallSymbols);
  tessel::cuda::emulator::prepareLaunches(*threaded, [&](const std::string &function) {
    llvm::Expected<void *> address = (*engine)->lookup(function);
    if (!address) {
      llvm::consumeError(address.takeError());
      return static_cast<void *>(nullptr);
    }
    return *address;
  });
  std::vector<void *> pointers, arguments;
  for (Buffer &buffer : buffers)
    pointers.push_back(buffer.bytes.data());
  for (void *&pointer : pointers)
    arguments.push_back(&pointer);
  if (llvm::Error error = (*engine)->invokePacked(name, arguments))
    return error;
  if (!tessel::cuda::emulator::launchError().empty())
    return llvm::createStringError(tessel::cuda::emulator::launchError());
  return llvm::Error::success();
}

/// Checks one kernel; prints its line. False when it differs or fails.
bool checkKernel(func::FuncOp kernel) {
  std::string name = kernel.getSymName().str();
  size_t inputs = kernel.getNumArguments();
  OwningOpRef<ModuleOp> reference = isolate(kernel), emulated = isolate(kernel);
  unsigned launches = 0;
  std::vector<tessel::cuda::emulator::ThreadedLaunch> threaded, none;
  ReorderedSums sums;
  if (failed(lowerReference(*reference, sums)) ||
      failed(lowerEmulated(*emulated, launches, threaded))) {
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
  for (auto [module, buffers, launchesRun] :
       {std::tuple{reference.get(), &referenceBuffers, &none},
        std::tuple{emulated.get(), &emulatedBuffers, &threaded}})
    if (llvm::Error error = run(module, name, *buffers, launchesRun)) {
      llvm::outs() << name << ": " << llvm::toString(std::move(error)) << "\n";
      return false;
    }
  // Each output's difference, as a share of its tolerance.
  double worst = 0, worstShare = 0, worstTolerance = 0;
  for (size_t i = inputs; i < referenceBuffers.size(); ++i) {
    double tolerance = toleranceOf(referenceBuffers[i].element, sums, !threaded.empty());
    double error = difference(emulatedBuffers[i], referenceBuffers[i]);
    double share = error == 0 ? 0 : tolerance == 0 ? INFINITY : error / tolerance;
    if (share >= worstShare)
      worst = error, worstShare = share, worstTolerance = tolerance;
  }
  bool match = worstShare <= 1;
  llvm::outs() << name << ": " << launches << (launches == 1 ? " launch" : " launches")
               << (threaded.empty() ? "" : " (" + std::to_string(threaded.size()) + " as threads)")
               << ", " << (match ? "outputs match" : "OUTPUTS DIFFER")
               << " (largest relative difference " << llvm::format("%.3g", worst);
  if (!threaded.empty())
    llvm::outs() << ", tolerance " << llvm::format("%.3g", worstTolerance);
  llvm::outs() << ")\n";
  return match;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "Runs the CUDA target's kernels on the host\n");
  std::optional<tessel::ProductPrecision> parsed = tessel::parseProductPrecision(precisionName);
  if (!parsed) {
    llvm::errs() << "error: unknown --precision '" << precisionName
                 << "' (known: fp32, fp16, bf16)\n";
    return 2;
  }
  precision = *parsed;
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
    // A public function keeps its results through bufferization, so its
    // call would not match the buffers passed to it.
    if (!kernel.isPrivate()) {
      llvm::outs() << kernel.getSymName()
                   << ": not a private function (kernels are, as tessel-compile --emit linalg "
                      "writes them)\n";
      continue;
    }
    matched += checkKernel(kernel);
  }
  llvm::outs() << checked << " kernels: " << matched << " match, " << checked - matched
               << " differ\n";
  return checked && matched == checked ? 0 : 1;
}
