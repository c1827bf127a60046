//===- Fixtures.cpp - Models and helpers shared by the runtime tests ------===//

#include "Fixtures.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace tessel::test {

namespace sc = tessel::schema;

namespace {

constexpr uint64_t kTensorBytes = kElements * sizeof(float);

TensorSpec floatSpec(const std::string &name) {
  return {name, sc::DType_f32, {kElements}, std::nullopt};
}

BufferSpec ioBuffer(sc::BufferKind kind, uint32_t index) {
  return {kind, index, 0, kTensorBytes};
}

} // namespace

const std::vector<uint8_t> &kernelLibrary() {
  static const std::vector<uint8_t> bytes = [] {
    std::ifstream file(TESSEL_TEST_KERNELS, std::ios::binary);
    EXPECT_TRUE(file) << "cannot read " << TESSEL_TEST_KERNELS;
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
  }();
  return bytes;
}

ExecutableSpec kernelExecutable(std::vector<EntrySpec> entries) {
  ExecutableSpec executable;
  executable.binary = kernelLibrary();
  executable.entries = std::move(entries);
  return executable;
}

ArtifactSpec addModel() {
  ArtifactSpec spec;
  spec.inputs = {floatSpec("x"), floatSpec("y")};
  spec.outputs = {floatSpec("z")};
  spec.buffers = {ioBuffer(sc::BufferKind_input, 0),
                  ioBuffer(sc::BufferKind_input, 1),
                  ioBuffer(sc::BufferKind_output, 0)};
  spec.executables = {kernelExecutable({{"add_f32_entry", 4, 3, 0, std::nullopt}})};
  spec.steps = {DispatchSpec{0, 0, {0, 1, 2}}};
  spec.compilerVersion = "tessel-test 0.1";
  spec.modelHash = "0123456789abcdef";
  spec.options = "--target=x86";
  spec.modelName = "add";
  return spec;
}

void varyAlong(ArtifactSpec &spec, int32_t axis) {
  spec.inputs[0].varyingAxis = axis;
  spec.outputs[0].varyingAxis = axis;
  TensorSpec length{"tessel.length", sc::DType_i64, {1}};
  length.holdsLength = true;
  spec.inputs.push_back(length);
}

ArtifactSpec varyingAddModel() {
  ArtifactSpec spec = addModel();
  varyAlong(spec, 0);
  return spec;
}

/// The add model with PTX beside its CPU code: one launch of 32 threads
/// over the entry's three bindings.
ArtifactSpec cudaBesideCpuModel() {
  ArtifactSpec spec = addModel();
  ExecutableSpec cuda;
  cuda.device = sc::DeviceKind_cuda;
  cuda.format = sc::ExecutableFormat_cuda_ptx;
  cuda.architecture = "sm_80";
  std::string ptx = ".version 7.0\n.target sm_80\n.visible .entry add_0(\n";
  cuda.binary.assign(ptx.begin(), ptx.end());
  EntrySpec entry{"add", 1, 3, 0, std::vector<uint64_t>{kTensorBytes, kTensorBytes, kTensorBytes}};
  entry.cudaLaunches.push_back(
      {"add_0", sc::Dim3(1, 1, 1), sc::Dim3(32, 1, 1),
       {sc::CudaArgument(0, 0), sc::CudaArgument(1, 0), sc::CudaArgument(2, 0)}});
  cuda.entries = {entry};
  cuda.replaces = 0;
  spec.executables.push_back(cuda);
  return spec;
}

std::vector<float> pipelineWeights() {
  std::vector<float> weights(kElements);
  for (int64_t i = 0; i < kElements; ++i)
    weights[i] = 0.5f * static_cast<float>(i) - 3.0f;
  return weights;
}

