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

/// The Artifact.format_version this code writes. Version 2 records
/// KernelEntry.binding_sizes, which the verifier requires; version 3 adds
/// CheckStep, which an older runtime would skip.
inline constexpr uint32_t kFormatVersion = 3;

/// The oldest format_version this code reads: a version 2 artifact has no
/// check steps, and is otherwise read alike.
inline constexpr uint32_t kOldestFormatVersion = 2;

/// Alignment of the weights, of executables' binaries and of the arena.
inline constexpr size_t kAlignment = 64;

/// The largest arena a loader accepts; the compiler writes no artifact
/// that needs more.
inline constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 40;

/// The largest artifact: FlatBuffers offsets are signed 32-bit, and its
/// Verifier takes buffers shorter than FLATBUFFERS_MAX_BUFFER_SIZE only.
inline constexpr uint64_t kMaxArtifactBytes = FLATBUFFERS_MAX_BUFFER_SIZE - 1;

/// The most per-thread scratch one CPU kernel entry may ask for.
inline constexpr uint64_t kMaxScratchBytes = uint64_t(1) << 30;

/// The integrity checksum of the artifact in the `size` bytes at `data`,
/// whose Integrity struct is `integrity`: every byte, the struct's read as
/// zero.
inline uint64_t integrityChecksum(const uint8_t *data, size_t size, const Integrity &integrity) {
  size_t offset = reinterpret_cast<const uint8_t *>(&integrity) - data;
  return checksum64(data, size, offset, sizeof(Integrity));
}

/// The name profiles give an entry: its kernel's, or in artifacts that do
/// not record it, its symbol.
inline const char *kernelName(const KernelEntry &entry) {
  return entry.kernel() && entry.kernel()->size() ? entry.kernel()->c_str()
                                                  : entry.symbol()->c_str();
}

/// Writes the integrity checksum into a structurally valid artifact of
/// `size` bytes at `data`, if it has the field: what the writer does last,
/// and what tools that edit artifacts do after each edit.
inline void sealArtifact(uint8_t *data, size_t size) {
  if (Integrity *integrity = GetMutableArtifact(data)->mutable_integrity())
    integrity->mutate_checksum(integrityChecksum(data, size, *integrity));
}

} // namespace tessel::schema

#endif // TESSEL_RUNTIME_SCHEMA_ARTIFACT_H
