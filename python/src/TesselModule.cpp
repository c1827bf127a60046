//===- TesselModule.cpp - tessel._tessel: the nanobind extension ----------===//
//
// Binds the runtime's C API (modules, sessions, numpy tensors) and the
// compiler (through Compile.h). Python-facing conveniences that need no
// speed (paths, bytes, ModelProto, atomic writes) live in tessel/__init__.py.
//
// Inputs are passed to the runtime without a copy when they are C-contiguous
// arrays of the signature's dtype; outputs are numpy arrays over the
// runtime's own tensors, which they keep alive. The GIL is released while a
// model runs or compiles.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"

#include <tessel/runtime.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <mutex>
#include <optional>
#include <stdexcept>

namespace nb = nanobind;

namespace {

/// A runtime error: becomes tessel.TesselError with `code` set.
struct StatusError : std::runtime_error {
  StatusError(std::string code, const std::string &message)
      : std::runtime_error(message), code(std::move(code)) {}
  std::string code;
};

/// Throws for a failed call, freeing its status.
void check(tsl_status status) {
  if (!status)
    return;
  std::string code = tsl_status_code_name(tsl_status_get_code(status));
  std::string message = code + ": " + tsl_status_get_message(status);
  tsl_status_free(status);
  throw StatusError(code, message);
}

/// numpy's view of each runtime dtype. Types numpy lacks travel as their
/// storage: bfloat16 as uint16 (as ONNX stores it), the 8-bit floats and
/// 4- and 2-bit types one element per byte.
nb::dlpack::dtype numpyDtype(tsl_dtype dtype) {
  using Code = nb::dlpack::dtype_code;
  auto make = [](Code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (dtype) {
  case TSL_F32:
    return make(Code::Float, 32);
  case TSL_F64:
    return make(Code::Float, 64);
  case TSL_F16:
    return make(Code::Float, 16);
  case TSL_BF16:
    return make(Code::UInt, 16);
  case TSL_I8:
  case TSL_I4:
  case TSL_I2:
    return make(Code::Int, 8);
  case TSL_I16:
    return make(Code::Int, 16);
  case TSL_I32:
    return make(Code::Int, 32);
  case TSL_I64:
    return make(Code::Int, 64);
  case TSL_U16:
    return make(Code::UInt, 16);
  case TSL_U32:
    return make(Code::UInt, 32);
  case TSL_U64:
    return make(Code::UInt, 64);
  case TSL_BOOL:
    return make(Code::Bool, 8);
  default:
    return make(Code::UInt, 8); // u8, the 8-bit floats, FP4, u4, u2
  }
}

/// "float32", "uint16", ...: numpy's name of an array dtype.
std::string dtypeName(nb::dlpack::dtype d) {
  using Code = nb::dlpack::dtype_code;
  std::string bits = std::to_string(d.bits);
  switch (static_cast<Code>(d.code)) {
  case Code::Float:
    return "float" + bits;
  case Code::Bool:
    return "bool";
  case Code::Int:
    return "int" + bits;
  case Code::UInt:
    return "uint" + bits;
  case Code::Complex:
    return "complex" + bits;
  default:
    return "an element type of " + bits + " bits";
  }
}

std::string numpyName(tsl_dtype dtype) { return dtypeName(numpyDtype(dtype)); }

/// One tensor of a model's signature, as Python sees it.
struct TensorInfo {
  std::string name;
  /// numpy.dtype of the arrays that carry it.
  nb::object dtype;
  /// The runtime's name of the element type ("f32", "bf16", "u4").
  std::string elementType;
  std::vector<int64_t> shape;
  /// Quantized integer tensors: real = (q - zero_point) * scale, per tensor
  /// (axis None) or per index of `quantization_axis`.
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;
  std::optional<int32_t> quantizationAxis;
  /// The dimension that is the varying length (max_shapes); None when none.
  std::optional<int32_t> varyingAxis;
  tsl_dtype runtimeDtype;
};

TensorInfo toInfo(const tsl_tensor_info &info) {
  TensorInfo result;
  result.name = info.name;
  result.dtype = nb::module_::import_("numpy").attr("dtype")(numpyName(info.dtype));
  result.elementType = tsl_dtype_name(info.dtype);
  result.shape.assign(info.shape, info.shape + info.rank);
  result.scales.assign(info.quant_scales, info.quant_scales + info.quant_count);
  result.zeroPoints.assign(info.quant_zero_points, info.quant_zero_points + info.quant_count);
  if (info.quant_count > 1)
    result.quantizationAxis = info.quant_axis;
  result.runtimeDtype = info.dtype;
  return result;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// A loaded artifact (tsl_module), immutable and shareable across threads.
class Module {
public:
  static Module loadFile(const std::string &path, const std::vector<nb::bytes> &trustedKeys) {
    tsl_module *module;
    std::string keys = joinKeys(trustedKeys);
    tsl_load_options options = loadOptions(keys);
    check(tsl_module_load_file_with_options(path.c_str(), &options, &module));
    return Module(module);
  }
  static Module loadMemory(nb::bytes data, const std::vector<nb::bytes> &trustedKeys) {
    tsl_module *module;
    std::string keys = joinKeys(trustedKeys);
    tsl_load_options options = loadOptions(keys);
    check(tsl_module_load_memory_with_options(data.c_str(), data.size(), &options, &module));
    return Module(module);
  }

  Module(const Module &other) : module(other.module), inputs(other.inputs), outputs(other.outputs) {
    tsl_module_retain(module);
  }
  Module &operator=(const Module &) = delete;
  ~Module() { tsl_module_release(module); }

  tsl_module *get() const { return module; }
  const std::vector<TensorInfo> &inputInfos() const { return inputs; }
  const std::vector<TensorInfo> &outputInfos() const { return outputs; }
  int64_t maxLength() const { return tsl_module_max_length(module); }

  std::map<std::string, std::string> provenance() const {
    std::map<std::string, std::string> result;
    for (const char *key : {"compiler_version", "model_hash", "options", "model_name"})
      result[key] = tsl_module_provenance(module, key);
    return result;
  }
  std::map<std::string, uint64_t> memory() const {
    tsl_memory_info info;
    check(tsl_module_memory_info(module, &info));
    return {{"arena_bytes", info.arena_bytes},
            {"weight_bytes", info.weight_bytes},
            {"scratch_bytes_per_thread", info.scratch_bytes_per_thread}};
  }

private:
  explicit Module(tsl_module *module) : module(module) {
    for (size_t i = 0; i < tsl_module_input_count(module); ++i) {
      tsl_tensor_info info;
      check(tsl_module_input_info(module, i, &info));
      inputs.push_back(toInfo(info));
      if (int32_t axis = tsl_module_input_varying_axis(module, i); axis >= 0)
        inputs.back().varyingAxis = axis;
    }
    for (size_t i = 0; i < tsl_module_output_count(module); ++i) {
      tsl_tensor_info info;
      check(tsl_module_output_info(module, i, &info));
      outputs.push_back(toInfo(info));
      if (int32_t axis = tsl_module_output_varying_axis(module, i); axis >= 0)
        outputs.back().varyingAxis = axis;
    }
  }
  static std::string joinKeys(const std::vector<nb::bytes> &keys) {
    std::string joined;
    for (const nb::bytes &key : keys) {
      if (key.size() != 32)
        throw nb::value_error("a trusted key is 32 bytes (read_public_key reads one)");
      joined.append(key.c_str(), key.size());
    }
    return joined;
  }
  static tsl_load_options loadOptions(const std::string &keys) {
    tsl_load_options options;
    tsl_load_options_init(&options);
    options.require_signature = !keys.empty();
    options.trusted_keys = reinterpret_cast<const uint8_t *>(keys.data());
    options.trusted_key_count = keys.size() / 32;
    return options;
  }

  tsl_module *module;
  std::vector<TensorInfo> inputs, outputs;
};

/// Releases a runtime tensor when the numpy array over it goes.
nb::object toNumpy(tsl_tensor *tensor, tsl_dtype dtype) {
  nb::capsule owner(tensor, [](void *pointer) noexcept {
    tsl_tensor_release(static_cast<tsl_tensor *>(pointer));
  });
  size_t rank = tsl_tensor_rank(tensor);
  const int64_t *dims = tsl_tensor_shape(tensor);
  std::vector<size_t> shape(dims, dims + rank);
  return nb::ndarray<nb::numpy>(tsl_tensor_data(tensor), rank, shape.data(), owner, nullptr,
                                numpyDtype(dtype))
      .cast();
}

/// A feed as the runtime reads it (read-only arrays are fine: the runtime
/// never writes an input).
using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// What a thread needs to run a module (tsl_session). One run at a time:
/// a second thread calling run waits for the first.
class Session {
public:
  Session(const Module &module, uint32_t threads, bool profile, const std::optional<std::string> &device)
      : module(module) {
    tsl_session_options options;
    tsl_session_options_init(&options);
    options.thread_count = threads;
    options.profile = profile;
    options.device = device ? device->c_str() : nullptr;
    check(tsl_session_create(module.get(), &options, &session));
  }
  Session(const Session &) = delete;
  ~Session() { tsl_session_release(session); }

  /// run(feeds) -> {name: array}; run(None | [names], feeds) -> [arrays].
  nb::object run(nb::handle first, nb::handle second) {
    bool listForm = !second.is_none();
    nb::handle feeds = listForm ? second : first;
    if (!nb::isinstance<nb::dict>(feeds))
      throw nb::type_error("feeds must be a dict of input name -> numpy array");
    std::vector<HostArray> arrays = gatherInputs(nb::borrow<nb::dict>(feeds));
    std::vector<tsl_tensor *> inputs, outputs(module.outputInfos().size(), nullptr);
    struct Release {
      std::vector<tsl_tensor *> &tensors;
      ~Release() {
        for (tsl_tensor *tensor : tensors)
          tsl_tensor_release(tensor);
      }
    } releaseInputs{inputs}, releaseOutputs{outputs};
    for (size_t i = 0; i < arrays.size(); ++i) {
      const TensorInfo &info = module.inputInfos()[i];
      std::vector<int64_t> shape(arrays[i].shape_ptr(), arrays[i].shape_ptr() + arrays[i].ndim());
      tsl_tensor *tensor;
      check(tsl_tensor_wrap(info.runtimeDtype, shape.data(), shape.size(),
                            const_cast<void *>(arrays[i].data()), arrays[i].nbytes(), &tensor));
      inputs.push_back(tensor);
    }
    tsl_status status;
    {
      nb::gil_scoped_release released;
      std::lock_guard<std::mutex> lock(running);
      status =
          tsl_session_run(session, inputs.data(), inputs.size(), outputs.data(), outputs.size());
    }
    check(status);
    std::vector<nb::object> results;
    for (size_t o = 0; o < outputs.size(); ++o) {
      results.push_back(toNumpy(outputs[o], module.outputInfos()[o].runtimeDtype));
      outputs[o] = nullptr; // the array owns it now
    }
    return listForm ? selectOutputs(results, first) : namedOutputs(results);
  }

  std::string device() const { return tsl_session_device(session); }

  /// [(kernel, runs, total nanoseconds)] per schedule step.
  std::vector<std::tuple<std::string, uint64_t, uint64_t>> stepTimings() const {
    const tsl_step_timing *timings;
    size_t count;
    check(tsl_session_get_step_timings(session, &timings, &count));
    std::vector<std::tuple<std::string, uint64_t, uint64_t>> result;
    for (size_t i = 0; i < count; ++i)
      result.emplace_back(timings[i].name, timings[i].runs, timings[i].total_nanoseconds);
    return result;
  }

private:
  /// The feeds in signature order, each C-contiguous on the CPU (copied
  /// only when it is not already) and of the signature's dtype.
  std::vector<HostArray> gatherInputs(nb::dict feeds) const {
    const std::vector<TensorInfo> &infos = module.inputInfos();
    for (auto [key, value] : feeds) {
      bool known = false;
      for (const TensorInfo &info : infos)
        known |= nb::isinstance<nb::str>(key) && info.name == nb::cast<std::string>(key);
      if (!known)
        throw StatusError("INVALID_ARGUMENT",
                          std::string("INVALID_ARGUMENT: the model has no input ") +
                              nb::repr(key).c_str() + " (inputs: " + inputNames() + ")");
    }
    std::vector<HostArray> arrays;
    for (const TensorInfo &info : infos) {
      nb::object value = feeds.get(info.name.c_str(), nb::none());
      if (value.is_none())
        throw StatusError("INVALID_ARGUMENT",
                          "INVALID_ARGUMENT: input '" + info.name + "' is missing");
      HostArray array;
      if (!nb::try_cast(value, array, /*convert=*/true))
        throw nb::type_error(("input '" + info.name + "' must be a numpy array").c_str());
      if (array.dtype() != numpyDtype(info.runtimeDtype))
        throw StatusError("INVALID_ARGUMENT", "INVALID_ARGUMENT: input '" + info.name +
                                                  "' must be " + numpyName(info.runtimeDtype) +
                                                  ", not " + dtypeName(array.dtype()));
      arrays.push_back(std::move(array));
    }
    return arrays;
  }

  std::string inputNames() const {
    std::string names;
    for (const TensorInfo &info : module.inputInfos())
      names += (names.empty() ? "'" : ", '") + info.name + "'";
    return names;
  }

  nb::object namedOutputs(const std::vector<nb::object> &results) const {
    nb::dict named;
    for (size_t o = 0; o < results.size(); ++o)
      named[module.outputInfos()[o].name.c_str()] = results[o];
    return named;
  }

  nb::object selectOutputs(const std::vector<nb::object> &results, nb::handle names) const {
    nb::list selected;
    if (names.is_none()) {
      for (const nb::object &result : results)
        selected.append(result);
      return selected;
    }
    for (nb::handle name : names) {
      std::string wanted = nb::cast<std::string>(name);
      size_t o = 0;
      while (o < results.size() && module.outputInfos()[o].name != wanted)
        ++o;
      if (o == results.size())
        throw StatusError("INVALID_ARGUMENT",
                          "INVALID_ARGUMENT: the model has no output '" + wanted + "'");
      selected.append(results[o]);
    }
    return selected;
  }

  Module module;
  tsl_session *session = nullptr;
  std::mutex running;
};

/// tessel-compile's work; the GIL is released meanwhile and taken back only
/// to report progress.
nb::tuple compile(tessel::python::CompileRequest request, nb::object progress) {
  std::optional<nb::python_error> progressError;
  if (!progress.is_none())
    request.progress = [&](const std::string &stage) {
      nb::gil_scoped_acquire acquired;
      if (progressError)
        return;
      try {
        progress(stage);
      } catch (nb::python_error &error) {
        progressError.emplace(std::move(error));
      }
    };
  tessel::python::CompileResult result;
  {
    nb::gil_scoped_release released;
    result = tessel::python::compile(request);
  }
  if (progressError)
    throw std::move(*progressError);
  if (!result.error.empty())
    throw StatusError("COMPILE_FAILED", result.error);
  return nb::make_tuple(nb::bytes(result.output.data(), result.output.size()),
                        result.quantizationReport);
}

nb::bytes readPublicKey(const std::string &path) {
  uint8_t key[32];
  check(tsl_public_key_read_file(path.c_str(), key));
  return nb::bytes(reinterpret_cast<const char *>(key), sizeof key);
}

} // namespace

NB_MODULE(_tessel, m) {
  m.doc() = "Tessel's compiler and runtime (use the `tessel` package, not this module)";

  // Raised with `code` set: the runtime's status name, or COMPILE_FAILED.
  static nb::object tesselError =
      nb::steal(PyErr_NewExceptionWithDoc("tessel._tessel.TesselError",
                                          "An error of Tessel's compiler or runtime; `code` "
                                          "names its kind (INVALID_ARGUMENT, COMPILE_FAILED, ...)",
                                          PyExc_RuntimeError, nullptr));
  m.attr("TesselError") = tesselError;
  nb::register_exception_translator([](const std::exception_ptr &thrown, void *) {
    try {
      std::rethrow_exception(thrown);
    } catch (const StatusError &error) {
      nb::object instance = tesselError(error.what());
      instance.attr("code") = error.code;
      PyErr_SetObject(tesselError.ptr(), instance.ptr());
    }
  });

  nb::class_<TensorInfo>(m, "TensorInfo", "A tensor of a model's signature")
      .def_ro("name", &TensorInfo::name)
      .def_ro("dtype", &TensorInfo::dtype, "numpy.dtype of the arrays that carry it")
      .def_ro("element_type", &TensorInfo::elementType,
              "The runtime's element type: 'f32', 'bf16' (carried as uint16), 'u4', ...")
      .def_prop_ro(
          "shape",
          [](const TensorInfo &info) {
            nb::list dims;
            for (int64_t dim : info.shape) {
              if (dim < 0)
                dims.append(nb::none());
              else
                dims.append(dim);
            }
            return nb::tuple(dims);
          },
          "The dimensions; None for the batch of a model compiled with dynamic_batch, "
          "or for the varying length of one compiled with max_shapes")
      .def_ro("scales", &TensorInfo::scales, "Quantization scales; empty when not quantized")
      .def_ro("zero_points", &TensorInfo::zeroPoints)
      .def_ro("quantization_axis", &TensorInfo::quantizationAxis)
      .def_ro("varying_axis", &TensorInfo::varyingAxis,
              "The dimension that is the varying length (max_shapes); None when it does "
              "not vary. Another None dimension is the batch (dynamic_batch)")
      .def("__repr__", [](const TensorInfo &info) {
        return "TensorInfo('" + info.name + "', " + numpyName(info.runtimeDtype) + ", " +
               formatShape(info.shape) + ")";
      });

  nb::class_<Module>(m, "Module", "A verified, loaded artifact; shareable across threads")
      .def_static("load_file", &Module::loadFile, nb::arg("path"),
                  nb::arg("trusted_keys") = std::vector<nb::bytes>{})
      .def_static("load_memory", &Module::loadMemory, nb::arg("data"),
                  nb::arg("trusted_keys") = std::vector<nb::bytes>{})
      .def_prop_ro("inputs", &Module::inputInfos)
      .def_prop_ro("outputs", &Module::outputInfos)
      .def_prop_ro("max_length", &Module::maxLength,
                   "The bound of the varying length (compiled with max_shapes): the None "
                   "dimensions but the batch's (dimension 0 of a model compiled with "
                   "dynamic_batch too) take any size up to it, the same in every such tensor; "
                   "0 when no dimension varies")
      .def_prop_ro("provenance", &Module::provenance)
      .def_prop_ro("memory", &Module::memory)
      .def(
          "session",
          [](const Module &module, uint32_t threads, bool profile,
             const std::optional<std::string> &device) {
            return new Session(module, threads, profile, device);
          },
          nb::arg("threads") = 0, nb::arg("profile") = false, nb::arg("device").none() = nb::none(),
          "A session for one thread's runs; threads=0 uses one per core. device: 'cpu', "
          "'cuda' or 'npu'; None picks the GPU where the module has CUDA code and one is "
          "present, else the CPU")
      .def("__repr__", [](const Module &module) {
        return "<tessel.Module " + std::string(tsl_module_provenance(module.get(), "model_name")) +
               ": " + std::to_string(module.inputInfos().size()) + " inputs, " +
               std::to_string(module.outputInfos().size()) + " outputs>";
      });

  nb::class_<Session>(m, "Session", "Runs a module, one call at a time")
      .def("run", &Session::run, nb::arg("feeds_or_output_names").none(),
           nb::arg("feeds").none() = nb::none(),
           "run({name: array}) -> {name: array}; run(None or [names], {name: array}) -> "
           "[array], as onnxruntime's InferenceSession.run")
      .def_prop_ro("device", &Session::device, "The device the session runs on")
      .def("step_timings", &Session::stepTimings,
           "[(kernel, runs, total nanoseconds)] per schedule step (profile=True)");

  nb::class_<tessel::python::CompileRequest>(m, "CompileRequest")
      .def(nb::init<>())
      .def_rw("model_path", &tessel::python::CompileRequest::modelPath)
      .def_rw("target", &tessel::python::CompileRequest::target)
      .def_rw("npu_config", &tessel::python::CompileRequest::npuConfig)
      .def_rw("cpu", &tessel::python::CompileRequest::cpu)
      .def_rw("cuda_architectures", &tessel::python::CompileRequest::cudaArchitectures)
      .def_rw("cuda_cubins", &tessel::python::CompileRequest::cudaCubins)
      .def_rw("signing_key", &tessel::python::CompileRequest::signingKey)
      .def_rw("opt_level", &tessel::python::CompileRequest::optLevel)
      .def_rw("emit", &tessel::python::CompileRequest::emit)
      .def_rw("shapes", &tessel::python::CompileRequest::shapes)
      .def_rw("frozen_inputs", &tessel::python::CompileRequest::frozenInputs)
      .def_rw("dynamic_batch", &tessel::python::CompileRequest::dynamicBatch)
      .def_rw("max_shapes", &tessel::python::CompileRequest::maxShapes)
      .def_rw("quantize", &tessel::python::CompileRequest::quantize)
      .def_rw("calibration", &tessel::python::CompileRequest::calibration)
      .def_rw("calibration_method", &tessel::python::CompileRequest::calibrationMethod)
      .def_rw("activations", &tessel::python::CompileRequest::activations)
      .def_rw("min_sqnr", &tessel::python::CompileRequest::minSqnrDb)
      .def_rw("precision", &tessel::python::CompileRequest::precision)
      .def_rw("calibration_samples", &tessel::python::CompileRequest::calibrationSamples);
  m.def("compile", &compile, nb::arg("request"), nb::arg("progress") = nb::none(),
        "Compiles request.model_path; returns (output bytes, quantization report JSON)");
  m.def("available_targets", &tessel::python::availableTargets);
  m.def("emit_kinds", &tessel::python::emitKindNames);
  m.def("read_public_key", &readPublicKey, nb::arg("path"),
        "The 32-byte Ed25519 public key of a PEM file");
  m.attr("__version__") = tessel::python::compilerVersion();
}
