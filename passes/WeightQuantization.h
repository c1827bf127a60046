//===- WeightQuantization.h - Symmetric s8 weights per channel --*- C++ -*-===//
//
// Post-training quantization stores a product's constant weight as
// symmetric s8 levels with one scale per output channel. CPUs without VNNI
// multiply u8 activations by s8 weights exactly with VPMADDUBSW only where
// every pair of adjacent weights along the reduction (the input channels)
// keeps 255 x (its positive parts) and 255 x (its negative parts) within
// i16; elsewhere they need pairs of VPMADDWD, about a third slower. With
// `fitPairs`, the levels are chosen so that every pair fits: per channel,
// the scale with the least squared error among those that put the largest
// weight at level 64 (7 bits, where every pair fits) to 127, with each
// pair that would not fit moved to the nearest levels that do.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES_WEIGHTQUANTIZATION_H
#define TESSEL_PASSES_WEIGHTQUANTIZATION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <functional>

namespace tessel {

struct SymmetricWeights {
  /// One per index of the channel axis.
  llvm::SmallVector<double> scales;
  /// Row-major like the weights, in [-127, 127].
  llvm::SmallVector<int64_t> levels;
};

/// What a weight layout pairs: the axis of the output channels (one scale
/// each) and of the reduction, whose (even, next) indices are pairs.
struct WeightAxes {
  int64_t channel;
  int64_t reduction;
};

/// `values` (row-major, of `shape`) as symmetric s8 levels per channel;
/// `representable` rounds a scale to the type scales are stored in.
SymmetricWeights quantizeSymmetric(llvm::ArrayRef<float> values, llvm::ArrayRef<int64_t> shape,
                                   WeightAxes axes, bool fitPairs,
                                   const std::function<double(double)> &representable);

} // namespace tessel

#endif // TESSEL_PASSES_WEIGHTQUANTIZATION_H
