//===- VerifierTest.cpp - Semantic checks of well-formed artifacts --------===//
//
// Each artifact here is a valid FlatBuffer with a correct checksum but one
// index, offset or size the runtime would misuse; the verifier must refuse
// it with a message naming the field and index at fault.
//
//===----------------------------------------------------------------------===//

#include "Fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;
namespace sc = tessel::schema;

StatusResult load(const ArtifactSpec &spec) {
  return loadStatus(buildArtifact(spec));
}

void expectRefused(const ArtifactSpec &spec, const std::string &message) {
  StatusResult status = load(spec);
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT) << status.message;
  EXPECT_THAT(status.message, HasSubstr(message));
}

DispatchSpec &firstDispatch(ArtifactSpec &spec) {
  return std::get<DispatchSpec>(spec.steps[0]);
}

TEST(VerifierTest, BatchedTensorWhoseDimensionZeroIsNotOneIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[0].batched = true; // shape [16]: 16 samples, not one
  expectRefused(spec, "artifact input 0 ('x') is batched, so its shape gives one sample, but "
                      "its dimension 0 is not 1");
}

TEST(VerifierTest, BatchedOutputWithoutABatchedInputIsRefused) {
  ArtifactSpec spec = addModel();
  spec.outputs[0].shape = {1, kElements};
  spec.outputs[0].batched = true;
  expectRefused(spec, "artifact outputs are batched but no input is");
}

TEST(VerifierTest, VaryingModelIsAccepted) { EXPECT_EQ(load(varyingAddModel()).code, TSL_OK); }

TEST(VerifierTest, LengthRowsMustSplitTheWorkgroups) {
  for (auto [positions, workgroups] : {std::pair<uint64_t, uint64_t>{4, 0}, {0, 1}, {4, 3}}) {
    ArtifactSpec spec = varyingAddModel();
    spec.executables[0].entries[0].lengthRowPositions = positions;
    spec.executables[0].entries[0].lengthRowWorkgroups = workgroups;
    StatusResult status = load(spec);
    EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
    EXPECT_THAT(status.message, HasSubstr("entry 0 ('add_f32_entry'): length rows of"));
    EXPECT_THAT(status.message, HasSubstr("do not split its 4 workgroups"));
  }
}

TEST(VerifierTest, VaryingInputWithoutTheLengthIsRefused) {
  ArtifactSpec spec = varyingAddModel();
  spec.inputs.pop_back();
  expectRefused(spec, "artifact inputs vary but no input holds the length");
}

TEST(VerifierTest, LengthThatIsNotTheLastInputIsRefused) {
  ArtifactSpec spec = varyingAddModel();
  std::swap(spec.inputs[1], spec.inputs[2]);
  expectRefused(spec, "artifact input 1 ('tessel.length') holds the varying length but is not "
                      "the last input");
}

TEST(VerifierTest, LengthHeldByAnOutputIsRefused) {
  ArtifactSpec spec = varyingAddModel();
  spec.outputs[0].holdsLength = true;
  expectRefused(spec, "artifact output 0 ('z') holds the varying length, which only the last "
                      "input may");
}

TEST(VerifierTest, VaryingAxisOutsideTheShapeIsRefused) {
  ArtifactSpec spec = varyingAddModel();
  spec.outputs[0].varyingAxis = 1;
  expectRefused(spec, "artifact output 0 ('z'): its varying dimension 1 is not one of its "
                      "dimensions");
}

TEST(VerifierTest, VaryingTensorsOfDifferentBoundsAreRefused) {
  ArtifactSpec spec = varyingAddModel();
  spec.outputs[0].shape = {8};
  expectRefused(spec, "artifact tensor 'z' varies up to 8 but another up to 16");
}

TEST(VerifierTest, GraphOutputsHoldingEveryOutputAreAccepted) {
  ArtifactSpec spec = addModel();
  spec.graphOutputs = {{"empty", sc::GraphValueKind_Optional, /*present=*/false, 0, 0},
                       {"zs", sc::GraphValueKind_Sequence, true, 0, 1}};
  EXPECT_EQ(load(spec).code, TSL_OK);
}

TEST(VerifierTest, SequenceInputOfTwoTensorsIsAccepted) {
  ArtifactSpec spec = addModel();
  spec.graphInputs = {{"xy", sc::GraphValueKind_Sequence, true, 0, 2}};
  EXPECT_EQ(load(spec).code, TSL_OK);
}

