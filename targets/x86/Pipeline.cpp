//===- Pipeline.cpp - The x86 code generation pipeline --------------------===//

#include "targets/x86/Passes.h"

#include "passes/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace tessel::x86 {

void buildX86CodegenPipeline(OpPassManager &pm,
                             const X86CodegenOptions &options) {
  // Tensors: one generic per elementwise chain, then workgroup tiles with
  // their producers fused in.
  pm.addNestedPass<func::FuncOp>(createTesselX86FuseElementwisePass());
  pm.addNestedPass<func::FuncOp>(createTesselX86TileAndFusePass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(
      createTesselX86VectorizePass({options.vectorWidth}));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());

  // Buffers: kernel results become caller-provided output buffers and all
  // temporaries come from scratch.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createTesselNumberConstantsPass());
  // A result computed by loops is the loops' buffer argument: folded to the
  // allocation itself, it becomes the output buffer instead of a copy.
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createTesselX86WorkgroupLoopPass());
  pm.addNestedPass<func::FuncOp>(createTesselX86ScratchPass());

  // Vectors, loops and LLVM.
  pm.addNestedPass<func::FuncOp>(createTesselX86LowerVectorsPass({options.bytePermutes}));
  // Unrolled: the loop form stages vectors through allocas, which LLVM
  // cannot hoist out of the enclosing loops.
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  if (options.fusedMultiplyAdd)
    pm.addNestedPass<func::FuncOp>(createTesselX86RoundedQuotientsPass());
  pm.addNestedPass<func::FuncOp>(createTesselX86ExpandToPrimitivesPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.amx = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createTesselX86ControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createTesselX86EntryPointsPass());
  pm.addNestedPass<LLVM::LLVMFuncOp>(createCanonicalizerPass());
}

void registerX86Pipelines() {
  PassPipelineRegistration<X86CodegenOptions>(
      "tessel-x86-codegen",
      "Lower tessel kernels (linalg on tensors) to LLVM dialect for x86",
      buildX86CodegenPipeline);
}

} // namespace tessel::x86
