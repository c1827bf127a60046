//===- ControlFlowToLLVM.cpp - cf to LLVM, AMX tiles included -------------===//

#include "targets/x86/Passes.h"

#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace tessel::x86 {
#define GEN_PASS_DEF_TESSELX86CONTROLFLOWTOLLVMPASS
#include "targets/x86/Passes.h.inc"
} // namespace tessel::x86

using namespace mlir;

namespace tessel::x86 {
namespace {

struct TesselX86ControlFlowToLLVMPass
    : impl::TesselX86ControlFlowToLLVMPassBase<TesselX86ControlFlowToLLVMPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LLVMTypeConverter converter(context);
    converter.addConversion(
        [context](amx::TileType) { return LLVM::LLVMX86AMXType::get(context); });
    RewritePatternSet patterns(context);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    cf::populateAssertToLLVMConversionPattern(converter, patterns);
    LLVMConversionTarget target(*context);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel::x86
