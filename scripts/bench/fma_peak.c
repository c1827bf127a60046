/* Single-thread FP32 FMA peak of this CPU, in GFLOP/s.
 *
 * Keeps enough independent vector accumulators in flight to cover the FMA
 * latency on every FMA port (8 lanes with AVX2, 16 with AVX-512), so the
 * loop is bound by FMA throughput alone. Built by scripts/bench.py with
 * -O3 -march=native -ffp-contract=fast.
 */
#include <stdio.h>
#include <time.h>

#if defined(__AVX512F__)
#define LANES 16
#define ACCUMULATORS 24
#else
#define LANES 8
#define ACCUMULATORS 12
#endif

typedef float vec __attribute__((vector_size(LANES * sizeof(float))));

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  volatile float seed = 1.0f, scale = 0.999999f, step = 1e-7f;
  vec acc[ACCUMULATORS], m, a;
  for (int l = 0; l < LANES; ++l) {
    m[l] = scale;
    a[l] = step;
  }
  for (int i = 0; i < ACCUMULATORS; ++i)
    for (int l = 0; l < LANES; ++l)
      acc[i][l] = seed + i;
  const long iterations = 200000000L / ACCUMULATORS;
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    double start = now();
    for (long n = 0; n < iterations; ++n)
      for (int i = 0; i < ACCUMULATORS; ++i)
        acc[i] = acc[i] * m + a; /* one FMA per accumulator */
    double seconds = now() - start;
    double flops = 2.0 * LANES * ACCUMULATORS * (double)iterations;
    if (flops / seconds > best)
      best = flops / seconds;
  }
  float sink = 0;
  for (int i = 0; i < ACCUMULATORS; ++i)
    for (int l = 0; l < LANES; ++l)
      sink += acc[i][l];
  printf("fma peak %.1f GFLOP/s (%d lanes, %d accumulators; checksum %g)\n", best / 1e9,
         LANES, ACCUMULATORS, sink);
  return 0;
}
