//===- Shape.cpp - Shape queries and rank changes --------------------------===//
//
// With static shapes these are compile-time facts: Shape and Size become
// constants (so Shape -> ... -> Reshape subgraphs fold away), Squeeze and
// Unsqueeze become reshapes, which are views.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include <set>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// Shape (opset 15 adds start and end, clamped like Python slices).
LogicalResult importShape(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  int64_t rank = type.getRank();
  auto clamp = [&](int64_t index) {
    return std::clamp<int64_t>(index < 0 ? index + rank : index, 0, rank);
  };
  int64_t start = clamp(node.intAttr("start", 0));
  int64_t end = clamp(node.intAttr("end", rank));
  SmallVector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) {
    if (type.isDynamicDim(i))
      return node.unsupported("dimension " + Twine(i) +
                              " of the input is not known at compile time");
    dims.push_back(type.getDimSize(i));
  }
  node.setOutput(0, node.int64Constant(dims, {static_cast<int64_t>(dims.size())}));
  return success();
}

LogicalResult importSize(NodeImporter &node) {
  std::optional<int64_t> count = elementCount(node.inputType(0).getShape());
  if (!count)
    return node.unsupported("the input's shape is not known at compile time");
  node.setOutput(0, node.int64Constant({*count}, {}));
  return success();
}

/// The axes of Squeeze or Unsqueeze: an attribute before opset 13, an
/// optional constant input from 13 on. nullopt after reporting a problem.
/// A run-time axes input is taken to name the axes for which `gives`
/// holds (the stated result shape).
std::optional<std::vector<int64_t>>
readAxes(NodeImporter &node, bool &given, int64_t rank,
         llvm::function_ref<bool(ArrayRef<int64_t>)> gives) {
  given = true;
  if (node.opset() < 13) {
    if (std::optional<std::vector<int64_t>> axes = node.intsAttr("axes"))
      return axes;
    given = false;
    return std::vector<int64_t>();
  }
  if (!node.input(1)) {
    given = false;
    return std::vector<int64_t>();
  }
  std::optional<SmallVector<int64_t>> axes =
      shapeGivingInts(node, 1, "axes", [&]() -> std::optional<ImpliedInts> {
        if (!node.declaredOutputType(0) || node.inputType(1).getRank() != 1)
          return std::nullopt;
        // Sets giving the same shape give the same data. The input may
        // name any axes among them all if every such choice is one of the
        // sets ([1, 3, 1, 5] unsqueezed at 2 or 3); else it must name the
        // first.
        int64_t count = node.inputType(1).getNumElements();
        SmallVector<SmallVector<int64_t>> named = axisSetsGiving(rank, count, gives);
        if (named.empty())
          return std::nullopt;
        SmallVector<int64_t> any;
        for (const SmallVector<int64_t> &set : named)
          any.append(set);
        llvm::sort(any);
        any.erase(std::unique(any.begin(), any.end()), any.end());
        // Every choice among them is a set when the sets number C(|any|, count).
        uint64_t choices = 1;
        for (int64_t i = 0; i < count; ++i)
          choices = choices * (any.size() - i) / (i + 1);
        bool everyChoiceGives = choices == named.size();
        ImpliedInts implied = anyOrderOf(named.front(), rank);
        if (everyChoiceGives)
          implied.accepted.assign(count, anyOrderOf(any, rank).accepted.front());
        return implied;
      });
  if (!axes)
    return std::nullopt;
  return std::vector<int64_t>(axes->begin(), axes->end());
}

Value reshapeTo(NodeImporter &node, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, node.inputType(0).getElementType());
  return ReshapeOp::create(node.builder(), node.loc(), type, node.input(0));
}

LogicalResult importSqueeze(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  bool given;
  std::optional<std::vector<int64_t>> axes =
      readAxes(node, given, type.getRank(), [&](ArrayRef<int64_t> squeezed) {
        SmallVector<int64_t> kept;
        for (int64_t i = 0; i < type.getRank(); ++i)
          if (!llvm::is_contained(squeezed, i))
            kept.push_back(type.getDimSize(i));
        return llvm::all_of(squeezed, [&](int64_t i) { return type.getDimSize(i) == 1; }) &&
               ArrayRef<int64_t>(kept) == node.declaredOutputType(0).getShape();
      });
  if (!axes)
    return failure();
  std::set<int64_t> squeezed;
  for (int64_t axis : *axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, type.getRank());
    if (!normalized)
      return node.unsupported("axis " + Twine(axis) + " is out of range");
    if (type.getDimSize(*normalized) != 1)
      return node.unsupported("axis " + Twine(axis) + " has size " +
                              Twine(type.getDimSize(*normalized)) + ", not 1");
    squeezed.insert(*normalized);
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    bool drop = given ? squeezed.count(i) != 0 : type.getDimSize(i) == 1;
    if (!given && type.isDynamicDim(i))
      return node.unsupported("dimension " + Twine(i) +
                              " is not known at compile time");
    if (!drop)
      shape.push_back(type.getDimSize(i));
  }
  node.setOutput(0, reshapeTo(node, shape));
  return success();
}

LogicalResult importUnsqueeze(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  RankedTensorType stated = node.declaredOutputType(0);
  bool given;
  std::optional<std::vector<int64_t>> axes = readAxes(
      node, given, stated ? stated.getRank() : 0, [&](ArrayRef<int64_t> inserted) {
        SmallVector<int64_t> kept;
        for (int64_t i = 0; i < stated.getRank(); ++i)
          if (!llvm::is_contained(inserted, i))
            kept.push_back(stated.getDimSize(i));
        return llvm::all_of(inserted, [&](int64_t i) { return stated.getDimSize(i) == 1; }) &&
               ArrayRef<int64_t>(kept) == type.getShape();
      });
  if (!axes)
    return failure();
  if (!given)
    return node.unsupported("axes are required");
  int64_t rank = type.getRank() + static_cast<int64_t>(axes->size());
  std::set<int64_t> inserted;
  for (int64_t axis : *axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized || !inserted.insert(*normalized).second)
      return node.unsupported("axis " + Twine(axis) +
                              " is out of range or repeated");
  }
  SmallVector<int64_t> shape;
  int64_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted.count(i) ? 1 : type.getDimSize(next++));
  node.setOutput(0, reshapeTo(node, shape));
  return success();
}

} // namespace

void registerShapeHandlers(OpRegistry &registry) {
  registry.on("Shape", 1, importShape);
  registry.on("Size", 1, importSize);
  registry.on("Squeeze", 1, importSqueeze);
  registry.on("Unsqueeze", 1, importUnsqueeze);
}

} // namespace tessel::onnx_import
