//===- ShapeInference.cpp - ONNX result-shape rules -----------------------===//

#include "dialects/tessel/ShapeInference.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

using mlir::ShapedType;

namespace tessel {

std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> lhs,
                                     llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  Shape result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the trailing axis.
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l == r || r == 1)
      result[i] = l;
    else if (l == 1)
      result[i] = r;
    else if (ShapedType::isDynamic(l) || ShapedType::isDynamic(r))
      result[i] = ShapedType::isDynamic(l) ? r : l;
    else
      return std::nullopt;
  }
  return result;
}

std::optional<Shape> matmulShape(llvm::ArrayRef<int64_t> lhs,
                                 llvm::ArrayRef<int64_t> rhs) {
  if (lhs.empty() || rhs.empty())
    return std::nullopt;
  // 1-D operands become [1, K] and [K, 1]; the added axes are dropped again.
  Shape a(lhs.begin(), lhs.end()), b(rhs.begin(), rhs.end());
  bool promotedLhs = a.size() == 1, promotedRhs = b.size() == 1;
  if (promotedLhs)
    a.insert(a.begin(), 1);
  if (promotedRhs)
    b.push_back(1);
  int64_t kLhs = a.back(), kRhs = b[b.size() - 2];
  if (kLhs != kRhs && !ShapedType::isDynamic(kLhs) &&
      !ShapedType::isDynamic(kRhs))
    return std::nullopt;
  std::optional<Shape> batch =
      broadcastShapes(llvm::ArrayRef(a).drop_back(2), llvm::ArrayRef(b).drop_back(2));
  if (!batch)
    return std::nullopt;
  Shape result = *batch;
  if (!promotedLhs)
    result.push_back(a[a.size() - 2]);
  if (!promotedRhs)
    result.push_back(b.back());
  return result;
}

std::optional<std::string> checkWindowGeometry(const WindowGeometry &window,
                                               size_t spatialRank) {
  auto countMismatch = [&](llvm::StringRef name, size_t actual,
                           size_t expected) -> std::optional<std::string> {
    if (actual == expected)
      return std::nullopt;
    return (name + " has " + llvm::Twine(actual) + " entries, expected " +
            llvm::Twine(expected))
        .str();
  };
  if (auto error = countMismatch("kernel_shape", window.kernel.size(), spatialRank))
    return error;
  if (auto error = countMismatch("strides", window.strides.size(), spatialRank))
    return error;
  if (auto error = countMismatch("dilations", window.dilations.size(), spatialRank))
    return error;
  if (auto error = countMismatch("pads", window.pads.size(), 2 * spatialRank))
    return error;
  for (size_t i = 0; i < spatialRank; ++i) {
    if (window.kernel[i] <= 0 && !ShapedType::isDynamic(window.kernel[i]))
      return "kernel extents must be positive";
    if (window.strides[i] <= 0)
      return "strides must be positive";
    if (window.dilations[i] <= 0)
      return "dilations must be positive";
  }
  for (int64_t pad : window.pads)
    if (pad < 0)
      return "pads must be non-negative";
  return std::nullopt;
}

std::optional<int64_t> windowOutputSize(int64_t inputSize, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode) {
  if (ShapedType::isDynamic(inputSize) || ShapedType::isDynamic(kernel))
    return ShapedType::kDynamic;
  int64_t span = (kernel - 1) * dilation + 1;
  int64_t room = inputSize + padBegin + padEnd - span;
  if (room < 0)
    return std::nullopt;
  int64_t size = (ceilMode ? llvm::divideCeil(room, stride) : room / stride) + 1;
  // A window that would start in the end padding is dropped (PyTorch's and
  // onnxruntime's reading of ceil_mode).
  if (ceilMode && (size - 1) * stride >= inputSize + padBegin)
    --size;
  return size;
}

std::optional<Shape> windowOutputSizes(llvm::ArrayRef<int64_t> spatialInput,
                                       const WindowGeometry &window) {
  size_t rank = spatialInput.size();
  Shape result;
  for (size_t i = 0; i < rank; ++i) {
    std::optional<int64_t> size = windowOutputSize(
        spatialInput[i], window.kernel[i], window.strides[i], window.pads[i],
        window.pads[rank + i], window.dilations[i], window.ceilMode);
    if (!size)
      return std::nullopt;
    result.push_back(*size);
  }
  return result;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return text + "]";
}

std::optional<int64_t> elementCount(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (ShapedType::isDynamic(dim) || dim < 0)
      return std::nullopt;
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      return std::nullopt;
    count *= dim;
  }
  return count;
}

std::optional<EinsumEquation> parseEinsumEquation(llvm::StringRef equation) {
  if (!equation.contains("->"))
    return std::nullopt;
  auto [inputs, output] = equation.split("->");
  EinsumEquation parsed;
  llvm::SmallVector<llvm::StringRef> operands;
  inputs.split(operands, ',');
  auto isLetters = [](llvm::StringRef text) {
    return llvm::all_of(text, [](char c) { return llvm::isAlpha(c); });
  };
  for (llvm::StringRef operand : operands) {
    if (!isLetters(operand))
      return std::nullopt;
    parsed.operands.push_back(operand.str());
  }
  if (!isLetters(output))
    return std::nullopt;
  parsed.output = output.str();
  return parsed;
}

} // namespace tessel