TEST(VerifierTest, GraphInputsLeavingAnInputOutAreRefused) {
  ArtifactSpec spec = addModel();
  spec.graphInputs = {{"x", sc::GraphValueKind_Tensor, true, 0, 1}};
  expectRefused(spec, "artifact graph inputs: they hold 1 inputs, but the signature has 2");
}

TEST(VerifierTest, GraphOutputPastTheOutputsIsRefused) {
  ArtifactSpec spec = addModel();
  spec.graphOutputs = {{"zs", sc::GraphValueKind_Sequence, true, 0, 2}};
  expectRefused(spec, "artifact graph outputs: they hold 2 outputs, but the signature has 1");
}

TEST(VerifierTest, EmptyOptionalHoldingAnOutputIsRefused) {
  ArtifactSpec spec = addModel();
  spec.graphOutputs = {{"z", sc::GraphValueKind_Optional, /*present=*/false, 0, 1}};
  expectRefused(spec, "artifact graph output 0: outputs 0 to 1 do not follow the graph output "
                      "before it or do not fit its kind");
}

TEST(VerifierTest, GraphOutputKindOutsideTheEnumIsRefused) {
  ArtifactSpec spec = addModel();
  spec.graphOutputs = {{"z", static_cast<sc::GraphValueKind>(9), true, 0, 1}};
  expectRefused(spec, "artifact graph output 0: unknown kind 9");
}

TEST(VerifierTest, EmptyInputNameIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[1].name = "";
  expectRefused(spec, "artifact input 1: the name is empty");
}

TEST(VerifierTest, DuplicateOutputNameIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.outputs[1].name = "y";
  expectRefused(spec, "artifact output 1: the name 'y' is already taken");
}

TEST(VerifierTest, SameNameForAnInputAndAnOutputIsAllowed) {
  ArtifactSpec spec = addModel();
  spec.outputs[0].name = "x";
  EXPECT_EQ(load(spec).code, TSL_OK);
}

TEST(VerifierTest, DTypeOutsideTheEnumIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[0].dtype = static_cast<sc::DType>(200);
  expectRefused(spec, "artifact input 0 ('x'): dtype 200 is not a DType");
}

TEST(VerifierTest, NegativeDimensionIsRefused) {
  ArtifactSpec spec = addModel();
  spec.outputs[0].shape = {4, -4};
  expectRefused(spec, "artifact output 0 ('z'): dimension 1 is -4");
}

TEST(VerifierTest, SignatureWhoseByteSizeOverflowsIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[0].shape = {INT64_MAX / 2, 3};
  expectRefused(spec, "artifact input 0 ('x'): f32 of shape");
}

TEST(VerifierTest, QuantizedFloatTensorIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[0].quantization = QuantizationSpec{{0.5}, {0}, -1};
  expectRefused(spec, "artifact input 0 ('x'): a f32 tensor cannot be quantized");
}

TEST(VerifierTest, QuantizationAxisOutsideTheRankIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[0].dtype = sc::DType_i32;
  spec.inputs[0].quantization = QuantizationSpec{{0.5}, {0}, 1};
  expectRefused(spec, "artifact input 0 ('x'): quantization axis 1 is outside the rank 1");
}

TEST(VerifierTest, QuantizationWithoutOneScalePerIndexIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[0].dtype = sc::DType_i32;
  spec.inputs[0].quantization = QuantizationSpec{{0.5, 0.25}, {0, 0}, 0};
  expectRefused(spec, "artifact input 0 ('x'): 2 scales and 2 zero points");
}

TEST(VerifierTest, NonPositiveScaleIsRefused) {
  ArtifactSpec spec = addModel();
  spec.outputs[0].dtype = sc::DType_i32;
  spec.outputs[0].quantization = QuantizationSpec{{-1.0}, {0}, -1};
  expectRefused(spec, "artifact output 0 ('z'): scale -1 is not a finite positive number");
}

TEST(VerifierTest, ZeroPointOutsideTheDTypeIsRefused) {
  ArtifactSpec spec = addModel();
  spec.inputs[0].dtype = sc::DType_i32;
  spec.inputs[0].quantization = QuantizationSpec{{0.5}, {int64_t(1) << 40}, -1};
  expectRefused(spec, "artifact input 0 ('x'): zero point 1099511627776 is outside");
}

TEST(VerifierTest, BufferKindOutsideTheEnumIsRefused) {
  ArtifactSpec spec = addModel();
  spec.buffers[2].kind = static_cast<sc::BufferKind>(9);
  expectRefused(spec, "artifact buffer 2: kind 9 is not a BufferKind");
}

