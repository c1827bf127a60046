/*===- KernelAbi.h - How the runtime calls compiled CPU kernels -----------===*
 *
 * An x86 executable (ExecutableFormat.elf_shared_object) is an ELF shared
 * object exporting one function per KernelEntry.symbol, of this type.
 *
 *   bindings   entry.binding_count buffer pointers, in the order of the
 *              DispatchStep's bindings; every buffer is 64-byte aligned.
 *   begin/end  the half-open range of workgroups to run, within
 *              [0, entry.workgroup_count). Workgroups are independent: the
 *              runtime may run disjoint ranges on different threads at once.
 *   scratch    entry.scratch_bytes of 64-byte aligned memory owned by the
 *              calling thread for the duration of the call.
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

typedef void (*tsl_cpu_kernel_entry)(void *const *bindings, int64_t begin,
                                     int64_t end, void *scratch);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_RUNTIME_SCHEMA_KERNELABI_H */
