//===- Ptx.cpp - PTX from LLVM dialect kernels with LLVM's NVPTX backend ---===//

#include "targets/cuda/Ptx.h"

#include "targets/LLVMOptimization.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <mutex>

using namespace mlir;

namespace tessel::cuda {

namespace {

constexpr Architecture kArchitectures[] = {
    {"sm_80", 80, "+ptx70"},
    {"sm_86", 86, "+ptx71"},
    {"sm_89", 89, "+ptx78"},
    {"sm_90", 90, "+ptx78"},
};

constexpr const char *kTriple = "nvptx64-nvidia-cuda";

void initializeNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

/// Where libdevice is: $TESSEL_LIBDEVICE, else the CUDA toolkit's.
std::string libdevicePath() {
  if (const char *path = std::getenv("TESSEL_LIBDEVICE"); path && *path)
    return path;
  return cudaToolkitPath() + "/nvvm/libdevice/libdevice.10.bc";
}

/// Links the libdevice functions `module` calls (__nv_expf, __nv_fmod,
/// ...: the math without a PTX instruction or a polynomial here, such as
/// f64 exponentials) into it, internalized so that only the kernels stay
/// visible. Nothing is read when nothing is called.
LogicalResult linkLibdevice(ModuleOp kernels, llvm::Module &module) {
  bool needed = llvm::any_of(module, [](llvm::Function &function) {
    return function.isDeclaration() && function.getName().starts_with("__nv_");
  });
  if (!needed)
    return success();
  std::string path = libdevicePath();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return emitError(kernels.getLoc(), "the CUDA kernels need libdevice, which is not at ")
           << path << " (" << file.getError().message()
           << "); install the CUDA toolkit or set TESSEL_LIBDEVICE";
  llvm::Expected<std::unique_ptr<llvm::Module>> library =
      llvm::parseBitcodeFile((*file)->getMemBufferRef(), module.getContext());
  if (!library)
    return emitError(kernels.getLoc(), "cannot read libdevice at ")
           << path << ": " << llvm::toString(library.takeError());
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());
  bool failed = llvm::Linker::linkModules(
      module, std::move(*library), llvm::Linker::Flags::LinkOnlyNeeded,
      [](llvm::Module &linked, const llvm::StringSet<> &) {
        for (llvm::Function &function : linked)
          if (!function.isDeclaration() &&
              function.getCallingConv() != llvm::CallingConv::PTX_Kernel)
            function.setLinkage(llvm::GlobalValue::InternalLinkage);
      });
  if (failed)
    return emitError(kernels.getLoc(), "linking libdevice into the CUDA kernels failed");
  return success();
}

/// The NVPTX backend's machine for `architecture`.
FailureOr<std::unique_ptr<llvm::TargetMachine>>
createMachine(ModuleOp kernels, const Architecture &architecture, int optLevel) {
  initializeNvptx();
  llvm::Triple triple(kTriple);
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return kernels.emitError("LLVM has no NVPTX backend: ") << error;
  llvm::TargetOptions targetOptions;
  // Fused multiply-add rounds once; the GPU's FMA is its arithmetic unit.
  targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, architecture.name, architecture.ptxFeature, targetOptions, std::nullopt,
      std::nullopt,
      optLevel == 0 ? llvm::CodeGenOptLevel::None : llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return kernels.emitError("the NVPTX backend has no machine for ") << architecture.name;
  return machine;
}

/// The LLVM IR of `kernels` for `machine`: translated, libdevice linked in,
/// optimized.
FailureOr<std::unique_ptr<llvm::Module>> translate(ModuleOp kernels, llvm::TargetMachine &machine,
                                                   int optLevel, llvm::LLVMContext &context) {
  registerBuiltinDialectTranslation(*kernels.getContext());
  registerLLVMDialectTranslation(*kernels.getContext());
  registerNVVMDialectTranslation(*kernels.getContext());
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(kernels, context, "tessel_cuda_kernels");
  if (!module)
    return kernels.emitError("translating the CUDA kernels to LLVM IR failed");
  module->setTargetTriple(machine.getTargetTriple());
  module->setDataLayout(machine.createDataLayout());
  if (failed(linkLibdevice(kernels, *module)))
    return failure();
  // The optimizer's NVVMReflect pass answers libdevice's __nvvm_reflect
  // queries; whatever else is still only declared has no definition.
  optimizeLLVMModule(*module, machine, optLevel);
  for (llvm::Function &function : *module)
    if (function.isDeclaration() && !function.isIntrinsic() && !function.use_empty())
      return emitError(kernels.getLoc(), "the CUDA kernels call '")
             << function.getName() << "', which no library provides";
  return module;
}

} // namespace

std::string cudaToolkitPath() {
  const char *toolkit = std::getenv("CUDA_HOME");
  return toolkit && *toolkit ? toolkit : "/usr/local/cuda";
}

const Architecture *findArchitecture(llvm::StringRef name) {
  for (const Architecture &architecture : kArchitectures)
    if (name == architecture.name)
      return &architecture;
  return nullptr;
}

std::string knownArchitectures() {
  std::vector<std::string> names;
  for (const Architecture &architecture : kArchitectures)
    names.push_back(architecture.name);
  return llvm::join(names, ", ");
}

FailureOr<std::unique_ptr<llvm::Module>> translateKernels(ModuleOp kernels,
                                                          const Architecture &architecture,
                                                          int optLevel,
                                                          llvm::LLVMContext &context) {
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createMachine(kernels, architecture, optLevel);
  if (failed(machine))
    return failure();
  return translate(kernels, **machine, optLevel, context);
}

FailureOr<std::string> emitPtx(ModuleOp kernels, const Architecture &architecture, int optLevel) {
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createMachine(kernels, architecture, optLevel);
  if (failed(machine))
    return failure();
  llvm::LLVMContext context;
  FailureOr<std::unique_ptr<llvm::Module>> module =
      translate(kernels, **machine, optLevel, context);
  if (failed(module))
    return failure();
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream stream(ptx);
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, stream, nullptr,
                                      llvm::CodeGenFileType::AssemblyFile))
    return kernels.emitError("the NVPTX backend cannot emit PTX");
  codegen.run(**module);
  return std::string(ptx.str());
}

} // namespace tessel::cuda
