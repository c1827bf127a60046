//===- ThreadFunctions.cpp - Launches that synchronize, as functions of one thread ---===//

#include "ThreadFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace tessel::cuda::emulator {

namespace {

/// Each barrier and warp instruction of the code gets its own site, so that
/// threads meeting at different ones are seen to have diverged.
int64_t nextSite = 0;

/// `func.func private @name(index...)`, declared once in `module`.
func::FuncOp declareHostCall(ModuleOp module, StringRef name, unsigned arguments) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  SmallVector<Type> types(arguments, builder.getIndexType());
  auto function =
      func::FuncOp::create(builder, module.getLoc(), name, builder.getFunctionType(types, {}));
  function.setPrivate();
  return function;
}

/// Whether `launch` has threads that must meet or share memory (a block's
/// shared memory is its own, which loops over all blocks would not keep).
bool synchronizes(gpu::LaunchOp launch) {
  return !launch.getWorkgroupAttributions().empty() ||
         launch
             .walk([](Operation *op) {
               return isa<gpu::BarrierOp, nvgpu::LdMatrixOp, NVVM::MmaOp>(op)
                          ? WalkResult::interrupt()
                          : WalkResult::advance();
             })
             .wasInterrupted();
}

/// A thread function's rewriting of its barriers and warp instructions
/// into calls of the emulator, with the buffers those calls pass (on the
/// thread's own stack) allocated once at its entry.
class HostCallRewriter {
public:
  explicit HostCallRewriter(func::FuncOp function)
      : function(function), module(function->getParentOfType<ModuleOp>()),
        entry(OpBuilder::atBlockBegin(&function.getBody().front())) {}

