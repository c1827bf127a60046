//===- SessionTest.cpp - Running modules and checking their arguments -----===//

#include "Fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;

std::vector<float> ramp(float start, float step) {
  std::vector<float> values(kElements);
  for (int64_t i = 0; i < kElements; ++i)
    values[i] = start + step * static_cast<float>(i);
  return values;
}

/// Runs of the add model: z = x + y.
class AddModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    module = loadModule(buildArtifact(addModel()));
    ASSERT_TRUE(module);
    session = createSession(module.get());
    ASSERT_TRUE(session);
    x = floatTensor(ramp(0, 1));
    y = floatTensor(ramp(100, -2));
  }

  StatusResult run(std::vector<tsl_tensor *> inputs, tsl_tensor **outputs) {
    return take(tsl_session_run(session.get(), inputs.data(), inputs.size(),
                                outputs, 1));
  }

  std::vector<float> expected() const {
    std::vector<float> sum(kElements);
    for (int64_t i = 0; i < kElements; ++i)
      sum[i] = (0.0f + i) + (100.0f - 2.0f * i);
    return sum;
  }

  ModulePtr module;
  SessionPtr session;
  TensorPtr x, y;
};

/// Runs checkModel with `count` as its input; on success `same` holds the
/// output.
StatusResult runCheckModel(int64_t count, int64_t &same) {
  ModulePtr module = loadModule(buildArtifact(checkModel()));
  SessionPtr session = createSession(module.get());
  int64_t shape[] = {1};
  tsl_tensor *input = nullptr;
  EXPECT_EQ(take(tsl_tensor_allocate(TSL_I64, shape, 1, &input)).code, TSL_OK);
  TensorPtr owned(input);
  std::memcpy(tsl_tensor_data(input), &count, sizeof(count));
  tsl_tensor *output = nullptr;
  StatusResult status = take(tsl_session_run(session.get(), &input, 1, &output, 1));
  if (output) {
    TensorPtr result(output);
    std::memcpy(&same, tsl_tensor_data(output), sizeof(same));
  }
  return status;
}

TEST(CheckStepTest, ZeroCountLetsTheRunFinish) {
  int64_t same = -1;
  StatusResult status = runCheckModel(0, same);
  EXPECT_EQ(status.code, TSL_OK) << status.message;
  EXPECT_EQ(same, 0);
}

TEST(CheckStepTest, NonZeroCountStopsTheRunNamingTheNode) {
  int64_t same = -1;
  StatusResult status = runCheckModel(3, same);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "run stopped at schedule step 0: node 'gather_node': Gather indices "
                            "outside [-5, 5) (3 of them)");
  EXPECT_EQ(same, -1) << "a failed run fills no output slot";
}

TEST_F(AddModelTest, NullOutputSlotReceivesANewTensor) {
  tsl_tensor *output = nullptr;
  StatusResult status = run({x.get(), y.get()}, &output);
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  TensorPtr z(output);
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(tsl_tensor_dtype(output), TSL_F32);
  ASSERT_EQ(tsl_tensor_rank(output), 1u);
  EXPECT_EQ(tsl_tensor_shape(output)[0], kElements);
  EXPECT_EQ(floats(output), expected());
}

TEST_F(AddModelTest, ProvidedOutputIsWrittenInPlace) {
  TensorPtr z = floatTensor(std::vector<float>(kElements, -7.0f));
  tsl_tensor *output = z.get();
  void *data = tsl_tensor_data(output);
  ASSERT_EQ(run({x.get(), y.get()}, &output).code, TSL_OK);
  EXPECT_EQ(output, z.get());
  EXPECT_EQ(tsl_tensor_data(output), data);
  EXPECT_EQ(floats(output), expected());
}

TEST_F(AddModelTest, RepeatedRunsFollowTheirInputs) {
  for (int round = 0; round < 5; ++round) {
    TensorPtr a = floatTensor(ramp(static_cast<float>(round), 0.25f));
    tsl_tensor *output = nullptr;
    ASSERT_EQ(run({a.get(), a.get()}, &output).code, TSL_OK);
    TensorPtr z(output);
    EXPECT_EQ(floats(output), ramp(2.0f * round, 0.5f));
  }
}

