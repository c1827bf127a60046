//===- runtime.hpp - C++ wrapper of the Tessel runtime C API ----*- C++ -*-===//
//
// Header-only RAII over runtime.h: handles release themselves, and a failed
// call throws tsl::Error carrying the status code and message.
//
//   tsl::Module module = tsl::Module::load("model.tsl");
//   tsl::Session session(module);
//   std::vector<float> pixels(1 * 3 * 224 * 224);
//   tsl::Tensor input = tsl::Tensor::wrap<float>({1, 3, 224, 224},
//                                                pixels.data(), pixels.size());
//   std::vector<tsl::Tensor> outputs = session.run({input});
//   const float *scores = outputs[0].data<float>();
//
// Ownership: Module, Session and Tensor are shared handles. Copying one
// retains the underlying object and destroying one releases it, so the
// object lives as long as its last handle. A moved-from or default-built
// handle is empty (get() == nullptr).
//
// Thread safety is that of the C objects: a Module may be used from any
// number of threads at once; a Session runs one call at a time (one Session
// per thread); a Tensor may be read from many threads, but writing its data
// while a session reads it is a race. Copying and destroying handles of one
// object from several threads is safe (the reference counts are atomic);
// assigning to one handle object from several threads is not.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_HPP
#define TESSEL_RUNTIME_HPP

#include "tessel/runtime.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tsl {

/// A C call that failed: its tsl_status_code and message.
class Error : public std::runtime_error {
public:
  Error(tsl_status_code code, const std::string &message)
      : std::runtime_error(message), statusCode(code) {}
  tsl_status_code code() const noexcept { return statusCode; }

private:
  tsl_status_code statusCode;
};

namespace detail {

/// Frees `status` and throws it as an Error; does nothing on success.
inline void check(tsl_status status) {
  if (!status)
    return;
  tsl_status_code code = tsl_status_get_code(status);
  std::string message = std::string(tsl_status_code_name(code)) + ": " +
                        tsl_status_get_message(status);
  tsl_status_free(status);
  throw Error(code, message);
}

/// A reference-counted C handle: copies retain, destruction releases.
template <typename T, void (*Retain)(T *), void (*Release)(T *)> class Handle {
public:
  Handle() = default;
  /// Takes over one reference the caller owns.
  explicit Handle(T *handle) noexcept : handle(handle) {}
  Handle(const Handle &other) noexcept : handle(other.handle) {
    if (handle)
      Retain(handle);
  }
  Handle(Handle &&other) noexcept
      : handle(std::exchange(other.handle, nullptr)) {}
  Handle &operator=(Handle other) noexcept {
    std::swap(handle, other.handle);
    return *this;
  }
  ~Handle() {
    if (handle)
      Release(handle);
  }

  T *get() const noexcept { return handle; }
  explicit operator bool() const noexcept { return handle != nullptr; }

private:
  T *handle = nullptr;
};

template <tsl_dtype D> using Is = std::integral_constant<tsl_dtype, D>;
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> : Is<TSL_F32> {};
template <> struct DTypeOf<double> : Is<TSL_F64> {};
template <> struct DTypeOf<int8_t> : Is<TSL_I8> {};
template <> struct DTypeOf<int16_t> : Is<TSL_I16> {};
template <> struct DTypeOf<int32_t> : Is<TSL_I32> {};
template <> struct DTypeOf<int64_t> : Is<TSL_I64> {};
template <> struct DTypeOf<uint8_t> : Is<TSL_U8> {};
template <> struct DTypeOf<uint16_t> : Is<TSL_U16> {};
template <> struct DTypeOf<uint32_t> : Is<TSL_U32> {};
template <> struct DTypeOf<uint64_t> : Is<TSL_U64> {};
template <> struct DTypeOf<bool> : Is<TSL_BOOL> {};

} // namespace detail

/// The tsl_dtype of a C++ element type. f16 and bf16 have no standard C++
/// type; reach their data through Tensor::data().
template <typename T>
inline constexpr tsl_dtype dtypeOf = detail::DTypeOf<T>::value;

/// A tensor of the model's signature. A quantized integer tensor has one
/// scale and zero point per tensor (quantAxis -1) or per index of quantAxis:
/// the real value of q is (q - zero point) * scale.
struct TensorInfo {
  std::string name;
  tsl_dtype dtype;
  std::vector<int64_t> shape;
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;
  int32_t quantAxis = -1;

  bool quantized() const { return !scales.empty(); }
};

class Tensor {
public:
  /// An empty handle; as an output of Session::run it asks for a new tensor.
  Tensor() = default;

  /// Zeroed, 64-byte aligned memory owned by the tensor.
  static Tensor allocate(tsl_dtype dtype, const std::vector<int64_t> &shape) {
    tsl_tensor *tensor;
    detail::check(
        tsl_tensor_allocate(dtype, shape.data(), shape.size(), &tensor));
    return adopt(tensor);
  }
  template <typename T>
  static Tensor allocate(const std::vector<int64_t> &shape) {
    return allocate(dtypeOf<T>, shape);
  }

