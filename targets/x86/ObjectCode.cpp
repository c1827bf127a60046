//===- ObjectCode.cpp - LLVM-dialect kernels to x86 object files ----------===//

#include "targets/x86/ObjectCode.h"
#include "targets/LLVMOptimization.h"
#include "targets/x86/Passes.h"
#include "targets/x86/Bf16MaskedAccesses.h"
#include "targets/x86/RoundingConversions.h"
#include "targets/x86/SingleLaneStores.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/IR/LegacyPassManager.h"

using namespace mlir;

namespace tessel::x86 {

namespace {

/// `root` and the symbols it refers to, directly or through them; none if
/// an op the closure walks may hide symbol uses.
std::optional<llvm::SetVector<Operation *>> symbolClosure(Operation *root,
                                                          SymbolTable &symbols) {
  llvm::SetVector<Operation *> closure;
  closure.insert(root);
  for (size_t i = 0; i < closure.size(); ++i) {
    std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(closure[i]);
    if (!uses)
      return std::nullopt;
    for (const SymbolTable::SymbolUse &use : *uses)
      if (Operation *target = symbols.lookup(use.getSymbolRef().getRootReference()))
        closure.insert(target);
  }
  return closure;
}

/// Definitions copied beside an entry point become internal to its object,
/// so that two objects may hold the same helper.
void makeInternal(Operation *copy) {
  if (auto function = dyn_cast<LLVM::LLVMFuncOp>(copy)) {
    if (!function.isExternal())
      function.setLinkage(LLVM::Linkage::Internal);
  } else if (auto global = dyn_cast<LLVM::GlobalOp>(copy)) {
    if (global.getValueOrNull() || !global.getInitializerRegion().empty())
      global.setLinkage(LLVM::Linkage::Internal);
  }
}

/// One module per entry point of `kernels`, holding the entry point and
/// private copies of what it uses; `kernels` itself (cloned) where its
/// symbol uses cannot be followed, or where it has no entry point (the
/// linker still needs an object).
SmallVector<OwningOpRef<ModuleOp>> splitByEntryPoint(ModuleOp kernels) {
  SymbolTable symbols(kernels);
  SmallVector<OwningOpRef<ModuleOp>> parts;
  for (auto entry : kernels.getOps<LLVM::LLVMFuncOp>()) {
    if (!entry->hasAttr(kBindingBytesAttr))
      continue;
    std::optional<llvm::SetVector<Operation *>> closure = symbolClosure(entry, symbols);
    if (!closure) {
      parts.clear();
      parts.push_back(kernels.clone());
      return parts;
    }
    OwningOpRef<ModuleOp> part = ModuleOp::create(kernels.getLoc());
    (*part)->setAttrs(kernels->getAttrDictionary());
    OpBuilder builder = OpBuilder::atBlockEnd(part->getBody());
    // In the order of `kernels`, so that every part reads as it did there.
    for (Operation &op : kernels.getBody()->getOperations())
      if (closure->contains(&op)) {
        Operation *copy = builder.clone(op);
        if (&op != entry.getOperation())
          makeInternal(copy);
      }
    parts.push_back(std::move(part));
  }
  if (parts.empty())
    parts.push_back(kernels.clone());
  return parts;
}

} // namespace

LogicalResult emitModule(llvm::Module &module, llvm::TargetMachine &machine,
                         llvm::CodeGenFileType kind, llvm::SmallVectorImpl<char> &out) {
  // Before the single-lane stores become scalar ones, which would store
  // bf16 scalars.
  accessBf16MasksAsIntegers(module);
  storeSingleLanesAsScalars(module);
  convertRoundEvenWithLrint(module);
  llvm::raw_svector_ostream stream(out);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, stream, nullptr, kind))
    return failure();
  codegen.run(module);
  return success();
}

std::unique_ptr<llvm::Module> translateKernels(ModuleOp kernels, llvm::LLVMContext &context,
                                               const llvm::TargetMachine &machine) {
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(kernels, context, "tessel_kernels");
  if (!module)
    return nullptr;
  module->setTargetTriple(llvm::Triple(kTriple));
  module->setDataLayout(machine.createDataLayout());
  return module;
}

FailureOr<std::vector<llvm::SmallVector<char>>>
compileObjects(ModuleOp kernels, const MachineFactory &machines, int optLevel) {
  MLIRContext *context = kernels.getContext();
  SmallVector<OwningOpRef<ModuleOp>> parts = splitByEntryPoint(kernels);
  std::vector<llvm::SmallVector<char>> objects(parts.size());
  // Diagnostics from the threads reach the handler in the parts' order.
  ParallelDiagnosticHandler diagnostics(context);
  LogicalResult compiled = failableParallelForEach(
      context, llvm::seq<size_t>(0, parts.size()), [&](size_t index) -> LogicalResult {
        diagnostics.setOrderIDForThread(index);
        llvm::scope_exit done([&] { diagnostics.eraseOrderIDForThread(); });
        std::unique_ptr<llvm::TargetMachine> machine = machines();
        llvm::LLVMContext llvmContext;
        std::unique_ptr<llvm::Module> module =
            translateKernels(*parts[index], llvmContext, *machine);
        if (!module)
          return parts[index]->emitError("translating the kernels to LLVM IR failed");
        optimizeLLVMModule(*module, *machine, optLevel, kLLVMTuning);
        if (failed(emitModule(*module, *machine, llvm::CodeGenFileType::ObjectFile,
                              objects[index])))
          return parts[index]->emitError("the x86 backend cannot emit an object file");
        return success();
      });
  if (failed(compiled))
    return failure();
  return objects;
}

} // namespace tessel::x86