TEST_F(AddModelTest, UnalignedWrappedInputIsStagedThroughAlignedMemory) {
  // Kernels.c poisons its output with NaN when handed an unaligned buffer,
  // so correct numbers show the runtime staged the input.
  alignas(64) float storage[kElements + 16];
  float *unaligned = storage + 1;
  std::vector<float> values = ramp(0, 1);
  std::memcpy(unaligned, values.data(), sizeof(float) * kElements);
  int64_t shape[] = {kElements};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_wrap(TSL_F32, shape, 1, unaligned,
                                 sizeof(float) * kElements, &raw))
                .code,
            TSL_OK);
  TensorPtr wrapped(raw);

  tsl_tensor *output = nullptr;
  StatusResult status = run({wrapped.get(), y.get()}, &output);
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  TensorPtr z(output);
  EXPECT_EQ(floats(output), expected());
  EXPECT_EQ(std::memcmp(unaligned, values.data(), sizeof(float) * kElements), 0)
      << "the caller's input must not change";
}

TEST_F(AddModelTest, UnalignedWrappedOutputIsCopiedBack) {
  alignas(64) float storage[kElements + 16] = {};
  float *unaligned = storage + 3;
  int64_t shape[] = {kElements};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_wrap(TSL_F32, shape, 1, unaligned,
                                 sizeof(float) * kElements, &raw))
                .code,
            TSL_OK);
  TensorPtr wrapped(raw);

  tsl_tensor *output = wrapped.get();
  ASSERT_EQ(run({x.get(), y.get()}, &output).code, TSL_OK);
  EXPECT_EQ(std::vector<float>(unaligned, unaligned + kElements), expected());
  EXPECT_EQ(storage[2], 0.0f) << "bytes before the output must not change";
  EXPECT_EQ(storage[3 + kElements], 0.0f)
      << "bytes after the output must not change";
}

TEST_F(AddModelTest, WrongInputDTypeIsRefused) {
  int64_t shape[] = {kElements};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_I32, shape, 1, &raw)).code, TSL_OK);
  TensorPtr integers(raw);
  tsl_tensor *output = nullptr;
  StatusResult status = run({x.get(), integers.get()}, &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "input 1 ('y'): expected dtype f32 but got i32");
  EXPECT_EQ(output, nullptr);
}

TEST_F(AddModelTest, WrongInputRankIsRefused) {
  int64_t shape[] = {4, 4};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_F32, shape, 2, &raw)).code, TSL_OK);
  TensorPtr matrix(raw);
  tsl_tensor *output = nullptr;
  StatusResult status = run({matrix.get(), y.get()}, &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "input 0 ('x'): expected rank 1 (shape [16]) but "
                            "got rank 2 (shape [4, 4])");
}

TEST_F(AddModelTest, WrongInputShapeIsRefused) {
  int64_t shape[] = {17};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_F32, shape, 1, &raw)).code, TSL_OK);
  TensorPtr longer(raw);
  tsl_tensor *output = nullptr;
  StatusResult status = run({longer.get(), y.get()}, &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "input 0 ('x'): expected shape [16] but got [17]");
}

TEST_F(AddModelTest, WrongInputCountIsRefused) {
  tsl_tensor *output = nullptr;
  StatusResult status = run({x.get()}, &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "expected 2 inputs but got 1");
}

TEST_F(AddModelTest, NullInputIsRefused) {
  tsl_tensor *output = nullptr;
  StatusResult status = run({x.get(), nullptr}, &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "input 1 ('y') is NULL");
}

TEST_F(AddModelTest, WrongOutputCountIsRefused) {
  tsl_tensor *inputs[] = {x.get(), y.get()};
  tsl_tensor *outputs[2] = {};
  StatusResult status =
      take(tsl_session_run(session.get(), inputs, 2, outputs, 2));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("expected 1 output slots but got 2"));
  EXPECT_EQ(outputs[0], nullptr);
}

