/*===- runtime.h - The Tessel runtime C API -------------------------------===*
 *
 * Loads a compiled model (.tsl artifact) and runs it. The API is C so that
 * any language can bind it; runtime.hpp wraps it for C++.
 *
 * Conventions
 *   - Every fallible call returns a tsl_status: NULL means success; anything
 *     else is an error the caller owns and frees with tsl_status_free.
 *     Errors never abort the process.
 *   - Results are written through out_ parameters, and only on success.
 *   - Objects are reference counted: create/load returns one reference,
 *     retain adds one, release drops one and frees at zero.
 *   - Thread safety is stated per object below.
 *
 * Typical use
 *   tsl_module *module;    tsl_module_load_file("model.tsl", &module);
 *   tsl_session *session;  tsl_session_create(module, NULL, &session);
 *   tsl_tensor *input;     tsl_tensor_wrap(TSL_F32, shape, 4, data, bytes, &input);
 *   tsl_tensor *output = NULL;
 *   tsl_session_run(session, &input, 1, &output, 1);
 *   ... tsl_tensor_data(output) ...
 *   tsl_tensor_release(output); tsl_tensor_release(input);
 *   tsl_session_release(session); tsl_module_release(module);
 *
 *===----------------------------------------------------------------------===*/

#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSL_API __attribute__((visibility("default")))

/*===----------------------------------------------------------------------===*
 * Status
 *===----------------------------------------------------------------------===*/

typedef enum tsl_status_code {
  TSL_OK = 0,
  TSL_INVALID_ARGUMENT = 1, /* a bad parameter: NULL, wrong dtype or shape */
  TSL_INVALID_ARTIFACT = 2, /* the file failed verification */
  TSL_UNSUPPORTED = 3,      /* a format version, device or dtype unknown here */
  TSL_NOT_FOUND = 4,        /* a file or name that does not exist */
  TSL_IO_ERROR = 5,         /* reading a file failed */
  TSL_OUT_OF_MEMORY = 6,
  TSL_UNAVAILABLE = 7,      /* the requested device is not present */
  TSL_INTERNAL = 8,         /* a bug in Tessel */
} tsl_status_code;

/* An error; NULL is success. */
typedef struct tsl_status_t *tsl_status;

/* TSL_OK for NULL. */
TSL_API tsl_status_code tsl_status_get_code(tsl_status status);
/* The message, valid until the status is freed; "" for NULL. */
TSL_API const char *tsl_status_get_message(tsl_status status);
/* Frees an error; NULL is a no-op. */
TSL_API void tsl_status_free(tsl_status status);
/* "INVALID_ARGUMENT", ... */
TSL_API const char *tsl_status_code_name(tsl_status_code code);

/*===----------------------------------------------------------------------===*
 * Element types (the artifact schema's DType)
 *===----------------------------------------------------------------------===*/

typedef enum tsl_dtype {
  TSL_F32 = 0, TSL_F64 = 1, TSL_F16 = 2, TSL_BF16 = 3,
  TSL_I8 = 4, TSL_I16 = 5, TSL_I32 = 6, TSL_I64 = 7,
  TSL_U8 = 8, TSL_U16 = 9, TSL_U32 = 10, TSL_U64 = 11,
  TSL_BOOL = 12,
  /* Small types, one element per byte with the value in the low bits: the
   * OCP/ONNX 8-bit floats, FP4 E2M1 and 4- and 2-bit integers (signed ones
   * are sign-extended in outputs). */
  TSL_F8E4M3FN = 13, TSL_F8E4M3FNUZ = 14, TSL_F8E5M2 = 15, TSL_F8E5M2FNUZ = 16,
  TSL_F4E2M1FN = 17,
  TSL_I4 = 18, TSL_U4 = 19, TSL_I2 = 20, TSL_U2 = 21,
} tsl_dtype;

/* Bytes per element; 0 for a value outside the enum. */
TSL_API size_t tsl_dtype_size(tsl_dtype dtype);
/* "f32", "u8", "bool", ...; "invalid" outside the enum. */
TSL_API const char *tsl_dtype_name(tsl_dtype dtype);

