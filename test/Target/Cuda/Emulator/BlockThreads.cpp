//===- BlockThreads.cpp - A CUDA block's threads as cooperative fibers ----===//

#include "BlockThreads.h"

#include <cstring>
#include <xmmintrin.h>

#if !defined(__x86_64__)
#error "tessel-cuda-emulate switches fiber stacks with x86-64 code"
#endif

// Saves the callee-saved registers and the floating-point control words of
// the running fiber on its stack, stores its stack pointer in *saved, and
// continues the fiber whose stack pointer is `next` where it left off (or,
// for a new one, at tesselFiberStart with its entry in r12 and its
// argument in r13).
extern "C" void tesselSwitchStack(void **saved, void *next);
extern "C" void tesselFiberStart();
asm(R"(
  .pushsection .text
  .p2align 4
  .type tesselSwitchStack, @function
tesselSwitchStack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tesselSwitchStack, .-tesselSwitchStack

  .p2align 4
  .type tesselFiberStart, @function
tesselFiberStart:
  movq %r13, %rdi
  callq *%r12
  ud2
  .size tesselFiberStart, .-tesselFiberStart
  .popsection
)");

namespace tessel::cuda::emulator {

namespace {

/// Each fiber's stack. The kernels' thread functions keep their registers
/// (64 accumulators, the staged tiles) in a few kilobytes.
constexpr size_t kStackBytes = 256 * 1024;

/// The block running now, and its running thread.
BlockThreads *runningBlock = nullptr;
int64_t runningThread = -1;

} // namespace

struct BlockThreads::Thread {
  int64_t index = 0;
  std::unique_ptr<char[]> stack{new char[kStackBytes]};
  void *stackPointer = nullptr;
  Stop stop = Stop::Ready;
  int64_t site = -1;
  WarpExecution execute = nullptr;
  void *operands = nullptr;
};

BlockThreads::BlockThreads(int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    threads.push_back(std::make_unique<Thread>());
    threads.back()->index = i;
  }
}

BlockThreads::~BlockThreads() = default;

void BlockThreads::start(void *opaque) {
  auto &thread = *static_cast<Thread *>(opaque);
  (*runningBlock->body)(thread.index);
  runningBlock->finish(thread);
}

void BlockThreads::finish(Thread &thread) {
  thread.stop = Stop::Done;
  void *unused;
  tesselSwitchStack(&unused, schedulerStack);
  __builtin_unreachable();
}

void BlockThreads::resume(Thread &thread) {
  runningThread = thread.index;
  tesselSwitchStack(&schedulerStack, thread.stackPointer);
  runningThread = -1;
}

void BlockThreads::suspend(Thread &thread, Stop stop) {
  thread.stop = stop;
  tesselSwitchStack(&thread.stackPointer, schedulerStack);
}

const char *BlockThreads::describe(Stop stop) {
  switch (stop) {
  case Stop::Ready:
    return "running";
  case Stop::Barrier:
    return "at a barrier";
  case Stop::Warp:
    return "at a warp instruction";
  case Stop::Done:
    return "done";
  }
  return "?";
}

