//===- MachinePeaks.cpp - The roofline of the machine tessel-run runs on --===//
//
// Each compute ceiling is a loop of independent accumulator chains, enough
// of them to cover the instruction's latency on every pipe, so that only
// throughput bounds it (the loops of scripts/bench/fma_peak.c and
// dot_peak.c, for the instruction sets this CPU has, chosen at run time).
// The memory ceilings read buffers that fit half of L2 and of L3, and one
// eight times the size of the largest caches, a share per thread.
//
//===----------------------------------------------------------------------===//

#include "tools/tessel-run/MachinePeaks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace tessel::run {

namespace {

using Clock = std::chrono::steady_clock;

/// Each measurement grows its loop until one run takes this long, then
/// keeps the best of kRepeats runs: on a shared machine the best run is the
/// one least disturbed.
constexpr double kRunSeconds = 0.02;
constexpr int kRepeats = 5;

/// Runs `work(thread)` on `threads` threads that start together; the
/// seconds from the start to the end of the slowest.
double runTogether(unsigned threads, const std::function<void(unsigned)> &work) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> start{false};
  std::vector<double> seconds(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!start.load(std::memory_order_acquire))
        ;
      auto begin = Clock::now();
      work(t);
      seconds[t] = std::chrono::duration<double>(Clock::now() - begin).count();
    });
  while (ready.load() < threads)
    ;
  start.store(true, std::memory_order_release);
  for (std::thread &thread : pool)
    thread.join();
  return *std::max_element(seconds.begin(), seconds.end());
}

/// Keeps the compiler from folding what is computed.
std::atomic<int64_t> sink{0};

/// The best rate, in operations per second on all threads, of `loop(n)`,
/// which does `operationsPerIteration` operations per iteration on one
/// thread.
double bestRate(unsigned threads, double operationsPerIteration,
                int64_t (*loop)(int64_t iterations)) {
  int64_t iterations = 1 << 14;
  auto timed = [&] {
    return runTogether(threads, [&](unsigned) { sink += loop(iterations); });
  };
  while (timed() < kRunSeconds && iterations < (int64_t(1) << 34))
    iterations *= 2;
  double best = 0.0;
  for (int repeat = 0; repeat < kRepeats; ++repeat)
    best = std::max(best, operationsPerIteration * double(iterations) * threads / timed());
  return best;
}

#if defined(__x86_64__)

// Accumulator chains per loop: latency (4 or 5 cycles) times pipes (2),
// with room to spare, within the 16 (AVX2) or 32 (AVX-512) registers.
constexpr int kAvx2Chains = 12;
constexpr int kAvx512Chains = 24;

__attribute__((target("avx2,fma"))) int64_t fmaLoopAvx2(int64_t iterations) {
  __m256 chains[kAvx2Chains];
  for (int i = 0; i < kAvx2Chains; ++i)
    chains[i] = _mm256_set1_ps(1.0f + float(i));
  __m256 scale = _mm256_set1_ps(0.999999f), step = _mm256_set1_ps(1e-7f);
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kAvx2Chains; ++i)
      chains[i] = _mm256_fmadd_ps(chains[i], scale, step);
  float total = 0.0f;
  for (int i = 0; i < kAvx2Chains; ++i)
    total += _mm256_cvtss_f32(chains[i]);
  return int64_t(total);
}

__attribute__((target("avx512f"))) int64_t fmaLoopAvx512(int64_t iterations) {
  __m512 chains[kAvx512Chains];
  for (int i = 0; i < kAvx512Chains; ++i)
    chains[i] = _mm512_set1_ps(1.0f + float(i));
  __m512 scale = _mm512_set1_ps(0.999999f), step = _mm512_set1_ps(1e-7f);
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kAvx512Chains; ++i)
      chains[i] = _mm512_fmadd_ps(chains[i], scale, step);
  float total = 0.0f;
  for (int i = 0; i < kAvx512Chains; ++i)
    total += _mm512_reduce_add_ps(chains[i]);
  return int64_t(total);
}

// Without VNNI a u8 x s8 dot product is vpmaddubsw (pairs into i16) then
// vpmaddwd by ones (pairs into i32) then vpaddd. Its operands do not depend
// on the chain, so each iteration hides them from the compiler (an empty
// asm that "changes" them), which would otherwise hoist the products.
__attribute__((target("avx2"))) int64_t dotLoopAvx2(int64_t iterations) {
  __m256i chains[kAvx2Chains / 3], left[kAvx2Chains / 3];
  for (int i = 0; i < kAvx2Chains / 3; ++i) {
    chains[i] = _mm256_setzero_si256();
    left[i] = _mm256_set1_epi8(char(i + 1));
  }
  __m256i right = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kAvx2Chains / 3; ++i) {
      asm volatile("" : "+x"(left[i]));
      __m256i pairs = _mm256_maddubs_epi16(left[i], right);
      chains[i] = _mm256_add_epi32(chains[i], _mm256_madd_epi16(pairs, ones));
    }
  int64_t total = 0;
  for (int i = 0; i < kAvx2Chains / 3; ++i)
    total += _mm256_extract_epi32(chains[i], 0);
  return total;
}

