//===- Launches.cpp - Kernel functions split into GPU kernel launches -----===//

#include "targets/cuda/Launches.h"
#include "targets/cuda/LaunchBuilder.h"
#include "targets/cuda/Loops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tessel::cuda {

namespace {

/// Scratch offsets are aligned so that every temporary suits any load the
/// kernels make (the driver aligns allocations to 256 bytes too).
constexpr uint64_t kScratchAlignment = 256;

/// What every kernel argument's address is a multiple of.
constexpr int64_t kArgumentAlignment = 16;

/// Ops that stay on the host side of a kernel function: they compute no
/// elements, only addresses, which the launches take as arguments or sink.
bool isAddressOnly(Operation *op) {
  return leavesBuffersAlone(op) || isa<memref::DeallocOp, func::ReturnOp>(op);
}

/// What a launch may take in by cloning rather than as an argument.
bool isWorthSinking(Operation *op) {
  return isa<arith::ConstantOp, memref::GetGlobalOp, ViewLikeOpInterface>(op);
}

/// The static trip counts of `loop`'s dimensions, or failure.
FailureOr<SmallVector<int64_t>> tripCounts(scf::ParallelOp loop) {
  SmallVector<int64_t> counts;
  for (auto [lower, upper, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lower), u = getConstantIntValue(upper),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return failure();
    counts.push_back(*u > *l ? llvm::divideCeil(*u - *l, *s) : 0);
  }
  return counts;
}

/// A launch of `blocks` × `threads` before `anchor`, whose body gets the
/// flat thread index and is ended by its terminator.
gpu::LaunchOp createLaunch(OpBuilder &builder, Location loc, int64_t blocks, int64_t threads,
                           Value &flatIndex) {
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value gridX = arith::ConstantIndexOp::create(builder, loc, blocks);
  Value blockX = arith::ConstantIndexOp::create(builder, loc, threads);
  auto launch = gpu::LaunchOp::create(builder, loc, gridX, one, one, blockX, one, one);
  enterLaunch(builder, launch);
  Value blockSize = arith::ConstantIndexOp::create(builder, loc, threads);
  Value base = arith::MulIOp::create(builder, loc, launch.getBlockIds().x, blockSize);
  flatIndex = arith::AddIOp::create(builder, loc, base, launch.getThreadIds().x);
  return launch;
}

/// Replaces top-level `loop` by a launch of one thread per iteration.
LogicalResult launchParallelLoop(scf::ParallelOp loop, unsigned threadsPerBlock) {
  if (!loop.getInitVals().empty())
    return loop.emitError("the CUDA target cannot launch a parallel loop with reductions");
  FailureOr<SmallVector<int64_t>> counts = tripCounts(loop);
  if (failed(counts))
    return loop.emitError("the CUDA target needs static loop bounds (a static shape)");
  int64_t total = 1;
  for (int64_t count : *counts)
    total *= count;
  if (total == 0) {
    loop.erase();
    return success();
  }
  int64_t threads = std::min<int64_t>(threadsPerBlock, llvm::alignTo(total, 32));
  int64_t blocks = llvm::divideCeil(total, threads);
  if (blocks > INT32_MAX)
    return loop.emitError("the loop nest has more iterations than one CUDA grid holds");

  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  Value flat;
  createLaunch(builder, loc, blocks, threads, flat);
  Value bound = arith::ConstantIndexOp::create(builder, loc, total);
  Value inside = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, flat, bound);
  auto guard = scf::IfOp::create(builder, loc, inside, /*withElseRegion=*/false);
  builder.setInsertionPointToStart(&guard.getThenRegion().front());

  // The last dimension varies fastest, so that neighbouring threads touch
  // neighbouring elements of row-major buffers.
  IRMapping mapping;
  Value rest = flat;
  for (int64_t d = int64_t(counts->size()) - 1; d >= 0; --d) {
    Value count = arith::ConstantIndexOp::create(builder, loc, (*counts)[d]);
    Value index = d == 0 ? rest : arith::RemUIOp::create(builder, loc, rest, count).getResult();
    if (d > 0)
      rest = arith::DivUIOp::create(builder, loc, rest, count);
    Value scaled = arith::MulIOp::create(builder, loc, index, loop.getStep()[d]);
    mapping.map(loop.getInductionVars()[d],
                arith::AddIOp::create(builder, loc, scaled, loop.getLowerBound()[d]).getResult());
  }
  for (Operation &op : loop.getBody()->without_terminator())
    builder.clone(op, mapping);
  loop.erase();
  return success();
}

