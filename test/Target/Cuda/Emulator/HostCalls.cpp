//===- HostCalls.cpp - What the emulated kernels call in the emulator -----===//

#include "HostCalls.h"

#include "BlockThreads.h"
#include "WarpInstructions.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace tessel::cuda::emulator {

namespace {

const std::vector<ThreadedLaunch> *preparedLaunches = nullptr;
std::function<void *(const std::string &)> lookupFunction;
std::string firstError;

/// Calls a thread function with its four ids and `sizeof...(I)` buffers,
/// memrefs being bare pointers.
template <size_t... I>
void callWith(void *function, const int64_t *ids, void *const *buffers, std::index_sequence<I...>) {
  using Function =
      void (*)(int64_t, int64_t, int64_t, int64_t, decltype((void)I, (void *)nullptr)...);
  reinterpret_cast<Function>(function)(ids[0], ids[1], ids[2], ids[3], buffers[I]...);
}

using Caller = void (*)(void *, const int64_t *, void *const *);

template <size_t N> void callThread(void *function, const int64_t *ids, void *const *buffers) {
  callWith(function, ids, buffers, std::make_index_sequence<N>{});
}

template <size_t... N>
constexpr std::array<Caller, sizeof...(N)> makeCallers(std::index_sequence<N...>) {
  return {&callThread<N>...};
}

/// Callers for thread functions of up to 15 buffers.
constexpr auto kCallers = makeCallers(std::make_index_sequence<16>{});

/// Shared memory, 128-byte aligned as the GPU's is at least.
struct SharedBuffer {
  explicit SharedBuffer(uint64_t bytes)
      : bytes(bytes), data(static_cast<uint8_t *>(std::aligned_alloc(128, (bytes + 127) & ~127))) {}
  ~SharedBuffer() { std::free(data); }
  uint64_t bytes;
  uint8_t *data;
};

void tessel_emu_launch(int64_t id, int64_t pointers) {
  if (!firstError.empty())
    return;
  const ThreadedLaunch &launch = (*preparedLaunches)[id];
  void *function = lookupFunction(launch.function);
  size_t count = launch.captured + launch.sharedBytes.size();
  if (!function || count >= kCallers.size()) {
    firstError = launch.function + ": cannot call the thread function";
    return;
  }
  std::vector<void *> buffers(count);
  std::memcpy(buffers.data(), reinterpret_cast<void *>(pointers), launch.captured * sizeof(void *));
  std::vector<std::unique_ptr<SharedBuffer>> shared;
  for (uint64_t bytes : launch.sharedBytes) {
    shared.push_back(std::make_unique<SharedBuffer>(bytes));
    buffers[launch.captured + shared.size() - 1] = shared.back()->data;
  }
  BlockThreads threads(launch.threads);
  for (int64_t z = 0; z < launch.grid[2]; ++z)
    for (int64_t y = 0; y < launch.grid[1]; ++y)
      for (int64_t x = 0; x < launch.grid[0]; ++x) {
        // Shared memory starts as NaNs, so that a read before any write
        // shows in the outputs.
        for (auto &buffer : shared)
          std::memset(buffer->data, 0xFF, buffer->bytes);
        std::string error = threads.run([&](int64_t thread) {
          int64_t ids[4] = {x, y, z, thread};
          kCallers[count](function, ids, buffers.data());
        });
        if (!error.empty()) {
          firstError = launch.function + ", block (" + std::to_string(x) + ", " +
                       std::to_string(y) + ", " + std::to_string(z) + "), " + error;
          return;
        }
      }
}

void tessel_emu_barrier(int64_t site) { BlockThreads::waitAtBarrier(site); }

void tessel_emu_ldmatrix(int64_t site, int64_t tile, int64_t tileBytes, int64_t offset,
                         int64_t transpose, int64_t result) {
  if (offset < 0 || offset + 16 > tileBytes)
    BlockThreads::fail("ldmatrix reads a row at byte " + std::to_string(offset) +
                       " of a shared tile of " + std::to_string(tileBytes) + " bytes");
  auto *row = reinterpret_cast<const uint16_t *>(reinterpret_cast<const uint8_t *>(tile) + offset);
  if (reinterpret_cast<uintptr_t>(row) % 16)
    BlockThreads::fail("ldmatrix reads a row at byte " + std::to_string(offset) +
                       ", which is not 16-byte aligned");
  LoadMatrixOperands operands;
  operands.row = row;
  operands.transpose = transpose != 0;
  BlockThreads::waitForWarp(site, loadMatrices, &operands);
  std::memcpy(reinterpret_cast<void *>(result), operands.result, sizeof operands.result);
}

void tessel_emu_mma(int64_t site, int64_t a, int64_t b, int64_t c, int64_t d, int64_t type) {
  MultiplyOperands operands;
  std::memcpy(operands.a, reinterpret_cast<void *>(a), sizeof operands.a);
  std::memcpy(operands.b, reinterpret_cast<void *>(b), sizeof operands.b);
  std::memcpy(operands.c, reinterpret_cast<void *>(c), sizeof operands.c);
  operands.type = static_cast<HalfType>(type);
  BlockThreads::waitForWarp(site, multiplyAccumulate, &operands);
  std::memcpy(reinterpret_cast<void *>(d), operands.d, sizeof operands.d);
}

void tessel_emu_mma_integers(int64_t site, int64_t a, int64_t b, int64_t c, int64_t d,
                             int64_t aUnsigned, int64_t bUnsigned) {
  IntegerMultiplyOperands operands;
  std::memcpy(operands.a, reinterpret_cast<void *>(a), sizeof operands.a);
  std::memcpy(operands.b, reinterpret_cast<void *>(b), sizeof operands.b);
  std::memcpy(operands.c, reinterpret_cast<void *>(c), sizeof operands.c);
  operands.aUnsigned = aUnsigned != 0;
  operands.bUnsigned = bUnsigned != 0;
  BlockThreads::waitForWarp(site, multiplyAccumulateIntegers, &operands);
  std::memcpy(reinterpret_cast<void *>(d), operands.d, sizeof operands.d);
}

} // namespace

// compiler-rt's rounding of an f32 to bf16, which the JIT calls where the
// host CPU has no instruction for it (AVX2 without AVX512-BF16). Only its
// address is taken, so its signature does not matter here.
extern "C" void __truncsfbf2();

llvm::orc::SymbolMap hostCallSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char *name, auto *function) {
    symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                               llvm::JITSymbolFlags::Exported};
  };
  add("tessel_emu_launch", &tessel_emu_launch);
  add("tessel_emu_barrier", &tessel_emu_barrier);
  add("tessel_emu_ldmatrix", &tessel_emu_ldmatrix);
  add("tessel_emu_mma", &tessel_emu_mma);
  add("tessel_emu_mma_integers", &tessel_emu_mma_integers);
  add("__truncsfbf2", &__truncsfbf2);
  return symbols;
}

void prepareLaunches(const std::vector<ThreadedLaunch> &launches,
                     std::function<void *(const std::string &)> lookup) {
  preparedLaunches = &launches;
  lookupFunction = std::move(lookup);
  firstError.clear();
}

const std::string &launchError() { return firstError; }

} // namespace tessel::cuda::emulator