__attribute__((target("avx512f,avx512vnni"))) int64_t dotLoopVnni(int64_t iterations) {
  __m512i chains[kAvx512Chains / 2];
  for (int i = 0; i < kAvx512Chains / 2; ++i)
    chains[i] = _mm512_setzero_si512();
  __m512i left = _mm512_set1_epi8(2), right = _mm512_set1_epi8(3);
  for (int64_t n = 0; n < iterations; ++n)
    for (int i = 0; i < kAvx512Chains / 2; ++i)
      chains[i] = _mm512_dpbusd_epi32(chains[i], left, right);
  int64_t total = 0;
  for (int i = 0; i < kAvx512Chains / 2; ++i)
    total += _mm512_reduce_add_epi32(chains[i]);
  return total;
}

/// TDPBUSD on four accumulator tiles from two activation and two weight
/// tiles of 16 rows of 64 bytes: 16 x 16 x 64 multiply-adds each. The tile
/// configuration is per thread, so each call loads it.
__attribute__((target("amx-tile,amx-int8"))) int64_t dotLoopAmx(int64_t iterations) {
  struct TileConfig {
    uint8_t palette, startRow, reserved[14];
    uint16_t rowBytes[16];
    uint8_t rows[16];
  } config{};
  config.palette = 1;
  for (int tile = 0; tile < 8; ++tile) {
    config.rows[tile] = 16;
    config.rowBytes[tile] = 64;
  }
  alignas(64) uint8_t operands[16 * 64];
  std::memset(operands, 2, sizeof operands);
  alignas(64) int32_t sums[16 * 16];
  _tile_loadconfig(&config);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  _tile_loadd(4, operands, 64); _tile_loadd(5, operands, 64);
  _tile_loadd(6, operands, 64); _tile_loadd(7, operands, 64);
  for (int64_t n = 0; n < iterations; ++n) {
    _tile_dpbusd(0, 4, 6); _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6); _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, sums, 64);
  _tile_release();
  return sums[0];
}

/// Whether this process may use AMX tiles: the CPU has AMX-INT8 and Linux
/// grants the tile state (arch_prctl ARCH_REQ_XCOMP_PERM, as the runtime
/// asks before it loads AMX code).
bool amxTilesUsable() {
#if defined(__linux__)
  return __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8") &&
         syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
  return false;
#endif
}

/// Sums the 8-byte words of `size` bytes at `data` (a multiple of 128),
/// `passes` times over: four 32-byte loads a step, which keeps up with any
/// cache level below L1 on the CPUs Tessel targets.
__attribute__((target("avx2"))) int64_t readAvx2(const uint8_t *data, size_t size,
                                                 int64_t passes) {
  __m256i sums[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                     _mm256_setzero_si256()};
  for (int64_t pass = 0; pass < passes; ++pass)
    for (size_t offset = 0; offset < size; offset += 128)
      for (int i = 0; i < 4; ++i)
        sums[i] = _mm256_add_epi64(
            sums[i], _mm256_load_si256(reinterpret_cast<const __m256i *>(data + offset + 32 * i)));
  __m256i total =
      _mm256_add_epi64(_mm256_add_epi64(sums[0], sums[1]), _mm256_add_epi64(sums[2], sums[3]));
  return _mm256_extract_epi64(total, 0) + _mm256_extract_epi64(total, 3);
}

/// The same with 16-byte loads, for CPUs without AVX2.
int64_t readSse2(const uint8_t *data, size_t size, int64_t passes) {
  __m128i sums[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(),
                     _mm_setzero_si128()};
  for (int64_t pass = 0; pass < passes; ++pass)
    for (size_t offset = 0; offset < size; offset += 64)
      for (int i = 0; i < 4; ++i)
        sums[i] = _mm_add_epi64(
            sums[i], _mm_load_si128(reinterpret_cast<const __m128i *>(data + offset + 16 * i)));
  __m128i total = _mm_add_epi64(_mm_add_epi64(sums[0], sums[1]), _mm_add_epi64(sums[2], sums[3]));
  return _mm_cvtsi128_si64(total);
}

