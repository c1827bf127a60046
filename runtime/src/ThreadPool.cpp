//===- ThreadPool.cpp - Persistent workers for CPU dispatches -------------===//

#include "ThreadPool.h"
#include "NearestRounding.h"

#include <algorithm>

namespace tessel::runtime {

namespace {

/// Polls before sleeping: long enough to bridge the gap between two
/// dispatches of one run, short enough not to burn a core between runs.
constexpr int kSpinIterations = 4000;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

/// Chunks per thread: several, so that a thread slowed down (by the OS or a
/// slower core) does not hold the others back at the end of a dispatch.
constexpr uint64_t kChunksPerThread = 4;

} // namespace

ThreadPool::ThreadPool(unsigned workerCount) {
  workers.reserve(workerCount);
  try {
    for (unsigned thread = 1; thread <= workerCount; ++thread)
      workers.emplace_back([this, thread] { workerMain(thread); });
  } catch (...) {
    // The destructor does not run for a half-built pool; the threads that
    // did start must still be joined.
    stopWorkers();
    throw;
  }
}

ThreadPool::~ThreadPool() { stopWorkers(); }

void ThreadPool::stopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  jobPosted.notify_all();
  for (std::thread &worker : workers)
    worker.join();
  workers.clear();
}

void ThreadPool::run(uint64_t count, Task task, void *context) {
  if (count == 0)
    return;
  uint64_t threads = threadCount();
  uint64_t chunkSize =
      std::max<uint64_t>(1, count / (threads * kChunksPerThread));
  uint64_t chunks = (count + chunkSize - 1) / chunkSize;
  auto participants =
      static_cast<unsigned>(std::min<uint64_t>(workers.size(), chunks - 1));
  Job posted{task, context, count, chunkSize, chunks, participants};
  if (participants == 0) {
    task(context, 0, count, 0);
    return;
  }

  nextChunk.store(0, std::memory_order_relaxed);
  pending.store(participants, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex);
    job = posted;
    generation.fetch_add(1, std::memory_order_release);
  }
  jobPosted.notify_all();

  runChunks(posted, 0);

  for (int i = 0; i < kSpinIterations; ++i) {
    if (pending.load(std::memory_order_acquire) == 0)
      return;
    cpuRelax();
  }
  std::unique_lock<std::mutex> lock(mutex);
  jobDone.wait(lock,
               [&] { return pending.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::runChunks(const Job &current, unsigned thread) {
  for (;;) {
    uint64_t chunk = nextChunk.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= current.chunkCount)
      return;
    uint64_t begin = chunk * current.chunkSize;
    uint64_t end = std::min(current.count, begin + current.chunkSize);
    current.task(current.context, begin, end, thread);
  }
}

void ThreadPool::workerMain(unsigned thread) {
  // A worker inherits the mode of the thread that made the pool.
  NearestRounding rounding;
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; i < kSpinIterations &&
                    generation.load(std::memory_order_acquire) == seen;
         ++i)
      cpuRelax();

    Job current;
    {
      std::unique_lock<std::mutex> lock(mutex);
      jobPosted.wait(lock, [&] {
        return stopping || generation.load(std::memory_order_relaxed) != seen;
      });
      if (stopping)
        return;
      seen = generation.load(std::memory_order_relaxed);
      current = job;
    }
    if (thread > current.participants)
      continue;

    runChunks(current, thread);
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Taking the lock orders this notification after the caller's check
      // of `pending`, so the wake-up cannot be lost.
      std::lock_guard<std::mutex> lock(mutex);
      jobDone.notify_one();
    }
  }
}

} // namespace tessel::runtime
