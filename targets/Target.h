//===- Target.h - The interface every code generation target implements ---*- C++ -*-===//
//
// A target turns the kernels of a model (linalg on tensors, one func.func
// per kernel) into one executable for its device: a shared object for x86,
// PTX or cubins for CUDA, a command stream for the NPU. The host schedule,
// memory plan and weights are target-independent and built by compiler/.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_TARGET_H
#define TESSEL_TARGETS_TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessel {

/// The devices an artifact can hold executables for. The values match the
/// artifact schema's DeviceKind.
enum class DeviceKind : uint8_t { Cpu = 0, Cuda = 1, Npu = 2 };

/// The encodings of executables. The values match the artifact schema's
/// ExecutableFormat.
enum class ExecutableFormat : uint8_t {
  ElfSharedObject = 0,
  CudaPtx = 1,
  CudaCubin = 2,
  NpuCommandStream = 3,
};

/// One dispatchable entry of an executable: the kernel function of the same
/// name in the host module is dispatched through it.
struct KernelEntry {
  std::string kernel;        // the kernel function's symbol in the IR
  std::string symbol;        // the entry's symbol in the executable
  int64_t workgroupCount = 1; // independent tiles the runtime may spread
  int64_t scratchBytes = 0;   // per-thread scratch the entry needs
  /// The byte size of each buffer passed, in kernel argument order: what
  /// the entry was compiled for and checks each call against.
  std::vector<uint64_t> bindingBytes;
};

struct Executable {
  DeviceKind device = DeviceKind::Cpu;
  ExecutableFormat format = ExecutableFormat::ElfSharedObject;
  std::vector<uint8_t> binary;
  std::vector<KernelEntry> entries;
  /// The CPU or GPU the binary was generated for ("znver4", "sm_90").
  std::string architecture;
  /// CPU only: instruction-set extensions the binary may use, by their
  /// LLVM names; the runtime checks each before loading.
  std::vector<std::string> cpuFeatures;
};

struct TargetOptions {
  int optLevel = 3;
  /// CPU or GPU architecture to generate code for; empty means the host CPU.
  std::string cpu;
  /// When set, the target prints its LLVM IR / assembly here.
  llvm::raw_ostream *llvmIR = nullptr;
  llvm::raw_ostream *assembly = nullptr;
};

class Target {
public:
  virtual ~Target() = default;

  /// The name users select the target by (`--target x86`).
  virtual llvm::StringRef name() const = 0;
  virtual DeviceKind device() const = 0;

  /// Whether the graph should compute 2-D convolutions and pooling channels
  /// last (NHWC): for targets that vectorize them along the channels.
  virtual bool prefersChannelsLast() const { return false; }

  /// Whether the target compiles a kernel of MatMul, Softmax and MatMul
  /// (attention) without storing the whole score matrix.
  virtual bool fusesAttention() const { return false; }

  /// Whether the target's INT8 products run faster when every two adjacent
  /// weights along the reduction are small enough that their products with
  /// bytes sum into 16 bits exactly (x86 without VNNI: VPMADDUBSW instead
  /// of widened VPMADDWD pairs). Post-training quantization then chooses
  /// such weight levels for the products that do most of the work.
  virtual bool prefersFittedWeightPairs(mlir::ModuleOp /*module*/,
                                        const TargetOptions & /*options*/) {
    return false;
  }

  /// Rewrites the whole module on tensors (the host function and its
  /// kernels) into the data layouts the target's kernels want, before the
  /// kernels are split off: constants it stores differently (packed matmul
  /// weights) are repacked at compile time here.
  virtual mlir::LogicalResult chooseDataLayouts(mlir::ModuleOp /*module*/,
                                                const TargetOptions & /*options*/) {
    return mlir::success();
  }

  /// Compiles `kernels`, a module holding only kernel functions on tensors,
  /// into one executable. The module is consumed (lowered in place).
  /// Diagnostics are emitted on the module's context.
  virtual mlir::FailureOr<Executable> compile(mlir::ModuleOp kernels,
                                              const TargetOptions &options) = 0;
};

} // namespace tessel

#endif // TESSEL_TARGETS_TARGET_H
