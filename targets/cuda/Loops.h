//===- Loops.h - Tessel kernels as buffers and loop nests --------*- C++ -*-===//
//
// The first half of the CUDA target: kernels (linalg on tensors) become
// functions on buffers whose top-level loop nests Launches.h turns into
// GPU launches.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_LOOPS_H
#define TESSEL_TARGETS_CUDA_LOOPS_H

#include "targets/Target.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace tessel::cuda {

/// Bufferizes the kernels of `kernels`, after fusing their elementwise ops
/// (the products the tensor cores take kept apart unless `precision` is
/// F32): results become
/// output bindings (after the inputs), temporaries allocations, copies
/// linalg copies, and the packs and unpacks of weights packed for the CPU
/// transposes.
mlir::LogicalResult bufferizeKernels(mlir::ModuleOp kernels, ProductPrecision precision);

/// bufferizeKernels, then the linalg ops as loops: matrix products that
/// fill the tensor cores launched on them unless `precision` is F32
/// (TensorCoreProducts.h), transposes whose result a copy moves whole
/// written where it goes (UnpackedOperands.h), the other products tiled so
/// that each thread computes a small block of outputs, every op an
/// scf.parallel over its parallel dimensions around scf.for over its
/// reductions.
mlir::LogicalResult lowerKernelsToLoops(mlir::ModuleOp kernels, ProductPrecision precision);

/// The buffer that `value` is a view of (itself when it is no view).
mlir::Value rootBuffer(mlir::Value value);

/// Whether `op` leaves every buffer as it is, only naming memory (an
/// allocation, a view, a constant), so that ops that compute may move
/// across it. A deallocation is not one of them.
bool leavesBuffersAlone(mlir::Operation *op);

/// The buffer `op` copies element by element into its one output, if it
/// does only that (else null).
mlir::Value copiedBuffer(mlir::Operation *op);

/// Whether `type` is a memref of static shape and row-major layout.
bool isPlainStatic(mlir::Type type);

/// The indices an op with indexing map `map` reads or writes of an operand
/// when its loops have the values `loops`.
llvm::SmallVector<mlir::Value> indicesAt(mlir::OpBuilder &builder, mlir::Location loc,
                                         mlir::AffineMap map, mlir::ValueRange loops);

/// The bytes a static buffer of `type` takes (a byte per element under 8
/// bits).
uint64_t bufferBytes(mlir::MemRefType type);

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_LOOPS_H