/*===----------------------------------------------------------------------===*
 * Modules: a verified, loaded artifact. Immutable once loaded: any number
 * of threads may use one module (through their own sessions) at once.
 *===----------------------------------------------------------------------===*/

typedef struct tsl_module_t tsl_module;

/* Reads and verifies an artifact file. */
TSL_API tsl_status tsl_module_load_file(const char *path,
                                        tsl_module **out_module);
/* Verifies and loads an artifact from memory; the bytes are copied, so the
 * caller may free them once this returns. */
TSL_API tsl_status tsl_module_load_memory(const void *data, size_t size,
                                          tsl_module **out_module);

/* What a load accepts beyond a verified artifact. */
typedef struct tsl_load_options {
  /* Nonzero: load only artifacts signed (tessel-compile --sign) by one of
   * trusted_keys. The signature is checked on the raw bytes, before
   * anything in the artifact is parsed and before any of its code is
   * mapped; a CPU executable is native code, so artifacts from untrusted
   * sources must be loaded this way (docs/security.md). */
  uint32_t require_signature;
  /* trusted_key_count Ed25519 public keys of 32 bytes each, back to back
   * (tsl_public_key_read_file reads one). */
  const uint8_t *trusted_keys;
  size_t trusted_key_count;
  /* Refuse artifacts whose sessions would need a larger arena; 0 means the
   * format's limit of 1 TiB. */
  uint64_t max_arena_bytes;
} tsl_load_options;

/* Fills the defaults: no signature required, the format's arena limit. */
TSL_API void tsl_load_options_init(tsl_load_options *options);
/* tsl_module_load_file and tsl_module_load_memory under `options` (NULL
 * for the defaults). */
TSL_API tsl_status tsl_module_load_file_with_options(const char *path,
                                                     const tsl_load_options *options,
                                                     tsl_module **out_module);
TSL_API tsl_status tsl_module_load_memory_with_options(const void *data, size_t size,
                                                       const tsl_load_options *options,
                                                       tsl_module **out_module);
/* Verifies an artifact as a load would (signature, structure, checksum,
 * every index, offset and size) without loading any executable: what a
 * service can check before it stores a file it was sent. */
TSL_API tsl_status tsl_artifact_verify(const void *data, size_t size,
                                       const tsl_load_options *options);
/* Reads the Ed25519 public key of a PEM file as `openssl pkey -pubout`
 * writes it. */
TSL_API tsl_status tsl_public_key_read_file(const char *path, uint8_t out_key[32]);

TSL_API void tsl_module_retain(tsl_module *module);
TSL_API void tsl_module_release(tsl_module *module);

/* A tensor of the model's signature. The pointers stay valid while the
 * module is alive. A dimension of -1 is dynamic: dimension 0 of a batched
 * tensor (tessel-compile --dynamic-batch), where a run takes any number of
 * samples, the same in every batched tensor; or the varying length
 * (tessel-compile --max-shape, see tsl_module_max_length), which a model
 * compiled with both options has in another dimension. */
typedef struct tsl_tensor_info {
  const char *name;
  tsl_dtype dtype;
  size_t rank;
  const int64_t *shape;
  /* An integer tensor the model reads or writes quantized: the real value
   * of q is (q - zero_point) * scale. quant_count is 0 for other tensors, 1
   * for one scale and zero point, otherwise the extent of quant_axis, along
   * which each index has its own. */
  size_t quant_count;
  int32_t quant_axis;
  const double *quant_scales;
  const int64_t *quant_zero_points;
} tsl_tensor_info;

TSL_API size_t tsl_module_input_count(const tsl_module *module);
/* A model compiled with tessel-compile --max-shape has a varying length:
 * the dimensions its signature reports as -1, but for the batch, take any
 * size from 0 to this bound, the same in every such tensor of a run
 * (outputs take the inputs' size). 0 for other models, whose -1
 * dimensions are the batch. */
TSL_API int64_t tsl_module_max_length(const tsl_module *module);
/* The dimension of input (output) `index` that is the varying length, or
 * -1 when it does not vary (or there is no such tensor). */
TSL_API int32_t tsl_module_input_varying_axis(const tsl_module *module, size_t index);
TSL_API int32_t tsl_module_output_varying_axis(const tsl_module *module, size_t index);
TSL_API size_t tsl_module_output_count(const tsl_module *module);
TSL_API tsl_status tsl_module_input_info(const tsl_module *module, size_t index,
                                         tsl_tensor_info *out_info);