TEST_F(AddModelTest, MismatchedProvidedOutputIsRefused) {
  int64_t shape[] = {8};
  tsl_tensor *raw = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_F32, shape, 1, &raw)).code, TSL_OK);
  TensorPtr shorter(raw);
  tsl_tensor *output = shorter.get();
  StatusResult status = run({x.get(), y.get()}, &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "output 0 ('z'): expected shape [16] but got [8]");
}

TEST_F(AddModelTest, OutputSharingMemoryWithAnInputIsRefused) {
  tsl_tensor *output = x.get();
  StatusResult status = run({x.get(), y.get()}, &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_EQ(status.message, "output 0 ('z') shares memory with input 0 ('x')");
}

TEST_F(AddModelTest, NullSessionIsRefused) {
  tsl_tensor *inputs[] = {x.get(), y.get()};
  tsl_tensor *output = nullptr;
  EXPECT_EQ(take(tsl_session_run(nullptr, inputs, 2, &output, 1)).code,
            TSL_INVALID_ARGUMENT);
}

/// The add model compiled for one sample of x and z ([1, 16], batched);
/// y is shared by every sample.
ArtifactSpec batchedAddModel() {
  ArtifactSpec spec = addModel();
  for (TensorSpec *tensor : {&spec.inputs[0], &spec.outputs[0]}) {
    tensor->shape = {1, kElements};
    tensor->batched = true;
  }
  return spec;
}

TensorPtr samples(int64_t batch, float start) {
  std::vector<float> values(static_cast<size_t>(batch * kElements));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = start + static_cast<float>(i);
  int64_t shape[] = {batch, kElements};
  tsl_tensor *tensor = nullptr;
  EXPECT_EQ(take(tsl_tensor_allocate(TSL_F32, shape, 2, &tensor)).code, TSL_OK);
  if (tensor && !values.empty())
    std::memcpy(tsl_tensor_data(tensor), values.data(), values.size() * sizeof(float));
  return TensorPtr(tensor);
}

/// Runs a session of one of the add models (batched or varying) on x and
/// y; `output` as tsl_session_run takes it.
StatusResult runAdd(tsl_session *session, const TensorPtr &x, const TensorPtr &y,
                    tsl_tensor **output) {
  tsl_tensor *inputs[] = {x.get(), y.get()};
  return take(tsl_session_run(session, inputs, 2, output, 1));
}

TEST(BatchedModelTest, SignatureReportsTheBatchAsDynamic) {
  ModulePtr module = loadModule(buildArtifact(batchedAddModel()));
  ASSERT_TRUE(module);
  tsl_tensor_info x, y, z;
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 0, &x)).code, TSL_OK);
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 1, &y)).code, TSL_OK);
  ASSERT_EQ(take(tsl_module_output_info(module.get(), 0, &z)).code, TSL_OK);
  ASSERT_EQ(x.rank, 2u);
  EXPECT_EQ(x.shape[0], -1);
  EXPECT_EQ(x.shape[1], kElements);
  EXPECT_EQ(z.shape[0], -1);
  ASSERT_EQ(y.rank, 1u);
  EXPECT_EQ(y.shape[0], kElements);
}

TEST(BatchedModelTest, EachSampleIsComputedWithTheSharedInput) {
  ModulePtr module = loadModule(buildArtifact(batchedAddModel()));
  SessionPtr session = createSession(module.get());
  for (int64_t batch : {1, 3, 5}) {
    tsl_tensor *output = nullptr;
    StatusResult status =
        runAdd(session.get(), samples(batch, 0), floatTensor(ramp(100, -2)), &output);
    ASSERT_EQ(status.code, TSL_OK) << status.message;
    TensorPtr z(output);
    ASSERT_EQ(tsl_tensor_rank(output), 2u);
    EXPECT_EQ(tsl_tensor_shape(output)[0], batch);
    std::vector<float> sums = floats(output);
    for (int64_t sample = 0; sample < batch; ++sample)
      for (int64_t i = 0; i < kElements; ++i)
        EXPECT_EQ(sums[sample * kElements + i],
                  static_cast<float>(sample * kElements + i) + (100.0f - 2.0f * i));
  }
}

