//===- Placement.cpp - Which device runs each kernel ----------------------===//

#include "compiler/Placement.h"

#include "compiler/Locations.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace tessel {

std::vector<KernelPlacement> placeKernels(ModuleOp module, llvm::ArrayRef<Target *> targets) {
  std::vector<func::FuncOp> kernels;
  for (auto function : module.getOps<func::FuncOp>())
    if (function->hasAttr(kKernelAttrName))
      kernels.push_back(function);
  std::vector<KernelPlacement> placement;
  for (func::FuncOp kernel : kernels) {
    KernelPlacement placed;
    placed.kernel = kernel.getSymName().str();
    llvm::SmallVector<std::string> names;
    nodeNamesOf(kernel.getLoc(), names);
    for (std::string &name : names)
      if (!llvm::is_contained(placed.nodes, name))
        placed.nodes.push_back(std::move(name));
    for (size_t t = 0; t < targets.size(); ++t) {
      // A GPU beside the CPU takes no kernels from it: it compiles them all.
      if (targets[t]->replacesFallback())
        continue;
      std::optional<std::string> reason =
          t + 1 == targets.size() ? std::nullopt : targets[t]->unsupportedReason(module, kernel);
      if (!reason) {
        placed.target = t;
        break;
      }
      placed.refusals.push_back(targets[t]->name().str() + ": " + *reason);
    }
    placement.push_back(std::move(placed));
  }
  return placement;
}

std::string formatPlacement(const std::vector<KernelPlacement> &placement,
                            llvm::ArrayRef<Target *> targets) {
  std::vector<size_t> counts(targets.size(), 0);
  for (const KernelPlacement &placed : placement)
    ++counts[placed.target];
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "placement: " << placement.size() << (placement.size() == 1 ? " kernel:" : " kernels:");
  const char *separator = "";
  for (size_t t = 0; t < targets.size(); ++t)
    if (!targets[t]->replacesFallback()) {
      os << separator << " " << counts[t] << " on " << targets[t]->name();
      separator = ",";
    }
  for (Target *target : targets)
    if (target->replacesFallback())
      os << "; " << target->name() << " runs the " << targets.back()->name()
         << " kernels where its device is present";
  os << "\n";
  for (const KernelPlacement &placed : placement) {
    os << llvm::formatv("  {0,-28} {1,-4} {2}", placed.kernel, targets[placed.target]->name(),
                        llvm::join(placed.nodes, ", "));
    if (!placed.refusals.empty())
      os << "  (" << llvm::join(placed.refusals, "; ") << ")";
    os << "\n";
  }
  return text;
}

} // namespace tessel