  /// A tensor over `byteSize` bytes of caller memory, which must outlive
  /// every handle of the tensor. The runtime never frees it. Memory that is
  /// not 64-byte aligned works, at the price of a copy per run.
  static Tensor wrap(tsl_dtype dtype, const std::vector<int64_t> &shape,
                     void *data, size_t byteSize) {
    tsl_tensor *tensor;
    detail::check(tsl_tensor_wrap(dtype, shape.data(), shape.size(), data,
                                  byteSize, &tensor));
    return adopt(tensor);
  }
  template <typename T>
  static Tensor wrap(const std::vector<int64_t> &shape, T *data,
                     size_t elementCount) {
    return wrap(dtypeOf<T>, shape, data, elementCount * sizeof(T));
  }

  /// Takes over one reference to `tensor` that the caller owns.
  static Tensor adopt(tsl_tensor *tensor) noexcept { return Tensor(tensor); }

  tsl_dtype dtype() const { return tsl_tensor_dtype(get()); }
  std::vector<int64_t> shape() const {
    const int64_t *dims = tsl_tensor_shape(get());
    return std::vector<int64_t>(dims, dims + tsl_tensor_rank(get()));
  }
  size_t byteSize() const { return tsl_tensor_byte_size(get()); }
  void *data() const { return tsl_tensor_data(get()); }

  /// The data as `T`; throws Error (TSL_INVALID_ARGUMENT) when the tensor's
  /// dtype is not T's.
  template <typename T> T *data() const {
    if (dtype() != dtypeOf<T>)
      throw Error(TSL_INVALID_ARGUMENT,
                  std::string("INVALID_ARGUMENT: the tensor holds ") +
                      tsl_dtype_name(dtype()) + ", not " +
                      tsl_dtype_name(dtypeOf<T>));
    return static_cast<T *>(data());
  }
  size_t elementCount() const { return byteSize() / tsl_dtype_size(dtype()); }

  tsl_tensor *get() const noexcept { return handle.get(); }
  explicit operator bool() const noexcept { return bool(handle); }

private:
  explicit Tensor(tsl_tensor *tensor) noexcept : handle(tensor) {}

  detail::Handle<tsl_tensor, tsl_tensor_retain, tsl_tensor_release> handle;
};

/// An Ed25519 public key (tsl_public_key_read_file).
using PublicKey = std::array<uint8_t, 32>;

/// Reads the Ed25519 public key of a PEM file (`openssl pkey -pubout`).
inline PublicKey readPublicKey(const std::string &path) {
  PublicKey key;
  detail::check(tsl_public_key_read_file(path.c_str(), key.data()));
  return key;
}

struct LoadOptions {
  /// Load only artifacts signed by one of trustedKeys.
  bool requireSignature = false;
  std::vector<PublicKey> trustedKeys;
  /// Refuse artifacts needing a larger arena; 0 means the format's limit.
  uint64_t maxArenaBytes = 0;
};

class Module {
public:
  Module() = default;

  /// Reads and verifies an artifact file.
  static Module load(const std::string &path, const LoadOptions &options = {}) {
    tsl_load_options cOptions = toC(options);
    tsl_module *module;
    detail::check(tsl_module_load_file_with_options(path.c_str(), &cOptions, &module));
    return Module(module);
  }
  /// Verifies and loads an artifact from memory; the bytes are copied.
  static Module fromMemory(const void *data, size_t size, const LoadOptions &options = {}) {
    tsl_load_options cOptions = toC(options);
    tsl_module *module;
    detail::check(tsl_module_load_memory_with_options(data, size, &cOptions, &module));
    return Module(module);
  }

  size_t inputCount() const { return tsl_module_input_count(get()); }
  size_t outputCount() const { return tsl_module_output_count(get()); }
  /// The bound of the varying length (tessel-compile --max-shape); 0 when
  /// no dimension varies.
  int64_t maxLength() const { return tsl_module_max_length(get()); }
  /// The dimension of input `index` that is the varying length; -1 when it
  /// does not vary.
  int32_t inputVaryingAxis(size_t index) const {
    return tsl_module_input_varying_axis(get(), index);
  }
  int32_t outputVaryingAxis(size_t index) const {
    return tsl_module_output_varying_axis(get(), index);
  }
  TensorInfo input(size_t index) const {
    tsl_tensor_info info;
    detail::check(tsl_module_input_info(get(), index, &info));
    return toInfo(info);
  }
  TensorInfo output(size_t index) const {
    tsl_tensor_info info;
    detail::check(tsl_module_output_info(get(), index, &info));
    return toInfo(info);
  }
  std::vector<TensorInfo> inputs() const {
    std::vector<TensorInfo> infos;
    for (size_t i = 0; i < inputCount(); ++i)
      infos.push_back(input(i));
    return infos;
  }
  std::vector<TensorInfo> outputs() const {
    std::vector<TensorInfo> infos;
    for (size_t i = 0; i < outputCount(); ++i)
      infos.push_back(output(i));
    return infos;
  }
  /// Arena, weight and per-thread scratch bytes.
  tsl_memory_info memory() const {
    tsl_memory_info info;
    detail::check(tsl_module_memory_info(get(), &info));
    return info;
  }
  /// "compiler_version", "model_hash", "options" or "model_name"; "" when
  /// the artifact does not record it.
  std::string provenance(const std::string &key) const {
    return tsl_module_provenance(get(), key.c_str());
  }

