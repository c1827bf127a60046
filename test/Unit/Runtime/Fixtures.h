//===- Fixtures.h - Models and helpers of the runtime tests -----*- C++ -*-===//
//
// The test models, all over f32[16] tensors and the kernels of Kernels.c,
// and small RAII helpers for the C API's handles and statuses.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_UNIT_RUNTIME_FIXTURES_H
#define TESSEL_TEST_UNIT_RUNTIME_FIXTURES_H

#include "ArtifactBuilder.h"

#include "tessel/runtime.h"

#include <memory>
#include <string>
#include <vector>

namespace tessel::test {

/// Elements of every tensor of the test models.
inline constexpr int64_t kElements = 16;

/// The bytes of the kernel library built from Kernels.c.
const std::vector<uint8_t> &kernelLibrary();

/// An executable holding the kernel library with the given entries.
ExecutableSpec kernelExecutable(std::vector<EntrySpec> entries);

/// z = x + y: one dispatch of add_f32_entry, 4 workgroups, straight from the
/// inputs into the output.
ArtifactSpec addModel();
/// Makes x and z of an add model vary along `axis` (--max-shape), adding
/// the last input that holds the length.
void varyAlong(ArtifactSpec &spec, int32_t axis);
/// The add model compiled with --max-shape: x and z vary along dimension 0
/// up to kElements, y does not, and a last input holds the length.
ArtifactSpec varyingAddModel();
/// addModel with PTX beside its CPU code (an sm_80 executable that
/// replaces the CPU's): one launch of 32 threads over the three bindings.
ArtifactSpec cudaBesideCpuModel();

/// y = 2 * (x + w) and z = x + w: a constant w at a non-zero weight offset,
/// an arena intermediate, an entry that uses scratch and a copy step.
ArtifactSpec pipelineModel();

/// The expected outputs of pipelineModel for input x.
std::vector<float> pipelineWeights();

/// count: i64[1] -> same: i64[1], through a check step on the input (the
/// run fails when count is not zero) and a copy.
ArtifactSpec checkModel();

/// out (u64[workgroups]) records which thread's scratch ran each
/// workgroup; each workgroup takes about a millisecond.
ArtifactSpec probeModel(uint64_t workgroups);

/// A status taken apart and freed.
struct StatusResult {
  tsl_status_code code;
  std::string message;
};
StatusResult take(tsl_status status);

struct ModuleDeleter {
  void operator()(tsl_module *module) const { tsl_module_release(module); }
};
struct SessionDeleter {
  void operator()(tsl_session *session) const { tsl_session_release(session); }
};
struct TensorDeleter {
  void operator()(tsl_tensor *tensor) const { tsl_tensor_release(tensor); }
};
using ModulePtr = std::unique_ptr<tsl_module, ModuleDeleter>;
using SessionPtr = std::unique_ptr<tsl_session, SessionDeleter>;
using TensorPtr = std::unique_ptr<tsl_tensor, TensorDeleter>;

/// Loads `bytes` from memory, failing the test on an error.
ModulePtr loadModule(const std::vector<uint8_t> &bytes);
/// What loading `bytes` from memory says; the module, if any, is released.
StatusResult loadStatus(const std::vector<uint8_t> &bytes);
/// A session with `threadCount` threads, failing the test on an error.
SessionPtr createSession(tsl_module *module, uint32_t threadCount = 1);
/// An f32[16] tensor owned by the runtime, holding `values`.
TensorPtr floatTensor(const std::vector<float> &values);
/// The f32 contents of `tensor`.
std::vector<float> floats(tsl_tensor *tensor);

/// A file in the temporary directory, removed when this goes away.
class TempFile {
public:
  explicit TempFile(const std::vector<uint8_t> &bytes);
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
  ~TempFile();
  const std::string &path() const { return filePath; }

private:
  std::string filePath;
};

} // namespace tessel::test

#endif // TESSEL_TEST_UNIT_RUNTIME_FIXTURES_H
