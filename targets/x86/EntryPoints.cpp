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

struct TesselX86EntryPointsPass
    : impl::TesselX86EntryPointsPassBase<TesselX86EntryPointsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    auto i64Type = IntegerType::get(context, 64);
    auto voidType = LLVM::LLVMVoidType::get(context);
    OpBuilder builder(context);

    SmallVector<LLVM::LLVMFuncOp> kernels;
    for (auto function : module.getOps<LLVM::LLVMFuncOp>())
      if (function->hasAttr(kWorkgroupCountAttr))
        kernels.push_back(function);

    for (LLVM::LLVMFuncOp kernel : kernels) {
      unsigned numArgs = kernel.getNumArguments();
      if (numArgs < kTrailingArguments) {
        kernel.emitError("kernel lacks its workgroup range and scratch arguments");
        return signalPassFailure();
      }
      unsigned bindings = numArgs - kTrailingArguments;
      Location loc = kernel.getLoc();
      builder.setInsertionPointAfter(kernel);
      auto entryType = LLVM::LLVMFunctionType::get(
          voidType, {ptrType, i64Type, i64Type, ptrType});
      auto entry = LLVM::LLVMFuncOp::create(
          builder, loc, (kernel.getName() + kEntrySuffix).str(), entryType);
      for (StringRef name : {kWorkgroupCountAttr, kScratchBytesAttr})
        entry->setAttr(name, kernel->getAttr(name));
      entry->setAttr(kBindingCountAttr, builder.getI64IntegerAttr(bindings));

      Block *block = entry.addEntryBlock(builder);
      builder.setInsertionPointToStart(block);
      Value table = block->getArgument(0);
      SmallVector<Value> arguments;
      for (unsigned i = 0; i < bindings; ++i) {
        Value slot = LLVM::GEPOp::create(builder, loc, ptrType, ptrType, table,
                                         ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        arguments.push_back(LLVM::LoadOp::create(builder, loc, ptrType, slot));
      }
      arguments.append({block->getArgument(1), block->getArgument(2),
                        block->getArgument(3)});
      LLVM::CallOp::create(builder, loc, kernel, arguments);
      LLVM::ReturnOp::create(builder, loc, ValueRange{});

      kernel.setLinkage(LLVM::Linkage::Internal);
      kernel->removeAttr(kWorkgroupCountAttr);
    }
  }
};

} // namespace
} // namespace tessel::x86
