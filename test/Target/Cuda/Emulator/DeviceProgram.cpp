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

llvm::Expected<std::unique_ptr<DeviceProgram>> DeviceProgram::compile(mlir::ModuleOp kernels,
                                                                      bool removeBarriers) {
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
  llvm::Expected<HostKernels> host =
      rewriteForHost(**module, engine.getDataLayout(), removeBarriers);
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

  for (const CudaLaunch &launch : program->entry.cudaLaunches) {
    llvm::Expected<llvm::orc::ExecutorAddr> address = engine.lookup(launch.function + "_packed");
    if (!address)
      return address.takeError();
    program->kernels.push_back(address->toPtr<void (*)(void *const *)>());
    program->synchronizing += llvm::is_contained(host->synchronizing, launch.function);
  }
  for (auto &[name, bytes] : host->shared) {
    llvm::Expected<llvm::orc::ExecutorAddr> address = engine.lookup(name);
    if (!address)
      return address.takeError();
    program->shared.emplace_back(address->toPtr<uint8_t *>(), bytes);
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
  for (auto [launch, kernel] : llvm::zip(entry.cudaLaunches, kernels)) {
    std::vector<void *> arguments;
    for (const CudaArgument &argument : launch.arguments) {
      if (argument.binding != CudaArgument::kScratch && argument.binding >= bindings.size())
        return llvm::createStringError("%s: argument of binding %u, the entry has %zu",
                                       launch.function.c_str(), argument.binding, bindings.size());
      auto *base = static_cast<uint8_t *>(
          argument.binding == CudaArgument::kScratch ? scratch.get() : bindings[argument.binding]);
      arguments.push_back(base + argument.offset);
    }
    setLaunchShape(launch.grid, launch.block, shared);
    BlockThreads threads(int64_t(launch.block[0]) * launch.block[1] * launch.block[2]);
    for (uint32_t z = 0; z < launch.grid[2]; ++z)
      for (uint32_t y = 0; y < launch.grid[1]; ++y)
        for (uint32_t x = 0; x < launch.grid[0]; ++x) {
          setBlock({x, y, z});
          // Shared memory starts as NaNs, so that a read before any write
          // shows in the outputs.
          for (auto &[memory, bytes] : shared)
            std::memset(memory, 0xFF, bytes);
          std::string error =
              threads.run([&, kernel = kernel](int64_t) { kernel(arguments.data()); });
          if (!error.empty())
            return llvm::createStringError("%s, block (%u, %u, %u), %s", launch.function.c_str(), x,
                                           y, z, error.c_str());
        }
  }
  return llvm::Error::success();
}

} // namespace tessel::cuda::emulator
