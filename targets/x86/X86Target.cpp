//===- X86Target.cpp - The x86 CPU target ---------------------------------===//

#include "targets/x86/X86Target.h"
#include "runtime/schema/CpuFeatures.h"
#include "targets/KernelArguments.h"
#include "targets/LLVMOptimization.h"
#include "targets/x86/BlockingUtils.h"
#include "targets/x86/CacheGeometry.h"
#include "targets/x86/DotProduct.h"
#include "targets/x86/HostBf16Throughput.h"
#include "targets/x86/Linker.h"
#include "targets/x86/ObjectCode.h"
#include "targets/x86/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace tessel {
namespace {

/// "+avx2,+fma,-avx512f,..." for the CPU this compiler runs on.
std::string hostFeatures() {
  std::string features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures()) {
    if (!features.empty())
      features += ",";
    features += (feature.getValue() ? "+" : "-") + feature.getKey().str();
  }
  return features;
}

/// f32 lanes of the widest vector register the machine has.
int64_t vectorWidth(const llvm::TargetMachine &machine) {
  return machine.getMCSubtargetInfo()->checkFeatures("+avx512f") ? 16 : 8;
}

/// The dot-product instruction INT8 blocks use on the machine's widest
/// vectors: VPDPBUSD where VNNI exists for them, else VPMADDWD pairs.
std::string dotProduct(const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo &features = *machine.getMCSubtargetInfo();
  bool vnni = vectorWidth(machine) == 16 ? features.checkFeatures("+avx512vnni")
                                         : features.checkFeatures("+avxvnni");
  return x86::dotProductName(vnni ? x86::DotProductKind::Vnni
                                  : x86::DotProductKind::PairwiseMultiplyAdd)
      .str();
}

/// The dot product the bf16 blocks of `module` use: VDPBF16PS where
/// AVX512-BF16 exists for the machine's widest vectors and, if the machine
/// is this one, it is measured faster than FMAs (HostBf16Throughput.h);
/// else FMAs of the widened halves. Only a module with bf16 products has
/// the host timed.
std::string bf16DotProduct(const llvm::TargetMachine &machine, ModuleOp module) {
  bool bf16Products = module
                          .walk([](linalg::LinalgOp op) {
                            return x86::isBf16DotBody(op) ? WalkResult::interrupt()
                                                          : WalkResult::advance();
                          })
                          .wasInterrupted();
  bool host = machine.getTargetCPU() == llvm::sys::getHostCPUName();
  bool dpbf16ps = bf16Products && vectorWidth(machine) == 16 &&
                  machine.getMCSubtargetInfo()->checkFeatures("+avx512bf16") &&
                  (!host || x86::hostPrefersDpbf16ps());
  return x86::dotProductName(dpbf16ps ? x86::DotProductKind::Bf16Dot
                                      : x86::DotProductKind::Bf16Fma)
      .str();
}

/// Whether INT8 blocks may use AMX tiles (AmxTiles.h): the machine has
/// AMX-INT8 beside AVX-512, whose vectors the blocks' epilogues use.
bool amxTiles(const llvm::TargetMachine &machine) {
  return vectorWidth(machine) == 16 &&
         machine.getMCSubtargetInfo()->checkFeatures("+amx-tile,+amx-int8");
}

/// The L1 data cache blocks are sized for: this machine's when the code is
/// for it, else the smallest the target CPUs have (CacheGeometry's default).
x86::CacheGeometry caches(const llvm::TargetMachine &machine) {
  return machine.getTargetCPU() == llvm::sys::getHostCPUName() ? x86::hostCacheGeometry()
                                                               : x86::CacheGeometry{};
}

class X86Target final : public Target {
public:
  llvm::StringRef name() const override { return "x86"; }
  DeviceKind device() const override { return DeviceKind::Cpu; }

  bool prefersChannelsLast() const override { return true; }
  bool fusesAttention() const override { return true; }

  bool prefersFittedWeightPairs(ModuleOp module, const TargetOptions &options) override {
    FailureOr<std::unique_ptr<llvm::TargetMachine>> machine = createMachine(module, options);
    return succeeded(machine) &&
           dotProduct(**machine) != x86::dotProductName(x86::DotProductKind::Vnni);
  }

  LogicalResult chooseDataLayouts(ModuleOp module, const TargetOptions &options) override {
    FailureOr<std::unique_ptr<llvm::TargetMachine>> machine = createMachine(module, options);
    if (failed(machine))
      return failure();
    PassManager pm(module.getContext());
    x86::CacheGeometry l1 = caches(**machine);
    pm.addPass(x86::createTesselX86ChooseLoweringPass(
        {vectorWidth(**machine), dotProduct(**machine), bf16DotProduct(**machine, module),
         amxTiles(**machine), l1.lineBytes, l1.l1Sets, l1.l1Ways}));
    pm.addPass(x86::createTesselX86PackWeightsPass());
    pm.addPass(x86::createTesselX86PadChannelTailsPass());
    return pm.run(module);
  }

