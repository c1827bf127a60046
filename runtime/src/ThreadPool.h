//===- ThreadPool.h - Persistent workers for CPU dispatches -----*- C++ -*-===//
//
// A session's CPU stream owns one pool. Its workers are started once, when
// the session is created, and then sleep between dispatches: starting
// threads per run would cost more than many kernels take. Where the
// process may use more CPUs than the pool has workers, each worker is bound
// to one (TESSEL_PIN_THREADS=0 leaves them floating).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_THREADPOOL_H
#define TESSEL_RUNTIME_SRC_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel::runtime {

class ThreadPool {
public:
  /// Starts `workerCount` threads; throws std::system_error when the system
  /// refuses one.
  explicit ThreadPool(unsigned workerCount);
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;
  /// Joins the workers.
  ~ThreadPool();

  /// Workers plus the thread that calls parallelFor.
  unsigned threadCount() const {
    return static_cast<unsigned>(workers.size()) + 1;
  }

  /// Calls body(begin, end, thread) over disjoint ranges covering
  /// [0, count), on the calling thread (thread 0) and the workers (1..), and
  /// returns when all have finished. `body` must not throw. One call at a
  /// time.
  template <typename Body> void parallelFor(uint64_t count, Body &body) {
    run(count, &callBody<Body>, &body);
  }

private:
  using Task = void (*)(void *context, uint64_t begin, uint64_t end,
                        unsigned thread);

  template <typename Body>
  static void callBody(void *body, uint64_t begin, uint64_t end,
                       unsigned thread) {
    (*static_cast<Body *>(body))(begin, end, thread);
  }

  /// What a worker needs of the current job, copied under `mutex`.
  struct Job {
    Task task = nullptr;
    void *context = nullptr;
    uint64_t count = 0;
    uint64_t chunkSize = 0;
    uint64_t chunkCount = 0;
    /// The job's generation, as `claims` tags it.
    uint32_t tag = 0;
  };

  void run(uint64_t count, Task task, void *context);
  void stopWorkers();
  /// The body of worker `thread`, bound to `cpu` unless it is negative.
  void workerMain(unsigned thread, int cpu);
  /// Claims and runs chunks of `job` until none is left, or until `claims`
  /// belongs to a later job (a worker that woke late).
  void runChunks(const Job &job, unsigned thread);

  std::vector<std::thread> workers;

  std::mutex mutex;
  std::condition_variable jobPosted;
  std::condition_variable jobDone;
  Job job;
  bool stopping = false;
  /// Bumped (under `mutex`) for every job; workers spin on it briefly
  /// before they sleep, so back-to-back dispatches do not pay a wake-up.
  std::atomic<uint64_t> generation{0};
  /// The current job's tag (high 32 bits) and next unclaimed chunk (low 32
  /// bits). A chunk is claimed only with the tag of the job the claimer
  /// read, so a worker that wakes after its job ended cannot take a chunk
  /// of the next one.
  std::atomic<uint64_t> claims{0};
  /// Chunks of the current job that have finished. The caller waits for
  /// this alone, not for every worker: a worker whose core was slow to wake
  /// and that finds every chunk taken is not waited for.
  std::atomic<uint64_t> chunksDone{0};
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_THREADPOOL_H
