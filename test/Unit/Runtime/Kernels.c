/*===- Kernels.c - Hand-written CPU kernels for the runtime's tests --------===*
 *
 * Entries following KernelAbi.h, built into a shared object that the tests
 * embed in their artifacts. Each kernel checks the runtime's promises (64-byte
 * aligned bindings and scratch) and poisons its output with NaN when one is
 * broken, so a test that checks the numbers also checks the promises.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/schema/KernelAbi.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* Every tensor of the test models holds 16 floats, 4 per workgroup. */
enum { kPerWorkgroup = 4 };

static int isAligned(const void *pointer) {
  return (uintptr_t)pointer % 64 == 0;
}

/* bindings: a, b, out (f32[16]); out = a + b. */
EXPORT void add_f32_entry(void *const *bindings, int64_t begin, int64_t end,
                          void *scratch) {
  (void)scratch;
  const float *a = bindings[0], *b = bindings[1];
  float *out = bindings[2];
  int aligned = isAligned(a) && isAligned(b) && isAligned(out);
  for (int64_t i = begin * kPerWorkgroup; i < end * kPerWorkgroup; ++i)
    out[i] = aligned ? a[i] + b[i] : NAN;
}

/* bindings: in, out (f32[16]); out = 2 * in, staged through 16 bytes of
 * scratch per workgroup. */
EXPORT void scale2_scratch_entry(void *const *bindings, int64_t begin,
                                 int64_t end, void *scratch) {
  const float *in = bindings[0];
  float *out = bindings[1];
  float *staged = scratch;
  int aligned = isAligned(in) && isAligned(out) && isAligned(scratch);
  for (int64_t group = begin; group < end; ++group) {
    for (int k = 0; k < kPerWorkgroup; ++k)
      staged[k] = 2.0f * in[group * kPerWorkgroup + k];
    for (int k = 0; k < kPerWorkgroup; ++k)
      out[group * kPerWorkgroup + k] = aligned ? staged[k] : NAN;
  }
}

/* bindings: out (u64[workgroups]); out[g] = the address of the scratch that
 * ran workgroup g, which tells the threads apart. Each workgroup sleeps a
 * millisecond so that every thread of the pool gets a share. */
EXPORT void probe_threads_entry(void *const *bindings, int64_t begin,
                                int64_t end, void *scratch) {
  uint64_t *out = bindings[0];
  struct timespec pause = {0, 1000000};
  for (int64_t group = begin; group < end; ++group) {
    nanosleep(&pause, 0);
    out[group] = (uint64_t)(uintptr_t)scratch;
  }
}