TSL_API tsl_status tsl_module_output_info(const tsl_module *module,
                                          size_t index,
                                          tsl_tensor_info *out_info);
/* Provenance recorded by the compiler: key is one of "compiler_version",
 * "model_hash", "options", "model_name". Returns "" when absent; the string
 * lives as long as the module. */
TSL_API const char *tsl_module_provenance(const tsl_module *module,
                                          const char *key);

/* The memory a module needs besides its inputs and outputs. */
typedef struct tsl_memory_info {
  /* Intermediate tensors, planned into one arena per session. */
  uint64_t arena_bytes;
  /* Constants, shared by every session of the module. */
  uint64_t weight_bytes;
  /* Scratch each worker thread of a session holds for its kernels. */
  uint64_t scratch_bytes_per_thread;
} tsl_memory_info;

TSL_API tsl_status tsl_module_memory_info(const tsl_module *module,
                                          tsl_memory_info *out_info);

/*===----------------------------------------------------------------------===*
 * Tensors: a dtype, a shape and host memory. A tensor may be shared between
 * threads for reading; writing its data while a session reads it is a race.
 *===----------------------------------------------------------------------===*/

typedef struct tsl_tensor_t tsl_tensor;

/* A tensor with zeroed, 64-byte aligned memory owned by the runtime. */
TSL_API tsl_status tsl_tensor_allocate(tsl_dtype dtype, const int64_t *shape,
                                       size_t rank, tsl_tensor **out_tensor);
/* A tensor over caller memory of `byte_size` bytes, which must equal the
 * shape's size and must outlive the tensor. The runtime never frees it. */
TSL_API tsl_status tsl_tensor_wrap(tsl_dtype dtype, const int64_t *shape,
                                   size_t rank, void *data, size_t byte_size,
                                   tsl_tensor **out_tensor);
TSL_API void tsl_tensor_retain(tsl_tensor *tensor);
TSL_API void tsl_tensor_release(tsl_tensor *tensor);
TSL_API tsl_dtype tsl_tensor_dtype(const tsl_tensor *tensor);
TSL_API size_t tsl_tensor_rank(const tsl_tensor *tensor);
TSL_API const int64_t *tsl_tensor_shape(const tsl_tensor *tensor);
TSL_API void *tsl_tensor_data(tsl_tensor *tensor);
TSL_API size_t tsl_tensor_byte_size(const tsl_tensor *tensor);

/*===----------------------------------------------------------------------===*
 * Devices
 *===----------------------------------------------------------------------===*/

/* Whether a device ("cpu", "cuda", "npu") can run sessions in this process.
 * On failure the status says why (e.g. no libcuda). Never aborts. */
TSL_API tsl_status tsl_device_check(const char *device);

/* What the device is, for messages: for "cuda" the GPU's name and
 * architecture ("NVIDIA H200, sm_90") or why there is none. The string
 * lives as long as the process. */
TSL_API const char *tsl_device_description(const char *device);

/*===----------------------------------------------------------------------===*
 * Sessions: what one thread needs to run a module (intermediate memory,
 * worker threads). A session runs one call at a time; run a module from
 * several threads at once with one session per thread.
 *===----------------------------------------------------------------------===*/

typedef struct tsl_session_t tsl_session;

typedef struct tsl_session_options {
  /* Threads that run kernels, the calling one included; 0 means one per
   * available core. Where the process may use more CPUs than the session
   * has workers, each worker is bound to a CPU of its own and the calling
   * thread stays free; TESSEL_PIN_THREADS=0 in the environment leaves the
   * workers free as well. */
  uint32_t thread_count;
  /* The device to run on ("cpu", "cuda", "npu"). NULL means the GPU when
   * the artifact holds CUDA executables and this process has a GPU that
   * can run one, else "cpu"; tsl_session_device says which. Naming a
   * device that is absent fails with TSL_UNAVAILABLE saying why. */
  const char *device;
  /* Nonzero: time every schedule step of every run, for
   * tsl_session_get_step_timings. Costs two clock reads per step. */
  uint32_t profile;
  /* Nonzero: keep when each NPU instruction of the last run ran
   * (tsl_npu_step_statistics.spans), for a trace of the NPU's queues. */
  uint32_t npu_trace;
} tsl_session_options;