TEST(BatchedModelTest, NoSamplesGiveAnEmptyOutput) {
  ModulePtr module = loadModule(buildArtifact(batchedAddModel()));
  SessionPtr session = createSession(module.get());
  tsl_tensor *output = nullptr;
  StatusResult status = runAdd(session.get(), samples(0, 0), floatTensor(ramp(100, -2)), &output);
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  TensorPtr z(output);
  EXPECT_EQ(tsl_tensor_shape(output)[0], 0);
}

TEST(BatchedModelTest, OutputHoldingAnotherBatchIsRefused) {
  ModulePtr module = loadModule(buildArtifact(batchedAddModel()));
  SessionPtr session = createSession(module.get());
  TensorPtr z = samples(2, 0);
  tsl_tensor *output = z.get();
  StatusResult status = runAdd(session.get(), samples(3, 0), floatTensor(ramp(100, -2)), &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("output 0 ('z') holds 2 samples but input 'x' holds 3"));
}

TEST(BatchedModelTest, SharedInputMustKeepItsShape) {
  ModulePtr module = loadModule(buildArtifact(batchedAddModel()));
  SessionPtr session = createSession(module.get());
  tsl_tensor *output = nullptr;
  StatusResult status = runAdd(session.get(), samples(3, 0), samples(3, 0), &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("input 1 ('y'): expected rank 1"));
}

TEST(VaryingModelTest, SignatureHidesTheLengthAndReportsTheBound) {
  ModulePtr module = loadModule(buildArtifact(varyingAddModel()));
  ASSERT_TRUE(module);
  EXPECT_EQ(tsl_module_input_count(module.get()), 2u);
  EXPECT_EQ(tsl_module_max_length(module.get()), kElements);
  tsl_tensor_info x, y, z;
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 0, &x)).code, TSL_OK);
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 1, &y)).code, TSL_OK);
  ASSERT_EQ(take(tsl_module_output_info(module.get(), 0, &z)).code, TSL_OK);
  EXPECT_EQ(x.shape[0], -1);
  EXPECT_EQ(y.shape[0], kElements);
  EXPECT_EQ(z.shape[0], -1);
  EXPECT_EQ(take(tsl_module_input_info(module.get(), 2, &x)).code, TSL_INVALID_ARGUMENT);
}

TEST(VaryingModelTest, RunsAtEachLengthAndTrimsTheOutput) {
  ModulePtr module = loadModule(buildArtifact(varyingAddModel()));
  SessionPtr session = createSession(module.get());
  for (int64_t length : {16, 5, 1, 0}) {
    std::vector<float> values = ramp(1, 0.5f);
    values.resize(static_cast<size_t>(length));
    tsl_tensor *output = nullptr;
    StatusResult status =
        runAdd(session.get(), floatTensor(values), floatTensor(ramp(100, -2)), &output);
    ASSERT_EQ(status.code, TSL_OK) << status.message;
    TensorPtr z(output);
    ASSERT_EQ(tsl_tensor_shape(output)[0], length);
    std::vector<float> sums = floats(output);
    for (int64_t i = 0; i < length; ++i)
      EXPECT_EQ(sums[i], values[i] + (100.0f - 2.0f * i));
  }
}

TEST(VaryingModelTest, LengthBeyondTheBoundIsRefused) {
  ModulePtr module = loadModule(buildArtifact(varyingAddModel()));
  SessionPtr session = createSession(module.get());
  tsl_tensor *output = nullptr;
  StatusResult status = runAdd(session.get(), floatTensor(std::vector<float>(17, 1.0f)),
                               floatTensor(ramp(100, -2)), &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("input 0 ('x'): dimension 0 is 17, beyond the bound 16"));
}