/// Replaces `ops`, consecutive top-level ops that compute, by a launch of
/// one thread.
void launchSerially(ArrayRef<Operation *> ops) {
  OpBuilder builder(ops.front());
  Value flat;
  gpu::LaunchOp launch = createLaunch(builder, ops.front()->getLoc(), 1, 1, flat);
  Operation *terminator = launch.getBody().front().getTerminator();
  for (Operation *op : ops)
    op->moveBefore(terminator);
}

/// Clones into `launch` every constant, global address and view that it
/// uses from outside, and what those use in turn, so that it takes only
/// whole buffers (bindings and temporaries) as arguments.
void sinkAddressComputations(gpu::LaunchOp launch) {
  Region &body = launch.getBody();
  while (true) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(body, captured);
    Value sinkable;
    for (Value value : captured)
      if (Operation *op = value.getDefiningOp(); op && isWorthSinking(op)) {
        sinkable = value;
        break;
      }
    if (!sinkable)
      return;
    Operation *op = sinkable.getDefiningOp();
    OpBuilder builder = OpBuilder::atBlockBegin(&body.front());
    Operation *clone = builder.clone(*op);
    for (auto [original, cloned] : llvm::zip(op->getResults(), clone->getResults()))
      replaceAllUsesInRegionWith(original, cloned, body);
  }
}

/// Whether `function` stores into `argument`, directly or through views.
bool isWritten(BlockArgument argument, gpu::GPUFuncOp function) {
  bool written = false;
  function.walk(
      [&](memref::StoreOp store) { written |= rootBuffer(store.getMemRef()) == argument; });
  return written;
}

/// Whether threads of `function` may read what others wrote to `argument`:
/// it is read as well as written, across a barrier (a row kernel's row
/// values, stored by thread 0 and read by all). LLVM takes a noalias
/// argument that does not escape to be out of a barrier call's reach, and
/// could move its loads and stores across the barrier.
bool isSharedThroughBarrier(BlockArgument argument, gpu::GPUFuncOp function) {
  bool barrier = false, read = false;
  function.walk([&](Operation *op) {
    barrier |= isa<gpu::BarrierOp>(op);
    if (auto load = dyn_cast<memref::LoadOp>(op))
      read |= rootBuffer(load.getMemRef()) == argument;
    if (auto load = dyn_cast<vector::LoadOp>(op))
      read |= rootBuffer(load.getBase()) == argument;
  });
  return barrier && read;
}

/// Where `value`, an argument of a launch, points: a binding of `kernel`
/// or a temporary of `scratch`.
FailureOr<CudaArgument> argumentOf(Value value, func::FuncOp kernel,
                                   const llvm::DenseMap<Value, uint64_t> &scratch) {
  if (auto argument = dyn_cast<BlockArgument>(value))
    if (argument.getOwner() == &kernel.getBody().front())
      return CudaArgument{static_cast<uint32_t>(argument.getArgNumber()), 0};
  auto found = scratch.find(value);
  if (found != scratch.end())
    return CudaArgument{CudaArgument::kScratch, found->second};
  return failure();
}

/// Copies the memref.globals that `function` reads from `from` into
/// `gpuModule`, once each.
void copyGlobals(gpu::GPUFuncOp function, ModuleOp from, gpu::GPUModuleOp gpuModule) {
  SymbolTable symbols(gpuModule);
  function.walk([&](memref::GetGlobalOp get) {
    if (symbols.lookup(get.getName()))
      return;
    if (auto global = from.lookupSymbol<memref::GlobalOp>(get.getNameAttr()))
      symbols.insert(global->clone());
  });
}

} // namespace