  FailureOr<Executable> compile(ModuleOp kernels,
                                const TargetOptions &options) override {
    MLIRContext *context = kernels.getContext();
    FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
        createMachine(kernels, options);
    if (failed(machine))
      return failure();

    x86::X86CodegenOptions codegen;
    codegen.vectorWidth = vectorWidth(**machine);
    codegen.bytePermutes = (*machine)->getMCSubtargetInfo()->checkFeatures("+avx512vbmi");
    codegen.fusedMultiplyAdd = (*machine)->getMCSubtargetInfo()->checkFeatures("+fma");
    markKernelArgumentsReadOnly(kernels);
    PassManager pm(context);
    x86::buildX86CodegenPipeline(pm, codegen);
    if (failed(pm.run(kernels)))
      return failure();

    Executable executable;
    executable.device = DeviceKind::Cpu;
    executable.format = ExecutableFormat::ElfSharedObject;
    executable.architecture = (*machine)->getTargetCPU().str();
    for (const char *feature : schema::kCheckedCpuFeatures)
      if ((*machine)->getMCSubtargetInfo()->checkFeatures(
              std::string("+") + feature))
        executable.cpuFeatures.push_back(feature);
    for (auto entry : kernels.getOps<LLVM::LLVMFuncOp>()) {
      auto bindingBytes = entry->getAttrOfType<DenseI64ArrayAttr>(x86::kBindingBytesAttr);
      if (!bindingBytes)
        continue;
      KernelEntry info;
      info.symbol = entry.getName().str();
      info.kernel = entry.getName().drop_back(x86::kEntrySuffix.size()).str();
      info.workgroupCount =
          entry->getAttrOfType<IntegerAttr>(x86::kWorkgroupCountAttr).getInt();
      info.scratchBytes =
          entry->getAttrOfType<IntegerAttr>(x86::kScratchBytesAttr).getInt();
      if (auto positions = entry->getAttrOfType<IntegerAttr>(x86::kLengthRowPositionsAttr))
        info.lengthRows = {
            positions.getInt(),
            entry->getAttrOfType<IntegerAttr>(x86::kLengthRowWorkgroupsAttr).getInt()};
      info.bindingBytes.assign(bindingBytes.asArrayRef().begin(), bindingBytes.asArrayRef().end());
      executable.entries.push_back(std::move(info));
    }

    registerBuiltinDialectTranslation(*context);
    registerLLVMDialectTranslation(*context);
    if (options.llvmIR || options.assembly)
      if (failed(emitText(kernels, **machine, options)))
        return failure();
    // The first machine was made from the same options, so these are too.
    auto machines = [&] { return std::move(*createMachine(kernels, options)); };
    FailureOr<std::vector<llvm::SmallVector<char>>> objects =
        x86::compileObjects(kernels, machines, options.optLevel);
    if (failed(objects))
      return failure();
    llvm::Expected<std::vector<uint8_t>> linked = x86::linkSharedObject(*objects);
    if (!linked)
      return kernels.emitError("linking the kernels failed: ")
             << llvm::toString(linked.takeError());
    executable.binary = std::move(*linked);
    return executable;
  }

private:
  /// The whole of `kernels`, optimized, as the LLVM IR or assembly text
  /// that `options` asks for.
  static LogicalResult emitText(ModuleOp kernels, llvm::TargetMachine &machine,
                                const TargetOptions &options) {
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> module = x86::translateKernels(kernels, llvmContext, machine);
    if (!module)
      return kernels.emitError("translating the kernels to LLVM IR failed");
    optimizeLLVMModule(*module, machine, options.optLevel, x86::kLLVMTuning);
    if (options.llvmIR)
      module->print(*options.llvmIR, nullptr);
    if (options.assembly) {
      llvm::SmallVector<char> text;
      if (failed(x86::emitModule(*module, machine, llvm::CodeGenFileType::AssemblyFile, text)))
        return kernels.emitError("the x86 backend cannot emit assembly");
      options.assembly->write(text.data(), text.size());
    }
    return success();
  }

  FailureOr<std::unique_ptr<llvm::TargetMachine>>
  createMachine(ModuleOp kernels, const TargetOptions &options) {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    llvm::Triple triple(x86::kTriple);
    std::string error;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target)
      return kernels.emitError("LLVM has no x86 backend: ") << error;
    bool host = options.cpu.empty() || options.cpu == "native";
    std::string cpu = host ? llvm::sys::getHostCPUName().str() : options.cpu;
    std::string features = host ? hostFeatures() : "";
    llvm::TargetOptions targetOptions;
    // Fused multiply-add is what the FMA units are for; it only rounds once.
    targetOptions.AllowFPOpFusion = llvm::FPOpFusion::Fast;
    std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
        triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
        options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                              : llvm::CodeGenOptLevel::Aggressive));
    if (!machine)
      return kernels.emitError("unknown x86 CPU '") << cpu << "'";
    if (!host && !machine->getMCSubtargetInfo()->isCPUStringValid(cpu))
      return kernels.emitError("unknown x86 CPU '")
             << cpu << "' (see `llc -march=x86-64 -mcpu=help`)";
    return machine;
  }
};

} // namespace

std::unique_ptr<Target> createX86Target() { return std::make_unique<X86Target>(); }

} // namespace tessel