TEST(VaryingModelTest, OutputOfAnotherLengthIsRefused) {
  ModulePtr module = loadModule(buildArtifact(varyingAddModel()));
  SessionPtr session = createSession(module.get());
  TensorPtr z = floatTensor(std::vector<float>(3, 0.0f));
  tsl_tensor *output = z.get();
  StatusResult status = runAdd(session.get(), floatTensor(std::vector<float>(4, 1.0f)),
                               floatTensor(ramp(100, -2)), &output);
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("output 0 ('z'): dimension 0 is 3 but input 'x' sets "
                                        "the varying length to 4"));
}

/// The varying add model whose workgroups (4 positions each) run in rows
/// along the length, and whose z does not vary: it shows which positions a
/// run computed (a compiled artifact marks rows only where nothing reads
/// the positions past the length).
ArtifactSpec rowsAlongLengthModel() {
  ArtifactSpec spec = varyingAddModel();
  spec.outputs[0].varyingAxis = -1;
  EntrySpec &entry = spec.executables[0].entries[0];
  entry.lengthRowPositions = kElements / entry.workgroupCount;
  entry.lengthRowWorkgroups = 1;
  return spec;
}

TEST(VaryingModelTest, RowsPastTheLengthAreLeftOut) {
  ModulePtr module = loadModule(buildArtifact(rowsAlongLengthModel()));
  SessionPtr session = createSession(module.get());
  for (int64_t length : {16, 5, 4, 0}) {
    std::vector<float> values(static_cast<size_t>(length), 1.0f);
    TensorPtr z = floatTensor(std::vector<float>(kElements, -1.0f));
    tsl_tensor *output = z.get();
    StatusResult status =
        runAdd(session.get(), floatTensor(values), floatTensor(ramp(100, -2)), &output);
    ASSERT_EQ(status.code, TSL_OK) << status.message;
    // Rows of 4 positions up to the first that reaches the length.
    int64_t computed = (length + 3) / 4 * 4;
    std::vector<float> sums = floats(output);
    for (int64_t i = 0; i < kElements; ++i) {
      float expected = i >= computed ? -1.0f : (i < length ? 1.0f : 0.0f) + (100.0f - 2.0f * i);
      EXPECT_EQ(sums[i], expected) << "length " << length << ", position " << i;
    }
  }
}

/// The batched add model whose x and z also vary along dimension 1 up to
/// kElements (--dynamic-batch with --max-shape).
ArtifactSpec batchedVaryingAddModel() {
  ArtifactSpec spec = batchedAddModel();
  varyAlong(spec, 1);
  return spec;
}

TEST(BatchedVaryingModelTest, SignatureReportsTheBatchAndTheLength) {
  ModulePtr module = loadModule(buildArtifact(batchedVaryingAddModel()));
  ASSERT_TRUE(module);
  tsl_tensor_info x;
  ASSERT_EQ(take(tsl_module_input_info(module.get(), 0, &x)).code, TSL_OK);
  EXPECT_EQ(x.shape[0], -1);
  EXPECT_EQ(x.shape[1], -1);
  EXPECT_EQ(tsl_module_max_length(module.get()), kElements);
  EXPECT_EQ(tsl_module_input_varying_axis(module.get(), 0), 1);
  EXPECT_EQ(tsl_module_input_varying_axis(module.get(), 1), -1);
  EXPECT_EQ(tsl_module_input_varying_axis(module.get(), 2), -1);
  EXPECT_EQ(tsl_module_output_varying_axis(module.get(), 0), 1);
  EXPECT_EQ(tsl_module_output_varying_axis(module.get(), 1), -1);
}

