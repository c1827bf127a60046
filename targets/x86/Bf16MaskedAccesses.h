//===- Bf16MaskedAccesses.h - Masked bf16 loads and stores as i16 -*- C++ -*-===//
//
// Without AVX512-BF16, LLVM 22's x86 backend legalizes a masked load or
// store of bf16 vectors (the partial groups and tails of --precision bf16
// kernels) through f32, converting each lane with a call to compiler-rt's
// __truncsfbf2, which kernels do not link. A load or store moves bits, so
// before code generation such accesses become the same accesses of i16
// vectors, bitcast.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_BF16MASKEDACCESSES_H
#define TESSEL_TARGETS_X86_BF16MASKEDACCESSES_H

#include "llvm/IR/Module.h"

namespace tessel::x86 {

/// Replaces every `llvm.masked.load` and `llvm.masked.store` of bf16
/// vectors in `module` by its i16 counterpart.
void accessBf16MasksAsIntegers(llvm::Module &module);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_BF16MASKEDACCESSES_H
