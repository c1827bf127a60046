/* Single-thread INT8 dot-product peak of this CPU, in GOP/s (a multiply
 * and an add are two operations, as a FLOP count would have them).
 *
 * Measures each u8 x s8 -> i32 instruction sequence that Tessel's INT8
 * kernels can use here, with enough independent accumulators to cover its
 * latency, so each loop is bound by throughput alone:
 *   vpdpbusd zmm   AVX512-VNNI (64 multiply-adds per instruction)
 *   vpdpbusd ymm   AVX-VNNI (32)
 *   pmaddubsw      AVX2 vpmaddubsw + vpmaddwd by ones + vpaddd (32 per 3)
 *   pmaddwd        AVX2 exact pairs: 2 vpmaddwd + 2 vpaddd (32 per 4)
 *   tdpbusd        AMX-INT8: 16 x 16 x 64 multiply-adds per instruction, on
 *                  four accumulator tiles from two activation and two weight
 *                  tiles (after asking Linux for the tile state)
 * Built by scripts/bench-int8.py with -O3 -march=native; prints one line
 * per sequence the CPU has, then the best as "int8 peak".
 */
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__AMX_INT8__)
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define ACCUMULATORS 12
#define ITERATIONS (100000000L / ACCUMULATORS)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Keeps the compiler from folding or reordering the accumulator chains,
 * and from hoisting products of loop-invariant operands. */
#define OPAQUE(x) __asm__ volatile("" : "+v"(x))

/* Best of five timings of `body` over ITERATIONS x ACCUMULATORS steps of
 * `macs` multiply-adds each, as GOP/s. */
#define MEASURE(best, macs, body)                                              \
  for (int repeat = 0; repeat < 5; ++repeat) {                                 \
    double start = now();                                                      \
    for (long n = 0; n < ITERATIONS; ++n)                                      \
      for (int i = 0; i < ACCUMULATORS; ++i) {                                 \
        body;                                                                  \
      }                                                                        \
    double rate = 2.0 * (macs) * ACCUMULATORS * ITERATIONS / (now() - start);  \
    if (rate / 1e9 > best)                                                     \
      best = rate / 1e9;                                                       \
  }

static volatile int seed = 0x01020304;
static long checksum;

#if defined(__AVX512VNNI__)
static double vnni512(void) {
  __m512i acc[ACCUMULATORS], a = _mm512_set1_epi32(seed), w = _mm512_set1_epi32(seed >> 1);
  for (int i = 0; i < ACCUMULATORS; ++i)
    acc[i] = _mm512_set1_epi32(i);
  double best = 0;
  MEASURE(best, 64, acc[i] = _mm512_dpbusd_epi32(acc[i], a, w); OPAQUE(acc[i]))
  for (int i = 0; i < ACCUMULATORS; ++i)
    checksum += _mm512_reduce_add_epi32(acc[i]);
  return best;
}
#endif

#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
static double vnni256(void) {
  __m256i acc[ACCUMULATORS], a = _mm256_set1_epi32(seed), w = _mm256_set1_epi32(seed >> 1);
  for (int i = 0; i < ACCUMULATORS; ++i)
    acc[i] = _mm256_set1_epi32(i);
  double best = 0;
#if defined(__AVXVNNI__)
  MEASURE(best, 32, acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, w); OPAQUE(acc[i]))
#else
  MEASURE(best, 32, acc[i] = _mm256_dpbusd_epi32(acc[i], a, w); OPAQUE(acc[i]))
#endif
  for (int i = 0; i < ACCUMULATORS; ++i)
    checksum += _mm256_extract_epi32(acc[i], 0);
  return best;
}
#endif

#if defined(__AVX2__)
static double multiplyAddBytes(void) {
  __m256i acc[ACCUMULATORS], a = _mm256_set1_epi32(seed), w = _mm256_set1_epi32(seed >> 1);
  __m256i ones = _mm256_set1_epi16(1);
  for (int i = 0; i < ACCUMULATORS; ++i)
    acc[i] = _mm256_set1_epi32(i);
  double best = 0;
  MEASURE(best, 32,
          OPAQUE(w); __m256i pairs = _mm256_maddubs_epi16(a, w);
          acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(pairs, ones)); OPAQUE(acc[i]))
  for (int i = 0; i < ACCUMULATORS; ++i)
    checksum += _mm256_extract_epi32(acc[i], 0);
  return best;
}

static double pairwiseMultiplyAdd(void) {
  __m256i acc[ACCUMULATORS];
  __m256i aEven = _mm256_set1_epi32(seed & 0x00ff00ff), aOdd = _mm256_set1_epi32((seed >> 8) & 0x00ff00ff);
  __m256i wEven = _mm256_set1_epi32(seed >> 3), wOdd = _mm256_set1_epi32(seed >> 5);
  for (int i = 0; i < ACCUMULATORS; ++i)
    acc[i] = _mm256_set1_epi32(i);
  double best = 0;
  MEASURE(best, 32,
          OPAQUE(wEven); OPAQUE(wOdd);
          acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(aEven, wEven));
          acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(aOdd, wOdd)); OPAQUE(acc[i]))
  for (int i = 0; i < ACCUMULATORS; ++i)
    checksum += _mm256_extract_epi32(acc[i], 0);
  return best;
}
#endif

#if defined(__AMX_INT8__)
/* The tile configuration LDTILECFG reads (palette 1): eight tiles of 16
 * rows of 64 bytes. */
struct TileConfig {
  uint8_t palette, startRow, reserved[14];
  uint16_t rowBytes[16];
  uint8_t rows[16];
};

static double amx(void) {
  /* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA; without it tiles fault. */
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0)
    return 0;
  static uint8_t operands[4][16 * 64] __attribute__((aligned(64)));
  static int32_t sums[16 * 16];
  struct TileConfig config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int tile = 0; tile < 8; ++tile) {
    config.rows[tile] = 16;
    config.rowBytes[tile] = 64;
  }
  memset(operands, seed & 0x7f, sizeof operands);
  _tile_loadconfig(&config);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  _tile_loadd(4, operands[0], 64); _tile_loadd(5, operands[1], 64);
  _tile_loadd(6, operands[2], 64); _tile_loadd(7, operands[3], 64);
  double best = 0;
  const long steps = ITERATIONS / 4;
  for (int repeat = 0; repeat < 5; ++repeat) {
    double start = now();
    for (long n = 0; n < steps; ++n) {
      _tile_dpbusd(0, 4, 6); _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6); _tile_dpbusd(3, 5, 7);
    }
    double rate = 2.0 * 16 * 16 * 64 * 4 * steps / (now() - start) / 1e9;
    if (rate > best)
      best = rate;
  }
  _tile_stored(0, sums, 64);
  _tile_release();
  checksum += sums[0];
  return best;
}
#endif

static double report(const char *name, double rate, double best) {
  printf("%-14s %.1f GOP/s\n", name, rate);
  return rate > best ? rate : best;
}

int main(void) {
  double best = 0;
#if defined(__AVX512VNNI__)
  best = report("vpdpbusd zmm", vnni512(), best);
#endif
#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
  best = report("vpdpbusd ymm", vnni256(), best);
#endif
#if defined(__AVX2__)
  best = report("pmaddubsw", multiplyAddBytes(), best);
  best = report("pmaddwd", pairwiseMultiplyAdd(), best);
#endif
#if defined(__AMX_INT8__)
  double tiles = amx();
  if (tiles > 0)
    best = report("tdpbusd", tiles, best);
#endif
  printf("int8 peak %.1f GOP/s (checksum %ld)\n", best, checksum);
  return 0;
}
