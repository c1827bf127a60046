//===- KernelDeduplication.cpp - One compilation per distinct kernel ------===//

#include "compiler/KernelDeduplication.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace tessel {
namespace {

/// The function's attributes but its name: its type, argument and result
/// attributes and any the pipeline set on it (a lowering choice, a target).
DictionaryAttr attributesButName(func::FuncOp function) {
  NamedAttrList attributes(function->getAttrDictionary());
  attributes.erase(function.getSymNameAttrName());
  return attributes.getDictionary(function.getContext());
}

/// Whether two functions of equal attributes compute the same: their
/// bodies are the same ops on the same values, attributes and types.
bool sameBody(func::FuncOp a, func::FuncOp b) {
  return OperationEquivalence::isRegionEquivalentTo(&a.getBody(), &b.getBody(),
                                                    OperationEquivalence::IgnoreLocations);
}

} // namespace

std::vector<KernelAlias> findKernelAliases(ModuleOp module) {
  // Only functions with equal attributes can be the same, so the bodies
  // are compared within those groups alone.
  llvm::DenseMap<DictionaryAttr, SmallVector<func::FuncOp>> distinctByAttributes;
  std::vector<KernelAlias> aliases;
  for (func::FuncOp function : module.getOps<func::FuncOp>()) {
    if (function.isDeclaration())
      continue;
    SmallVector<func::FuncOp> &distinct = distinctByAttributes[attributesButName(function)];
    auto same =
        llvm::find_if(distinct, [&](func::FuncOp seen) { return sameBody(seen, function); });
    if (same == distinct.end())
      distinct.push_back(function);
    else
      aliases.push_back({function.getSymName().str(), same->getSymName().str()});
  }
  return aliases;
}

std::vector<KernelAlias> deduplicateKernels(ModuleOp kernels) {
  std::vector<KernelAlias> aliases = findKernelAliases(kernels);
  for (const KernelAlias &alias : aliases)
    kernels.lookupSymbol<func::FuncOp>(alias.kernel).erase();
  return aliases;
}

void addAliasEntries(Executable &executable, const std::vector<KernelAlias> &aliases) {
  llvm::StringMap<size_t> entryOf;
  for (auto [i, entry] : llvm::enumerate(executable.entries))
    entryOf[entry.kernel] = i;
  for (const KernelAlias &alias : aliases) {
    // (A representative the target gave no entry leaves its aliases none
    // either; the artifact writer names a dispatched kernel no executable
    // provides.)
    auto found = entryOf.find(alias.representative);
    if (found == entryOf.end())
      continue;
    KernelEntry entry = executable.entries[found->second];
    entry.kernel = alias.kernel;
    executable.entries.push_back(std::move(entry));
  }
}

} // namespace tessel
