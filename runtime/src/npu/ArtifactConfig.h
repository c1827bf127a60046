//===- ArtifactConfig.h - The NPU configuration an artifact records -*- C++ -*-===//

#ifndef TESSEL_RUNTIME_SRC_NPU_ARTIFACTCONFIG_H
#define TESSEL_RUNTIME_SRC_NPU_ARTIFACTCONFIG_H

#include "runtime/schema/Artifact.h"
#include "runtime/schema/NpuConfig.h"

namespace tessel::runtime::npu {

/// The configuration of the artifact's NpuConfig table, unchecked (see
/// Config::problem).
tessel::schema::npu::Config configOf(const tessel::schema::NpuConfig &table);

} // namespace tessel::runtime::npu

#endif // TESSEL_RUNTIME_SRC_NPU_ARTIFACTCONFIG_H
