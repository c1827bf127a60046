//===- NpuConfig.h - The NPU's configuration --------------------*- C++ -*-===//
//
// The hardware parameters of docs/npu/isa.md section 2, with their defaults
// and limits: the compiler reads them from --npu-config and records them in
// the artifact (NpuConfig table); the simulator reads them back and refuses
// those it cannot simulate. One definition of the limits serves both.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_RUNTIME_SCHEMA_NPUCONFIG_H
#define TESSEL_RUNTIME_SCHEMA_NPUCONFIG_H

#include "runtime/schema/NpuIsa.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tessel::schema::npu {

struct Config {
  uint32_t arrayRows = 32, arrayColumns = 32;
  bool outputStationary = false;
  uint64_t scratchpadBytes = 262144, accumulatorBytes = 65536, parameterBytes = 65536;
  uint32_t dmaBytesPerCycle = 16, dmaLatencyCycles = 64;
  double clockMhz = 1000;
  double macEnergyPj = 0.3, sramByteEnergyPj = 1.25, dramByteEnergyPj = 160;
  /// SCALE-Sim's timing model instead of Tessel's (isa.md section 4.3).
  bool scalesimTiming = false;
  uint32_t isaVersion = kIsaVersion;

  uint64_t accumulatorEntries() const { return accumulatorBytes / 4; }
  uint64_t parameterRecords() const { return parameterBytes / 16; }

  /// What makes this configuration one the ISA does not allow; empty when
  /// it is valid.
  std::string problem() const {
    auto number = [](double value) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.10g", value);
      return std::string(text);
    };
    auto outside = [&](const char *name, double value, double low, double high) {
      return std::string(name) + " " + number(value) + " is outside [" + number(low) + ", " +
             number(high) + "]";
    };
    if (isaVersion != kIsaVersion)
      return "ISA version " + std::to_string(isaVersion) + " (this code implements version " +
             std::to_string(kIsaVersion) + ")";
    // K and N are 9-bit fields: 256 rows and columns at most.
    if (arrayRows < 1 || arrayRows > 256)
      return outside("array_rows", arrayRows, 1, 256);
    if (arrayColumns < 1 || arrayColumns > 256)
      return outside("array_columns", arrayColumns, 1, 256);
    // Scratchpad addresses are 24 bits, accumulator entries 20 bits,
    // parameter records 16 bits.
    if (scratchpadBytes < 1024 || scratchpadBytes > (uint64_t(1) << 24))
      return outside("scratchpad_bytes", double(scratchpadBytes), 1024, 1 << 24);
    if (accumulatorBytes < 1024 || accumulatorBytes > (uint64_t(4) << 20) ||
        accumulatorBytes % 4)
      return outside("accumulator_bytes", double(accumulatorBytes), 1024, 4 << 20) +
             " or not a multiple of 4";
    if (parameterBytes < 16 || parameterBytes > (uint64_t(1) << 20) || parameterBytes % 16)
      return outside("parameter_bytes", double(parameterBytes), 16, 1 << 20) +
             " or not a multiple of 16";
    if (dmaBytesPerCycle < 1 || dmaBytesPerCycle > 4096)
      return outside("dma_bytes_per_cycle", dmaBytesPerCycle, 1, 4096);
    if (dmaLatencyCycles > 100000)
      return outside("dma_latency_cycles", dmaLatencyCycles, 0, 100000);
    if (!(clockMhz >= 1 && clockMhz <= 100000))
      return outside("clock_mhz", clockMhz, 1, 100000);
    for (auto [name, value] : {std::pair{"mac_energy_pj", macEnergyPj},
                               std::pair{"sram_byte_energy_pj", sramByteEnergyPj},
                               std::pair{"dram_byte_energy_pj", dramByteEnergyPj}})
      if (!(value >= 0 && value <= 1e6))
        return outside(name, value, 0, 1e6);
    return "";
  }
};

} // namespace tessel::schema::npu

#endif // TESSEL_RUNTIME_SCHEMA_NPUCONFIG_H