LogicalResult formLaunches(func::FuncOp kernel, unsigned threadsPerBlock) {
  Block &body = kernel.getBody().front();
  // Every nest that computes becomes a launch, in program order.
  SmallVector<Operation *> serial;
  SmallVector<Operation *> topLevel = llvm::map_to_vector(body, [](Operation &op) { return &op; });
  auto flushSerial = [&] {
    if (!serial.empty())
      launchSerially(serial);
    serial.clear();
  };
  for (Operation *op : topLevel) {
    if (isAddressOnly(op)) {
      flushSerial();
      continue;
    }
    if (isa<gpu::LaunchOp>(op)) { // a tensor-core product or row kernel, launched already
      flushSerial();
      continue;
    }
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      flushSerial();
      if (failed(launchParallelLoop(loop, threadsPerBlock)))
        return failure();
      continue;
    }
    serial.push_back(op);
  }
  flushSerial();
  for (gpu::LaunchOp launch : body.getOps<gpu::LaunchOp>())
    sinkAddressComputations(launch);
  return success();
}

FailureOr<KernelLaunches> outlineLaunches(func::FuncOp kernel, gpu::GPUModuleOp gpuModule) {
  Block &body = kernel.getBody().front();
  KernelLaunches result;
  llvm::DenseMap<Value, uint64_t> scratch;
  for (Operation &op : body) {
    if (!isa<memref::AllocOp, memref::AllocaOp>(op))
      continue;
    auto type = cast<MemRefType>(op.getResult(0).getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return op.emitError("the CUDA target needs temporaries of static shape");
    result.scratchBytes = llvm::alignTo(result.scratchBytes, kScratchAlignment);
    scratch[op.getResult(0)] = result.scratchBytes;
    result.scratchBytes += bufferBytes(type);
  }

  SymbolTable symbols(gpuModule);
  auto module = kernel->getParentOfType<ModuleOp>();
  SmallVector<gpu::LaunchOp> launches(body.getOps<gpu::LaunchOp>());
  for (gpu::LaunchOp launch : launches) {
    SmallVector<Value> operands;
    std::string name = (kernel.getSymName() + "_" + Twine(result.launches.size())).str();
    gpu::GPUFuncOp function = outlineKernelFunc(launch, name, operands);
    symbols.insert(function);
    copyGlobals(function, module, gpuModule);

    CudaLaunch record;
    record.function = function.getName().str();
    auto dimension = [](Value value) {
      return static_cast<uint32_t>(*getConstantIntValue(value));
    };
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    record.grid = {dimension(grid.x), dimension(grid.y), dimension(grid.z)};
    record.block = {dimension(block.x), dimension(block.y), dimension(block.z)};
    // Distinct arguments are distinct buffers or disjoint temporaries, so
    // LLVM may keep values in registers across stores to the ones written
    // (an accumulator), unless threads share them through a barrier. Only
    // written ones are marked: a read-only noalias pointer
    // makes NVPTX load through the non-coherent cache (ld.global.nc),
    // around which ptxas spills registers. Every buffer starts at least 16
    // bytes aligned (the arena's and the weights' 64, scratch offsets 256),
    // which lets loads go 16 bytes at a time.
    Builder attributes(kernel.getContext());
    // (The body's first arguments; those after them are the launch's
    // shared-memory buffers.)
    for (BlockArgument argument :
         function.getArguments().take_front(function.getFunctionType().getNumInputs())) {
      if (isWritten(argument, function) && !isSharedThroughBarrier(argument, function))
        function.setArgAttr(argument.getArgNumber(), LLVM::LLVMDialect::getNoAliasAttrName(),
                            attributes.getUnitAttr());
      function.setArgAttr(argument.getArgNumber(), LLVM::LLVMDialect::getAlignAttrName(),
                          attributes.getI64IntegerAttr(kArgumentAlignment));
    }
    // Shared memory is read in whole words and more: its buffers start at
    // 16-byte boundaries, as arguments do.
    for (unsigned i = 0; i < function.getNumWorkgroupAttributions(); ++i)
      function.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                           attributes.getI64IntegerAttr(kArgumentAlignment));
    function.setKnownBlockSizeAttr(
        DenseI32ArrayAttr::get(kernel.getContext(), {int32_t(record.block[0]),
                                                     int32_t(record.block[1]),
                                                     int32_t(record.block[2])}));
    for (Value operand : operands) {
      FailureOr<CudaArgument> argument = argumentOf(operand, kernel, scratch);
      if (failed(argument))
        return launch.emitError("a CUDA launch cannot take this value as an argument: ")
               << operand;
      record.arguments.push_back(*argument);
    }
    result.launches.push_back(std::move(record));
    launch.erase();
  }
  return result;
}

} // namespace tessel::cuda
