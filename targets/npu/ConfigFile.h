//===- ConfigFile.h - The NPU's configuration from JSON ---------*- C++ -*-===//
//
// `tessel-compile --npu-config FILE`: a JSON object whose keys are those of
// docs/npu/isa.md section 2, every one optional (the ISA's defaults fill
// the rest). An unknown key, a value of the wrong type or one the ISA does
// not allow is an error that names it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_NPU_CONFIGFILE_H
#define TESSEL_TARGETS_NPU_CONFIGFILE_H

#include "runtime/schema/NpuConfig.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace tessel::npu {

/// The configuration in the JSON file at `path`; the defaults for "".
llvm::Expected<tessel::schema::npu::Config> readNpuConfig(llvm::StringRef path);

/// The configuration in JSON text `text`; `origin` names it in errors.
llvm::Expected<tessel::schema::npu::Config> parseNpuConfig(llvm::StringRef text,
                                                           llvm::StringRef origin);

} // namespace tessel::npu

#endif // TESSEL_TARGETS_NPU_CONFIGFILE_H
