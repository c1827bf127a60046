//===- Linker.h - In-process ELF linking with lld ---------------*- C++ -*-===//

#ifndef TESSEL_TARGETS_X86_LINKER_H
#define TESSEL_TARGETS_X86_LINKER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace tessel::x86 {

/// Links ELF relocatable objects into one shared object with lld's ELF
/// driver, inside this process. lld reads and writes files, so they live in
/// a private temporary directory that is removed before returning.
llvm::Expected<std::vector<uint8_t>>
linkSharedObject(llvm::ArrayRef<llvm::SmallVector<char>> objects);

} // namespace tessel::x86

#endif // TESSEL_TARGETS_X86_LINKER_H
