//===- FuzzArtifact.cpp - Artifact bytes through the runtime's verifier ---===//
//
// Any bytes handed to tsl_artifact_verify must be refused with a status or
// accepted as an artifact every later step can trust: never a crash, a
// hang or a sanitizer report. Where the bytes hold a FlatBuffer, the
// target first recomputes the integrity checksum, as an attacker would,
// so that mutations reach the semantic checks instead of stopping at the
// checksum. Verified artifacts are not loaded: their executables are
// native code, which only a signature makes trustworthy (docs/security.md).
//
//===----------------------------------------------------------------------===//

#include "runtime/schema/Artifact.h"
#include "tessel/runtime.h"

#include <cstdlib>
#include <vector>

namespace {

/// Gives a structurally valid artifact the checksum of its bytes.
void sealChecksum(std::vector<uint8_t> &bytes) {
  namespace sc = tessel::schema;
  // The root offset and the file identifier.
  if (bytes.size() < 8 || !sc::ArtifactBufferHasIdentifier(bytes.data()))
    return;
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (sc::VerifyArtifactBuffer(verifier))
    sc::sealArtifact(bytes.data(), bytes.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // FlatBuffers reads scalars in place: the copy is aligned as a file's
  // bytes are when the runtime reads them.
  std::vector<uint8_t> bytes(data, data + size);
  sealChecksum(bytes);
  tsl_load_options options;
  tsl_load_options_init(&options);
  tsl_status status = tsl_artifact_verify(bytes.data(), bytes.size(), &options);
  if (status && tsl_status_get_code(status) == TSL_INTERNAL)
    std::abort(); // an internal error is a bug, whatever the input
  tsl_status_free(status);
  return 0;
}
