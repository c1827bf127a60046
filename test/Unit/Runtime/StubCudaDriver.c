/*===- StubCudaDriver.c - A libcuda stand-in that records launches --------===*
 *
 * Loaded by the runtime through $TESSEL_CUDA_DRIVER in place of libcuda.so.1
 * on machines without a GPU. It has one device of compute capability
 * $STUB_CUDA_CAPABILITY (default 90), hands out host memory as "device"
 * memory (so that copies work), runs no kernel, and writes one line per
 * driver call that matters to $STUB_CUDA_LOG (default stderr): the PTX
 * target a module was loaded for, and per launch the kernel, grid, block
 * and each parameter as the allocation it points into and the offset, so
 * that a test can check what the runtime passes.
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { kMaxAllocations = 4096 };
static struct {
  char *base;
  size_t bytes;
  int live;
} allocations[kMaxAllocations];
static int allocationCount;
static FILE *logFile;

static FILE *output(void) {
  if (!logFile) {
    const char *path = getenv("STUB_CUDA_LOG");
    logFile = path ? fopen(path, "a") : NULL;
    if (!logFile)
      logFile = stderr;
  }
  return logFile;
}

CUresult cuInit(unsigned flags) { return flags ? 1 : 0; }
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return 0;
}
CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? 0 : 101;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  const char *text = getenv("STUB_CUDA_CAPABILITY");
  int capability = text ? atoi(text) : 90;
  (void)device;
  if (attribute == 75)
    *value = capability / 10;
  else if (attribute == 76)
    *value = capability % 10;
  else if (attribute == 16)
    *value = 4;
  else
    return 1;
  return 0;
}
CUresult cuDeviceGetName(char *name, int length, int device) {
  (void)device;
  snprintf(name, (size_t)length, "stub GPU");
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  *context = (void *)1;
  return 0;
}
CUresult cuCtxSetCurrent(void *context) { return context ? 0 : 201; }

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  if (allocationCount == kMaxAllocations)
    return 2;
  char *memory = malloc(bytes);
  if (!memory)
    return 2;
  allocations[allocationCount].base = memory;
  allocations[allocationCount].bytes = bytes;
  allocations[allocationCount].live = 1;
  allocationCount++;
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
  for (int i = 0; i < allocationCount; ++i)
    if (allocations[i].live && allocations[i].base == (char *)(uintptr_t)pointer) {
      allocations[i].live = 0;
      free(allocations[i].base);
      return 0;
    }
  fprintf(output(), "error: cuMemFree of an address never allocated\n");
  return 1;
}
CUresult cuMemsetD8_v2(CUdeviceptr pointer, unsigned char value, size_t count) {
  memset((void *)(uintptr_t)pointer, value, count);
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr destination, const void *source, size_t bytes) {
  memcpy((void *)(uintptr_t)destination, source, bytes);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *destination, CUdeviceptr source, size_t bytes) {
  memcpy(destination, (const void *)(uintptr_t)source, bytes);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr destination, CUdeviceptr source, size_t bytes) {
  memmove((void *)(uintptr_t)destination, (const void *)(uintptr_t)source, bytes);
  return 0;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count, int *options,
                            void **values) {
  const char *ptx = image;
  const char *target = strstr(ptx, ".target ");
  (void)count, (void)options, (void)values;
  if (!target)
    return 218; /* CUDA_ERROR_INVALID_PTX */
  fprintf(output(), "module ");
  for (const char *c = target + 8; *c && *c != '\n'; ++c)
    fputc(*c, output());
  fputc('\n', output());
  *module = (void *)(uintptr_t)ptx;
  return 0;
}
CUresult cuModuleUnload(void *module) { return module ? 0 : 400; }
/* A kernel: its name and, read off its .entry in the PTX, how many
 * parameters it takes. */
struct Function {
  char name[256];
  int parameterCount;
};

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  char entry[300];
  snprintf(entry, sizeof(entry), ".entry %s(", name);
  const char *found = strstr((const char *)module, entry);
  if (!found)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  struct Function *kernel = calloc(1, sizeof(struct Function));
  snprintf(kernel->name, sizeof(kernel->name), "%s", name);
  const char *end = strchr(found, ')');
  for (const char *c = strstr(found, ".param"); c && end && c < end; c = strstr(c + 1, ".param"))
    kernel->parameterCount++;
  *function = kernel;
  return 0;
}

/* Where a parameter points: allocation number and offset. */
static void describePointer(CUdeviceptr value) {
  char *address = (char *)(uintptr_t)value;
  for (int i = 0; i < allocationCount; ++i)
    if (allocations[i].live && address >= allocations[i].base &&
        address < allocations[i].base + allocations[i].bytes) {
      fprintf(output(), " alloc%d+%zu", i, (size_t)(address - allocations[i].base));
      return;
    }
  fprintf(output(), " OUTSIDE");
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream,
                        void **parameters, void **extra) {
  (void)stream, (void)extra;
  const struct Function *kernel = function;
  fprintf(output(), "launch %s grid %u,%u,%u block %u,%u,%u shared %u:", kernel->name, gx, gy,
          gz, bx, by, bz, shared);
  /* Every parameter is a bare device pointer (the kernels' calling
   * convention). */
  for (int i = 0; parameters && i < kernel->parameterCount; ++i)
    describePointer(*(CUdeviceptr *)parameters[i]);
  fputc('\n', output());
  return 0;
}
CUresult cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  *stream = (void *)2;
  return 0;
}
CUresult cuStreamDestroy_v2(void *stream) { return stream ? 0 : 400; }
CUresult cuStreamSynchronize(void *stream) { return stream ? 0 : 400; }
CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = error ? "STUB_ERROR" : "CUDA_SUCCESS";
  return 0;
}
CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error ? "the stub refused" : "no error";
  return 0;
}
