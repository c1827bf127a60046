//===- DeviceTest.cpp - Devices and loading executables -------------------===//

#include "Fixtures.h"
#include "runtime/schema/CpuFeatures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <dirent.h>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;
namespace sc = tessel::schema;

/// These tests are about a process without a GPU: the driver the runtime
/// loads is one that does not exist, whatever the machine has. (Set before
/// main, so before the runtime first looks for the driver.)
[[maybe_unused]] const int kNoCudaDriver =
    setenv("TESSEL_CUDA_DRIVER", "/nonexistent/libcuda.so.1", /*overwrite=*/1);

/// The add model compiled for CUDA alone.
ArtifactSpec cudaAddModel() {
  ArtifactSpec spec = addModel();
  ExecutableSpec &executable = spec.executables[0];
  executable.device = sc::DeviceKind_cuda;
  executable.format = sc::ExecutableFormat_cuda_ptx;
  std::string ptx = ".version 8.0\n.target sm_90\n";
  executable.binary.assign(ptx.begin(), ptx.end());
  return spec;
}

TEST(DeviceTest, CpuIsAvailable) {
  EXPECT_EQ(tsl_device_check("cpu"), nullptr);
}

TEST(DeviceTest, CudaWithoutADriverIsUnavailable) {
  StatusResult status = take(tsl_device_check("cuda"));
  EXPECT_EQ(status.code, TSL_UNAVAILABLE);
  EXPECT_EQ(status.message, "the cuda device is not available: no CUDA driver found "
                            "(/nonexistent/libcuda.so.1: cannot open shared object file: No "
                            "such file or directory)");
  EXPECT_THAT(tsl_device_description("cuda"), HasSubstr("no CUDA driver found"));
}

TEST(DeviceTest, UnknownDeviceIsNotFound) {
  StatusResult status = take(tsl_device_check("tpu"));
  EXPECT_EQ(status.code, TSL_NOT_FOUND);
  EXPECT_THAT(status.message, HasSubstr("unknown device 'tpu'"));
  EXPECT_EQ(take(tsl_device_check(nullptr)).code, TSL_INVALID_ARGUMENT);
}

TEST(DeviceTest, CudaOnlyScheduleLoadsButCannotRunOnTheCpu) {
  ModulePtr module = loadModule(buildArtifact(cudaAddModel()));
  ASSERT_TRUE(module);
  tsl_session *session = nullptr;
  StatusResult status =
      take(tsl_session_create(module.get(), nullptr, &session));
  EXPECT_EQ(status.code, TSL_UNAVAILABLE);
  EXPECT_THAT(status.message, HasSubstr("schedule step 0 needs the cuda device: the cuda "
                                       "device is not available: no CUDA driver found"));
  EXPECT_EQ(session, nullptr);
}

TEST(DeviceTest, CopyToTheCudaDeviceIsUnavailable) {
  ArtifactSpec spec = pipelineModel();
  std::get<CopySpec>(spec.steps[2]).destinationDevice = sc::DeviceKind_cuda;
  ModulePtr module = loadModule(buildArtifact(spec));
  ASSERT_TRUE(module);
  tsl_session *session = nullptr;
  StatusResult status =
      take(tsl_session_create(module.get(), nullptr, &session));
  EXPECT_EQ(status.code, TSL_UNAVAILABLE);
  EXPECT_THAT(status.message,
              HasSubstr("schedule step 2 needs the cuda device"));
}

TEST(DeviceTest, SessionOnTheCudaDeviceIsUnavailable) {
  ModulePtr module = loadModule(buildArtifact(addModel()));
  tsl_session_options options;
  tsl_session_options_init(&options);
  options.device = "cuda";
  tsl_session *session = nullptr;
  StatusResult status =
      take(tsl_session_create(module.get(), &options, &session));
  EXPECT_EQ(status.code, TSL_UNAVAILABLE);
  EXPECT_THAT(status.message, HasSubstr("cuda"));
}

TEST(DeviceTest, SessionOnAnUnknownDeviceIsNotFound) {
  ModulePtr module = loadModule(buildArtifact(addModel()));
  tsl_session_options options;
  tsl_session_options_init(&options);
  options.device = "gpu0";
  tsl_session *session = nullptr;
  EXPECT_EQ(take(tsl_session_create(module.get(), &options, &session)).code,
            TSL_NOT_FOUND);
}

TEST(DeviceTest, MissingEntrySymbolIsRefusedByName) {
  ArtifactSpec spec = pipelineModel();
  spec.executables[0].entries[1].symbol = "softmax_f32_entry";
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_EQ(status.message, "executable 0 entry 1: the shared object has no "
                            "symbol 'softmax_f32_entry'");
}

