//===- NvvmArithmetic.h - NVVM's arithmetic intrinsics as host LLVM IR -*- C++ -*-===//
//
// libdevice, which the CUDA kernels link for the math the NVPTX backend has
// no instruction for (f64 exponentials, logarithms, fmod), is written with
// NVVM intrinsics for PTX's arithmetic instructions: d2i.hi to read a
// double's high word, fma.rn.d, rcp.approx.ftz.d as the seed of a Newton
// iteration. Each becomes the host LLVM IR that computes the same:
//   - exactly, for the round-to-nearest instructions (.rn) and the bit
//     moves;
//   - exactly too for the approximate ones (.approx), which PTX defines
//     only within an error bound: the exact value is inside it;
//   - with subnormal operands and results flushed to zero for the .ftz
//     forms;
//   - in the host FPU's rounding mode of the same name for the
//     directed-rounding forms (.rm, .rp, .rz: fmodf's fma.rz.f), by a call
//     into the emulator.
// Any other stops the rewriting with its name.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TEST_CUDA_EMULATOR_NVVMARITHMETIC_H
#define TESSEL_TEST_CUDA_EMULATOR_NVVMARITHMETIC_H

#include "llvm/IR/IRBuilder.h"

namespace tessel::cuda::emulator {

/// The host IR for the call of the arithmetic intrinsic `name` (without
/// its `llvm.nvvm.` prefix) on `operands`, built at `builder`'s point, or
/// null where the emulator does not model it.
llvm::Value *hostArithmetic(llvm::IRBuilder<> &builder, llvm::StringRef name,
                            llvm::ArrayRef<llvm::Value *> operands, llvm::Type *result);

} // namespace tessel::cuda::emulator

#endif // TESSEL_TEST_CUDA_EMULATOR_NVVMARITHMETIC_H
