//===- CalibrationData.h - The inputs post-training quantization sees -*- C++ -*-===//
//
// tessel-compile --calibration DIR reads the model's inputs for
// calibration from DIR, in any of the layouts users already have:
//  - ONNX test-data folders: DIR/test_data_set_*/input_N.pb (any folder
//    of DIR holding input_N.pb or .npy files is one sample);
//  - one .npy file per input in DIR, named after the input (or input_N,
//    or the only file when the model has one input), holding one sample
//    of the input's shape or several stacked: [S, *shape], or [S * B, ...]
//    for an input of batch B.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_QUANTIZE_CALIBRATIONDATA_H
#define TESSEL_COMPILER_QUANTIZE_CALIBRATIONDATA_H

#include "compiler/data/TensorFiles.h"

#include <string>
#include <vector>

namespace tessel::quantize {

/// What the model reads: an input's name, element type and shape.
struct InputSpec {
  std::string name;
  tsl_dtype dtype;
  std::vector<int64_t> shape;
};

/// One set of model inputs, in signature order.
struct CalibrationSample {
  std::string source; // the folder or file it came from, for messages
  std::vector<data::HostTensor> inputs;
};

/// Reads every sample in `directory` (sorted by name, at most `limit` if
/// nonzero). Throws std::runtime_error naming the file and what is wrong:
/// a missing input, a wrong element type or shape, no sample at all.
std::vector<CalibrationSample> readCalibrationData(const std::string &directory,
                                                   const std::vector<InputSpec> &inputs,
                                                   size_t limit = 0);

} // namespace tessel::quantize

#endif // TESSEL_COMPILER_QUANTIZE_CALIBRATIONDATA_H