/* Fills the defaults. */
TSL_API void tsl_session_options_init(tsl_session_options *options);

/* Creates a session; it keeps a reference to the module. `options` may be
 * NULL for the defaults. */
TSL_API tsl_status tsl_session_create(tsl_module *module,
                                      const tsl_session_options *options,
                                      tsl_session **out_session);
TSL_API void tsl_session_retain(tsl_session *session);

/* The device the session runs on: "cpu", "cuda" or "npu". */
TSL_API const char *tsl_session_device(const tsl_session *session);
TSL_API void tsl_session_release(tsl_session *session);

/* Runs the model once.
 *   inputs   one tensor per model input, in signature order, each of the
 *            signature's dtype and shape (else TSL_INVALID_ARGUMENT naming
 *            the input and what differs).
 *   outputs  an array of output_count slots, one per model output. A NULL
 *            slot receives a new runtime-allocated tensor that the caller
 *            releases; a non-NULL slot must match the signature and is
 *            written in place.
 * On failure no NULL slot is filled. */
TSL_API tsl_status tsl_session_run(tsl_session *session,
                                   tsl_tensor *const *inputs,
                                   size_t input_count, tsl_tensor **outputs,
                                   size_t output_count);

/* The wall-clock time of one schedule step, summed over the session's runs. */
typedef struct tsl_step_timing {
  /* The dispatched kernel's name (its entry symbol in artifacts that do not
   * record the name), "copy" for a copy step or "check" for a run-time
   * check. Owned by the module, valid while the session lives. */
  const char *name;
  /* Runs that executed the step. */
  uint64_t runs;
  uint64_t total_nanoseconds;
} tsl_step_timing;

/* One timing per schedule step, in schedule order, of every run since the
 * session was created with options.profile set; *out_count is 0 for a
 * session created without it. The array belongs to the session and is
 * updated by each run: read it only between runs, on the running thread. */
TSL_API tsl_status tsl_session_get_step_timings(
    const tsl_session *session, const tsl_step_timing **out_timings,
    size_t *out_count);

/* What the simulated NPU counted for one schedule step that runs on it,
 * summed over the session's runs (docs/npu/isa.md section 4 defines each
 * count). Recorded by every session, profiled or not. */
/* When one NPU instruction ran, in cycles from the start of its step. */
typedef struct tsl_npu_instruction_span {
  uint64_t start_cycle, end_cycle;
  /* Its queue: 0 load, 1 execute, 2 store (docs/npu/isa.md section 3). */
  uint32_t queue;
  /* Its opcode's name ("LOAD", "GEMM", ...), a static string. */
  const char *opcode;
} tsl_npu_instruction_span;

typedef struct tsl_npu_step_statistics {
  /* The dispatched kernel's name, as tsl_step_timing's, owned by the
   * module. */
  const char *name;
  /* The step's index in the schedule. */
  uint32_t step;
  uint64_t runs;
  uint64_t total_cycles;
  /* Cycles the execute engine was busy, and those it waited for data. */
  uint64_t compute_cycles, stall_cycles;
  /* Cycles the array spent on GEMMs, and its multiply-accumulates; the
   * vector unit's multiply-accumulates (depthwise convolutions). */
  uint64_t array_cycles, array_macs, vector_macs;
  uint64_t dram_bytes, sram_bytes;
  double energy_pj;
  /* The configuration the artifact was compiled for. */
  uint32_t clock_mhz, array_rows, array_columns;
  /* With options.npu_trace, one span per instruction of the step's last
   * run, in stream order; else NULL and 0. */
  const tsl_npu_instruction_span *spans;
  size_t span_count;
} tsl_npu_step_statistics;

/* One record per schedule step that runs on the NPU, in schedule order;
 * *out_count is 0 for a model without any. The array belongs to the
 * session and is updated by each run: read it only between runs. */
TSL_API tsl_status tsl_session_get_npu_statistics(
    const tsl_session *session, const tsl_npu_step_statistics **out_statistics,
    size_t *out_count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_RUNTIME_H */
