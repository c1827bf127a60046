//===- RoundingConversions.h - roundeven then fptosi as one lrint -*- C++ -*-===//
//
// Requantization rounds a scaled accumulator half to even, then converts it
// to an integer: `fptosi(roundeven(x))`. LLVM emits that as two
// instructions per vector (vrndscalepd, then the truncating vcvttpd2dq),
// while x86's plain conversion (vcvtpd2dq) rounds by MXCSR's mode, which
// is round-to-nearest-even in every thread that runs kernels (the CPU
// runtime sets it around each dispatch). `llvm.lrint` is that conversion.
// In a 16-deep pointwise convolution the epilogue outweighs the dot
// products, so the saved instruction shows (docs/quantization.md).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_ROUNDINGCONVERSIONS_H
#define TESSEL_TARGETS_X86_ROUNDINGCONVERSIONS_H

#include "llvm/IR/Module.h"

namespace tessel::x86 {

/// Replaces every `fptosi(roundeven(x))` of f32 or f64 to i32 or i64
/// (scalars or vectors) in `module` by `llvm.lrint(x)`.
void convertRoundEvenWithLrint(llvm::Module &module);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_ROUNDINGCONVERSIONS_H
