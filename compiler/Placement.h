//===- Placement.h - Which device runs each kernel --------------*- C++ -*-===//
//
// `--target npu` means "the NPU where it can, the CPU for the rest": each
// kernel goes to the first target that can run it, the last one (the CPU)
// runs anything. What was placed where, and why not on the targets before,
// is what tessel-compile prints.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_PLACEMENT_H
#define TESSEL_COMPILER_PLACEMENT_H

#include "targets/Target.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace tessel {

struct KernelPlacement {
  std::string kernel;
  size_t target = 0; // index into the targets placed on
  std::vector<std::string> nodes;
  /// Why each earlier target refused it ("npu: its batch is not 1").
  std::vector<std::string> refusals;
};

/// Places every kernel function of `module` (tessel form) on the first of
/// `targets` that can run it; the last must accept everything.
std::vector<KernelPlacement> placeKernels(mlir::ModuleOp module,
                                          llvm::ArrayRef<Target *> targets);

/// The placement as lines for people: a summary, then one line per kernel
/// (its name, device, ONNX nodes and, off the first target, why).
std::string formatPlacement(const std::vector<KernelPlacement> &placement,
                            llvm::ArrayRef<Target *> targets);

} // namespace tessel

#endif // TESSEL_COMPILER_PLACEMENT_H