/// An x86 extension this CPU lacks, from the newest down, then AMD's SSE4A
/// (which Intel CPUs lack); empty on a CPU that has them all.
std::string missingCpuFeature() {
  if (!__builtin_cpu_supports("avx512fp16"))
    return "avx512fp16";
  if (!__builtin_cpu_supports("avx512bf16"))
    return "avx512bf16";
  if (!__builtin_cpu_supports("avx512f"))
    return "avx512f";
  if (!__builtin_cpu_supports("sse4a"))
    return "sse4a";
  return "";
}

TEST(DeviceTest, ExecutableForAMissingCpuFeatureIsRefused) {
  std::string missing = missingCpuFeature();
  if (missing.empty())
    GTEST_SKIP() << "this CPU has every extension the test could require";
  ArtifactSpec spec = addModel();
  spec.executables[0].architecture = "sapphirerapids";
  spec.executables[0].cpuFeatures = {"avx", missing};
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_UNSUPPORTED);
  EXPECT_EQ(status.message,
            "executable 0 was compiled for sapphirerapids and uses " + missing +
                ", which this CPU lacks or its OS does not enable; recompile "
                "with --target-cpu for this machine");
}

TEST(DeviceTest, RuntimeChecksEveryFeatureTheCompilerRecords) {
  for (const char *feature : sc::kCheckedCpuFeatures) {
    ArtifactSpec spec = addModel();
    spec.executables[0].cpuFeatures = {feature};
    StatusResult status = loadStatus(buildArtifact(spec));
    EXPECT_TRUE(status.code == TSL_OK || status.code == TSL_UNSUPPORTED)
        << feature << ": " << status.message;
  }
}

TEST(DeviceTest, ExecutableNeedingAnUnknownCpuFeatureIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].cpuFeatures = {"avx-9000"};
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_EQ(status.message, "executable 0 needs the CPU feature 'avx-9000', "
                            "which this runtime cannot check; update the "
                            "runtime");
}

TEST(DeviceTest, SharedObjectThatDoesNotLoadReportsTheLoaderError) {
  ArtifactSpec spec = addModel();
  spec.executables[0].binary = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0};
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message,
              HasSubstr("executable 0: the shared object does not load: "));
  EXPECT_THAT(status.message, HasSubstr("/proc/self/fd/"))
      << "dlopen's own text should follow";
}

TEST(DeviceTest, ModulesLoadTheirExecutablesSideBySide) {
  ModulePtr first = loadModule(buildArtifact(addModel()));
  ModulePtr second = loadModule(buildArtifact(pipelineModel()));
  ModulePtr third = loadModule(buildArtifact(addModel()));
  ASSERT_TRUE(first && second && third);
  second.reset();
  ModulePtr fourth = loadModule(buildArtifact(pipelineModel()));
  ASSERT_TRUE(fourth);

  for (tsl_module *module : {first.get(), third.get()}) {
    SessionPtr session = createSession(module);
    TensorPtr x = floatTensor(std::vector<float>(kElements, 1.5f));
    tsl_tensor *inputs[] = {x.get(), x.get()};
    tsl_tensor *output = nullptr;
    ASSERT_EQ(take(tsl_session_run(session.get(), inputs, 2, &output, 1)).code,
              TSL_OK);
    TensorPtr z(output);
    EXPECT_EQ(floats(output), std::vector<float>(kElements, 3.0f));
  }
}

size_t openFileCount() {
  size_t count = 0;
  if (DIR *directory = opendir("/proc/self/fd")) {
    while (readdir(directory))
      ++count;
    closedir(directory);
  }
  return count;
}

TEST(DeviceTest, ReleasingModulesUnloadsTheirSharedObjects) {
  std::vector<uint8_t> bytes = buildArtifact(addModel());
  loadModule(bytes); // the loader's own first-use allocations
  size_t before = openFileCount();
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(loadModule(bytes));
  EXPECT_EQ(openFileCount(), before)
      << "each loaded shared object holds an in-memory file until unloaded";
}

} // namespace
} // namespace tessel::test

namespace tessel::test {
namespace {

TEST(DeviceTest, CudaBesideCpuRunsOnTheCpuWithoutADriver) {
  ModulePtr module = loadModule(buildArtifact(cudaBesideCpuModel()));
  ASSERT_TRUE(module);
  tsl_session *session = nullptr;
  ASSERT_EQ(tsl_session_create(module.get(), nullptr, &session), nullptr);
  EXPECT_STREQ(tsl_session_device(session), "cpu");
  tsl_session_release(session);

  tsl_session_options options;
  tsl_session_options_init(&options);
  options.device = "cuda";
  StatusResult status = take(tsl_session_create(module.get(), &options, &session));
  EXPECT_EQ(status.code, TSL_UNAVAILABLE);
  EXPECT_THAT(status.message, HasSubstr("no CUDA driver found"));
}

} // namespace
} // namespace tessel::test