TEST(BatchedVaryingModelTest, EachSampleIsPaddedAndTrimmed) {
  ModulePtr module = loadModule(buildArtifact(batchedVaryingAddModel()));
  SessionPtr session = createSession(module.get());
  const int64_t batch = 3, length = 5;
  std::vector<float> values(batch * length);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i);
  int64_t shape[] = {batch, length};
  tsl_tensor *x = nullptr;
  ASSERT_EQ(take(tsl_tensor_allocate(TSL_F32, shape, 2, &x)).code, TSL_OK);
  TensorPtr xs(x);
  std::memcpy(tsl_tensor_data(x), values.data(), values.size() * sizeof(float));
  tsl_tensor *output = nullptr;
  StatusResult status = runAdd(session.get(), xs, floatTensor(ramp(100, -2)), &output);
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  TensorPtr z(output);
  ASSERT_EQ(tsl_tensor_rank(output), 2u);
  EXPECT_EQ(tsl_tensor_shape(output)[0], batch);
  EXPECT_EQ(tsl_tensor_shape(output)[1], length);
  std::vector<float> sums = floats(output);
  for (int64_t sample = 0; sample < batch; ++sample)
    for (int64_t i = 0; i < length; ++i)
      EXPECT_EQ(sums[sample * length + i], values[sample * length + i] + (100.0f - 2.0f * i));
}

TEST(SessionTest, PipelineUsesConstantsArenaScratchAndCopies) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  ASSERT_TRUE(module);
  SessionPtr session = createSession(module.get());
  std::vector<float> input = ramp(1, 0.75f);
  TensorPtr x = floatTensor(input);
  tsl_tensor *inputs[] = {x.get()};
  tsl_tensor *outputs[2] = {};
  StatusResult status =
      take(tsl_session_run(session.get(), inputs, 1, outputs, 2));
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  TensorPtr y(outputs[0]), z(outputs[1]);

  std::vector<float> weights = pipelineWeights();
  std::vector<float> sum(kElements), doubled(kElements);
  for (int64_t i = 0; i < kElements; ++i) {
    sum[i] = input[i] + weights[i];
    doubled[i] = 2.0f * sum[i];
  }
  EXPECT_EQ(floats(outputs[0]), doubled);
  EXPECT_EQ(floats(outputs[1]), sum);
}

/// Runs the pipeline model as `spec` describes it once and returns the
/// status; the artifact must load.
StatusResult runPipeline(const ArtifactSpec &spec) {
  ModulePtr module = loadModule(buildArtifact(spec));
  EXPECT_TRUE(module);
  if (!module)
    return {TSL_INTERNAL, "the artifact did not load"};
  SessionPtr session = createSession(module.get());
  TensorPtr x = floatTensor(ramp(0, 1));
  tsl_tensor *inputs[] = {x.get()};
  tsl_tensor *outputs[2] = {};
  StatusResult status = take(tsl_session_run(session.get(), inputs, 1, outputs, 2));
  TensorPtr y(outputs[0]), z(outputs[1]);
  return status;
}

// Tables that agree with each other but not with the code: the entry,
// which knows what it was compiled for, refuses the call before it runs.
TEST(SessionTest, EntryRefusesLessScratchThanItWasCompiledFor) {
  ArtifactSpec spec = pipelineModel();
  spec.executables[0].entries[1].scratchBytes = 8;
  StatusResult status = runPipeline(spec);
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("schedule step 1: entry 'scale2_scratch_entry' refused "
                                        "its call"));
}

TEST(SessionTest, EntryRefusesMoreWorkgroupsThanItWasCompiledFor) {
  ArtifactSpec spec = pipelineModel();
  spec.executables[0].entries[0].workgroupCount = 5;
  StatusResult status = runPipeline(spec);
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("schedule step 0: entry 'add_f32_entry' refused its call"));
}

TEST(SessionTest, EntryRefusesBuffersOfOtherSizesThanItWasCompiledFor) {
  ArtifactSpec spec = pipelineModel();
  // The arena intermediate and every entry's record of it, shrunk together
  // (without the copy step, which would need equal sizes).
  spec.buffers[2].size = 32;
  spec.steps.pop_back();
  StatusResult status = runPipeline(spec);
  EXPECT_EQ(status.code, TSL_INVALID_ARTIFACT);
  EXPECT_THAT(status.message, HasSubstr("refused its call"));
}

