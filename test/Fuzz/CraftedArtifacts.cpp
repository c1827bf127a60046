//===- CraftedArtifacts.cpp - Rewriting every structural field of an artifact -===//
//
// What an attacker who recomputes the checksum can do to a compiled
// artifact without touching its code: each scalar of the structure (format
// version, memory plan, signature dtypes and dimensions, every buffer's
// kind, index, offset and size, every entry's workgroup count, binding
// count, binding sizes and scratch, every step's executable, entry,
// bindings and copy ends) is set in turn to values around and far from its
// own. Each rewrite is loaded and, if it loads, run once on zero inputs in
// a child process; the runtime must refuse it or run it, never crash, hang
// or trip a sanitizer.
//
//   tessel-crafted-artifacts MODEL.tsl [--timeout SECONDS] [--verbose]
//
// Prints one line per rewrite that crashed or hung (all of them with
// --verbose) and a summary; exits 1 when any did.
//
//===----------------------------------------------------------------------===//

#include "runtime/schema/Artifact.h"
#include "tessel/runtime.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace sc = tessel::schema;

namespace {

/// One scalar of the structure: where it is, its value, and how to set it.
struct Field {
  std::string name;
  uint64_t value;
  uint64_t maximum;
  std::function<void(sc::Artifact &, uint64_t)> set;
};

template <typename T>
void addField(std::vector<Field> &fields, std::string name, T value,
              std::function<void(sc::Artifact &, T)> set) {
  fields.push_back({std::move(name), static_cast<uint64_t>(value),
                    static_cast<uint64_t>(std::numeric_limits<T>::max()),
                    [set](sc::Artifact &artifact, uint64_t v) { set(artifact, static_cast<T>(v)); }});
}

/// Every scalar of `artifact` that the runtime reads to find memory, code or
/// work.
std::vector<Field> structuralFields(const sc::Artifact &artifact) {
  std::vector<Field> fields;
  addField<uint32_t>(fields, "format_version", artifact.format_version(),
                     [](sc::Artifact &a, uint32_t v) { a.mutate_format_version(v); });
  addField<uint64_t>(fields, "memory_plan.arena_size", artifact.memory_plan()->arena_size(),
                     [](sc::Artifact &a, uint64_t v) { a.mutable_memory_plan()->mutate_arena_size(v); });
  addField<uint32_t>(
      fields, "memory_plan.arena_alignment", artifact.memory_plan()->arena_alignment(),
      [](sc::Artifact &a, uint32_t v) { a.mutable_memory_plan()->mutate_arena_alignment(v); });

  for (bool input : {true, false}) {
    const auto &signatures = input ? *artifact.inputs() : *artifact.outputs();
    for (uint32_t i = 0; i < signatures.size(); ++i) {
      std::string name = std::string(input ? "inputs[" : "outputs[") + std::to_string(i) + "]";
      auto signature = [input, i](sc::Artifact &a) {
        return (input ? a.mutable_inputs() : a.mutable_outputs())->GetMutableObject(i);
      };
      addField<uint8_t>(fields, name + ".dtype", signatures.Get(i)->dtype(),
                        [signature](sc::Artifact &a, uint8_t v) {
                          signature(a)->mutate_dtype(static_cast<sc::DType>(v));
                        });
      const auto &shape = *signatures.Get(i)->shape();
      for (uint32_t d = 0; d < shape.size(); ++d)
        addField<int64_t>(fields, name + ".shape[" + std::to_string(d) + "]", shape.Get(d),
                          [signature, d](sc::Artifact &a, int64_t v) {
                            signature(a)->mutable_shape()->Mutate(d, v);
                          });
    }
  }

  for (uint32_t i = 0; i < artifact.buffers()->size(); ++i) {
    const sc::Buffer &buffer = *artifact.buffers()->Get(i);
    std::string name = "buffers[" + std::to_string(i) + "]";
    auto at = [i](sc::Artifact &a) { return a.mutable_buffers()->GetMutableObject(i); };
    addField<uint8_t>(fields, name + ".kind", buffer.kind(), [at](sc::Artifact &a, uint8_t v) {
      at(a)->mutate_kind(static_cast<sc::BufferKind>(v));
    });
    addField<uint32_t>(fields, name + ".index", buffer.index(),
                       [at](sc::Artifact &a, uint32_t v) { at(a)->mutate_index(v); });
    addField<uint64_t>(fields, name + ".offset", buffer.offset(),
                       [at](sc::Artifact &a, uint64_t v) { at(a)->mutate_offset(v); });
    addField<uint64_t>(fields, name + ".size", buffer.size(),
                       [at](sc::Artifact &a, uint64_t v) { at(a)->mutate_size(v); });
  }

  for (uint32_t e = 0; e < artifact.executables()->size(); ++e) {
    const sc::Executable &executable = *artifact.executables()->Get(e);
    std::string name = "executables[" + std::to_string(e) + "]";
    auto at = [e](sc::Artifact &a) { return a.mutable_executables()->GetMutableObject(e); };
    addField<uint8_t>(fields, name + ".device", executable.device(),
                      [at](sc::Artifact &a, uint8_t v) {
                        at(a)->mutate_device(static_cast<sc::DeviceKind>(v));
                      });
    addField<uint8_t>(fields, name + ".format", executable.format(),
                      [at](sc::Artifact &a, uint8_t v) {
                        at(a)->mutate_format(static_cast<sc::ExecutableFormat>(v));
                      });
    for (uint32_t k = 0; k < executable.entries()->size(); ++k) {
      const sc::KernelEntry &entry = *executable.entries()->Get(k);
      std::string entryName = name + ".entries[" + std::to_string(k) + "]";
      auto entryAt = [at, k](sc::Artifact &a) {
        return at(a)->mutable_entries()->GetMutableObject(k);
      };
      addField<uint64_t>(
          fields, entryName + ".workgroup_count", entry.workgroup_count(),
          [entryAt](sc::Artifact &a, uint64_t v) { entryAt(a)->mutate_workgroup_count(v); });
      addField<uint32_t>(
          fields, entryName + ".binding_count", entry.binding_count(),
          [entryAt](sc::Artifact &a, uint32_t v) { entryAt(a)->mutate_binding_count(v); });
      addField<uint64_t>(
          fields, entryName + ".scratch_bytes", entry.scratch_bytes(),
          [entryAt](sc::Artifact &a, uint64_t v) { entryAt(a)->mutate_scratch_bytes(v); });
      if (const auto *sizes = entry.binding_sizes())
        for (uint32_t b = 0; b < sizes->size(); ++b)
          addField<uint64_t>(fields, entryName + ".binding_sizes[" + std::to_string(b) + "]",
                             sizes->Get(b), [entryAt, b](sc::Artifact &a, uint64_t v) {
                               entryAt(a)->mutable_binding_sizes()->Mutate(b, v);
                             });
    }
  }

  for (uint32_t s = 0; s < artifact.schedule()->size(); ++s) {
    const sc::ScheduleStep &step = *artifact.schedule()->Get(s);
    std::string name = "schedule[" + std::to_string(s) + "]";
    if (const sc::DispatchStep *dispatch = step.step_as_DispatchStep()) {
      auto at = [s](sc::Artifact &a) {
        return static_cast<sc::DispatchStep *>(
            a.mutable_schedule()->GetMutableObject(s)->mutable_step());
      };
      addField<uint32_t>(fields, name + ".executable", dispatch->executable(),
                         [at](sc::Artifact &a, uint32_t v) { at(a)->mutate_executable(v); });
      addField<uint32_t>(fields, name + ".entry", dispatch->entry(),
                         [at](sc::Artifact &a, uint32_t v) { at(a)->mutate_entry(v); });
      for (uint32_t b = 0; b < dispatch->bindings()->size(); ++b)
        addField<uint32_t>(fields, name + ".bindings[" + std::to_string(b) + "]",
                           dispatch->bindings()->Get(b), [at, b](sc::Artifact &a, uint32_t v) {
                             at(a)->mutable_bindings()->Mutate(b, v);
                           });
    } else if (const sc::CopyStep *copy = step.step_as_CopyStep()) {
      auto at = [s](sc::Artifact &a) {
        return static_cast<sc::CopyStep *>(
            a.mutable_schedule()->GetMutableObject(s)->mutable_step());
      };
      addField<uint32_t>(fields, name + ".source", copy->source(),
                         [at](sc::Artifact &a, uint32_t v) { at(a)->mutate_source(v); });
      addField<uint32_t>(fields, name + ".destination", copy->destination(),
                         [at](sc::Artifact &a, uint32_t v) { at(a)->mutate_destination(v); });
    } else if (const sc::CheckStep *check = step.step_as_CheckStep()) {
      auto at = [s](sc::Artifact &a) {
        return static_cast<sc::CheckStep *>(
            a.mutable_schedule()->GetMutableObject(s)->mutable_step());
      };
      addField<uint32_t>(fields, name + ".count", check->count(),
                         [at](sc::Artifact &a, uint32_t v) { at(a)->mutate_count(v); });
    }
  }
  return fields;
}

/// Values around and far from `field`'s own: the edges of its type, its
/// neighbours, double and half.
std::set<uint64_t> rewritesOf(const Field &field) {
  uint64_t v = field.value, max = field.maximum;
  std::set<uint64_t> values = {0, 1, 2, max, max / 2 + 1, v / 2};
  if (v > 0)
    values.insert(v - 1);
  if (v < max) {
    values.insert(v + 1);
    values.insert(v <= max / 2 ? 2 * v : max);
  }
  values.erase(v);
  return values;
}

enum Outcome : int {
  kRan = 0,
  kRefusedAtLoad = 10,
  kRefusedAtSession = 11,
  kRefusedAtRun = 12,
};

/// In the child: loads `bytes`, creates a session and runs it once on
/// zero inputs of the signature's shapes; exits with the Outcome.
[[noreturn]] void loadAndRun(const std::vector<uint8_t> &bytes) {
  tsl_module *module = nullptr;
  if (tsl_status status = tsl_module_load_memory(bytes.data(), bytes.size(), &module)) {
    tsl_status_free(status);
    std::_Exit(kRefusedAtLoad);
  }
  tsl_session_options options;
  tsl_session_options_init(&options);
  options.thread_count = 2;
  tsl_session *session = nullptr;
  if (tsl_status status = tsl_session_create(module, &options, &session)) {
    tsl_status_free(status);
    std::_Exit(kRefusedAtSession);
  }
  std::vector<tsl_tensor *> inputs(tsl_module_input_count(module));
  std::vector<std::vector<uint8_t>> data(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    tsl_tensor_info info;
    tsl_module_input_info(module, i, &info);
    uint64_t elements = 1;
    for (size_t d = 0; d < info.rank; ++d)
      elements *= static_cast<uint64_t>(info.shape[d]);
    data[i].assign(elements * tsl_dtype_size(info.dtype), 0);
    if (tsl_status status = tsl_tensor_wrap(info.dtype, info.shape, info.rank, data[i].data(),
                                            data[i].size(), &inputs[i])) {
      tsl_status_free(status);
      std::_Exit(kRefusedAtRun);
    }
  }
  std::vector<tsl_tensor *> outputs(tsl_module_output_count(module), nullptr);
  if (tsl_status status = tsl_session_run(session, inputs.data(), inputs.size(), outputs.data(),
                                          outputs.size())) {
    tsl_status_free(status);
    std::_Exit(kRefusedAtRun);
  }
  std::_Exit(kRan);
}

/// Runs `bytes` in a child; "" when it was refused or ran, else what
/// happened.
std::string tryRewrite(const std::vector<uint8_t> &bytes, unsigned timeoutSeconds,
                       int &outcome) {
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child == 0) {
    ::alarm(timeoutSeconds);
    loadAndRun(bytes);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) {
    outcome = -1;
    return WTERMSIG(status) == SIGALRM
               ? "hung (no exit within " + std::to_string(timeoutSeconds) + " s)"
               : std::string("crashed (") + strsignal(WTERMSIG(status)) + ")";
  }
  outcome = WEXITSTATUS(status);
  if (outcome == kRan || outcome == kRefusedAtLoad || outcome == kRefusedAtSession ||
      outcome == kRefusedAtRun)
    return "";
  return "exited with status " + std::to_string(outcome) + " (a sanitizer report)";
}

} // namespace