ArtifactSpec pipelineModel() {
  ArtifactSpec spec;
  spec.inputs = {floatSpec("x")};
  spec.outputs = {floatSpec("y"), floatSpec("z")};
  // w sits at offset 64 behind bytes that are NaN as floats, so a runtime
  // that ignored the offset would produce NaN.
  spec.weights.assign(2 * kTensorBytes, 0xff);
  std::vector<float> weights = pipelineWeights();
  std::memcpy(spec.weights.data() + kTensorBytes, weights.data(), kTensorBytes);
  spec.arenaSize = 2 * kTensorBytes;
  spec.buffers = {ioBuffer(sc::BufferKind_input, 0),
                  {sc::BufferKind_constant, 0, kTensorBytes, kTensorBytes},
                  {sc::BufferKind_arena, 0, kTensorBytes, kTensorBytes},
                  ioBuffer(sc::BufferKind_output, 0),
                  ioBuffer(sc::BufferKind_output, 1)};
  spec.executables = {
      kernelExecutable({{"add_f32_entry", 4, 3, 0, std::nullopt},
                        {"scale2_scratch_entry", 4, 2, 4 * sizeof(float), std::nullopt}})};
  spec.steps = {DispatchSpec{0, 0, {0, 1, 2}}, DispatchSpec{0, 1, {2, 3}},
                CopySpec{2, 4}};
  return spec;
}

ArtifactSpec checkModel() {
  ArtifactSpec spec;
  spec.inputs = {{"count", sc::DType_i64, {1}, std::nullopt}};
  spec.outputs = {{"same", sc::DType_i64, {1}, std::nullopt}};
  spec.buffers = {{sc::BufferKind_input, 0, 0, sizeof(int64_t)},
                  {sc::BufferKind_output, 0, 0, sizeof(int64_t)}};
  spec.steps = {CheckSpec{0, "gather_node", "Gather indices outside [-5, 5)"}, CopySpec{0, 1}};
  return spec;
}

ArtifactSpec probeModel(uint64_t workgroups) {
  ArtifactSpec spec;
  spec.outputs = {
      {"threads", sc::DType_u64, {static_cast<int64_t>(workgroups)}, std::nullopt}};
  spec.buffers = {{sc::BufferKind_output, 0, 0, workgroups * sizeof(uint64_t)}};
  spec.executables = {kernelExecutable({{"probe_threads_entry", workgroups, 1, 64, std::nullopt}})};
  spec.steps = {DispatchSpec{0, 0, {0}}};
  return spec;
}

StatusResult take(tsl_status status) {
  StatusResult result{tsl_status_get_code(status),
                      tsl_status_get_message(status)};
  tsl_status_free(status);
  return result;
}

ModulePtr loadModule(const std::vector<uint8_t> &bytes) {
  tsl_module *module = nullptr;
  StatusResult status =
      take(tsl_module_load_memory(bytes.data(), bytes.size(), &module));
  EXPECT_EQ(status.code, TSL_OK) << status.message;
  return ModulePtr(module);
}

StatusResult loadStatus(const std::vector<uint8_t> &bytes) {
  tsl_module *module = nullptr;
  StatusResult status =
      take(tsl_module_load_memory(bytes.data(), bytes.size(), &module));
  tsl_module_release(module);
  return status;
}

SessionPtr createSession(tsl_module *module, uint32_t threadCount) {
  tsl_session_options options;
  tsl_session_options_init(&options);
  options.thread_count = threadCount;
  tsl_session *session = nullptr;
  StatusResult status = take(tsl_session_create(module, &options, &session));
  EXPECT_EQ(status.code, TSL_OK) << status.message;
  return SessionPtr(session);
}

TensorPtr floatTensor(const std::vector<float> &values) {
  int64_t shape[] = {static_cast<int64_t>(values.size())};
  tsl_tensor *tensor = nullptr;
  StatusResult status = take(tsl_tensor_allocate(TSL_F32, shape, 1, &tensor));
  EXPECT_EQ(status.code, TSL_OK) << status.message;
  if (tensor)
    std::memcpy(tsl_tensor_data(tensor), values.data(),
                values.size() * sizeof(float));
  return TensorPtr(tensor);
}

std::vector<float> floats(tsl_tensor *tensor) {
  const auto *data = static_cast<const float *>(tsl_tensor_data(tensor));
  return std::vector<float>(data, data + tsl_tensor_byte_size(tensor) /
                                             sizeof(float));
}

TempFile::TempFile(const std::vector<uint8_t> &bytes) {
  const char *directory = std::getenv("TMPDIR");
  std::string pattern =
      std::string(directory ? directory : "/tmp") + "/tessel-test-XXXXXX";
  int fd = ::mkstemp(pattern.data());
  EXPECT_GE(fd, 0) << "cannot create " << pattern;
  filePath = pattern;
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

TempFile::~TempFile() { ::unlink(filePath.c_str()); }

} // namespace tessel::test
