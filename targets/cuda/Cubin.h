//===- Cubin.h - Cubins from the PTX, with the toolkit's ptxas -----*- C++ -*-===//
//
// PTX is always in the artifact, for the driver's JIT; with --cuda-cubins
// each architecture's PTX is also assembled by ptxas into a cubin, which a
// GPU of that architecture loads without compiling anything (a JIT of a
// whole model's PTX costs seconds at every load where no driver cache
// holds it). ptxas is the CUDA toolkit's, run as a program: Tessel links
// nothing of the toolkit.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_CUBIN_H
#define TESSEL_TARGETS_CUDA_CUBIN_H

#include "targets/cuda/Ptx.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::cuda {

/// The toolkit's ptxas: on PATH, else in $CUDA_HOME/bin (by default
/// /usr/local/cuda/bin); none when it is in neither.
std::optional<std::string> findPtxas();

/// Assembles `ptx` for `architecture` with `ptxas` at `optLevel` into a
/// cubin. Fails with a diagnostic at `location` that gives what ptxas said.
mlir::FailureOr<std::vector<uint8_t>> assembleCubin(llvm::StringRef ptxas, llvm::StringRef ptx,
                                                    const Architecture &architecture, int optLevel,
                                                    mlir::Location location);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_CUBIN_H
