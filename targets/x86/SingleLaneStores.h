//===- SingleLaneStores.h - Masked stores of one lane as scalars -*- C++ -*-===//
//
// LLVM 22's x86 backend miscompiles a masked store of one constant lane
// whose value is an integer truncation (`trunc <16 x i32> to <16 x i8>`,
// then `llvm.masked.store` with mask <1, 0, ...>) on AVX-512: the store is
// narrowed to a scalar store of the untruncated element: 4 bytes written
// where 1 was meant, the 3 after it clobbered. Vectorized tails one element wide produce
// exactly this pattern (the requantizing epilogue of a product whose width
// leaves one column), so before code generation such stores become the
// scalar store they mean. test/Target/X86/single-lane-masked-store.onnxtxt
// shows the miscompile and the rewrite.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_SINGLELANESTORES_H
#define TESSEL_TARGETS_X86_SINGLELANESTORES_H

#include "llvm/IR/Module.h"

namespace tessel::x86 {

/// Replaces every `llvm.masked.store` in `module` whose mask is a constant
/// with exactly one set lane by an extract of that lane and a scalar store.
void storeSingleLanesAsScalars(llvm::Module &module);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_SINGLELANESTORES_H
