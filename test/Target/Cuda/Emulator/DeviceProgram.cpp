//===- DeviceProgram.cpp - A kernel function's GPU kernels, from their LLVM IR ===//

#include "DeviceProgram.h"

#include "BlockThreads.h"
#include "HostCalls.h"
#include "NvvmOnHost.h"

#include "targets/cuda/CudaTarget.h"
#include "targets/cuda/Ptx.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"

#include <cstdlib>
#include <cstring>

namespace tessel::cuda::emulator {

namespace {

/// The architecture whose LLVM IR is run. The kernels are the same for
/// every architecture but for the PTX version the backend writes.
constexpr const char *kArchitecture = "sm_80";

/// The scratch's alignment, at least the runtime's arena's.
constexpr size_t kScratchAlignment = 256;

struct FreeDeleter {
  void operator()(void *pointer) const { std::free(pointer); }
};

} // namespace

llvm::Expected<std::unique_ptr<DeviceProgram>>
DeviceProgram::compile(mlir::ModuleOp kernels, RemovedSynchronization removed) {
  mlir::FailureOr<DeviceKernels> device = outlineDeviceKernels(kernels);
  if (mlir::failed(device))
    return llvm::createStringError("the CUDA target's outlining of the kernels failed");
  if (device->entries.size() != 1)
    return llvm::createStringError("%zu kernel functions, the emulator runs one at a time",
                                   device->entries.size());
  std::unique_ptr<DeviceProgram> program(new DeviceProgram());
  program->entry = std::move(device->entries.front());
  for (const CudaLaunch &launch : program->entry.cudaLaunches)
    if (launch.dynamicSharedMemory)
      return llvm::createStringError("%s asks for dynamic shared memory, which the emulator "
                                     "does not model",
                                     launch.function.c_str());

  const Architecture *architecture = findArchitecture(kArchitecture);
  if (!architecture)
    return llvm::createStringError("the CUDA target has no %s", kArchitecture);
  auto context = std::make_unique<llvm::LLVMContext>();
  mlir::FailureOr<std::unique_ptr<llvm::Module>> module =
      translateKernels(*device->module, *architecture, /*optLevel=*/3, *context);
  if (mlir::failed(module))
    return llvm::createStringError("the CUDA target's translation to LLVM IR failed");

  llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return jit.takeError();
  program->jit = std::move(*jit);
  llvm::orc::LLJIT &engine = *program->jit;
  llvm::Expected<std::vector<HostKernel>> host =
      rewriteForHost(**module, engine.getDataLayout(), removed);
  if (!host)
    return host.takeError();
  llvm::orc::MangleAndInterner interner(engine.getExecutionSession(), engine.getDataLayout());
  if (llvm::Error error =
          engine.getMainJITDylib().define(llvm::orc::absoluteSymbols(hostCallSymbols(interner))))
    return std::move(error);
  // The C library's math, which the host's code generator may call for an
  // intrinsic (exp2f for llvm.exp2).
  llvm::Expected<std::unique_ptr<llvm::orc::DynamicLibrarySearchGenerator>> process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          engine.getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  engine.getMainJITDylib().addGenerator(std::move(*process));
  if (llvm::Error error =
          engine.addIRModule(llvm::orc::ThreadSafeModule(std::move(*module), std::move(context))))
    return std::move(error);

  auto lookup = [&engine](const std::string &name) -> llvm::Expected<uint8_t *> {
    llvm::Expected<llvm::orc::ExecutorAddr> address = engine.lookup(name);
    if (!address)
      return address.takeError();
    return address->toPtr<uint8_t *>();
  };
  for (const CudaLaunch &record : program->entry.cudaLaunches) {
    auto kernel = llvm::find_if(
        *host, [&](const HostKernel &kernel) { return kernel.name == record.function; });
    if (kernel == host->end())
      return llvm::createStringError("the PTX has no kernel '%s'", record.function.c_str());
    Launch &launch = program->launches.emplace_back();
    launch.meets = kernel->meets;
    llvm::Expected<uint8_t *> packed = lookup(kernel->name + "_packed");
    if (!packed)
      return packed.takeError();
    launch.kernel = reinterpret_cast<void (*)(void *const *)>(*packed);
    for (auto &[name, bytes] : kernel->shared) {
      llvm::Expected<uint8_t *> address = lookup(name);
      if (!address)
        return address.takeError();
      launch.shared.emplace_back(*address, bytes);
    }
  }
  return program;
}

llvm::Error DeviceProgram::run(llvm::ArrayRef<void *> bindings) {
  size_t scratchBytes = llvm::alignTo(std::max<int64_t>(entry.scratchBytes, 1), kScratchAlignment);
  std::unique_ptr<uint8_t, FreeDeleter> scratch(
      static_cast<uint8_t *>(std::aligned_alloc(kScratchAlignment, scratchBytes)));
  if (!scratch)
    return llvm::createStringError("cannot allocate %zu bytes of scratch", scratchBytes);
  // The temporaries start as NaNs, as shared memory does: a read before
  // the write shows in the outputs.
  std::memset(scratch.get(), 0xFF, scratchBytes);
  for (auto [launch, compiled] : llvm::zip(entry.cudaLaunches, launches)) {
    std::vector<void *> arguments;
    for (const CudaArgument &argument : launch.arguments) {
      if (argument.binding != CudaArgument::kScratch && argument.binding >= bindings.size())
        return llvm::createStringError("%s: argument of binding %u, the entry has %zu",
                                       launch.function.c_str(), argument.binding, bindings.size());
      auto *base = static_cast<uint8_t *>(
          argument.binding == CudaArgument::kScratch ? scratch.get() : bindings[argument.binding]);
      arguments.push_back(base + argument.offset);
    }
    setLaunchShape(launch.grid, launch.block, compiled.shared);
    BlockThreads threads(int64_t(launch.block[0]) * launch.block[1] * launch.block[2]);
    for (uint32_t z = 0; z < launch.grid[2]; ++z)
      for (uint32_t y = 0; y < launch.grid[1]; ++y)
        for (uint32_t x = 0; x < launch.grid[0]; ++x) {
          setBlock({x, y, z});
          // Shared memory starts as NaNs, so that a read before any write
          // shows in the outputs.
          for (auto &[memory, bytes] : compiled.shared)
            std::memset(memory, 0xFF, bytes);
          std::string error =
              threads.run([&, kernel = compiled.kernel](int64_t) { kernel(arguments.data()); });
          if (!error.empty())
            return llvm::createStringError("%s, block (%u, %u, %u), %s", launch.function.c_str(), x,
                                           y, z, error.c_str());
        }
  }
  return llvm::Error::success();
}

} // namespace tessel::cuda::emulator
