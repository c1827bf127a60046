//===- Signature.h - Refusing artifacts not signed by a trusted key -*- C++ -*-===//
//
// A CPU executable is native code: an artifact from an untrusted source is
// safe to load only when a key the caller trusts signed it. The check runs
// on the raw bytes, before the FlatBuffers verifier or anything else reads
// them (docs/security.md).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SRC_SIGNATURE_H
#define TESSEL_RUNTIME_SRC_SIGNATURE_H

#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>

namespace tessel::runtime {

/// Checks the `size` bytes at `data` against `options`. With signatures
/// required, they must end in a signature block by one of the trusted keys
/// whose signature matches the bytes before it. On success `artifactSize`
/// is the size of the artifact itself: `size` less any signature block,
/// which is set aside unchecked when signatures are not required.
tsl_status checkSignature(const uint8_t *data, size_t size, const tsl_load_options &options,
                          size_t &artifactSize);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_SRC_SIGNATURE_H
