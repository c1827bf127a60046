//===- Cubin.cpp - Cubins from the PTX, with the toolkit's ptxas ----------===//

#include "targets/cuda/Cubin.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <tuple>

using namespace mlir;

namespace tessel::cuda {

std::optional<std::string> findPtxas() {
  if (llvm::ErrorOr<std::string> onPath = llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  std::string inToolkit = cudaToolkitPath() + "/bin/ptxas";
  if (llvm::sys::fs::can_execute(inToolkit))
    return inToolkit;
  return std::nullopt;
}

FailureOr<std::vector<uint8_t>> assembleCubin(llvm::StringRef ptxas, llvm::StringRef ptx,
                                              const Architecture &architecture, int optLevel,
                                              Location location) {
  // ptxas reads and writes files: three temporaries, each removed on every
  // path once made.
  llvm::SmallString<128> ptxPath, cubinPath, logPath;
  llvm::FileRemover removePtx, removeCubin, removeLog;
  for (auto [path, remover, suffix] :
       {std::tuple(&ptxPath, &removePtx, "ptx"), std::tuple(&cubinPath, &removeCubin, "cubin"),
        std::tuple(&logPath, &removeLog, "log")}) {
    if (std::error_code error = llvm::sys::fs::createTemporaryFile("tessel", suffix, *path))
      return emitError(location, "cannot create a temporary file for ptxas: ") << error.message();
    remover->setFile(*path);
  }
  {
    std::error_code error;
    llvm::raw_fd_ostream file(ptxPath, error);
    if (error)
      return emitError(location, "cannot write the PTX for ptxas: ") << error.message();
    file << ptx;
    file.close();
    if (file.has_error()) {
      std::error_code written = file.error();
      file.clear_error();
      return emitError(location, "cannot write the PTX for ptxas: ") << written.message();
    }
  }

  std::string arch = std::string("-arch=") + architecture.name;
  std::string level = "-O" + std::to_string(optLevel);
  llvm::SmallVector<llvm::StringRef> arguments = {ptxas,           arch,         level, "-o",
                                                  cubinPath.str(), ptxPath.str()};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(), logPath.str()};
  std::string problem;
  bool notStarted = false;
  int exitCode =
      llvm::sys::ExecuteAndWait(ptxas, arguments, /*Env=*/std::nullopt, redirects,
                                /*SecondsToWait=*/0, /*MemoryLimit=*/0, &problem, &notStarted);
  if (exitCode != 0) {
    InFlightDiagnostic diagnostic = emitError(location) << ptxas << " -arch=" << architecture.name;
    if (notStarted)
      return diagnostic << " could not be started: " << problem;
    // A negative code is a crash (`problem` names the signal).
    if (exitCode < 0)
      diagnostic << " crashed: " << problem;
    else
      diagnostic << " failed (exit " << exitCode << ")";
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> log = llvm::MemoryBuffer::getFile(logPath);
    if (log && !(*log)->getBuffer().trim().empty())
      diagnostic << ": " << (*log)->getBuffer().trim();
    return diagnostic;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> cubin = llvm::MemoryBuffer::getFile(cubinPath);
  if (!cubin || (*cubin)->getBufferSize() == 0)
    return emitError(location) << ptxas << " -arch=" << architecture.name << " wrote no cubin";
  llvm::StringRef bytes = (*cubin)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

} // namespace tessel::cuda
