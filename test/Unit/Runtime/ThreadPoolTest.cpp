//===- ThreadPoolTest.cpp - The CPU stream's persistent workers -----------===//

#include "runtime/src/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

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

} // namespace
} // namespace tessel::runtime
