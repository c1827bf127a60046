//===- LLVMOptimization.cpp - LLVM's optimization pipeline for a target ---===//

#include "targets/LLVMOptimization.h"

#include "llvm/Passes/PassBuilder.h"
#include "llvm/Target/TargetMachine.h"

namespace tessel {

namespace {

llvm::OptimizationLevel optimizationLevel(int level) {
  switch (level) {
  case 0:
    return llvm::OptimizationLevel::O0;
  case 1:
    return llvm::OptimizationLevel::O1;
  case 2:
    return llvm::OptimizationLevel::O2;
  default:
    return llvm::OptimizationLevel::O3;
  }
}

} // namespace

void optimizeLLVMModule(llvm::Module &module, llvm::TargetMachine &machine, int optLevel,
                        LLVMTuning tuning) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions options;
  options.LoopUnrolling = tuning.unrollLoops;
  llvm::PassBuilder builder(&machine, options);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::ModulePassManager pipeline =
      optLevel == 0 ? builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                    : builder.buildPerModuleDefaultPipeline(optimizationLevel(optLevel));
  pipeline.run(module, modules);
}

} // namespace tessel
