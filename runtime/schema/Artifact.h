//===- Artifact.h - The artifact format, for writers and readers -*- C++ -*-===//
//
// The one header the artifact writer (compiler/artifact) and the runtime's
// verifier share: the generated FlatBuffers API, the format version and the
// integrity checksum.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SCHEMA_ARTIFACT_H
#define TESSEL_RUNTIME_SCHEMA_ARTIFACT_H

#include "runtime/schema/Checksum.h"
#include "runtime/schema/tessel_generated.h"

namespace tessel::schema {

/// The Artifact.format_version this code writes and reads. Version 2 records
/// KernelEntry.binding_sizes, which the verifier requires.
inline constexpr uint32_t kFormatVersion = 2;

/// Alignment of the weights, of executables' binaries and of the arena.
inline constexpr size_t kAlignment = 64;

/// The largest arena a loader accepts; the compiler writes no artifact
/// that needs more.
inline constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 40;

} // namespace tessel::schema

#endif // TESSEL_RUNTIME_SCHEMA_ARTIFACT_H
