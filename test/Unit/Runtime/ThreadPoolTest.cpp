//===- ThreadPoolTest.cpp - The CPU stream's persistent workers -----------===//

#include "runtime/src/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include <sched.h>

namespace tessel::runtime {
namespace {

/// Dispatches of random sizes, some right after another (workers still
/// spinning), some after a pause (workers asleep, waking late, when the
/// caller may already have taken every chunk): each must visit every index
/// of its own range exactly once, and only those.
TEST(ThreadPoolTest, EveryIndexOnceAcrossDispatches) {
  std::mt19937 random(7);
  for (unsigned workers : {1u, 2u, 3u}) {
    ThreadPool pool(workers);
    for (int dispatch = 0; dispatch < 400; ++dispatch) {
      uint64_t count = 1 + random() % 300;
      std::vector<std::atomic<int>> visits(count);
      std::atomic<int> outside{0};
      auto body = [&](uint64_t begin, uint64_t end, unsigned thread) {
        if (begin >= end || end > count || thread > workers)
          outside.fetch_add(1);
        for (uint64_t i = begin; i < end && i < count; ++i)
          visits[i].fetch_add(1);
      };
      pool.parallelFor(count, body);
      int wrong = outside.load();
      for (uint64_t i = 0; i < count; ++i)
        wrong += visits[i].load() != 1;
      ASSERT_EQ(wrong, 0) << workers << " workers, dispatch " << dispatch << " of " << count;
      if (random() % 8 == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

/// Results written by workers are visible to the caller when the dispatch
/// returns.
TEST(ThreadPoolTest, WorkersWritesVisibleOnReturn) {
  ThreadPool pool(2);
  std::vector<uint64_t> values(4096);
  for (uint64_t round = 1; round <= 200; ++round) {
    auto body = [&](uint64_t begin, uint64_t end, unsigned) {
      for (uint64_t i = begin; i < end; ++i)
        values[i] = round * i;
    };
    pool.parallelFor(values.size(), body);
    uint64_t mismatches = 0;
    for (uint64_t i = 0; i < values.size(); ++i)
      mismatches += values[i] != round * i;
    ASSERT_EQ(mismatches, 0u) << "round " << round;
  }
}

/// CPUs the calling thread may run on.
int allowedCpuCount() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return -1;
  return CPU_COUNT(&allowed);
}

/// How many CPUs each thread of the pool may run on, by thread (0 for a
/// thread that never took a chunk).
std::vector<int> cpusPerThread(ThreadPool &pool) {
  std::vector<int> cpus(pool.threadCount(), 0);
  auto body = [&](uint64_t, uint64_t, unsigned thread) {
    cpus[thread] = allowedCpuCount();
    // Long enough for a sleeping worker to wake and take a chunk too.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  for (int dispatch = 0; dispatch < 100 && std::count(cpus.begin(), cpus.end(), 0); ++dispatch)
    pool.parallelFor(4 * pool.threadCount(), body);
  return cpus;
}

/// With a CPU left over for the caller, each worker is bound to one CPU and
/// the caller is left as it was; TESSEL_PIN_THREADS=0 leaves workers free.
TEST(ThreadPoolTest, WorkersBoundWhereCpusSuffice) {
  int processCpus = allowedCpuCount();
  if (processCpus < 2)
    GTEST_SKIP() << "needs 2 CPUs, the process may use " << processCpus;
  {
    ThreadPool pool(1);
    std::vector<int> cpus = cpusPerThread(pool);
    EXPECT_EQ(cpus[0], processCpus);
    EXPECT_EQ(cpus[1], 1);
  }
  {
    ThreadPool pool(processCpus); // no CPU left for the caller
    for (int cpus : cpusPerThread(pool))
      EXPECT_EQ(cpus, processCpus);
  }
  setenv("TESSEL_PIN_THREADS", "0", 1);
  {
    ThreadPool pool(1);
    EXPECT_EQ(cpusPerThread(pool)[1], processCpus);
  }
  unsetenv("TESSEL_PIN_THREADS");
}

} // namespace
} // namespace tessel::runtime
