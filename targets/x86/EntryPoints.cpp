//===- EntryPoints.cpp - Export kernels through the CPU dispatch ABI ------===//

#include "targets/x86/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86ENTRYPOINTSPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

/// Arguments every kernel has after its bindings: begin, end, scratch.
constexpr unsigned kTrailingArguments = 3;

/// Fields of tsl_cpu_kernel_call (KernelAbi.h), each 8 bytes.
enum CallField : int32_t {
  kBindings = 0,
  kBindingSizes = 1,
  kBindingCount = 2,
  kBegin = 3,
  kEnd = 4,
  kScratch = 5,
  kScratchBytes = 6,
};

/// tsl_cpu_kernel_result.
constexpr int32_t kKernelOk = 0;
constexpr int32_t kCallMismatch = 1;

/// Builds one entry's body: loads what the call holds and checks it
/// against what the kernel was compiled for.
class EntryBuilder {
public:
  EntryBuilder(OpBuilder &builder, Location loc)
      : builder(builder), loc(loc), ptrType(LLVM::LLVMPointerType::get(builder.getContext())),
        i64Type(builder.getI64Type()), i32Type(builder.getI32Type()) {}

  Value field(Value call, CallField index, Type type) {
    return load(type, call, index);
  }
  /// Element `index` of the array of 8-byte `type` values at `base`.
  Value load(Type type, Value base, int32_t index) {
    Value address = LLVM::GEPOp::create(builder, loc, ptrType, i64Type, base,
                                        ArrayRef<LLVM::GEPArg>{index});
    return LLVM::LoadOp::create(builder, loc, type, address);
  }
  Value i64(int64_t value) {
    return LLVM::ConstantOp::create(builder, loc, i64Type, builder.getI64IntegerAttr(value));
  }
  Value compare(LLVM::ICmpPredicate predicate, Value lhs, Value rhs) {
    return LLVM::ICmpOp::create(builder, loc, predicate, lhs, rhs);
  }
  Value both(Value lhs, Value rhs) { return LLVM::AndOp::create(builder, loc, lhs, rhs); }
  void returnResult(int32_t result) {
    Value value =
        LLVM::ConstantOp::create(builder, loc, i32Type, builder.getI32IntegerAttr(result));
    LLVM::ReturnOp::create(builder, loc, value);
  }

  OpBuilder &builder;
  Location loc;
  Type ptrType, i64Type, i32Type;
};

/// Emits `<kernel>_entry(const tsl_cpu_kernel_call *call) -> i32`, which
/// runs `kernel` only when the call matches the binding sizes, workgroup
/// count and scratch it was compiled for.
LogicalResult emitEntry(LLVM::LLVMFuncOp kernel, OpBuilder &builder) {
  unsigned numArgs = kernel.getNumArguments();
  auto bindingBytes = kernel->getAttrOfType<DenseI64ArrayAttr>(kBindingBytesAttr);
  if (numArgs < kTrailingArguments || !bindingBytes ||
      bindingBytes.size() != static_cast<int64_t>(numArgs - kTrailingArguments))
    return kernel.emitError("kernel lacks its binding sizes, workgroup range or scratch");
  int64_t bindings = bindingBytes.size();
  int64_t workgroups = kernel->getAttrOfType<IntegerAttr>(kWorkgroupCountAttr).getInt();
  int64_t scratchBytes = 0;
  if (auto scratch = kernel->getAttrOfType<IntegerAttr>(kScratchBytesAttr))
    scratchBytes = scratch.getInt();

  Location loc = kernel.getLoc();
  builder.setInsertionPointAfter(kernel);
  EntryBuilder b(builder, loc);
  auto entryType = LLVM::LLVMFunctionType::get(b.i32Type, {b.ptrType});
  auto entry =
      LLVM::LLVMFuncOp::create(builder, loc, (kernel.getName() + kEntrySuffix).str(), entryType);
  for (StringRef name :
       {kWorkgroupCountAttr, kScratchBytesAttr, kLengthRowPositionsAttr, kLengthRowWorkgroupsAttr})
    if (Attribute value = kernel->getAttr(name))
      entry->setAttr(name, value);
  entry->setAttr(kBindingBytesAttr, bindingBytes);

  Block *start = entry.addEntryBlock(builder);
  Value call = start->getArgument(0);
  Region &body = entry.getBody();
  Block *checkSizes = builder.createBlock(&body, body.end());
  Block *run = builder.createBlock(&body, body.end());
  Block *mismatch = builder.createBlock(&body, body.end());

  // The binding count first: the sizes array is only that long.
  builder.setInsertionPointToStart(start);
  Value count = b.field(call, kBindingCount, b.i64Type);
  Value countMatches = b.compare(LLVM::ICmpPredicate::eq, count, b.i64(bindings));
  LLVM::CondBrOp::create(builder, loc, countMatches, checkSizes, mismatch);

  builder.setInsertionPointToStart(checkSizes);
  Value begin = b.field(call, kBegin, b.i64Type);
  Value end = b.field(call, kEnd, b.i64Type);
  Value matches = b.compare(LLVM::ICmpPredicate::sge, begin, b.i64(0));
  matches = b.both(matches, b.compare(LLVM::ICmpPredicate::sle, begin, end));
  matches = b.both(matches, b.compare(LLVM::ICmpPredicate::sle, end, b.i64(workgroups)));
  if (scratchBytes > 0) {
    Value scratch = b.field(call, kScratchBytes, b.i64Type);
    matches = b.both(matches, b.compare(LLVM::ICmpPredicate::uge, scratch, b.i64(scratchBytes)));
  }
  if (bindings > 0) {
    Value sizes = b.field(call, kBindingSizes, b.ptrType);
    for (auto [i, bytes] : llvm::enumerate(bindingBytes.asArrayRef())) {
      Value size = b.load(b.i64Type, sizes, static_cast<int32_t>(i));
      matches = b.both(matches, b.compare(LLVM::ICmpPredicate::eq, size, b.i64(bytes)));
    }
  }
  LLVM::CondBrOp::create(builder, loc, matches, run, mismatch);

  builder.setInsertionPointToStart(run);
  SmallVector<Value> arguments;
  if (bindings > 0) {
    Value table = b.field(call, kBindings, b.ptrType);
    for (int32_t i = 0; i < bindings; ++i)
      arguments.push_back(b.load(b.ptrType, table, i));
  }
  arguments.append({begin, end, b.field(call, kScratch, b.ptrType)});
  LLVM::CallOp::create(builder, loc, kernel, arguments);
  b.returnResult(kKernelOk);

  builder.setInsertionPointToStart(mismatch);
  b.returnResult(kCallMismatch);

  // Only entries carry these from here on: kBindingBytesAttr marks them.
  kernel.setLinkage(LLVM::Linkage::Internal);
  kernel->removeAttr(kWorkgroupCountAttr);
  kernel->removeAttr(kBindingBytesAttr);
  return success();
}

struct TesselX86EntryPointsPass
    : impl::TesselX86EntryPointsPassBase<TesselX86EntryPointsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder builder(&getContext());
    SmallVector<LLVM::LLVMFuncOp> kernels;
    for (auto function : module.getOps<LLVM::LLVMFuncOp>())
      if (function->hasAttr(kWorkgroupCountAttr))
        kernels.push_back(function);
    for (LLVM::LLVMFuncOp kernel : kernels)
      if (failed(emitEntry(kernel, builder)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace tessel::x86