  tsl_module *get() const noexcept { return handle.get(); }
  explicit operator bool() const noexcept { return bool(handle); }

private:
  explicit Module(tsl_module *module) noexcept : handle(module) {}

  static TensorInfo toInfo(const tsl_tensor_info &info) {
    return {info.name,
            info.dtype,
            std::vector<int64_t>(info.shape, info.shape + info.rank),
            std::vector<double>(info.quant_scales, info.quant_scales + info.quant_count),
            std::vector<int64_t>(info.quant_zero_points,
                                 info.quant_zero_points + info.quant_count),
            info.quant_axis};
  }

  static tsl_load_options toC(const LoadOptions &options) {
    tsl_load_options cOptions;
    tsl_load_options_init(&cOptions);
    cOptions.require_signature = options.requireSignature;
    cOptions.trusted_keys = options.trustedKeys.empty() ? nullptr : options.trustedKeys[0].data();
    cOptions.trusted_key_count = options.trustedKeys.size();
    cOptions.max_arena_bytes = options.maxArenaBytes;
    return cOptions;
  }

  detail::Handle<tsl_module, tsl_module_retain, tsl_module_release> handle;
};

struct SessionOptions {
  /// Threads that run kernels, the calling one included; 0 means one per
  /// available core.
  uint32_t threadCount = 0;
  /// "cpu", "cuda" or "npu"; empty: the GPU where the artifact has CUDA
  /// executables and one is present, else the CPU (Session::device()).
  std::string device;
  /// Time every schedule step of every run (see stepTimings()).
  bool profile = false;
  /// Keep when each NPU instruction of the last run ran (see
  /// npuStatistics()).
  bool npuTrace = false;
};

class Session {
public:
  Session() = default;
  /// A session of `module`; it keeps the module alive.
  explicit Session(const Module &module, const SessionOptions &options = {})
      : sessionModule(module) {
    tsl_session_options cOptions;
    tsl_session_options_init(&cOptions);
    cOptions.thread_count = options.threadCount;
    cOptions.device = options.device.empty() ? nullptr : options.device.c_str();
    cOptions.profile = options.profile;
    cOptions.npu_trace = options.npuTrace;
    tsl_session *session;
    detail::check(tsl_session_create(module.get(), &cOptions, &session));
    handle = SessionHandle(session);
  }

  /// Runs the model once on `inputs` (signature order) and returns new
  /// output tensors.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) {
    std::vector<Tensor> outputs(sessionModule.outputCount());
    run(inputs, outputs);
    return outputs;
  }

  /// Runs the model once, writing into `outputs` (one per model output) in
  /// place; empty entries receive new tensors. On failure empty entries
  /// stay empty.
  void run(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs) {
    std::vector<tsl_tensor *> inputHandles;
    inputHandles.reserve(inputs.size());
    for (const Tensor &input : inputs)
      inputHandles.push_back(input.get());
    std::vector<tsl_tensor *> outputHandles;
    outputHandles.reserve(outputs.size());
    for (const Tensor &output : outputs)
      outputHandles.push_back(output.get());
    detail::check(tsl_session_run(get(), inputHandles.data(),
                                  inputHandles.size(), outputHandles.data(),
                                  outputHandles.size()));
    for (size_t o = 0; o < outputs.size(); ++o)
      if (!outputs[o])
        outputs[o] = Tensor::adopt(outputHandles[o]);
  }

  /// Per-step timings summed over the runs so far, in schedule order; empty
  /// unless the session was created with SessionOptions::profile.
  std::vector<tsl_step_timing> stepTimings() const {
    const tsl_step_timing *timings;
    size_t count;
    detail::check(tsl_session_get_step_timings(get(), &timings, &count));
    return std::vector<tsl_step_timing>(timings, timings + count);
  }

  /// What the simulated NPU counted for each of its steps, summed over the
  /// runs so far; empty for a model without NPU steps.
  std::vector<tsl_npu_step_statistics> npuStatistics() const {
    const tsl_npu_step_statistics *statistics;
    size_t count;
    detail::check(tsl_session_get_npu_statistics(get(), &statistics, &count));
    return std::vector<tsl_npu_step_statistics>(statistics, statistics + count);
  }

  /// The device the session runs on: "cpu", "cuda" or "npu".
  std::string device() const { return tsl_session_device(get()); }

  tsl_session *get() const noexcept { return handle.get(); }
  explicit operator bool() const noexcept { return bool(handle); }

private:
  using SessionHandle =
      detail::Handle<tsl_session, tsl_session_retain, tsl_session_release>;

  /// For the output count; the C session holds its own reference.
  Module sessionModule;
  SessionHandle handle;
};

} // namespace tsl

#endif // TESSEL_RUNTIME_HPP