int main(int argc, char **argv) {
  std::string path;
  unsigned timeoutSeconds = 20;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    if (argument == "--timeout" && i + 1 < argc)
      timeoutSeconds = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (argument == "--verbose")
      verbose = true;
    else
      path = argument;
  }
  std::ifstream file(path, std::ios::binary);
  if (path.empty() || !file) {
    std::fprintf(stderr, "usage: %s MODEL.tsl [--timeout SECONDS] [--verbose]\n", argv[0]);
    return 2;
  }
  std::vector<uint8_t> original((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
  tsl_module *module = nullptr;
  if (tsl_status status = tsl_module_load_memory(original.data(), original.size(), &module)) {
    std::fprintf(stderr, "%s does not load: %s\n", path.c_str(), tsl_status_get_message(status));
    return 2;
  }
  tsl_module_release(module);

  std::vector<Field> fields = structuralFields(*sc::GetArtifact(original.data()));
  size_t rewrites = 0, failures = 0;
  size_t counts[4] = {0, 0, 0, 0};
  for (const Field &field : fields) {
    for (uint64_t value : rewritesOf(field)) {
      std::vector<uint8_t> bytes = original;
      field.set(*sc::GetMutableArtifact(bytes.data()), value);
      sc::sealArtifact(bytes.data(), bytes.size());
      int outcome = 0;
      std::string problem = tryRewrite(bytes, timeoutSeconds, outcome);
      ++rewrites;
      if (!problem.empty())
        ++failures;
      else
        ++counts[outcome == kRan ? 0 : outcome - kRefusedAtLoad + 1];
      if (!problem.empty() || verbose)
        std::printf("%s %s = %llu (was %llu): %s\n", problem.empty() ? "ok" : "FAILED",
                    field.name.c_str(), static_cast<unsigned long long>(value),
                    static_cast<unsigned long long>(field.value),
                    problem.empty() ? (outcome == kRan ? "ran" : "refused") : problem.c_str());
    }
  }
  std::printf("%zu fields, %zu rewrites: %zu refused at load, %zu at session creation, %zu at "
              "run time, %zu ran, %zu crashed or hung\n",
              fields.size(), rewrites, counts[1], counts[2], counts[3], counts[0], failures);
  return failures ? 1 : 0;
}