TEST(VerifierTest, InputIndexOutOfRangeIsRefused) {
  ArtifactSpec spec = addModel();
  spec.buffers[1].index = 2;
  expectRefused(spec, "artifact buffer 1: input index 2 is out of range "
                      "(the model has 2 inputs)");
}

TEST(VerifierTest, OutputBufferOfTheWrongSizeIsRefused) {
  ArtifactSpec spec = addModel();
  spec.buffers[2].size = 32;
  expectRefused(spec, "artifact buffer 2: size 32 differs from the 64 bytes "
                      "of output 0");
}

TEST(VerifierTest, ConstantRangePastTheWeightsIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.buffers[1].size = 4096;
  expectRefused(spec, "artifact buffer 1: constant range [64, 4160) exceeds "
                      "the 128 weight bytes");
}

TEST(VerifierTest, UnalignedConstantOffsetIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.buffers[1].offset = 4;
  spec.buffers[1].size = 16;
  expectRefused(spec, "artifact buffer 1: constant offset 4 is not a "
                      "multiple of 64");
}

TEST(VerifierTest, ConstantRangeWrappingPastUint64MaxIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.buffers[1].offset = UINT64_MAX & ~uint64_t(63);
  spec.buffers[1].size = 128;
  expectRefused(spec, "artifact buffer 1: constant range "
                      "[18446744073709551552, 18446744073709551552 + 128) "
                      "overflows");
}

TEST(VerifierTest, ArenaRangeWrappingPastUint64MaxIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.buffers[2].offset = UINT64_MAX & ~uint64_t(63);
  expectRefused(spec, "artifact buffer 2: arena range");
  expectRefused(spec, "overflows");
}

TEST(VerifierTest, ArenaRangePastTheArenaIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.buffers[2].offset = 128;
  expectRefused(spec, "artifact buffer 2: arena range [128, 192) exceeds the "
                      "128 arena bytes");
}

TEST(VerifierTest, HugeArenaIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.arenaSize = UINT64_MAX;
  expectRefused(spec, "artifact memory plan: arena_size 18446744073709551615 "
                      "exceeds the limit of 1099511627776 bytes (1 TiB)");
}

TEST(VerifierTest, ArenaAlignmentThatIsNoPowerOfTwoIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.arenaAlignment = 48;
  expectRefused(spec, "arena_alignment 48 is not a power of two");
}

TEST(VerifierTest, ArenaAlignmentAbove4096IsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.arenaAlignment = 8192;
  expectRefused(spec, "arena_alignment 8192 is not a power of two up to 4096");
}

TEST(VerifierTest, ExecutableDeviceOutsideTheEnumIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].device = static_cast<sc::DeviceKind>(7);
  expectRefused(spec, "artifact executable 0: device 7 is not a DeviceKind");
}

TEST(VerifierTest, ExecutableFormatForAnotherDeviceIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].format = sc::ExecutableFormat_cuda_ptx;
  expectRefused(spec, "artifact executable 0: a cuda_ptx executable does not "
                      "run on the cpu device");
}

TEST(VerifierTest, NonElfBinaryIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].binary = {'#', '!', '/', 'b', 'i', 'n'};
  expectRefused(spec, "artifact executable 0: the binary is not an ELF "
                      "shared object");
}

TEST(VerifierTest, NonElfCubinIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].device = sc::DeviceKind_cuda;
  spec.executables[0].format = sc::ExecutableFormat_cuda_cubin;
  spec.executables[0].architecture = "sm_80";
  spec.executables[0].binary = {'.', 't', 'a', 'r', 'g', 'e', 't'};
  expectRefused(spec,
                "artifact executable 0: the cuda_cubin binary is not a 64-bit CUDA ELF image");
}

TEST(VerifierTest, KernelNameWithNulByteIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].entries[0].kernel = std::string("add\0f32", 7);
  expectRefused(spec, "artifact executable 0 entry 0: the kernel name contains a NUL byte");
}

TEST(VerifierTest, EmptySymbolIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].entries[0].symbol = "";
  expectRefused(spec, "artifact executable 0 entry 0: the symbol is empty");
}

TEST(VerifierTest, ZeroWorkgroupsAreRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].entries[0].workgroupCount = 0;
  expectRefused(spec, "artifact executable 0 entry 0 ('add_f32_entry'): "
                      "workgroup_count 0");
}

TEST(VerifierTest, BindingCountAboveTheBufferCountIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].entries[0].bindingCount = 4;
  expectRefused(spec, "binding_count 4 exceeds the 3 buffers");
}

