//===- ByteLookup.h - 256-byte table lookups by byte permutes ---*- C++ -*-===//
//
// An INT8 activation that no integer op computes (sigmoid, SiLU's factor,
// GELU) runs as a lookup: its 256 possible inputs index a 256-byte table.
// Vectorized, that is a vector.gather of bytes, which LLVM scalarizes into
// one load and one insert per byte. AVX512-VBMI's VPERMI2B picks 64 bytes
// from 128 by the low 7 bits of each index byte: two of them (the table's
// two halves) and a select on bit 7 look up 64 bytes at once.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_X86_BYTELOOKUP_H
#define TESSEL_TARGETS_X86_BYTELOOKUP_H

#include "mlir/IR/PatternMatch.h"

namespace tessel::x86 {

/// Rewrites vector.gather from a memref<256xi8> at offset 0, all lanes on,
/// by indices that are zero-extended bytes, into VPERMI2B lookups.
void populateByteLookupPatterns(mlir::RewritePatternSet &patterns);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_BYTELOOKUP_H
