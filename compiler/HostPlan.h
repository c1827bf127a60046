//===- HostPlan.h - Host schedule, memory plan and weights ------*- C++ -*-===//
//
// The target-independent part of an artifact, read off the model's entry
// function once its kernels are outlined: which kernel runs when and on
// which buffers, where every intermediate lives in the arena, and the bytes
// of every constant.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_HOSTPLAN_H
#define TESSEL_COMPILER_HOSTPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tessel {

enum class BufferKind : uint8_t { Input = 0, Output = 1, Constant = 2, Arena = 3 };

struct PlannedBuffer {
  BufferKind kind;
  uint32_t index = 0;  // input/output position
  uint64_t offset = 0; // in the weights (Constant) or the arena (Arena)
  uint64_t size = 0;   // bytes
};

struct DispatchPlan {
  std::string kernel;             // the kernel function's name
  std::vector<uint32_t> bindings; // buffers: the call's operands, then result
};

struct CopyPlan {
  uint32_t source, destination;
};

/// Ends the run with an error when the int64 in `count` is not zero.
struct CheckPlan {
  uint32_t count;
  std::string node;    // the ONNX node the error names
  std::string problem; // what the count counts
};

using HostStep = std::variant<DispatchPlan, CopyPlan, CheckPlan>;

struct HostPlan {
  std::vector<PlannedBuffer> buffers;
  std::vector<HostStep> steps;
  std::vector<uint8_t> weights; // each constant 64-byte aligned
  uint64_t arenaSize = 0;
};

/// Plans the entry function `main`, whose body holds only constants,
/// reshapes (views), calls to kernels, run-time checks and the return. Intermediates get
/// arena offsets by liveness, so buffers whose lifetimes do not overlap
/// share memory. Results are written by their kernels straight into the
/// caller's output tensors unless they are inputs or constants, or appear
/// twice, in which case a copy step fills the output.
mlir::FailureOr<HostPlan> planHost(mlir::func::FuncOp main);

} // namespace tessel

#endif // TESSEL_COMPILER_HOSTPLAN_H
