//===- ResizeMode.h - The attributes that say how Resize interpolates -----===//

#ifndef TESSEL_COMPILER_ONNX_OPS_RESIZEMODE_H
#define TESSEL_COMPILER_ONNX_OPS_RESIZEMODE_H

#include "compiler/onnx/NodeImporter.h"

#include <string>

namespace tessel::onnx_import {

struct ResizeMode {
  std::string mode = "nearest";               // nearest, linear, cubic
  std::string coordinates = "half_pixel";      // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";  // nearest_mode
  double cubicA = -0.75;
  bool antialias = false;
  bool excludeOutside = false;
  double extrapolation = 0.0;
};

/// What a resize reads at run time: its scales (one per resized axis,
/// f32 or f64), or its sizes and aspect-ratio policy (`stretch`,
/// `not_larger` or `not_smaller`), and the region of interest for tf_crop_and_resize (two
/// entries per resized axis; null otherwise). Inputs known at compile time
/// are constants here.
struct RunTimeResize {
  mlir::Value scales, sizes, roi;
  std::string policy;
};

/// Resizes input 0 along `axes` to the result shape `stated` the model
/// states, with the scales computed at run time from `given` and checked to
/// give that shape (ResizeAtRunTime.cpp). Not for antialiasing, whose
/// number of taps depends on the scale.
mlir::LogicalResult resizeAtRunTime(NodeImporter &node, const ResizeMode &m,
                                    const RunTimeResize &given, llvm::ArrayRef<int64_t> axes,
                                    mlir::RankedTensorType stated);

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_OPS_RESIZEMODE_H
