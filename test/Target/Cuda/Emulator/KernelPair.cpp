//===- KernelPair.cpp - A kernel compiled for the host twice --------------===//

#include "KernelPair.h"

#include "HostCalls.h"

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
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/Format.h"

#include <cinttypes>
#include <cmath>
#include <cstring>

using namespace mlir;

namespace tessel::cuda::emulator {
namespace {

/// A module holding a copy of `kernel` alone.
OwningOpRef<ModuleOp> isolate(func::FuncOp kernel) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  OpBuilder builder(module->getBodyRegion());
  builder.clone(*kernel);
  return module;
}

/// Makes every integer division and remainder by a divisor that is not a
/// constant divide by 1 where the divisor is 0. The emulator's wider
/// pseudo-random integer inputs are zeros, and the host traps on a division by zero
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
LogicalResult lowerReference(ModuleOp module, tessel::ProductPrecision precision,
                             ReorderedSums &summary) {
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

/// The IEEE semantics of a floating-point element type, or null.
const llvm::fltSemantics *semanticsOf(Type element) {
  auto floating = dyn_cast<FloatType>(element);
  return floating ? &floating.getFloatSemantics() : nullptr;
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

/// The largest difference between two outputs: relative to max(1,
/// |expected|) elementwise, or to max(1, max |expected|) over the whole
/// output where `normwise`; for floats (NaN equal to NaN). 1 for any
/// integer that differs.
double difference(const Buffer &a, const Buffer &b, bool normwise) {
  const llvm::fltSemantics *semantics = semanticsOf(a.element);
  if (!semantics)
    return a.bytes == b.bytes ? 0 : 1;
  size_t count = a.bytes.size() * 8 / llvm::APFloat::getSizeInBits(*semantics);
  double largest = 1;
  for (size_t i = 0; normwise && i < count; ++i)
    if (double magnitude = std::fabs(elementOf(b, *semantics, i)); std::isfinite(magnitude))
      largest = std::max(largest, magnitude);
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    double x = elementOf(a, *semantics, i), y = elementOf(b, *semantics, i);
    // (Equal infinities too: the maximum of an empty set is -inf.)
    if (x == y || (std::isnan(x) && std::isnan(y)))
      continue;
    double scaled = std::fabs(x - y) / (normwise ? largest : std::max(1.0, std::fabs(y)));
    worst = std::max(worst, std::isnan(scaled) ? INFINITY : scaled);
  }
  return worst;
}

/// The unit of rounding of a floating-point type (2^-23 for f32).
double unitOf(const llvm::fltSemantics &semantics) {
  return std::ldexp(1.0, 1 - int(llvm::APFloat::semanticsPrecision(semantics)));
}

/// How far an output of `element` may be from the reference when the
/// launches compute `sums` in another order (none where `reordered` is
/// false):
///   - 1e-5 where every launch computes as the reference does, in the same
///     order (only f32 rounding of the math's expansions differs), relative
///     to max(1, |reference|) elementwise;
///   - the tensor cores sum the same rounded products in another order
///     (16-term chunks in an mma, then 32-deep steps), and a row
///     kernel's threads a row's terms (strided partial sums, then a
///     tree). Two orders of f32 sums of `depth` terms differ by up to
///     about depth units of f32 rounding (2^-24) of the sum of the terms'
///     magnitudes, not of the result: where the terms cancel (a model's
///     own activations and weights), the result is much smaller than its
///     terms. Measured against max(1, the output's largest magnitude),
///     the partial sums' scale: 3.4e-5 at 576 terms, where 1.4e-5 is
///     seen, and 2.7e-4 at 4608 (ResNet-50's last 3 x 3 convolutions),
///     where 9.6e-5 is;
///   - a product that reads what another computed (attention's
///     probabilities, the softmax of a product) rounds that operand to
///     16 bits, and the two sums' last bits may round it to neighbouring
///     values: up to one unit of the operand type in each term (2^-10 for
///     fp16, where attention's outputs show 6e-5). The fused attention
///     kernel rounds exp(score - running maximum) instead of the
///     normalized probability, each within half a unit: again one unit
///     per term apart (its outputs show 7e-5 to 2.8e-4);
///   - an output of a 16-bit type may round to the neighbouring value: two
///     units of its rounding.
/// A wrong fragment, tile, edge or missing barrier gives differences of
/// the outputs' own size (1 and more) or NaN.
double toleranceOf(Type element, const ReorderedSums &sums, bool reordered) {
  if (!reordered)
    return 1e-5;
  const llvm::fltSemantics *semantics = semanticsOf(element);
  if (!semantics)
    return 0; // integers match exactly
  double tolerance = std::max({1e-5, std::ldexp(double(sums.depth), -24), 2 * unitOf(*semantics)});
  if (sums.readsComputedOperand)
    tolerance = std::max(tolerance, unitOf(*semanticsOf(sums.operandType)));
  return tolerance;
}

/// A buffer of `type`, zeroed.
Buffer zeroed(MemRefType type) {
  return {std::vector<uint8_t>(bufferBytes(type)), type.getElementType()};
}

/// Creates the JIT of the reference, lowered to the host (it may call
/// compiler-rt's bf16 rounding, among the host calls).
llvm::Expected<std::unique_ptr<ExecutionEngine>> jit(ModuleOp module) {
  ExecutionEngineOptions options;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Less;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      ExecutionEngine::create(module, options);
  if (engine)
    (*engine)->registerSymbols(hostCallSymbols);
  return engine;
}

/// Calls the kernel `name` of `engine` on `buffers`.
llvm::Error call(ExecutionEngine &engine, llvm::StringRef name, std::vector<Buffer> &buffers) {
  std::vector<void *> pointers, arguments;
  for (Buffer &buffer : buffers)
    pointers.push_back(buffer.bytes.data());
  for (void *&pointer : pointers)
    arguments.push_back(&pointer);
  return engine.invokePacked(name, arguments);
}

} // namespace

llvm::Expected<std::unique_ptr<KernelPair>> KernelPair::compile(func::FuncOp kernel,
                                                                const EmulationOptions &options) {
  std::unique_ptr<KernelPair> pair(new KernelPair());
  pair->name = kernel.getSymName().str();
  pair->inputs = kernel.getNumArguments();
  OwningOpRef<ModuleOp> reference = isolate(kernel), emulated = isolate(kernel);
  if (failed(lowerReference(*reference, options.precision, pair->sums)))
    return llvm::createStringError("the lowering failed");
  if (failed(tessel::cuda::lowerKernelsToLoops(*emulated, options.precision)))
    return llvm::createStringError("the lowering failed");
  guardIntegerDivisions(*emulated);
  pair->recordBufferTypes(*emulated);
  llvm::Expected<std::unique_ptr<DeviceProgram>> device =
      DeviceProgram::compile(*emulated, options.removed);
  if (!device)
    return device.takeError();
  pair->emulated = std::move(*device);
  if (failed(lowerToHost(*reference)))
    return llvm::createStringError("lowering to the host failed");
  llvm::Expected<std::unique_ptr<ExecutionEngine>> compiled = jit(*reference);
  if (!compiled)
    return compiled.takeError();
  pair->reference = std::move(*compiled);
  return pair;
}

void KernelPair::recordBufferTypes(ModuleOp lowered) {
  // The argument types after bufferization: the inputs, then the outputs.
  auto function = *lowered.getOps<func::FuncOp>().begin();
  for (Type type : function.getArgumentTypes())
    bufferTypes.push_back(cast<MemRefType>(type));
}

std::vector<Buffer> KernelPair::inputBuffers() const {
  std::vector<Buffer> buffers;
  for (MemRefType type : ArrayRef(bufferTypes).take_front(inputs))
    buffers.push_back(zeroed(type));
  return buffers;
}

llvm::Expected<std::vector<Buffer>>
KernelPair::callBuffers(ArrayRef<const Buffer *> inputBuffers) const {
  if (inputBuffers.size() != inputs)
    return llvm::createStringError("%zu inputs, the kernel takes %zu", inputBuffers.size(), inputs);
  std::vector<Buffer> all;
  for (auto [i, type] : llvm::enumerate(bufferTypes)) {
    if (i >= inputs) {
      all.push_back(zeroed(type));
      continue;
    }
    uint64_t bytes = bufferBytes(type);
    if (inputBuffers[i]->bytes.size() != bytes)
      return llvm::createStringError("input %zu has %zu bytes, the kernel reads %" PRIu64, i,
                                     inputBuffers[i]->bytes.size(), bytes);
    all.push_back(*inputBuffers[i]);
  }
  return all;
}

llvm::Expected<std::vector<Buffer>>
KernelPair::runReference(ArrayRef<const Buffer *> inputBuffers) {
  llvm::Expected<std::vector<Buffer>> all = callBuffers(inputBuffers);
  if (!all)
    return all.takeError();
  if (llvm::Error error = call(*reference, name, *all))
    return error;
  all->erase(all->begin(), all->begin() + inputs);
  return all;
}

llvm::Expected<KernelComparison> KernelPair::run(ArrayRef<const Buffer *> inputBuffers) {
  llvm::Expected<std::vector<Buffer>> all = callBuffers(inputBuffers);
  if (!all)
    return all.takeError();
  // (Each form gets its own inputs: a kernel may use one as scratch.)
  std::vector<Buffer> &referenceBuffers = *all, emulatedBuffers = *all;
  if (llvm::Error error = call(*reference, name, referenceBuffers))
    return error;
  std::vector<void *> bindings;
  for (Buffer &buffer : emulatedBuffers)
    bindings.push_back(buffer.bytes.data());
  if (llvm::Error error = emulated->run(bindings))
    return error;
  // Each output's difference, as a share of its tolerance. Where the
  // launches sum in another order, the difference is measured against the
  // output's largest magnitude (toleranceOf).
  bool reordersSums = emulated->synchronizingLaunches() > 0 && sums.depth > 0;
  KernelComparison comparison;
  double worstShare = 0;
  for (size_t i = inputs; i < referenceBuffers.size(); ++i) {
    double tolerance = toleranceOf(referenceBuffers[i].element, sums, reordersSums);
    double error = difference(emulatedBuffers[i], referenceBuffers[i], reordersSums);
    double share = error == 0 ? 0 : tolerance == 0 ? INFINITY : error / tolerance;
    if (share >= worstShare) {
      comparison.largestDifference = error;
      comparison.tolerance = tolerance;
      worstShare = share;
    }
    comparison.emulatedOutputs.push_back(std::move(emulatedBuffers[i]));
  }
  comparison.match = worstShare <= 1;
  return comparison;
}

void KernelPair::printComparison(llvm::raw_ostream &os, llvm::StringRef kernel,
                                 const KernelComparison &comparison) const {
  size_t launches = emulated->launchCount(), synchronizing = emulated->synchronizingLaunches();
  os << kernel << ": " << launches << (launches == 1 ? " launch" : " launches")
     << (synchronizing ? " (" + std::to_string(synchronizing) + " synchronizing)" : "") << ", "
     << (comparison.match ? "outputs match" : "OUTPUTS DIFFER") << " (largest relative difference "
     << llvm::format("%.3g", comparison.largestDifference);
  if (synchronizing)
    os << ", tolerance " << llvm::format("%.3g", comparison.tolerance);
  os << ")\n";
}

} // namespace tessel::cuda::emulator
