//===- TesselToLinalg.cpp - The convert-tessel-to-linalg pass -------------===//

#include "passes/TesselToLinalg/TesselToLinalg.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_CONVERTTESSELTOLINALGPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

TesselToLinalgTypeConverter::TesselToLinalgTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](RankedTensorType type) -> Type {
    if (quant::QuantizedType quantized = getQuantizedType(type))
      return type.clone(
          IntegerType::get(type.getContext(), quantized.getStorageTypeIntegralWidth()));
    auto integer = dyn_cast<IntegerType>(type.getElementType());
    if (!integer || integer.isSignless())
      return type;
    return type.clone(IntegerType::get(type.getContext(), integer.getWidth()));
  });
}

KernelConstants::KernelConstants(ModuleOp module) {
  module.walk([&](func::CallOp call) {
    auto kernel = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!kernel || kernel.isExternal())
      return;
    for (auto [argument, operand] : llvm::zip(kernel.getArguments(), call.getOperands())) {
      ElementsAttr value;
      if (!matchPattern(operand, m_Constant(&value)))
        continue;
      // A kernel called twice with different constants has no one value.
      auto [it, inserted] = arguments.try_emplace(argument, value);
      if (!inserted && it->second != value)
        it->second = ElementsAttr();
    }
  });
}

ElementsAttr KernelConstants::lookup(Value value) const {
  ElementsAttr constant;
  if (matchPattern(value, m_Constant(&constant)))
    return constant;
  return arguments.lookup(value);
}

void populateTesselToLinalgPatterns(const TypeConverter &converter,
                                    const KernelConstants &constants,
                                    RewritePatternSet &patterns) {
  populateElementwiseToLinalgPatterns(converter, patterns);
  populateActivationsToLinalgPatterns(converter, patterns);
  populateContractionToLinalgPatterns(converter, patterns);
  populateWindowToLinalgPatterns(converter, patterns);
  populateReductionToLinalgPatterns(converter, patterns);
  populateIndexingToLinalgPatterns(converter, patterns);
  populateDataMovementToLinalgPatterns(converter, patterns);
  populateNormalizationToLinalgPatterns(converter, patterns);
  populateQuantizationToLinalgPatterns(converter, patterns);
  populateRecurrenceToLinalgPatterns(converter, patterns);
  populateQuantizedProductsToLinalgPatterns(converter, constants, patterns);
}

namespace {

struct ConvertTesselToLinalgPass
    : impl::ConvertTesselToLinalgPassBase<ConvertTesselToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    // Quantized ops that mean a float formula become it first.
    RewritePatternSet expansions(context);
    populateExpandQuantizedOpsPatterns(expansions, /*all=*/false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(expansions))))
      return signalPassFailure();

    TesselToLinalgTypeConverter converter;
    KernelConstants constants(getOperation());
    RewritePatternSet patterns(context);
    populateTesselToLinalgPatterns(converter, constants, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);

    ConversionTarget target(*context);
    target.addIllegalDialect<TesselDialect>();
    // Run-time checks stay in the entry function for the host schedule.
    target.addLegalOp<ModuleOp, CheckZeroOp>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    // What other dialects a target has already lowered its kernels to is
    // not this conversion's concern.
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyFullConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel
