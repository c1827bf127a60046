/*===- StubCudaDriver.c - A libcuda stand-in that records launches --------===*
 *
 * Loaded by the runtime through $TESSEL_CUDA_DRIVER in place of libcuda.so.1
 * on machines without a GPU. It has one device of compute capability
 * $STUB_CUDA_CAPABILITY (default 90), hands out host memory as "device"
 * memory (so that copies work), runs no kernel, and writes one line per
 * driver call that matters to $STUB_CUDA_LOG (default stderr): the PTX
 * target or the cubin's architecture a module was loaded for, and per
 * launch the kernel, grid, block and each parameter as the allocation it
 * points into and the offset, so that a test can check what the runtime
 * passes. With $STUB_CUDA_REFUSE_CUBINS set it refuses cubins, as a driver
 * older than the toolkit that assembled them does.
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

/* A loaded module: the image the runtime passed (read only while the
 * runtime looks up its functions), a cubin (an ELF image) or PTX text. */
struct Module {
  const unsigned char *image;
  int cubin;
};

/* A field of `bytes` bytes of an ELF64 image (little-endian, as the host
 * that runs the stub). */
static uint64_t field(const unsigned char *at, size_t bytes) {
  uint64_t value = 0;
  memcpy(&value, at, bytes);
  return value;
}

/* The SM a cubin was assembled for: bits 8-15 of e_flags from ELF ABI
 * version 8 (CUDA 12.8) on, bits 0-7 before. */
static unsigned cubinArchitecture(const unsigned char *elf) {
  uint32_t flags = field(elf + 0x30, 4);
  return elf[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
}

/* The section of a cubin called `name`, and its size; null when none. */
static const unsigned char *cubinSection(const unsigned char *elf, const char *name,
                                         uint64_t *size) {
  const unsigned char *headers = elf + field(elf + 0x28, 8);
  uint16_t entrySize = field(elf + 0x3a, 2), count = field(elf + 0x3c, 2);
  const unsigned char *names = elf + field(headers + field(elf + 0x3e, 2) * entrySize + 0x18, 8);
  for (uint16_t i = 0; i < count; ++i) {
    const unsigned char *header = headers + i * entrySize;
    if (strcmp((const char *)names + field(header, 4), name) == 0) {
      *size = field(header + 0x20, 8);
      return elf + field(header + 0x18, 8);
    }
  }
  return NULL;
}

/* How many parameters kernel `name` of a cubin takes: the
 * EIATTR_KPARAM_INFO records (attribute 0x17) of its .nv.info.<name>
 * section, each record a format byte, an attribute byte and a value (none,
 * 1 or 2 bytes, or for format 4 a 16-bit size and that many bytes); -1 when
 * the cubin has no such kernel. */
static int cubinParameterCount(const unsigned char *elf, const char *name) {
  char section[300];
  snprintf(section, sizeof(section), ".nv.info.%s", name);
  uint64_t size = 0;
  const unsigned char *info = cubinSection(elf, section, &size);
  if (!info)
    return -1;
  int count = 0;
  for (uint64_t at = 0; at + 2 <= size;) {
    unsigned format = info[at], attribute = info[at + 1];
    at += 2;
    if (format == 4) {
      count += attribute == 0x17;
      at += 2 + field(info + at, 2);
    } else if (format == 3) {
      at += 2;
    } else if (format == 2) {
      at += 1;
    }
  }
  return count;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count, int *options,
                            void **values) {
  (void)count, (void)options, (void)values;
  struct Module *loaded = calloc(1, sizeof(struct Module));
  loaded->image = image;
  loaded->cubin = memcmp(image,
                         "\x7f"
                         "ELF",
                         4) == 0;
  if (loaded->cubin) {
    int refused = getenv("STUB_CUDA_REFUSE_CUBINS") != NULL;
    fprintf(output(), "module cubin sm_%u%s\n", cubinArchitecture(image),
            refused ? " refused" : "");
    if (refused) {
      free(loaded);
      return 209; /* CUDA_ERROR_NO_BINARY_FOR_GPU */
    }
  } else {
    const char *target = strstr(image, ".target ");
    if (!target) {
      free(loaded);
      return 218; /* CUDA_ERROR_INVALID_PTX */
    }
    fprintf(output(), "module ");
    for (const char *c = target + 8; *c && *c != '\n'; ++c)
      fputc(*c, output());
    fputc('\n', output());
  }
  *module = loaded;
  return 0;
}
CUresult cuModuleUnload(void *module) {
  free(module);
  return module ? 0 : 400;
}
/* A kernel: its name and, read off its .entry in the PTX or its
 * .nv.info section in the cubin, how many parameters it takes. */
struct Function {
  char name[256];
  int parameterCount;
};

/* The parameter count of kernel `name` in PTX `ptx`; -1 when it has no
 * such kernel. */
static int ptxParameterCount(const char *ptx, const char *name) {
  char entry[300];
  snprintf(entry, sizeof(entry), ".entry %s(", name);
  const char *found = strstr(ptx, entry);
  if (!found)
    return -1;
  int count = 0;
  const char *end = strchr(found, ')');
  for (const char *c = strstr(found, ".param"); c && end && c < end; c = strstr(c + 1, ".param"))
    count++;
  return count;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  const struct Module *loaded = module;
  int parameters = loaded->cubin ? cubinParameterCount(loaded->image, name)
                                 : ptxParameterCount((const char *)loaded->image, name);
  if (parameters < 0)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  struct Function *kernel = calloc(1, sizeof(struct Function));
  snprintf(kernel->name, sizeof(kernel->name), "%s", name);
  kernel->parameterCount = parameters;
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
