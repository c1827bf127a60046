/*===- KernelAbi.h - How the runtime calls compiled CPU kernels -----------===*
 *
 * An x86 executable (ExecutableFormat.elf_shared_object) is an ELF shared
 * object exporting one function per KernelEntry.symbol, of type
 * tsl_cpu_kernel_entry, called with one tsl_cpu_kernel_call:
 *
 *   bindings       binding_count buffer pointers, in the order of the
 *                  DispatchStep's bindings; every buffer is 64-byte aligned.
 *   binding_sizes  the byte size of each of those buffers.
 *   begin/end      the half-open range of workgroups to run, within
 *                  [0, entry.workgroup_count). Workgroups are independent:
 *                  the runtime may run disjoint ranges on different threads
 *                  at once.
 *   scratch        scratch_bytes of 64-byte aligned memory owned by the
 *                  calling thread for the duration of the call.
 *
 * An entry checks its call against what it was compiled for (the number
 * and sizes of its bindings, its workgroup count, its scratch) before it
 * touches any memory, and returns TSL_KERNEL_CALL_MISMATCH without running
 * when they differ: the code, not the artifact's tables, is the authority
 * on what it reads and writes.
 *
 * Kernels do not allocate, do not create threads and do not keep state
 * between calls. The shared object may import memcpy, memset and libm
 * symbols from the process that loads it.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TESSEL_RUNTIME_SCHEMA_KERNELABI_H
#define TESSEL_RUNTIME_SCHEMA_KERNELABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every field is 8 bytes: compiled entries read field k at byte 8 * k. */
typedef struct tsl_cpu_kernel_call {
  void *const *bindings;
  const uint64_t *binding_sizes;
  uint64_t binding_count;
  int64_t begin;
  int64_t end;
  void *scratch;
  uint64_t scratch_bytes;
} tsl_cpu_kernel_call;

/* What an entry returns. */
enum tsl_cpu_kernel_result {
  TSL_KERNEL_OK = 0,
  /* The call differs from what the entry was compiled for; nothing ran. */
  TSL_KERNEL_CALL_MISMATCH = 1,
};

typedef int32_t (*tsl_cpu_kernel_entry)(const tsl_cpu_kernel_call *call);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_RUNTIME_SCHEMA_KERNELABI_H */
