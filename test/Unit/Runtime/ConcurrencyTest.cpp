//===- ConcurrencyTest.cpp - Threads sharing modules and sessions ---------===//

#include "Fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace tessel::test {
namespace {

using ::testing::HasSubstr;

/// Runs the pipeline model `rounds` times with inputs unique to `seed`,
/// returning how many runs gave the right numbers.
int runPipeline(tsl_session *session, int seed, int rounds) {
  std::vector<float> weights = pipelineWeights();
  int correct = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<float> input(kElements);
    for (int64_t i = 0; i < kElements; ++i)
      input[i] = static_cast<float>(seed * 1000 + round * 10 + i);
    TensorPtr x = floatTensor(input);
    tsl_tensor *inputs[] = {x.get()};
    tsl_tensor *outputs[2] = {};
    if (tsl_session_run(session, inputs, 1, outputs, 2) != nullptr)
      continue;
    TensorPtr y(outputs[0]), z(outputs[1]);
    std::vector<float> sum = floats(outputs[1]), doubled = floats(outputs[0]);
    bool matches = true;
    for (int64_t i = 0; i < kElements; ++i)
      matches &= sum[i] == input[i] + weights[i] &&
                 doubled[i] == 2.0f * (input[i] + weights[i]);
    correct += matches;
  }
  return correct;
}

TEST(ConcurrencyTest, SessionsOfOneModuleRunOnManyThreadsAtOnce) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  ASSERT_TRUE(module);
  constexpr int kThreads = 8;
  constexpr int kRounds = 40;
  std::atomic<int> correct{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      tsl_session *session = nullptr;
      tsl_status status = tsl_session_create(module.get(), nullptr, &session);
      if (status) {
        tsl_status_free(status);
        return;
      }
      correct += runPipeline(session, t, kRounds);
      tsl_session_release(session);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(correct.load(), kThreads * kRounds);
}

TEST(ConcurrencyTest, FourThreadSessionSpreadsWorkgroupsOverItsThreads) {
  constexpr uint64_t kWorkgroups = 64;
  ModulePtr module = loadModule(buildArtifact(probeModel(kWorkgroups)));
  ASSERT_TRUE(module);
  SessionPtr session = createSession(module.get(), 4);
  ASSERT_TRUE(session);

  tsl_tensor *output = nullptr;
  StatusResult status =
      take(tsl_session_run(session.get(), nullptr, 0, &output, 1));
  ASSERT_EQ(status.code, TSL_OK) << status.message;
  TensorPtr threads(output);
  const auto *scratch = static_cast<const uint64_t *>(tsl_tensor_data(output));

  // Every workgroup ran exactly once (the output started zeroed), each on a
  // thread with its own aligned scratch.
  std::set<uint64_t> distinct;
  for (uint64_t g = 0; g < kWorkgroups; ++g) {
    ASSERT_NE(scratch[g], 0u) << "workgroup " << g << " never ran";
    EXPECT_EQ(scratch[g] % 64, 0u);
    distinct.insert(scratch[g]);
  }
  EXPECT_GE(distinct.size(), 2u) << "the workers took no workgroup";
  EXPECT_LE(distinct.size(), 4u);
}

TEST(ConcurrencyTest, FourThreadSessionComputesTheSameNumbers) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  SessionPtr session = createSession(module.get(), 4);
  ASSERT_TRUE(session);
  EXPECT_EQ(runPipeline(session.get(), 3, 20), 20);
}

TEST(ConcurrencyTest, SecondConcurrentRunOfOneSessionIsRefused) {
  // 200 one-millisecond workgroups on one thread: long enough that two
  // runs started together overlap.
  ModulePtr module = loadModule(buildArtifact(probeModel(200)));
  SessionPtr session = createSession(module.get(), 1);
  ASSERT_TRUE(session);

  std::atomic<int> ready{0};
  StatusResult results[2];
  auto runOnce = [&](int index) {
    ++ready;
    while (ready.load() < 2)
      std::this_thread::yield();
    tsl_tensor *output = nullptr;
    results[index] =
        take(tsl_session_run(session.get(), nullptr, 0, &output, 1));
    tsl_tensor_release(output);
  };
  std::thread first(runOnce, 0), second(runOnce, 1);
  first.join();
  second.join();

  int refused = 0;
  for (const StatusResult &result : results) {
    if (result.code == TSL_OK)
      continue;
    ++refused;
    EXPECT_EQ(result.code, TSL_INVALID_ARGUMENT);
    EXPECT_THAT(result.message, HasSubstr("already running"));
  }
  EXPECT_EQ(refused, 1);
}

TEST(ConcurrencyTest, ReleasingASessionJoinsItsIdleWorkers) {
  ModulePtr module = loadModule(buildArtifact(pipelineModel()));
  for (int i = 0; i < 20; ++i) {
    SessionPtr session = createSession(module.get(), 3);
    ASSERT_TRUE(session);
    if (i % 2 == 0) {
      EXPECT_EQ(runPipeline(session.get(), i, 1), 1);
    }
  }
}

} // namespace
} // namespace tessel::test
