//===- KernelStatistics.h - What each kernel computes, for reports -*- C++ -*-===//
//
// The facts a profile needs to say more than "this kernel took 2 ms": the
// ONNX nodes a kernel computes, and how much arithmetic one dispatch does,
// so that a report can put each kernel's achieved rate against the
// machine's roofline. Read off the kernels in their linalg form, before any
// target tiles them, so every target reports the same counts.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_KERNELSTATISTICS_H
#define TESSEL_COMPILER_KERNELSTATISTICS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel {

struct KernelStatistics {
  /// The ONNX nodes the kernel computes, in program order, each once.
  std::vector<std::string> sourceNodes;
  /// Arithmetic of one dispatch: the iterations of each linalg op times the
  /// arith and math ops of its body, split by the type they compute in.
  /// Conversions, constants and data movement count nothing; a loop nest
  /// with a dynamic extent counts nothing either (its size is unknown).
  uint64_t floatOperations = 0;
  uint64_t integerOperations = 0;
};

/// The statistics of every kernel function of `module` (the functions the
/// kernel-forming pass outlined, lowered to linalg), by function name.
llvm::StringMap<KernelStatistics> collectKernelStatistics(mlir::ModuleOp module);

} // namespace tessel

#endif // TESSEL_COMPILER_KERNELSTATISTICS_H