std::string BlockThreads::run(const std::function<void(int64_t)> &blockBody) {
  body = &blockBody;
  error.clear();
  runningBlock = this;
  // A new fiber's stack, as tesselSwitchStack pops it: the control words,
  // r15, r14, r13 (the thread), r12 (start), rbx, rbp, and the return
  // address, tesselFiberStart, above which the stack is 16-byte aligned
  // for its call.
  for (auto &thread : threads) {
    // Each stack's top is staggered by a different number of cache lines:
    // tops a power of two apart would fall in the same sets of the caches,
    // and every switch between fibers would miss.
    size_t stagger = size_t(thread->index) * 17 % 1024 * 64;
    auto top = reinterpret_cast<uintptr_t>(thread->stack.get() + kStackBytes - stagger) &
               ~uintptr_t(15);
    auto *slots = reinterpret_cast<uint64_t *>(top) - 8;
    uint32_t mxcsr = _mm_getcsr();
    uint16_t x87 = 0x037F;
    std::memcpy(&slots[0], &mxcsr, 4);
    std::memcpy(reinterpret_cast<char *>(&slots[0]) + 4, &x87, 2);
    slots[1] = 0, slots[2] = 0;
    slots[3] = reinterpret_cast<uint64_t>(thread.get());
    slots[4] = reinterpret_cast<uint64_t>(&BlockThreads::start);
    slots[5] = 0, slots[6] = 0;
    slots[7] = reinterpret_cast<uint64_t>(&tesselFiberStart);
    thread->stackPointer = slots;
    thread->stop = Stop::Ready;
  }
  int64_t warps = (int64_t(threads.size()) + kWarpSize - 1) / kWarpSize;
  while (true) {
    for (int64_t warp = 0; warp < warps; ++warp)
      if (!runWarp(warp))
        break;
    if (!error.empty())
      break;
    size_t done = 0;
    for (auto &thread : threads)
      done += thread->stop == Stop::Done;
    if (done == threads.size())
      break;
    Thread &first = *threads.front();
    for (auto &thread : threads)
      if (thread->stop != Stop::Barrier || thread->site != first.site) {
        error = "the threads of a block diverged: thread 0 is " +
                std::string(describe(first.stop)) + " (site " + std::to_string(first.site) +
                "), thread " + std::to_string(thread->index) + " " + describe(thread->stop) +
                " (site " + std::to_string(thread->site) + ")";
        break;
      }
    if (!error.empty())
      break;
    for (auto &thread : threads)
      thread->stop = Stop::Ready;
  }
  runningBlock = nullptr;
  body = nullptr;
  return error;
}

bool BlockThreads::runWarp(int64_t warp) {
  int64_t begin = warp * kWarpSize;
  int64_t end = std::min<int64_t>(begin + kWarpSize, threads.size());
  while (true) {
    for (int64_t i = begin; i < end; ++i) {
      if (threads[i]->stop == Stop::Ready)
        resume(*threads[i]);
      if (!error.empty())
        return false;
    }
    Thread &first = *threads[begin];
    if (first.stop != Stop::Warp) {
      for (int64_t i = begin; i < end; ++i)
        if (threads[i]->stop == Stop::Warp) {
          error = "the lanes of warp " + std::to_string(warp) + " diverged: thread " +
                  std::to_string(i) + " waits at a warp instruction, thread " +
                  std::to_string(begin) + " is " + describe(first.stop);
          return false;
        }
      return true;
    }
    std::vector<void *> lanes;
    for (int64_t i = begin; i < end; ++i) {
      Thread &lane = *threads[i];
      if (lane.stop != Stop::Warp || lane.site != first.site) {
        error = "the lanes of warp " + std::to_string(warp) + " diverged: lane 0 waits at site " +
                std::to_string(first.site) + ", lane " + std::to_string(i - begin) + " is " +
                describe(lane.stop) + " (site " + std::to_string(lane.site) + ")";
        return false;
      }
      lanes.push_back(lane.operands);
    }
    error = first.execute(lanes);
    if (!error.empty())
      return false;
    for (int64_t i = begin; i < end; ++i)
      threads[i]->stop = Stop::Ready;
  }
}

void BlockThreads::waitAtBarrier(int64_t site) {
  Thread &thread = *runningBlock->threads[runningThread];
  thread.site = site;
  runningBlock->suspend(thread, Stop::Barrier);
}

void BlockThreads::waitForWarp(int64_t site, WarpExecution execute, void *operands) {
  Thread &thread = *runningBlock->threads[runningThread];
  thread.site = site;
  thread.execute = execute;
  thread.operands = operands;
  runningBlock->suspend(thread, Stop::Warp);
}

void BlockThreads::fail(const std::string &message) {
  BlockThreads &block = *runningBlock;
  block.error = "thread " + std::to_string(runningThread) + ": " + message;
  block.finish(*block.threads[runningThread]);
}

int64_t BlockThreads::currentThread() { return runningThread; }

} // namespace tessel::cuda::emulator