TEST(VerifierTest, ScratchAboveOneGiBIsRefused) {
  ArtifactSpec spec = addModel();
  spec.executables[0].entries[0].scratchBytes = (uint64_t(1) << 30) + 1;
  expectRefused(spec, "scratch_bytes 1073741825 exceeds the 1 GiB limit");
}

TEST(VerifierTest, ExecutableIndexOutOfRangeIsRefused) {
  ArtifactSpec spec = addModel();
  firstDispatch(spec).executable = 1;
  expectRefused(spec, "artifact schedule step 0: executable 1 is out of range "
                      "(the artifact has 1 executables)");
}

TEST(VerifierTest, EntryIndexOutOfRangeIsRefused) {
  ArtifactSpec spec = pipelineModel();
  std::get<DispatchSpec>(spec.steps[1]).entry = 2;
  expectRefused(spec, "artifact schedule step 1: entry 2 is out of range "
                      "(executable 0 has 2 entries)");
}

TEST(VerifierTest, BindingIndexOutOfRangeIsRefused) {
  ArtifactSpec spec = addModel();
  firstDispatch(spec).bindings = {0, 1, 3};
  expectRefused(spec, "artifact schedule step 0: binding 2 names buffer 3, "
                      "which is out of range (the artifact has 3 buffers)");
}

TEST(VerifierTest, BindingCountThatDiffersFromTheEntryIsRefused) {
  ArtifactSpec spec = addModel();
  firstDispatch(spec).bindings = {0, 1};
  expectRefused(spec, "artifact schedule step 0: 2 bindings, but entry 0 "
                      "('add_f32_entry') of executable 0 takes 3");
}

TEST(VerifierTest, BindingOfAnotherSizeThanTheEntryWasCompiledForIsRefused) {
  ArtifactSpec spec = addModel();
  uint64_t bytes = kElements * sizeof(float);
  spec.executables[0].entries[0].bindingSizes = {bytes, bytes, bytes / 2};
  expectRefused(spec, "artifact schedule step 0: binding 2 is buffer 2 of 64 bytes, but entry "
                      "'add_f32_entry' was compiled for 32 bytes");
}

TEST(VerifierTest, EntryWithoutASizePerBindingIsRefused) {
  ArtifactSpec spec = addModel();
  uint64_t bytes = kElements * sizeof(float);
  spec.executables[0].entries[0].bindingSizes = {bytes, bytes};
  expectRefused(spec, "artifact executable 0 entry 0 ('add_f32_entry'): 2 binding sizes for 3 "
                      "bindings");
}

TEST(VerifierTest, CopySourceOutOfRangeIsRefused) {
  ArtifactSpec spec = pipelineModel();
  std::get<CopySpec>(spec.steps[2]).source = 5;
  expectRefused(spec, "artifact schedule step 2: source buffer 5 is out of "
                      "range (the artifact has 5 buffers)");
}

TEST(VerifierTest, CopyBetweenBuffersOfDifferentSizesIsRefused) {
  ArtifactSpec spec = pipelineModel();
  spec.buffers[2].size = 32;
  expectRefused(spec, "artifact schedule step 2: copies the 32 bytes of "
                      "buffer 2 into the 64 bytes of buffer 4");
}

TEST(VerifierTest, CopyIntoAConstantIsRefused) {
  ArtifactSpec spec = pipelineModel();
  std::get<CopySpec>(spec.steps[2]).destination = 1;
  expectRefused(spec, "artifact schedule step 2: copies into buffer 1, which "
                      "is read-only (kind constant)");
}

TEST(VerifierTest, CopyOntoItselfIsRefused) {
  ArtifactSpec spec = pipelineModel();
  std::get<CopySpec>(spec.steps[2]).destination = 2;
  expectRefused(spec, "the source (buffer 2) and the destination (buffer 2) "
                      "overlap");
}

TEST(VerifierTest, CopyDeviceOutsideTheEnumIsRefused) {
  ArtifactSpec spec = pipelineModel();
  std::get<CopySpec>(spec.steps[2]).destinationDevice =
      static_cast<sc::DeviceKind>(3);
  expectRefused(spec, "artifact schedule step 2: destination_device 3 is not "
                      "a DeviceKind");
}

TEST(VerifierTest, CheckCountOutOfRangeIsRefused) {
  ArtifactSpec spec = checkModel();
  std::get<CheckSpec>(spec.steps[0]).count = 2;
  expectRefused(spec, "artifact schedule step 0: count buffer 2 is out of range (the artifact "
                      "has 2 buffers)");
}

