//===- ShapeInference.h - ONNX result-shape rules ---------------*- C++ -*-===//
//
// The shape rules of ONNX operators, on plain dimension lists, shared by the
// tessel ops' type inference and the ONNX importer. Dynamic dimensions are
// ShapedType::kDynamic and propagate.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECTS_TESSEL_SHAPEINFERENCE_H
#define TESSEL_DIALECTS_TESSEL_SHAPEINFERENCE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace tessel {

using Shape = llvm::SmallVector<int64_t, 6>;

/// Multidirectional (numpy) broadcasting; nullopt if the shapes conflict.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> lhs,
                                     llvm::ArrayRef<int64_t> rhs);

/// ONNX MatMul: 1-D promotion and batch broadcasting; nullopt on mismatch.
std::optional<Shape> matmulShape(llvm::ArrayRef<int64_t> lhs,
                                 llvm::ArrayRef<int64_t> rhs);

/// Window geometry of a convolution or pooling op over the spatial axes.
struct WindowGeometry {
  llvm::ArrayRef<int64_t> kernel;    // kernel extent per spatial axis
  llvm::ArrayRef<int64_t> strides;   // per spatial axis
  llvm::ArrayRef<int64_t> pads;      // begins, then ends
  llvm::ArrayRef<int64_t> dilations; // per spatial axis
  bool ceilMode = false;
};

/// Checks that every attribute list has one entry per spatial axis (two for
/// pads) and that strides, dilations and kernel extents are positive and
/// pads non-negative. Returns a message describing the first problem.
std::optional<std::string> checkWindowGeometry(const WindowGeometry &window,
                                               size_t spatialRank);

/// Output extent of one spatial axis; nullopt when the window does not fit.
std::optional<int64_t> windowOutputSize(int64_t inputSize, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode);

/// Output extents of all spatial axes, with dynamic inputs staying dynamic.
std::optional<Shape> windowOutputSizes(llvm::ArrayRef<int64_t> spatialInput,
                                       const WindowGeometry &window);

/// "[1, 3, ?]": a shape for messages, with ? for dynamic dimensions.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Number of elements, or nullopt for a dynamic shape or on overflow.
std::optional<int64_t> elementCount(llvm::ArrayRef<int64_t> shape);

/// An explicit einsum equation, "ij,jk->ik": each operand's axis letters
/// and the output's.
struct EinsumEquation {
  llvm::SmallVector<std::string> operands;
  std::string output;
};
/// Nullopt unless the equation is explicit and made of letters only.
std::optional<EinsumEquation> parseEinsumEquation(llvm::StringRef equation);

} // namespace tessel

#endif // TESSEL_DIALECTS_TESSEL_SHAPEINFERENCE_H
