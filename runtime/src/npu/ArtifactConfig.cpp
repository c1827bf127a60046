//===- ArtifactConfig.cpp - The NPU configuration an artifact records -----===//

#include "ArtifactConfig.h"

namespace tessel::runtime::npu {

namespace schema = tessel::schema;

schema::npu::Config configOf(const schema::NpuConfig &table) {
  schema::npu::Config config;
  config.arrayRows = table.array_rows();
  config.arrayColumns = table.array_columns();
  config.outputStationary = table.dataflow() == schema::NpuDataflow_output_stationary;
  config.scratchpadBytes = table.scratchpad_bytes();
  config.accumulatorBytes = table.accumulator_bytes();
  config.parameterBytes = table.parameter_bytes();
  config.dmaBytesPerCycle = table.dma_bytes_per_cycle();
  config.dmaLatencyCycles = table.dma_latency_cycles();
  config.clockMhz = table.clock_mhz();
  config.macEnergyPj = table.mac_energy_pj();
  config.sramByteEnergyPj = table.sram_byte_energy_pj();
  config.dramByteEnergyPj = table.dram_byte_energy_pj();
  config.scalesimTiming = table.timing() == schema::NpuTiming_scalesim;
  config.isaVersion = table.isa_version();
  return config;
}

} // namespace tessel::runtime::npu
