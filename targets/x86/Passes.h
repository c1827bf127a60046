//===- Passes.h - x86 code generation passes --------------------*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_PASSES_H
#define TESSEL_TARGETS_X86_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace tessel::x86 {

#define GEN_PASS_DECL
#include "targets/x86/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "targets/x86/Passes.h.inc"

/// Attributes the passes leave on kernel functions for the target to read.
inline constexpr llvm::StringLiteral kWorkgroupCountAttr = "tessel.workgroup_count";
inline constexpr llvm::StringLiteral kScratchBytesAttr = "tessel.scratch_bytes";
/// On a kernel whose workgroups run in rows along its result's length axis
/// (tessel.length_axis): the positions of the varying length that each row
/// computes, and the workgroups of a row (workgroup w is in row
/// w / row_workgroups). A run at a shorter length may run only the rows
/// that reach below it.
inline constexpr llvm::StringLiteral kLengthRowPositionsAttr = "tessel.length_row_positions";
inline constexpr llvm::StringLiteral kLengthRowWorkgroupsAttr = "tessel.length_row_workgroups";
/// On a workgroup forall of tessel-x86-tile-and-fuse: its loop along the
/// kernel's length axis and its number of loops, [loop, loops], so that a
/// forall that lost a loop since is not read wrongly.
inline constexpr llvm::StringLiteral kLengthLoopAttr = "tessel.length_loop";
/// The byte size of each binding, in argument order (DenseI64ArrayAttr);
/// on an exported entry, it also marks it as one.
inline constexpr llvm::StringLiteral kBindingBytesAttr = "tessel.binding_bytes";

/// Suffix of the exported entry of each kernel.
inline constexpr llvm::StringLiteral kEntrySuffix = "_entry";

struct X86CodegenOptions : public mlir::PassPipelineOptions<X86CodegenOptions> {
  Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("f32 lanes of the widest vector register (8 for AVX2, "
                     "16 for AVX-512)"),
      llvm::cl::init(16)};
  Option<bool> bytePermutes{
      *this, "byte-permutes",
      llvm::cl::desc("The CPU permutes bytes across 64-byte vectors (AVX512-VBMI)"),
      llvm::cl::init(false)};
  Option<bool> fusedMultiplyAdd{
      *this, "fma",
      llvm::cl::desc("The CPU has FMA: rounded quotients by constants take FMAs "
                     "instead of divisions (tessel-x86-rounded-quotients)"),
      llvm::cl::init(false)};
};

/// Kernels on tensors (linalg), their register-blocked ops carrying the
/// lowering configs of tessel-x86-choose-lowering -> LLVM dialect with
/// exported entries.
void buildX86CodegenPipeline(mlir::OpPassManager &pm,
                             const X86CodegenOptions &options);

void registerX86Pipelines();

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_PASSES_H
