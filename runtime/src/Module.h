//===- Module.h - A verified, loaded artifact -------------------*- C++ -*-===//
//
// The module owns the artifact's bytes (64-byte aligned, so the weights can
// be bound to kernels in place) and the executables loaded from it. It is
// never written after loading, which is what lets sessions on any number
// of threads share it without locks.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_MODULE_H
#define TESSEL_RUNTIME_SRC_MODULE_H

#include "Device.h"
#include "Memory.h"

#include "runtime/schema/Artifact.h"
#include "tessel/runtime.h"

#include <atomic>
#include <memory>
#include <vector>

struct tsl_module_t {
  std::atomic<size_t> references{1};
  tessel::runtime::AlignedBytes bytes;
  /// The verified root of `bytes`.
  const tessel::schema::Artifact *artifact = nullptr;
  /// The signature; names and shapes point into `bytes`, except the shapes
  /// of batched and varying tensors, which report dimension 0 or the
  /// varying one as -1 (reportedShapes).
  std::vector<tsl_tensor_info> inputs, outputs;
  /// Per input and output: whether dimension 0 is the batch, run one sample
  /// at a time.
  std::vector<bool> inputBatched, outputBatched;
  /// Per input and output: the dimension that is the varying length, or
  /// -1. The artifact's inputs are `inputs` and, when some input varies, a
  /// last one that the runtime fills with the length (artifactInputCount
  /// counts it); `lengthBound` is the largest length (0: none varies).
  std::vector<int32_t> inputVarying, outputVarying;
  size_t artifactInputCount = 0;
  int64_t lengthBound = 0;
  std::vector<std::vector<int64_t>> reportedShapes;
  /// Indexed like Artifact.executables; null where this process lacks the
  /// executable's device.
  std::vector<std::unique_ptr<tessel::runtime::Executable>> executables;
};

namespace tessel::runtime {

/// The largest scratch any CPU entry of `artifact` asks for: what each
/// worker thread of a session holds.
size_t cpuScratchBytes(const schema::Artifact &artifact);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_MODULE_H
