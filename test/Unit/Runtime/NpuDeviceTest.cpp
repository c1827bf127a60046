//===- NpuDeviceTest.cpp - The NPU device through the runtime's C API -----===//
//
// Artifacts with NPU executables, built here, loaded and run as applications
// run them: a session routes each dispatch to its executable's device (NPU
// and CPU in one schedule), a program the simulator would refuse is refused
// when the module loads, and a hazard stops the run with its message.
//
//===----------------------------------------------------------------------===//

#include "Fixtures.h"
#include "runtime/schema/NpuIsa.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;
namespace sc = tessel::schema;
namespace isa = tessel::schema::npu;

constexpr uint64_t kBytes = kElements * sizeof(float);

/// Appends one instruction's words.
void emit(std::vector<uint64_t> &words, isa::Opcode opcode, isa::Body body,
          isa::Dependencies dependencies = {}) {
  isa::Words encoded;
  ASSERT_TRUE(isa::encode({opcode, dependencies, std::move(body)}, encoded));
  words.insert(words.end(), encoded.begin(), encoded.end());
}

isa::Dma wholeBuffer(uint8_t binding) {
  isa::Dma dma;
  dma.binding = binding;
  dma.rowBytes = kBytes;
  return dma;
}

/// An NPU entry that copies binding 0 to binding 1 through the scratchpad:
/// LOAD, then STORE once the LOAD's token (through the execute queue) says
/// the bytes are there.
std::vector<uint64_t> copyProgram(bool withTokens) {
  std::vector<uint64_t> words;
  emit(words, isa::Opcode::Load, wholeBuffer(0), {false, false, false, withTokens});
  // The execute queue passes the token on to the store queue.
  isa::Add passOn; // adds nothing anyone reads: a token relay
  passOn.a = passOn.b = 4096;
  passOn.output = 8192;
  passOn.count = 1;
  emit(words, isa::Opcode::Add, passOn, {withTokens, false, false, withTokens});
  emit(words, isa::Opcode::Store, wholeBuffer(1), {withTokens, false, false, false});
  return words;
}

/// x (f32[16]) -> NPU copy into an arena buffer -> CPU add(copy, x) -> z:
/// z = 2x, half of it computed on each device.
ArtifactSpec mixedModel(bool withTokens) {
  ArtifactSpec spec = addModel();
  spec.inputs = {spec.inputs[0]};
  spec.arenaSize = kBytes;
  spec.buffers = {{sc::BufferKind_input, 0, 0, kBytes},
                  {sc::BufferKind_arena, 0, 0, kBytes},
                  {sc::BufferKind_output, 0, 0, kBytes}};
  ExecutableSpec npu;
  npu.device = sc::DeviceKind_npu;
  npu.format = sc::ExecutableFormat_npu_command_stream;
  npu.npu = NpuProgramSpec{};
  npu.npu->instructions = copyProgram(withTokens);
  EntrySpec entry;
  entry.symbol = "copy_on_npu";
  entry.bindingCount = 2;
  entry.npuInstructionCount = 3;
  npu.entries = {entry};
  spec.executables.push_back(npu);
  spec.steps = {DispatchSpec{1, 0, {0, 1}}, DispatchSpec{0, 0, {1, 0, 2}}};
  return spec;
}

TEST(NpuDeviceTest, NpuIsAvailable) { EXPECT_EQ(tsl_device_check("npu"), nullptr); }

TEST(NpuDeviceTest, OneScheduleRunsOnTheNpuAndTheCpu) {
  ModulePtr module = loadModule(buildArtifact(mixedModel(true)));
  ASSERT_TRUE(module);
  SessionPtr session = createSession(module.get());
  ASSERT_TRUE(session);
  std::vector<float> values(kElements);
  for (int64_t i = 0; i < kElements; ++i)
    values[i] = 1.5f * float(i) - 7.0f;
  TensorPtr x = floatTensor(values);
  tsl_tensor *inputs[] = {x.get()};
  tsl_tensor *outputs[] = {nullptr};
  ASSERT_EQ(take(tsl_session_run(session.get(), inputs, 1, outputs, 1)).message, "");
  TensorPtr z(outputs[0]);
  std::vector<float> result = floats(z.get());
  for (int64_t i = 0; i < kElements; ++i)
    EXPECT_EQ(result[i], 2 * values[i]) << i;
}

TEST(NpuDeviceTest, AHazardStopsTheRun) {
  ModulePtr module = loadModule(buildArtifact(mixedModel(false)));
  ASSERT_TRUE(module);
  SessionPtr session = createSession(module.get());
  TensorPtr x = floatTensor(std::vector<float>(kElements, 1.0f));
  tsl_tensor *inputs[] = {x.get()};
  tsl_tensor *outputs[] = {nullptr};
  StatusResult status = take(tsl_session_run(session.get(), inputs, 1, outputs, 1));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message,
              HasSubstr("schedule step 0: NPU entry 'copy_on_npu': hazard: instruction 2 "
                        "(STORE, store queue) reads scratchpad [0, 64) that instruction 0 "
                        "(LOAD, load queue) writes, and no dependency token orders them"));
}

TEST(NpuDeviceTest, AnInvalidProgramIsRefusedWhenTheModuleLoads) {
  ArtifactSpec spec = mixedModel(true);
  spec.executables[1].npu->instructions[0] |= uint64_t(1) << 15; // a reserved LOAD bit
  StatusResult status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_EQ(status.message,
            "executable 1 entry 'copy_on_npu': instruction 0: reserved bit 15 of word 0 is set");

  spec = mixedModel(true);
  spec.executables[1].entries[0].npuInstructionCount = 4;
  status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("NPU instructions up to 4 of 3"));

  spec = mixedModel(true);
  spec.executables[1].npu->arrayRows = 512;
  status = loadStatus(buildArtifact(spec));
  EXPECT_EQ(status.code, TSL_UNSUPPORTED);
  EXPECT_THAT(status.message, HasSubstr("array_rows 512 is outside [1, 256]"));
}

} // namespace
} // namespace tessel::test
