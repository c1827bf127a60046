//===- BlockThreads.h - A CUDA block's threads as cooperative fibers -*- C++ -*-===//
//
// The kernels that synchronize their threads (a barrier, or a warp-wide
// instruction such as ldmatrix or mma.sync) cannot run one thread after
// another. Here each thread of a block is a fiber on a stack of its own; a
// thread runs until it reaches a barrier or a warp instruction, and waits
// there until every thread that must meet it has arrived:
//   - at a warp instruction, the 32 lanes of its warp, which then execute it
//     together (WarpInstructions.h);
//   - at a barrier, every thread of the block.
//
// The schedule lets each warp run as far as it can before the next one
// starts. It is one a GPU may pick, and the harshest for a kernel that is
// missing a barrier: a warp that reads shared memory other warps have not
// written yet, or overwrites a tile before the others have read it, reads or
// leaves the wrong values, and the kernel's outputs show it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_BLOCKTHREADS_H
#define TESSEL_TEST_CUDA_EMULATOR_BLOCKTHREADS_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessel::cuda::emulator {

constexpr int64_t kWarpSize = 32;

/// Executes a warp instruction once all its lanes have arrived: `lanes[l]`
/// holds lane l's operands (as that lane passed them to waitForWarp), and
/// `lanes.size()` is the warp's lane count. Returns an error text, or an
/// empty one.
using WarpExecution = std::string (*)(const std::vector<void *> &lanes);

/// The threads of one block at a time, each a fiber.
class BlockThreads {
public:
  explicit BlockThreads(int64_t threads);
  ~BlockThreads();

  /// Runs `body(thread)` for every thread of a block, to the end. Returns an
  /// error text (the threads diverged, or an instruction failed), or an
  /// empty one.
  std::string run(const std::function<void(int64_t thread)> &body);

  /// Called from a thread: waits for every thread of the block at the
  /// barrier `site` (each barrier of the code has its own site).
  static void waitAtBarrier(int64_t site);

  /// Called from a thread: waits for the lanes of its warp at the warp
  /// instruction `site`; the last to arrive has `execute` run for all of
  /// them. `operands` must stay valid until the call returns.
  static void waitForWarp(int64_t site, WarpExecution execute, void *operands);

  /// Called from a thread: stops the block with `message`; the call does
  /// not return.
  [[noreturn]] static void fail(const std::string &message);

  /// The thread that is running.
  static int64_t currentThread();

private:
  struct Thread;
  enum class Stop { Ready, Barrier, Warp, Done };

  static void start(void *thread);
  void resume(Thread &thread);
  [[noreturn]] void finish(Thread &thread);
  void suspend(Thread &thread, Stop stop);
  bool runWarp(int64_t warp);
  static const char *describe(Stop stop);

  std::vector<std::unique_ptr<Thread>> threads;
  const std::function<void(int64_t)> *body = nullptr;
  void *schedulerStack = nullptr;
  std::string error;
};

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_BLOCKTHREADS_H