  LogicalResult rewrite() {
    SmallVector<Operation *> ops;
    function.walk([&](Operation *op) {
      if (isa<gpu::BarrierOp, nvgpu::LdMatrixOp, NVVM::MmaOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder builder(op);
      LogicalResult result = success();
      if (isa<gpu::BarrierOp>(op))
        call(builder, op->getLoc(), "tessel_emu_barrier", {site(builder, op->getLoc())});
      else if (auto load = dyn_cast<nvgpu::LdMatrixOp>(op))
        result = rewriteLoadMatrices(builder, load);
      else
        result = rewriteMultiply(builder, cast<NVVM::MmaOp>(op));
      if (failed(result))
        return failure();
      op->erase();
    }
    return success();
  }

private:
  Value index(OpBuilder &builder, Location loc, int64_t value) {
    return arith::ConstantIndexOp::create(builder, loc, value);
  }
  Value site(OpBuilder &builder, Location loc) { return index(builder, loc, nextSite++); }
  Value address(OpBuilder &builder, Location loc, Value buffer) {
    return memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, buffer);
  }
  void call(OpBuilder &builder, Location loc, StringRef name, ArrayRef<Value> arguments) {
    func::FuncOp callee = declareHostCall(module, name, arguments.size());
    func::CallOp::create(builder, loc, callee, arguments);
  }
  /// A buffer of `count` x `element` on the thread's stack.
  Value stackBuffer(int64_t count, Type element) {
    return memref::AllocaOp::create(entry, function.getLoc(), MemRefType::get({count}, element));
  }

  /// ldmatrix.x4: the lane's row address, as a byte offset into its tile
  /// (checked against the tile's size), and its four registers back. A
  /// tile of halves or of bytes (untransposed: ldmatrix moves 16-bit
  /// elements, four bytes a register).
  LogicalResult rewriteLoadMatrices(OpBuilder &builder, nvgpu::LdMatrixOp load) {
    Location loc = load.getLoc();
    auto tile = cast<MemRefType>(load.getSrcMemref().getType());
    auto result = cast<VectorType>(load.getResult().getType());
    unsigned bits = result.getElementType().getIntOrFloatBitWidth();
    if (load.getNumTiles() != 4 || tile.getRank() != 2 || !tile.hasStaticShape() ||
        !tile.getLayout().isIdentity() || result.getRank() != 2 || result.getDimSize(0) != 4 ||
        result.getDimSize(1) * bits != 32 || (bits != 16 && (bits != 8 || load.getTranspose())))
      return load.emitError("the emulator models ldmatrix.x4 of 16-bit elements or bytes "
                            "(untransposed) from a row-major shared tile only");
    ValueRange indices = load.getIndices();
    Value offset = arith::AddIOp::create(
        builder, loc,
        arith::MulIOp::create(builder, loc, indices[0], index(builder, loc, tile.getDimSize(1))),
        indices[1]);
    offset = arith::MulIOp::create(builder, loc, offset, index(builder, loc, bits / 8));
    Value &registers = loadedRegisters[result.getElementType()];
    if (!registers)
      registers = stackBuffer(result.getNumElements(), result.getElementType());
    call(builder, loc, "tessel_emu_ldmatrix",
         {site(builder, loc), address(builder, loc, load.getSrcMemref()),
          index(builder, loc, tile.getNumElements() * bits / 8), offset,
          index(builder, loc, load.getTranspose()), address(builder, loc, registers)});
    Value flat = vector::LoadOp::create(
        builder, loc, VectorType::get({result.getNumElements()}, result.getElementType()),
        registers, ValueRange{index(builder, loc, 0)});
    load.getResult().replaceAllUsesWith(vector::ShapeCastOp::create(builder, loc, result, flat));
    return success();
  }

  /// A fragment register as the 32-bit word it is: a pair of halves, or
  /// already a word (bf16 pairs, four bytes).
  Value word(OpBuilder &builder, Location loc, Value value) {
    if (value.getType().isInteger(32))
      return value;
    Value bits =
        vector::BitCastOp::create(builder, loc, VectorType::get({1}, builder.getI32Type()), value);
    return vector::ExtractOp::create(builder, loc, bits, ArrayRef<int64_t>{0});
  }

  /// mma.sync.m16n8k16.row.col with f32 sums of halves, or m16n8k32 with
  /// wrapping i32 sums of 8-bit integers: the lane's fragments stored, and
  /// its four sums, which the op's users extract, loaded back.
  LogicalResult rewriteMultiply(OpBuilder &builder, NVVM::MmaOp mma) {
    Location loc = mma.getLoc();
    NVVM::MMAShapeAttr shape = mma.getShape();
    std::optional<NVVM::MMATypes> aType = mma.getMultiplicandAPtxType(),
                                  bType = mma.getMultiplicandBPtxType();
    auto isHalf = [](std::optional<NVVM::MMATypes> type) {
      return type == NVVM::MMATypes::f16 || type == NVVM::MMATypes::bf16;
    };
    auto isByte = [](std::optional<NVVM::MMATypes> type) {
      return type == NVVM::MMATypes::s8 || type == NVVM::MMATypes::u8;
    };
    bool halves = isHalf(aType) && bType == aType && shape.getK() == 16 &&
                  mma.getOperandC()[0].getType().isF32();
    bool integers = isByte(aType) && isByte(bType) && shape.getK() == 32 &&
                    mma.getOperandC()[0].getType().isInteger(32) &&
                    mma.getIntOverflowBehavior() == NVVM::MMAIntOverflow::wrapped;
    if (shape.getM() != 16 || shape.getN() != 8 || !(halves || integers) ||
        mma.getLayoutA() != NVVM::MMALayout::row || mma.getLayoutB() != NVVM::MMALayout::col ||
        mma.getOperandA().size() != 4 || mma.getOperandB().size() != 2 ||
        mma.getOperandC().size() != 4)
      return mma.emitError("the emulator models mma.sync.m16n8k16.row.col.f32 of f16 or bf16 "
                           "and mma.sync.m16n8k32.row.col.s32 of s8 or u8 (wrapping) only");
    Type i32 = builder.getI32Type(), sumType = mma.getOperandC()[0].getType();
    Value &c = sums[sumType], &d = results[sumType];
    if (!a)
      a = stackBuffer(4, i32), b = stackBuffer(2, i32);
    if (!c)
      c = stackBuffer(4, sumType), d = stackBuffer(4, sumType);
    auto store = [&](ValueRange values, Value buffer, bool asWords) {
      for (auto [i, value] : llvm::enumerate(values))
        memref::StoreOp::create(builder, loc, asWords ? word(builder, loc, value) : value, buffer,
                                ValueRange{index(builder, loc, i)});
    };
    store(mma.getOperandA(), a, true);
    store(mma.getOperandB(), b, true);
    store(mma.getOperandC(), c, false);
    SmallVector<Value> arguments{site(builder, loc), address(builder, loc, a),
                                 address(builder, loc, b), address(builder, loc, c),
                                 address(builder, loc, d)};
    if (halves) {
      arguments.push_back(index(builder, loc, *aType == NVVM::MMATypes::bf16));
      call(builder, loc, "tessel_emu_mma", arguments);
    } else {
      arguments.push_back(index(builder, loc, *aType == NVVM::MMATypes::u8));
      arguments.push_back(index(builder, loc, *bType == NVVM::MMATypes::u8));
      call(builder, loc, "tessel_emu_mma_integers", arguments);
    }
    for (Operation *user : llvm::make_early_inc_range(mma->getUsers())) {
      auto extract = dyn_cast<LLVM::ExtractValueOp>(user);
      if (!extract || extract.getPosition().size() != 1)
        return mma.emitError("the emulator expects an mma.sync's sums taken one by one");
      OpBuilder at(extract);
      Value sum =
          memref::LoadOp::create(at, loc, d, ValueRange{index(at, loc, extract.getPosition()[0])});
      extract.replaceAllUsesWith(sum);
      extract.erase();
    }
    return success();
  }

  func::FuncOp function;
  ModuleOp module;
  OpBuilder entry;
  /// ldmatrix's registers per element type; mma.sync's fragments, and its
  /// sums per type (f32 or i32).
  llvm::DenseMap<Type, Value> loadedRegisters, sums, results;
  Value a, b;
};

/// `type` in the default memory space (shared memory is plain memory on
/// the host).
MemRefType withoutMemorySpace(MemRefType type) {
  return MemRefType::get(type.getShape(), type.getElementType(), type.getLayout());
}

/// Outlines `launch`'s body into a thread function named `name` and
/// replaces the launch by the call that runs it.
FailureOr<ThreadedLaunch> outline(gpu::LaunchOp launch, StringRef name, int64_t id) {
  ThreadedLaunch record;
  record.function = name.str();
  auto constant = [](Value value) { return getConstantIntValue(value); };
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  std::optional<int64_t> gx = constant(grid.x), gy = constant(grid.y), gz = constant(grid.z),
                         bx = constant(block.x), by = constant(block.y), bz = constant(block.z);
  if (!gx || !gy || !gz || !bx || by != 1 || bz != 1)
    return launch.emitError("the emulator runs launches of constant sizes with threads along x "
                            "only");
  record.grid = {*gx, *gy, *gz};
  record.threads = *bx;

  Region &body = launch.getBody();
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(body, captured);
  SmallVector<Type> argumentTypes(4, IndexType::get(launch.getContext()));
  for (Value value : captured) {
    auto type = dyn_cast<MemRefType>(value.getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
      return launch.emitError("the emulator passes whole static buffers to a launch only: ")
             << value;
    argumentTypes.push_back(type);
  }
  record.captured = captured.size();
  for (BlockArgument shared : launch.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(shared.getType());
    argumentTypes.push_back(withoutMemorySpace(type));
    record.sharedBytes.push_back(type.getNumElements() * type.getElementTypeBitWidth() / 8);
  }

  auto kernel = launch->getParentOfType<func::FuncOp>();
  OpBuilder builder(kernel->getContext());
  builder.setInsertionPointAfter(kernel);
  Location loc = launch.getLoc();
  auto function =
      func::FuncOp::create(builder, loc, name, builder.getFunctionType(argumentTypes, {}));
  Block *entry = function.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  IRMapping mapping;
  gpu::KernelDim3 blockIds = launch.getBlockIds(), threadIds = launch.getThreadIds();
  mapping.map(blockIds.x, entry->getArgument(0));
  mapping.map(blockIds.y, entry->getArgument(1));
  mapping.map(blockIds.z, entry->getArgument(2));
  mapping.map(threadIds.x, entry->getArgument(3));
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  mapping.map(threadIds.y, zero);
  mapping.map(threadIds.z, zero);
  gpu::KernelDim3 gridSizes = launch.getGridSize(), blockSizes = launch.getBlockSize();
  for (auto [argument, size] : {std::pair{gridSizes.x, *gx},
                                {gridSizes.y, *gy},
                                {gridSizes.z, *gz},
                                {blockSizes.x, *bx},
                                {blockSizes.y, *by},
                                {blockSizes.z, *bz}})
    mapping.map(argument, arith::ConstantIndexOp::create(builder, loc, size).getResult());
  for (auto [i, value] : llvm::enumerate(captured))
    mapping.map(value, entry->getArgument(4 + i));
  for (auto [i, shared] : llvm::enumerate(launch.getWorkgroupAttributions()))
    mapping.map(shared, entry->getArgument(4 + captured.size() + i));
  for (Operation &op : body.front().without_terminator())
    builder.clone(op, mapping);
  func::ReturnOp::create(builder, loc);
  if (failed(HostCallRewriter(function).rewrite()))
    return failure();

  // The kernel's side: the captured buffers' addresses in an array.
  builder.setInsertionPoint(launch);
  auto pointersType =
      MemRefType::get({std::max<int64_t>(1, captured.size())}, builder.getIndexType());
  Value pointers = memref::AllocaOp::create(builder, loc, pointersType);
  for (auto [i, value] : llvm::enumerate(captured))
    memref::StoreOp::create(builder, loc,
                            memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, value),
                            pointers, ValueRange{arith::ConstantIndexOp::create(builder, loc, i)});
  func::FuncOp run = declareHostCall(kernel->getParentOfType<ModuleOp>(), "tessel_emu_launch", 2);
  func::CallOp::create(
      builder, loc, run,
      ValueRange{arith::ConstantIndexOp::create(builder, loc, id),
                 memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, pointers)});
  launch.erase();
  return record;
}

} // namespace

LogicalResult outlineSynchronizingLaunches(func::FuncOp kernel,
                                           std::vector<ThreadedLaunch> &launches) {
  SmallVector<gpu::LaunchOp> synchronizing;
  for (auto launch : kernel.getBody().front().getOps<gpu::LaunchOp>())
    if (synchronizes(launch))
      synchronizing.push_back(launch);
  for (gpu::LaunchOp launch : synchronizing) {
    std::string name = (kernel.getSymName() + "_thread" + Twine(launches.size())).str();
    FailureOr<ThreadedLaunch> record = outline(launch, name, launches.size());
    if (failed(record))
      return failure();
    launches.push_back(std::move(*record));
  }
  return success();
}

} // namespace tessel::cuda::emulator
