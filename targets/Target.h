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

#include "runtime/schema/NpuConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
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

/// A kernel parameter of a CUDA launch: a bare device pointer into one of
/// the entry's bindings, or into the entry's scratch (temporaries).
struct CudaArgument {
  static constexpr uint32_t kScratch = UINT32_MAX;
  uint32_t binding = kScratch; // binding index, or kScratch
  uint64_t offset = 0;         // bytes from the binding's or scratch's start
};

/// One kernel launch of a CUDA entry.
struct CudaLaunch {
  std::string function; // the .entry in the PTX
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t dynamicSharedMemory = 0;
  std::vector<CudaArgument> arguments;
};

/// One dispatchable entry of an executable: the kernel function of the same
/// name in the host module is dispatched through it.
struct KernelEntry {
  std::string kernel;        // the kernel function's symbol in the IR
  std::string symbol;        // the entry's symbol in the executable
  int64_t workgroupCount = 1; // independent tiles the runtime may spread
  int64_t scratchBytes = 0;   // per-thread scratch the entry needs
  /// When the workgroups run in rows along the varying length (--max-shape):
  /// the positions each row computes and the workgroups of a row.
  struct LengthRows {
    int64_t positions = 0;
    int64_t workgroups = 0;
  };
  std::optional<LengthRows> lengthRows;
  /// The byte size of each buffer passed, in kernel argument order: what
  /// the entry was compiled for and checks each call against.
  std::vector<uint64_t> bindingBytes;
  /// NPU: the entry's instructions in Executable::npu.
  uint32_t npuFirstInstruction = 0, npuInstructionCount = 0;
  /// CUDA: the launches that compute the entry, in order, on one stream.
  std::vector<CudaLaunch> cudaLaunches;
  /// What the entry computes, when the target knows it better than the
  /// shared count on linalg (a target that does not lower through it).
  std::vector<std::string> sourceNodes;
  uint64_t integerOperations = 0;
};

/// An NPU executable's program: the configuration it was compiled for and
/// every entry's instructions, 4 words each (docs/npu/isa.md).
struct NpuCode {
  schema::npu::Config config;
  std::vector<uint64_t> instructions;
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
  /// NPU only: the command stream.
  std::optional<NpuCode> npu;
  /// An executable of another device that computes the same entries, in
  /// the same order, as the fallback target's executable (CUDA beside x86):
  /// a session on this device dispatches it instead.
  bool replacesFallback = false;
};

/// What the CUDA target's matrix products read their operands as
/// (--precision): f32, or rounded to a half-precision type for the tensor
/// cores. They accumulate in f32 either way.
enum class ProductPrecision { F32, F16, BF16 };

struct TargetOptions {
  int optLevel = 3;
  /// CPU or GPU architecture to generate code for; empty means the host CPU.
  std::string cpu;
  /// When set, the target prints its LLVM IR / assembly here.
  llvm::raw_ostream *llvmIR = nullptr;
  llvm::raw_ostream *assembly = nullptr;
  /// The NPU's configuration (--npu-config): a JSON file, or the defaults
  /// when empty.
  std::string npuConfigFile;
  /// CUDA: the GPU architectures to generate PTX for (--cuda-arch).
  std::vector<std::string> cudaArchitectures = {"sm_80", "sm_90"};
  /// CUDA: also assemble each architecture's PTX into a cubin with the
  /// toolkit's ptxas (--cuda-cubins).
  bool cudaCubins = false;
  /// CUDA: the operand precision of matrix products (--precision).
  ProductPrecision cudaPrecision = ProductPrecision::F16;
  /// CUDA: when set, the target prints the PTX of every architecture here.
  llvm::raw_ostream *ptx = nullptr;
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

  /// Whether a dequantize should start a kernel of its own rather than join
  /// its producer's: a target that computes in integers alone can then run
  /// the quantized product before it.
  virtual bool wantsDequantizeApart() const { return false; }

  /// Whether the target's executables replace the fallback's whole at load
  /// time (a GPU beside the CPU: `--target cuda,x86`) rather than taking
  /// kernels from it: such a target compiles every kernel placed on the
  /// fallback, into executables of its own (one per GPU architecture), and
  /// the runtime picks a device when the session starts.
  virtual bool replacesFallback() const { return false; }

  /// Whether the target's kernels may loop a number of times known only
  /// when they run: a recurrence that stops at its run-time length. The
  /// CUDA target unrolls the steps of recurrences into launches.
  virtual bool loopsToRunTimeCounts() const { return true; }

  /// Whether the target applies --precision to the matrix products of the
  /// kernels it compiles itself (the CUDA target rounds their operands for
  /// the tensor cores): the graph then leaves them f32, rather than making
  /// them bf16 products (tessel-bf16-products) for every target.
  virtual bool roundsProductsItself() const { return false; }

  /// Why the target cannot run `kernel`, a kernel function of `module` in
  /// the tessel form; nullopt when it can. Placement asks the targets in
  /// turn and gives each kernel to the first that can run it.
  virtual std::optional<std::string> unsupportedReason(mlir::ModuleOp /*module*/,
                                                       mlir::func::FuncOp /*kernel*/) {
    return std::nullopt;
  }

  /// Whether the kernels placed on this target go through the shared
  /// tessel-to-linalg lowering. One that does not lowers them itself in
  /// lowerPlacedKernels.
  virtual bool lowersThroughLinalg() const { return true; }

  /// For a target that does not lower through linalg: replaces `kernels`
  /// (placed on it, in the tessel form) by its own form in `module`, the
  /// kernel functions by declarations that the host calls with what the
  /// target's code binds.
  virtual mlir::LogicalResult lowerPlacedKernels(mlir::ModuleOp /*module*/,
                                                 llvm::ArrayRef<mlir::func::FuncOp> /*kernels*/,
                                                 const TargetOptions & /*options*/) {
    return mlir::success();
  }

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

  /// Compiles `kernels`, a module holding only this target's kernels
  /// (kernel functions on tensors, or the target's own form from
  /// lowerPlacedKernels), into one executable. The module is consumed
  /// (lowered in place). Diagnostics are emitted on the module's context.
  virtual mlir::FailureOr<Executable> compile(mlir::ModuleOp kernels,
                                              const TargetOptions &options) = 0;

  /// Like compile, for a target that makes several executables (one per
  /// GPU architecture); the others make one.
  virtual mlir::FailureOr<std::vector<Executable>> compileAll(mlir::ModuleOp kernels,
                                                              const TargetOptions &options) {
    mlir::FailureOr<Executable> executable = compile(kernels, options);
    if (mlir::failed(executable))
      return mlir::failure();
    std::vector<Executable> executables;
    executables.push_back(std::move(*executable));
    return executables;
  }
};

} // namespace tessel

#endif // TESSEL_TARGETS_TARGET_H
