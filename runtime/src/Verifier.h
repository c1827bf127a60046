//===- Verifier.h - Checking an artifact before anything runs ---*- C++ -*-===//
//
// A file is untrusted input until it passes here. Verification checks, in
// order: the file identifier; the FlatBuffers structure (every offset and
// length inside the buffer); the format version; the integrity checksum
// (corruption that keeps the structure valid); and every index, offset and
// size the runtime will later use without checking again. Each failure names
// the field and the index at fault.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_VERIFIER_H
#define TESSEL_RUNTIME_SRC_VERIFIER_H

#include "runtime/schema/Artifact.h"
#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>

namespace tessel::runtime {

/// Refuses sizes no artifact can have (empty, shorter than a FlatBuffers
/// header, larger than a FlatBuffer can address) before any memory is
/// spent on them. `what` names the input ("'model.tsl'", "the buffer").
tsl_status checkArtifactSize(uint64_t size, const char *what);

/// Verifies the `size` bytes at `data`, which must be 64-byte aligned so
/// that aligned offsets in the file are aligned in memory, and refuses an
/// arena larger than `maxArenaBytes`. On success sets `artifact` to the
/// root table.
tsl_status verifyArtifact(const uint8_t *data, size_t size, uint64_t maxArenaBytes,
                          const schema::Artifact *&artifact);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_VERIFIER_H
