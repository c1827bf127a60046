//===- ThreadPool.cpp - Persistent workers for CPU dispatches -------------===//

#include "ThreadPool.h"
#include "NearestRounding.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace tessel::runtime {

namespace {

/// How long a worker polls for the next job before it sleeps: long enough to
/// bridge the gap between two dispatches of one run (and between runs
/// issued back to back), short enough not to burn a core between sporadic
/// runs. Timed rather than counted, because a PAUSE lasts 25 ns on one CPU
/// and 140 cycles on another.
constexpr std::chrono::microseconds kWorkerSpin{300};

/// How long the caller polls for chunks still running on workers before it
/// sleeps.
constexpr std::chrono::microseconds kCallerSpin{500};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

/// Polls `done` for up to `limit`; returns whether it became true.
template <typename Predicate> bool spinUntil(Predicate done, std::chrono::microseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    // Reading the clock costs more than a poll; do it every few polls.
    for (int i = 0; i < 64; ++i) {
      if (done())
        return true;
      cpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return done();
  }
}

/// Chunks per thread: several, so that a thread slowed down (by the OS or a
/// slower core) does not hold the others back at the end of a dispatch.
constexpr uint64_t kChunksPerThread = 4;

constexpr uint64_t kChunkMask = 0xffffffffu;

/// How many workers this process has bound, so that pools created one after
/// another (one session per serving thread) spread their workers over the
/// CPUs rather than stack them on the same ones. A forked child starts
/// again from 0: its workers follow its own caller's CPU.
std::atomic<unsigned> workersBound{0};

#if defined(__linux__)
[[maybe_unused]] const int kResetBoundInChildren =
    pthread_atfork(nullptr, nullptr, [] { workersBound.store(0, std::memory_order_relaxed); });
#endif

/// The CPUs this process may run on, in order; empty where that cannot be
/// known or where the environment asks for workers to float
/// (TESSEL_PIN_THREADS=0).
std::vector<int> cpusForWorkers() {
  std::vector<int> cpus;
#if defined(__linux__)
  const char *pin = std::getenv("TESSEL_PIN_THREADS");
  if (pin && std::strcmp(pin, "0") == 0)
    return cpus;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed))
      cpus.push_back(cpu);
#endif
  return cpus;
}

/// Binds the calling thread to `cpu`; a refusal leaves it floating.
void pinCurrentThread([[maybe_unused]] int cpu) {
#if defined(__linux__)
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpu, &only);
  (void)pthread_setaffinity_np(pthread_self(), sizeof only, &only);
#endif
}

} // namespace

ThreadPool::ThreadPool(unsigned workerCount) {
  // Each worker is bound to a CPU of its own when there are enough, the
  // caller's thread left free. Floating, a worker woken from a long sleep
  // was often placed on the caller's CPU (a virtual machine's idle CPUs
  // can look busy to the scheduler), and the two then shared one core for
  // the milliseconds it took the scheduler to separate them: the first run
  // after a pause took twice as long with two threads as with one.
  // Workers take the CPUs after the one the creating thread runs on, so
  // that processes side by side (a test suite, forked servers), whose
  // callers run on different CPUs, spread their workers too.
  std::vector<int> cpus = cpusForWorkers();
  bool pin = workerCount < cpus.size();
  size_t callerPosition = 0;
#if defined(__linux__)
  if (pin)
    callerPosition =
        static_cast<size_t>(std::find(cpus.begin(), cpus.end(), sched_getcpu()) - cpus.begin()) %
        cpus.size();
#endif
  workers.reserve(workerCount);
  try {
    for (unsigned thread = 1; thread <= workerCount; ++thread) {
      int cpu = pin ? cpus[(callerPosition + 1 + workersBound.fetch_add(1)) % cpus.size()] : -1;
      workers.emplace_back([this, thread, cpu] { workerMain(thread, cpu); });
    }
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
  uint64_t chunkSize = std::max<uint64_t>(1, count / (threadCount() * kChunksPerThread));
  uint64_t chunkCount = (count + chunkSize - 1) / chunkSize;
  if (workers.empty() || chunkCount == 1) {
    task(context, 0, count, 0);
    return;
  }

  // Every chunk of the previous job has finished, and a late worker cannot
  // claim one of this job before it is posted below.
  chunksDone.store(0, std::memory_order_relaxed);
  Job posted{task, context, count, chunkSize, chunkCount, 0};
  {
    std::lock_guard<std::mutex> lock(mutex);
    // Tags wrap after 2^32 jobs; a worker would have to sleep through all
    // of them to mistake one job for another.
    posted.tag = static_cast<uint32_t>(generation.load(std::memory_order_relaxed) + 1);
    claims.store(uint64_t(posted.tag) << 32, std::memory_order_relaxed);
    job = posted;
    generation.fetch_add(1, std::memory_order_release);
  }
  jobPosted.notify_all();

  runChunks(posted, 0);

  auto finished = [&] { return chunksDone.load(std::memory_order_acquire) == posted.chunkCount; };
  if (spinUntil(finished, kCallerSpin))
    return;
  std::unique_lock<std::mutex> lock(mutex);
  jobDone.wait(lock, finished);
}

void ThreadPool::runChunks(const Job &current, unsigned thread) {
  uint64_t claim = claims.load(std::memory_order_relaxed);
  for (;;) {
    if (static_cast<uint32_t>(claim >> 32) != current.tag ||
        (claim & kChunkMask) >= current.chunkCount)
      return;
    if (!claims.compare_exchange_weak(claim, claim + 1, std::memory_order_relaxed))
      continue;
    uint64_t begin = (claim & kChunkMask) * current.chunkSize;
    uint64_t end = std::min(current.count, begin + current.chunkSize);
    current.task(current.context, begin, end, thread);
    bool last = chunksDone.fetch_add(1, std::memory_order_acq_rel) + 1 == current.chunkCount;
    if (last && thread != 0) {
      // Taking the lock orders this notification after the caller's check
      // of `chunksDone`, so the wake-up cannot be lost.
      std::lock_guard<std::mutex> lock(mutex);
      jobDone.notify_one();
    }
    claim = claims.load(std::memory_order_relaxed);
  }
}

void ThreadPool::workerMain(unsigned thread, int cpu) {
  if (cpu >= 0)
    pinCurrentThread(cpu);
  // A worker inherits the mode of the thread that made the pool.
  NearestRounding rounding;
  uint64_t seen = 0;
  for (;;) {
    spinUntil([&] { return generation.load(std::memory_order_acquire) != seen; }, kWorkerSpin);

    Job current;
    {
      std::unique_lock<std::mutex> lock(mutex);
      jobPosted.wait(
          lock, [&] { return stopping || generation.load(std::memory_order_relaxed) != seen; });
      if (stopping)
        return;
      seen = generation.load(std::memory_order_relaxed);
      current = job;
    }
    runChunks(current, thread);
  }
}

} // namespace tessel::runtime
