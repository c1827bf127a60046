//===- KernelDeduplication.h - One compilation per distinct kernel -*- C++ -*-===//
//
// Models repeat themselves: ResNet-50's bottlenecks of a stage, a
// transformer's layers. Their kernels differ only in the weights they are
// passed, so once outlined and lowered to linalg many are the same function
// under another name (57 kernels of ResNet-50 are 29 distinct ones, ViT's
// layers one set). A target compiles each distinct kernel once; the others
// keep their own entries (their nodes, their statistics) on its code, as
// IREE's executable deduplication does.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_KERNELDEDUPLICATION_H
#define TESSEL_COMPILER_KERNELDEDUPLICATION_H

#include "targets/Target.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <utility>
#include <vector>

namespace tessel {

/// A kernel whose function was the same as an earlier one's, up to its name
/// and locations: it runs `representative`'s code.
struct KernelAlias {
  std::string kernel;
  std::string representative;
};

/// Each function of `module` that is the same as an earlier one but for its
/// name and locations, and the earlier one it is the same as.
std::vector<KernelAlias> findKernelAliases(mlir::ModuleOp module);

/// Erases from `kernels` (a module of kernel functions only) every function
/// that is the same as an earlier one but for its name and locations, and
/// returns what each erased one is the same as.
std::vector<KernelAlias> deduplicateKernels(mlir::ModuleOp kernels);

/// Gives each alias of `aliases` an entry of its own in `executable`: its
/// representative's, dispatched under the alias's name.
void addAliasEntries(Executable &executable, const std::vector<KernelAlias> &aliases);

} // namespace tessel

#endif // TESSEL_COMPILER_KERNELDEDUPLICATION_H
