//===- Lowering.h - A layer as NPU instructions -----------------*- C++ -*-===//
//
// Tiles a recognized layer to the scratchpad and accumulator, chooses the
// tile by a cost model, double-buffers loads and stores around the array
// and writes the instructions with the dependency tokens that order them
// (docs/npu/isa.md; the protocol is in Lowering.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_NPU_LOWERING_H
#define TESSEL_TARGETS_NPU_LOWERING_H

#include "targets/npu/Layers.h"

#include "runtime/schema/NpuConfig.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tessel::npu {

namespace encoding = tessel::schema::npu;

/// The tile the cost model chose: output rows (matrix rows for a product)
/// per tile, how many tiles, and the cycles it predicted.
struct TileChoice {
  int64_t rows = 0, tiles = 0;
  uint64_t predictedCycles = 0;
};

struct LayerProgram {
  std::vector<encoding::Instruction> instructions;
  /// Bytes the program reads from bindings of its own, after the layer's
  /// activation inputs: a product's K x F weights and its channel records.
  std::vector<std::vector<uint8_t>> constants;
  TileChoice tile;
  /// Multiply-accumulates of the layer.
  uint64_t macs = 0;
};

/// The instructions of `layer` for an NPU configured as `config`; its
/// bindings are the layer's inputs, then LayerProgram::constants, then the
/// result. The reason it cannot be lowered otherwise (no tile fits).
std::variant<LayerProgram, std::string> lowerLayer(const Layer &layer,
                                                   const encoding::Config &config);

} // namespace tessel::npu

#endif // TESSEL_TARGETS_NPU_LOWERING_H
