//===- ThreadPool.h - Persistent workers for CPU dispatches -----*- C++ -*-===//
//
// A session's CPU stream owns one pool. Its workers are started once, when
// the session is created, and then sleep between dispatches: starting
// threads per run would cost more than many kernels take.
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
    /// Workers 1..participants take part; the others sit this job out.
    unsigned participants = 0;
  };

  void run(uint64_t count, Task task, void *context);
  void stopWorkers();
  void workerMain(unsigned thread);
  /// Takes chunks off `nextChunk` until none is left.
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
  std::atomic<uint64_t> nextChunk{0};
  /// Participating workers that have not finished the current job.
  std::atomic<unsigned> pending{0};
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_THREADPOOL_H