TEST(VerifierTest, CheckCountThatIsNoInt64IsRefused) {
  ArtifactSpec spec = checkModel();
  spec.inputs[0].dtype = sc::DType_i32;
  spec.buffers[0].size = spec.buffers[1].size = 4;
  spec.outputs[0].dtype = sc::DType_i32;
  expectRefused(spec, "artifact schedule step 0: count buffer 0 has 4 bytes, not the 8 of an "
                      "int64");
}

TEST(VerifierTest, SharedTablesDescribingMoreThanTheFileHoldsAreRefused) {
  // One dispatch of 64 bindings referred to 1000 times: 64000 bindings in a
  // file of a few kilobytes.
  ArtifactSpec spec = addModel();
  spec.buffers.resize(64, {sc::BufferKind_arena, 0, 0, 64});
  spec.arenaSize = 64;
  spec.executables[0].entries[0].bindingCount = 64;
  firstDispatch(spec).bindings.resize(64, 3);
  spec.stepReferences = 1000;
  expectRefused(spec, "holds without sharing tables");

  spec.stepReferences = 1;
  EXPECT_EQ(load(spec).code, TSL_OK) << "the same steps unshared are fine";
}

} // namespace
} // namespace tessel::test

namespace tessel::test {
namespace {

TEST(VerifierTest, CudaBesideCpuIsAccepted) {
  EXPECT_TRUE(loadModule(buildArtifact(cudaBesideCpuModel())));
}

TEST(VerifierTest, CudaParameterOutsideItsBindingIsRefused) {
  ArtifactSpec spec = cudaBesideCpuModel();
  spec.executables[1].entries[0].cudaLaunches[0].arguments[2] = sc::CudaArgument(2, 1 << 20);
  expectRefused(spec, "artifact executable 1 entry 0 ('add') launch 0: a parameter points "
                      "outside its binding or the scratch");
}

TEST(VerifierTest, CudaParameterBeyondTheBindingsIsRefused) {
  ArtifactSpec spec = cudaBesideCpuModel();
  spec.executables[1].entries[0].cudaLaunches[0].arguments[0] = sc::CudaArgument(3, 0);
  expectRefused(spec, "launch 0: a parameter points outside its binding or the scratch");
}

TEST(VerifierTest, CudaScratchParameterWithoutScratchIsRefused) {
  ArtifactSpec spec = cudaBesideCpuModel();
  spec.executables[1].entries[0].cudaLaunches[0].arguments[0] =
      sc::CudaArgument(UINT32_MAX, 256);
  expectRefused(spec, "launch 0: a parameter points outside its binding or the scratch");
}

TEST(VerifierTest, CudaBlockBeyondTheHardwareIsRefused) {
  ArtifactSpec spec = cudaBesideCpuModel();
  spec.executables[1].entries[0].cudaLaunches[0].block = sc::Dim3(64, 32, 1);
  expectRefused(spec, "launch 0: grid 1x1x1 or block of 2048 threads is outside CUDA's limits");
  spec.executables[1].entries[0].cudaLaunches[0].block = sc::Dim3(32, 1, 1);
  spec.executables[1].entries[0].cudaLaunches[0].grid = sc::Dim3(0, 1, 1);
  expectRefused(spec, "is outside CUDA's limits");
}

TEST(VerifierTest, CudaLaunchWithoutAKernelNameIsRefused) {
  ArtifactSpec spec = cudaBesideCpuModel();
  spec.executables[1].entries[0].cudaLaunches[0].function.clear();
  expectRefused(spec, "launch 0: no kernel name, grid or block");
}

TEST(VerifierTest, ReplacementOfAMissingExecutableIsRefused) {
  ArtifactSpec spec = cudaBesideCpuModel();
  spec.executables[1].replaces = 7;
  expectRefused(spec, "artifact executable 1: replaces executable 7, which does not exist");
  spec.executables[1].replaces = 1;
  expectRefused(spec, "which is on the same device or itself a replacement");
}

TEST(VerifierTest, ReplacementWithOtherBindingsIsRefused) {
  ArtifactSpec spec = cudaBesideCpuModel();
  spec.executables[1].entries[0].bindingSizes = std::vector<uint64_t>{4, 4, 4};
  expectRefused(spec, "artifact executable 1 entry 0: binds other buffers than the entry it "
                      "replaces");
}

} // namespace
} // namespace tessel::test