TEST(SessionTest, FailedRunFillsNoOutputSlot) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  SessionPtr session = createSession(module.get());
  TensorPtr x = floatTensor(ramp(0, 1));
  TensorPtr wrongShape = floatTensor(std::vector<float>(3));
  tsl_tensor *inputs[] = {x.get()};
  tsl_tensor *outputs[2] = {nullptr, wrongShape.get()};
  StatusResult status =
      take(tsl_session_run(session.get(), inputs, 1, outputs, 2));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("output 1 ('z')"));
  EXPECT_EQ(outputs[0], nullptr);
}

TEST(SessionTest, OptionsInitGivesTheDefaults) {
  tsl_session_options options;
  options.thread_count = 7;
  options.device = "npu";
  options.profile = 1;
  tsl_session_options_init(&options);
  EXPECT_EQ(options.thread_count, 0u);
  EXPECT_EQ(options.device, nullptr);
  EXPECT_EQ(options.profile, 0u);
}

TEST(SessionTest, ProfileTimesEveryStepOfEveryRun) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  tsl_session_options options;
  tsl_session_options_init(&options);
  options.thread_count = 1;
  options.profile = 1;
  tsl_session *raw = nullptr;
  ASSERT_EQ(take(tsl_session_create(module.get(), &options, &raw)).code, TSL_OK);
  SessionPtr session(raw);
  TensorPtr x = floatTensor(ramp(0, 1));
  tsl_tensor *inputs[] = {x.get()};
  for (int run = 0; run < 3; ++run) {
    tsl_tensor *outputs[2] = {};
    ASSERT_EQ(take(tsl_session_run(session.get(), inputs, 1, outputs, 2)).code,
              TSL_OK);
    TensorPtr y(outputs[0]), z(outputs[1]);
  }
  const tsl_step_timing *timings = nullptr;
  size_t count = 0;
  ASSERT_EQ(take(tsl_session_get_step_timings(session.get(), &timings, &count)).code,
            TSL_OK);
  ASSERT_EQ(count, 3u);
  EXPECT_STREQ(timings[0].name, "add_f32_entry");
  EXPECT_STREQ(timings[1].name, "scale2_scratch_entry");
  EXPECT_STREQ(timings[2].name, "copy");
  for (size_t i = 0; i < count; ++i)
    EXPECT_EQ(timings[i].runs, 3u) << timings[i].name;
}

TEST(SessionTest, SessionWithoutProfileHasNoTimings) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  SessionPtr session = createSession(module.get());
  const tsl_step_timing *timings = nullptr;
  size_t count = 7;
  ASSERT_EQ(take(tsl_session_get_step_timings(session.get(), &timings, &count)).code,
            TSL_OK);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(take(tsl_session_get_step_timings(nullptr, &timings, &count)).code,
            TSL_INVALID_ARGUMENT);
}

TEST(SessionTest, ZeroThreadCountUsesEveryCoreAndRuns) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  tsl_session *raw = nullptr;
  ASSERT_EQ(take(tsl_session_create(module.get(), nullptr, &raw)).code, TSL_OK);
  SessionPtr session(raw);
  TensorPtr x = floatTensor(std::vector<float>(kElements, 0.0f));
  tsl_tensor *inputs[] = {x.get()};
  tsl_tensor *outputs[2] = {};
  ASSERT_EQ(take(tsl_session_run(raw, inputs, 1, outputs, 2)).code, TSL_OK);
  TensorPtr y(outputs[0]), z(outputs[1]);
  EXPECT_EQ(floats(outputs[1]), pipelineWeights());
}

TEST(SessionTest, ThreadCountAboveTheLimitIsRefused) {
  ModulePtr module = loadModule(buildArtifact(addModel()));
  tsl_session_options options;
  tsl_session_options_init(&options);
  options.thread_count = 1u << 20;
  tsl_session *raw = nullptr;
  StatusResult status = take(tsl_session_create(module.get(), &options, &raw));
  EXPECT_EQ(status.code, TSL_INVALID_ARGUMENT);
  EXPECT_THAT(status.message, HasSubstr("thread_count 1048576"));
  EXPECT_EQ(raw, nullptr);
}

} // namespace
} // namespace tessel::test
