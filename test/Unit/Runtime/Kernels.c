/*===- Kernels.c - Hand-written CPU kernels for the runtime's tests --------===*
 *
 * Entries following KernelAbi.h, built into a shared object that the tests
 * embed in their artifacts. Each checks its call as compiled entries do
 * (binding count and sizes, workgroup range, scratch) and checks the
 * runtime's promises (64-byte aligned bindings and scratch), poisoning its
 * output with NaN when one is broken, so a test that checks the numbers
 * also checks the promises.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/schema/KernelAbi.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* Every tensor of the test models holds 16 floats, 4 per workgroup. */
enum { kElements = 16, kPerWorkgroup = 4, kWorkgroups = 4, kTensorBytes = 64 };

static int isAligned(const void *pointer) {
  return (uintptr_t)pointer % 64 == 0;
}

/* Whether `call` is one an entry compiled for `bindingCount` tensors of 16
 * floats, kWorkgroups workgroups and `scratchBytes` of scratch may run. */
static int callMatches(const tsl_cpu_kernel_call *call, uint64_t bindingCount,
                       uint64_t scratchBytes) {
  if (call->binding_count != bindingCount || call->begin < 0 || call->begin > call->end ||
      call->end > kWorkgroups || call->scratch_bytes < scratchBytes)
    return 0;
  for (uint64_t i = 0; i < bindingCount; ++i)
    if (call->binding_sizes[i] != kTensorBytes)
      return 0;
  return 1;
}

/* bindings: a, b, out (f32[16]); out = a + b. */
EXPORT int32_t add_f32_entry(const tsl_cpu_kernel_call *call) {
  if (!callMatches(call, 3, 0))
    return TSL_KERNEL_CALL_MISMATCH;
  const float *a = call->bindings[0], *b = call->bindings[1];
  float *out = call->bindings[2];
  int aligned = isAligned(a) && isAligned(b) && isAligned(out);
  for (int64_t i = call->begin * kPerWorkgroup; i < call->end * kPerWorkgroup; ++i)
    out[i] = aligned ? a[i] + b[i] : NAN;
  return TSL_KERNEL_OK;
}

/* bindings: in, out (f32[16]); out = 2 * in, staged through 16 bytes of
 * scratch per workgroup. */
EXPORT int32_t scale2_scratch_entry(const tsl_cpu_kernel_call *call) {
  if (!callMatches(call, 2, kPerWorkgroup * sizeof(float)))
    return TSL_KERNEL_CALL_MISMATCH;
  const float *in = call->bindings[0];
  float *out = call->bindings[1];
  float *staged = call->scratch;
  int aligned = isAligned(in) && isAligned(out) && isAligned(staged);
  for (int64_t group = call->begin; group < call->end; ++group) {
    for (int k = 0; k < kPerWorkgroup; ++k)
      staged[k] = 2.0f * in[group * kPerWorkgroup + k];
    for (int k = 0; k < kPerWorkgroup; ++k)
      out[group * kPerWorkgroup + k] = aligned ? staged[k] : NAN;
  }
  return TSL_KERNEL_OK;
}

/* bindings: out (u64[workgroups]); out[g] = the address of the scratch that
 * ran workgroup g, which tells the threads apart. Each workgroup sleeps a
 * millisecond so that every thread of the pool gets a share. The workgroup
 * count varies by test, so only the output's size bounds the range. */
EXPORT int32_t probe_threads_entry(const tsl_cpu_kernel_call *call) {
  if (call->binding_count != 1 || call->begin < 0 || call->begin > call->end ||
      (uint64_t)call->end > call->binding_sizes[0] / sizeof(uint64_t))
    return TSL_KERNEL_CALL_MISMATCH;
  uint64_t *out = call->bindings[0];
  struct timespec pause = {0, 1000000};
  for (int64_t group = call->begin; group < call->end; ++group) {
    nanosleep(&pause, 0);
    out[group] = (uint64_t)(uintptr_t)call->scratch;
  }
  return TSL_KERNEL_OK;
}
