//===- TesselToLinalg.cpp - The convert-tessel-to-linalg pass -------------===//

#include "passes/TesselToLinalg/TesselToLinalg.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace tessel {
#define GEN_PASS_DEF_CONVERTTESSELTOLINALGPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

TesselToLinalgTypeConverter::TesselToLinalgTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](RankedTensorType type) -> Type {
    auto integer = dyn_cast<IntegerType>(type.getElementType());
    if (!integer || integer.isSignless())
      return type;
    return type.clone(IntegerType::get(type.getContext(), integer.getWidth()));
  });
}

void populateTesselToLinalgPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns) {
  populateElementwiseToLinalgPatterns(converter, patterns);
  populateActivationsToLinalgPatterns(converter, patterns);
  populateContractionToLinalgPatterns(converter, patterns);
  populateWindowToLinalgPatterns(converter, patterns);
  populateReductionToLinalgPatterns(converter, patterns);
  populateIndexingToLinalgPatterns(converter, patterns);
  populateDataMovementToLinalgPatterns(converter, patterns);
  populateNormalizationToLinalgPatterns(converter, patterns);
}

namespace {

struct ConvertTesselToLinalgPass
    : impl::ConvertTesselToLinalgPassBase<ConvertTesselToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    TesselToLinalgTypeConverter converter;
    RewritePatternSet patterns(context);
    populateTesselToLinalgPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);

    ConversionTarget target(*context);
    target.addIllegalDialect<TesselDialect>();
    target.addLegalOp<ModuleOp>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    if (failed(applyFullConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel
