//===- KernelPair.h - A kernel compiled for the host twice -------*- C++ -*-===//
//
// One kernel of `tessel-compile --emit linalg`, JIT-compiled for the host in
// two forms that tessel-cuda-emulate runs on the same inputs and compares:
//
//   reference  bufferized and lowered to loops by upstream linalg alone,
//              the operands of the products that take the tensor cores
//              rounded to the precision they read (as the kernels round
//              them);
//   emulated   the CUDA target's own kernels: their LLVM IR, as the NVPTX
//              backend gets it, run by their launch table
//              (DeviceProgram.h).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_KERNELPAIR_H
#define TESSEL_TEST_CUDA_EMULATOR_KERNELPAIR_H

#include "DeviceProgram.h"

#include "targets/cuda/CudaTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tessel::cuda::emulator {

/// One buffer of a kernel's call, as bytes.
struct Buffer {
  std::vector<uint8_t> bytes;
  mlir::Type element;
};

/// How the emulated form is lowered.
struct EmulationOptions {
  tessel::ProductPrecision precision = tessel::ProductPrecision::F32;
  /// Synchronization removed from the launches (a check that the emulator
  /// sees the race this makes).
  RemovedSynchronization removed;
};

/// What one call of a kernel gave in both forms.
struct KernelComparison {
  /// The emulated form's outputs, in the order of the kernel's results.
  std::vector<Buffer> emulatedOutputs;
  /// The largest difference of an output from the reference's, relative
  /// to max(1, |reference|), and the tolerance it was held to.
  double largestDifference = 0;
  double tolerance = 0;
  bool match = true;
};

/// The sums that a kernel's launches compute in another order than the
/// reference's loops, for the tolerance of its outputs: the tensor-core
/// products' and the row kernels' reductions.
struct ReorderedSums {
  /// The terms of the deepest of those sums; 0 when there is none.
  int64_t depth = 0;
  /// Whether a product reads what the kernel computes from another
  /// product's result (attention's probabilities).
  bool readsComputedOperand = false;
  /// What the products read their operands as.
  mlir::Type operandType;
};

/// A kernel compiled in both forms, callable any number of times.
class KernelPair {
public:
  /// Compiles a copy of `kernel` (a private function of tensors, as
  /// `--emit linalg` writes them) both ways.
  static llvm::Expected<std::unique_ptr<KernelPair>> compile(mlir::func::FuncOp kernel,
                                                             const EmulationOptions &options);

  /// The kernel's input buffers after bufferization, zeroed.
  std::vector<Buffer> inputBuffers() const;

  /// Runs both forms on copies of `inputs` (sized as inputBuffers makes
  /// them) and compares their outputs.
  llvm::Expected<KernelComparison> run(llvm::ArrayRef<const Buffer *> inputs);

  /// Runs the reference form alone on a copy of `inputs`; returns its
  /// outputs.
  llvm::Expected<std::vector<Buffer>> runReference(llvm::ArrayRef<const Buffer *> inputs);

  /// Prints `kernel: N launches (M synchronizing), outputs match (largest
  /// relative difference D, tolerance T)`; `kernel` names the function
  /// called, this pair's or one the same as it.
  void printComparison(llvm::raw_ostream &os, llvm::StringRef kernel,
                       const KernelComparison &comparison) const;

private:
  KernelPair() = default;

  /// Takes the buffers' types from the kernel function of `lowered`.
  void recordBufferTypes(mlir::ModuleOp lowered);

  /// The buffers of a call: copies of `inputs`, then zeroed outputs.
  llvm::Expected<std::vector<Buffer>> callBuffers(llvm::ArrayRef<const Buffer *> inputs) const;

  std::string name;
  size_t inputs = 0;
  std::vector<mlir::MemRefType> bufferTypes;
  ReorderedSums sums;
  std::unique_ptr<mlir::ExecutionEngine> reference;
  std::unique_ptr<DeviceProgram> emulated;
};

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_KERNELPAIR_H
