//===- Compare.h - Compare outputs with expected tensors --------*- C++ -*-===//

#ifndef TESSEL_TOOLS_TESSEL_RUN_COMPARE_H
#define TESSEL_TOOLS_TESSEL_RUN_COMPARE_H

#include "compiler/data/TensorFiles.h"

#include <string>
#include <vector>

namespace tessel::run {

using data::HostTensor;

/// One element outside the tolerance.
struct Mismatch {
  size_t index;
  double actual, expected;
};

struct Comparison {
  bool pass = true;
  /// Set when shapes or dtypes differ; no element comparison then.
  std::string structuralProblem;
  double maxAbsoluteError = 0, maxRelativeError = 0;
  size_t mismatchCount = 0;
  /// The worst mismatches (largest error beyond tolerance), at most five.
  std::vector<Mismatch> worst;
};

/// numpy.allclose semantics: |actual - expected| <= atol + rtol * |expected|,
/// NaN equals NaN, infinities must match exactly.
Comparison compareTensors(const HostTensor &actual, const HostTensor &expected,
                          double rtol, double atol);

/// Element `i` as a double, for printing and comparing.
double elementAsDouble(const HostTensor &tensor, size_t i);

} // namespace tessel::run

#endif // TESSEL_TOOLS_TESSEL_RUN_COMPARE_H