/// GB/s of `threads` threads reading `share` bytes each, their own, over
/// and over.
double readBandwidth(unsigned threads, size_t share) {
  share = std::max<size_t>(share & ~size_t(127), 128);
  auto *buffer = static_cast<uint8_t *>(std::aligned_alloc(64, share * threads));
  if (!buffer)
    return 0.0;
  std::memset(buffer, 1, share * threads); // maps every page before timing
  auto read = __builtin_cpu_supports("avx2") ? readAvx2 : readSse2;
  int64_t passes = 1;
  auto timed = [&] {
    return runTogether(threads, [&](unsigned thread) {
      sink += read(buffer + thread * share, share, passes);
    });
  };
  while (timed() < kRunSeconds && passes < (int64_t(1) << 30))
    passes *= 2;
  double best = 0.0;
  for (int repeat = 0; repeat < kRepeats; ++repeat)
    best = std::max(best, double(share) * double(passes) * threads / timed() / 1e9);
  std::free(buffer);
  return best;
}

void measureCompute(MachinePeaks &peaks) {
  if (__builtin_cpu_supports("avx512f")) {
    peaks.floatSequence = "AVX-512 FMA";
    peaks.floatGflops = bestRate(peaks.threads, 2.0 * 16 * kAvx512Chains, fmaLoopAvx512) / 1e9;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    peaks.floatSequence = "AVX2 FMA";
    peaks.floatGflops = bestRate(peaks.threads, 2.0 * 8 * kAvx2Chains, fmaLoopAvx2) / 1e9;
  }
  if (amxTilesUsable()) {
    peaks.integerSequence = "AMX-INT8 tdpbusd";
    peaks.integerGops = bestRate(peaks.threads, 2.0 * 16 * 16 * 64 * 4, dotLoopAmx) / 1e9;
  } else if (__builtin_cpu_supports("avx512vnni")) {
    peaks.integerSequence = "AVX-512 VNNI vpdpbusd";
    peaks.integerGops =
        bestRate(peaks.threads, 2.0 * 64 * (kAvx512Chains / 2), dotLoopVnni) / 1e9;
  } else if (__builtin_cpu_supports("avx2")) {
    peaks.integerSequence = "AVX2 vpmaddubsw+vpmaddwd";
    peaks.integerGops = bestRate(peaks.threads, 2.0 * 32 * (kAvx2Chains / 3), dotLoopAvx2) / 1e9;
  }
}

/// The size of the level-`level` data or unified cache of CPU 0, as the
/// kernel reports it (glibc's sysconf reads CPUID, which under some
/// hypervisors describes the host's whole socket); 0 when unknown.
uint64_t cacheBytes(int level) {
  for (int index = 0; index < 8; ++index) {
    std::string folder = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream levelFile(folder + "level"), typeFile(folder + "type"), sizeFile(folder + "size");
    int found = 0;
    std::string type, size;
    if (!(levelFile >> found) || !(typeFile >> type) || !(sizeFile >> size))
      continue;
    if (found != level || type == "Instruction" || size.empty())
      continue;
    uint64_t bytes = std::strtoull(size.c_str(), nullptr, 10);
    if (size.back() == 'K')
      bytes <<= 10;
    else if (size.back() == 'M')
      bytes <<= 20;
    return bytes;
  }
  return 0;
}

void measureMemory(MachinePeaks &peaks) {
  unsigned threads = peaks.threads;
  // Half of each cache, so that what else runs keeps its lines too. L2 is
  // one per core, L3 shared.
  if (uint64_t l2 = cacheBytes(2))
    peaks.memory.push_back({"L2", l2 * threads, readBandwidth(threads, size_t(l2) / 2)});
  if (uint64_t l3 = cacheBytes(3))
    peaks.memory.push_back({"L3", l3, readBandwidth(threads, size_t(l3) / 2 / threads)});
  // 256 MiB: eight times the largest L3 of the CPUs Tessel targets today.
  peaks.memory.push_back({"memory", 0, readBandwidth(threads, (size_t(256) << 20) / threads)});
}

#endif // __x86_64__

/// "AMD EPYC (family 25, model 1)": hypervisors often hide the marketing
/// name, family and model still tell Zen 3 from Zen 5.
std::string cpuDescription() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name = "unknown CPU", family, model;
  auto value = [&] {
    size_t colon = line.find(':');
    size_t start = colon == std::string::npos ? std::string::npos
                                              : line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  };
  while (std::getline(cpuinfo, line) && !line.empty()) {
    if (line.rfind("model name", 0) == 0)
      name = value();
    else if (line.rfind("cpu family", 0) == 0)
      family = value();
    else if (line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0)
      model = value();
  }
  if (!family.empty() && !model.empty())
    name += " (family " + family + ", model " + model + ")";
  return name;
}

} // namespace

MachinePeaks measureMachinePeaks(unsigned threads) {
  MachinePeaks peaks;
  peaks.threads = std::max(1u, threads);
  peaks.cpuName = cpuDescription();
#if defined(__x86_64__)
  measureCompute(peaks);
  measureMemory(peaks);
#endif
  return peaks;
}

} // namespace tessel::run
