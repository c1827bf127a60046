//===- Indexing.cpp - Slice, Split, Gather*, Expand, Tile, Pad, ... -------===//
//
// Indices, shapes and pads that these ops take as inputs must be known at
// compile time (the result shapes depend on them); the data may not be.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// An int list from an attribute (before `inputSince`) or a constant input.
std::optional<SmallVector<int64_t>> intsFrom(NodeImporter &node, int64_t inputSince,
                                             size_t inputIndex, StringRef name) {
  if (node.opset() >= inputSince) {
    if (!node.input(inputIndex))
      return SmallVector<int64_t>();
    return node.constantInts(inputIndex, name);
  }
  if (std::optional<std::vector<int64_t>> values = node.intsAttr(name))
    return SmallVector<int64_t>(values->begin(), values->end());
  return SmallVector<int64_t>();
}

/// Normalizes every axis in place; false after recording why.
bool normalizeAxes(NodeImporter &node, SmallVectorImpl<int64_t> &axes, int64_t rank) {
  for (int64_t &axis : axes) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized) {
      (void)node.unsupported("axis " + Twine(axis) + " is out of range for rank " +
                             Twine(rank));
      return false;
    }
    axis = *normalized;
  }
  return true;
}

Value slice(NodeImporter &node, Value input, ArrayRef<int64_t> starts,
            ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(input.getType());
  OpBuilder &b = node.builder();
  return SliceOp::create(b, node.loc(), type.clone(shape), input,
                         b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(steps));
}

/// Slice: Python-style clamped starts and ends per listed axis.
LogicalResult importSlice(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  int64_t rank = type.getRank();
  std::optional<SmallVector<int64_t>> starts = intsFrom(node, 10, 1, "starts");
  std::optional<SmallVector<int64_t>> ends = starts ? intsFrom(node, 10, 2, "ends")
                                                    : std::nullopt;
  std::optional<SmallVector<int64_t>> axes = ends ? intsFrom(node, 10, 3, "axes")
                                                  : std::nullopt;
  std::optional<SmallVector<int64_t>> steps =
      axes && node.opset() >= 10 ? intsFrom(node, 10, 4, "steps")
                                 : std::optional<SmallVector<int64_t>>(SmallVector<int64_t>());
  if (!starts || !ends || !axes || !steps)
    return failure();
  if (axes->empty())
    for (size_t i = 0; i < starts->size(); ++i)
      axes->push_back(i);
  if (steps->empty())
    steps->assign(starts->size(), 1);
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps->size() != starts->size())
    return node.unsupported("starts, ends, axes and steps differ in length");
  if (!normalizeAxes(node, *axes, rank))
    return failure();

  SmallVector<int64_t> resultStarts(rank, 0), resultSteps(rank, 1);
  SmallVector<int64_t> shape(type.getShape());
  for (auto [i, axis] : llvm::enumerate(*axes)) {
    int64_t size = type.getDimSize(axis), step = (*steps)[i];
    if (step == 0)
      return node.unsupported("step of axis " + Twine(axis) + " is 0");
    int64_t start = (*starts)[i], end = (*ends)[i];
    // Extreme values (INT64_MAX for "to the end") must not overflow.
    start = start < 0 ? std::max<int64_t>(start, -size) + size : start;
    end = end < 0 ? std::max<int64_t>(end, -size - 1) + size : end;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, size);
      end = std::clamp<int64_t>(end, 0, size);
      shape[axis] = end > start ? llvm::divideCeil(end - start, step) : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, size - 1);
      end = std::clamp<int64_t>(end, -1, size - 1);
      shape[axis] = start > end ? llvm::divideCeil(start - end, -step) : 0;
    }
    resultStarts[axis] = shape[axis] > 0 ? start : 0;
    resultSteps[axis] = step;
  }
  node.setOutput(0, slice(node, node.input(0), resultStarts, resultSteps, shape));
  return success();
}

/// Split: the sizes from an attribute (opset < 13) or input, else equal
/// parts (the last smaller when num_outputs does not divide the axis).
LogicalResult importSplit(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  if (type.isDynamicDim(*axis))
    return node.unsupported("the split axis must have a static size");
  std::optional<SmallVector<int64_t>> sizes = intsFrom(node, 13, 1, "split");
  if (!sizes)
    return failure();
  int64_t size = type.getDimSize(*axis);
  int64_t parts = node.numOutputs();
  if (node.opset() >= 18)
    parts = node.intAttr("num_outputs", parts);
  if (sizes->empty()) {
    int64_t chunk = llvm::divideCeil(size, parts);
    for (int64_t offset = 0; offset < size; offset += chunk)
      sizes->push_back(std::min(chunk, size - offset));
  }
  if (static_cast<int64_t>(sizes->size()) != static_cast<int64_t>(node.numOutputs()))
    return node.unsupported("the split sizes give " + Twine(sizes->size()) +
                            " parts for " + Twine(node.numOutputs()) + " outputs");
  if (std::accumulate(sizes->begin(), sizes->end(), int64_t(0)) != size)
    return node.unsupported("the split sizes do not add up to the axis size " +
                            Twine(size));
  int64_t offset = 0;
  for (auto [i, part] : llvm::enumerate(*sizes)) {
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    SmallVector<int64_t> shape(type.getShape());
    starts[*axis] = offset;
    shape[*axis] = part;
    offset += part;
    if (node.outputUsed(i))
      node.setOutput(i, slice(node, node.input(0), starts, steps, shape));
  }
  return success();
}

LogicalResult importGather(NodeImporter &node) {
  std::optional<int64_t> axis =
      normalizeAxis(node.intAttr("axis", 0), node.inputType(0).getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  return node.setInferredOutput(
      0, node.createInferred<GatherOp>(node.input(0), node.input(1),
                                       node.builder().getI64IntegerAttr(*axis)));
}

LogicalResult importGatherElements(NodeImporter &node) {
  RankedTensorType indices = node.inputType(1);
  std::optional<int64_t> axis =
      normalizeAxis(node.intAttr("axis", 0), node.inputType(0).getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  node.setOutput(0, GatherElementsOp::create(
                        node.builder(), node.loc(),
                        indices.clone(node.inputType(0).getElementType()),
                        node.input(0), node.input(1),
                        node.builder().getI64IntegerAttr(*axis)));
  return success();
}

/// Expand broadcasts the input with the shape input (both ways).
LogicalResult importExpand(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<SmallVector<int64_t>> shape = node.constantInts(1, "shape");
  if (!shape)
    return failure();
  std::optional<SmallVector<int64_t>> broadcast = broadcastShapes(type.getShape(), *shape);
  if (!broadcast)
    return node.unsupported("cannot broadcast " + formatShape(type.getShape()) +
                            " with shape " + formatShape(*shape));
  node.setOutput(0, ExpandOp::create(node.builder(), node.loc(), type.clone(*broadcast),
                                     node.input(0)));
  return success();
}

/// Tile repeats axis i r_i times: x as [1, d0, 1, d1, ...] expanded to
/// [r0, d0, r1, d1, ...] and merged back to [r0 * d0, r1 * d1, ...].
LogicalResult importTile(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  std::optional<SmallVector<int64_t>> repeats = node.constantInts(1, "repeats");
  if (!repeats)
    return failure();
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return node.unsupported("repeats needs one entry per axis");
  SmallVector<int64_t> interleaved, expanded, tiled;
  for (auto [size, repeat] : llvm::zip(type.getShape(), *repeats)) {
    if (repeat < 0)
      return node.unsupported("repeats must not be negative");
    interleaved.append({1, size});
    expanded.append({repeat, size});
    tiled.push_back(repeat * size);
  }
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value spread = ReshapeOp::create(b, loc, type.clone(interleaved), node.input(0));
  Value copies = ExpandOp::create(b, loc, type.clone(expanded), spread);
  node.setOutput(0, ReshapeOp::create(b, loc, type.clone(tiled), copies));
  return success();
}

/// Pad: pads from an attribute (opset < 11) or input, optionally only on
/// the listed axes (opset 18); the constant value from an attribute or input.
LogicalResult importPad(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  int64_t rank = type.getRank();
  std::optional<SmallVector<int64_t>> pads =
      intsFrom(node, 11, 1, node.opset() >= 11 ? "pads" : "pads");
  if (!pads)
    return failure();
  std::string mode = node.stringAttr("mode").value_or("constant");
  SmallVector<int64_t> axes;
  if (node.opset() >= 18 && node.input(3)) {
    std::optional<SmallVector<int64_t>> given = node.constantInts(3, "axes");
    if (!given)
      return failure();
    axes = *given;
    if (!normalizeAxes(node, axes, rank))
      return failure();
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (pads->size() != 2 * axes.size())
    return node.unsupported("pads has " + Twine(pads->size()) + " entries for " +
                            Twine(axes.size()) + " axes");
  SmallVector<int64_t> allPads(2 * rank, 0);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    allPads[axis] = (*pads)[i];
    allPads[rank + axis] = (*pads)[axes.size() + i];
  }
  Value value;
  if (node.opset() >= 11 && node.input(2)) {
    value = node.input(2);
    if (cast<RankedTensorType>(value.getType()).getRank() != 0)
      value = ReshapeOp::create(node.builder(), node.loc(),
                                RankedTensorType::get({}, type.getElementType()), value);
  } else {
    value = node.splatConstant(type.getElementType(), node.floatAttr("value", 0.0f));
  }
  return node.setInferredOutput(
      0, node.createInferred<PadOp>(node.input(0), value,
                                    node.builder().getDenseI64ArrayAttr(allPads),
                                    node.builder().getStringAttr(mode)));
}

LogicalResult importCumSum(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<SmallVector<int64_t>> axis = node.constantInts(1, "axis");
  if (!axis)
    return failure();
  if (axis->size() != 1)
    return node.unsupported("axis must hold one value");
  std::optional<int64_t> normalized = normalizeAxis(axis->front(), type.getRank());
  if (!normalized)
    return node.unsupported("axis is out of range");
  OpBuilder &b = node.builder();
  node.setOutput(0, CumSumOp::create(b, node.loc(), type, node.input(0),
                                     b.getI64IntegerAttr(*normalized),
                                     b.getBoolAttr(node.intAttr("exclusive", 0) != 0),
                                     b.getBoolAttr(node.intAttr("reverse", 0) != 0)));
  return success();
}

/// Trilu keeps the upper (or lower) triangle of the last two axes from
/// diagonal k on: a select with a constant mask.
LogicalResult importTrilu(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() < 2 || !type.hasStaticShape())
    return node.unsupported("the input must have rank 2 or more and a static shape");
  int64_t k = 0;
  if (node.input(1)) {
    std::optional<SmallVector<int64_t>> given = node.constantInts(1, "k");
    if (!given)
      return failure();
    k = given->empty() ? 0 : given->front();
  }
  bool upper = node.intAttr("upper", 1) != 0;
  int64_t rows = type.getDimSize(type.getRank() - 2);
  int64_t columns = type.getDimSize(type.getRank() - 1);
  SmallVector<bool> mask;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      mask.push_back(upper ? j - i >= k : j - i <= k);
  OpBuilder &b = node.builder();
  auto maskType = RankedTensorType::get({rows, columns}, b.getI1Type());
  Value keep = ConstantOp::create(b, node.loc(), DenseElementsAttr::get(maskType, mask));
  Value zero = node.splatConstant(type.getElementType(), 0.0);
  node.setOutput(0, WhereOp::create(b, node.loc(), type, keep, node.input(0), zero));
  return success();
}

/// ConstantOfShape: the shape must be known, the value defaults to 0.f.
LogicalResult importConstantOfShape(NodeImporter &node) {
  std::optional<SmallVector<int64_t>> shape = node.constantInts(0, "shape");
  if (!shape)
    return failure();
  OpBuilder &b = node.builder();
  auto type = RankedTensorType::get(*shape, b.getF32Type());
  Attribute element = b.getF32FloatAttr(0.0f);
  if (const onnx::TensorProto *value = node.tensorAttr("value")) {
    Type elementType = elementTypeFor(b.getContext(), value->data_type());
    if (!elementType)
      return node.unsupported("the value's element type is not supported");
    llvm::Expected<DenseElementsAttr> decoded = readTensor(b.getContext(), *value, "");
    if (!decoded)
      return node.unsupported(llvm::toString(decoded.takeError()));
    if (decoded->getNumElements() != 1)
      return node.unsupported("value must hold one element");
    type = RankedTensorType::get(*shape, elementType);
    element = *decoded->getValues<Attribute>().begin();
  }
  node.setOutput(0, ConstantOp::create(b, node.loc(), DenseElementsAttr::get(type, element)));
  return success();
}

/// Range with constant start, limit and delta is a constant.
LogicalResult importRange(NodeImporter &node) {
  ElementsAttr start = node.constantInput(0), limit = node.constantInput(1),
               delta = node.constantInput(2);
  if (!start || !limit || !delta) {
    for (size_t i = 0; i < 3; ++i)
      if (!node.constantInput(i))
        (void)node.constantInts(i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
    return failure();
  }
  Type elementType = start.getElementType();
  auto scalar = [](ElementsAttr attr) -> double {
    Attribute value = *attr.getValues<Attribute>().begin();
    if (auto number = dyn_cast<FloatAttr>(value))
      return number.getValueAsDouble();
    return double(cast<IntegerAttr>(value).getValue().getSExtValue());
  };
  double first = scalar(start), last = scalar(limit), step = scalar(delta);
  if (step == 0)
    return node.unsupported("delta is 0");
  int64_t count = std::max<int64_t>(0, int64_t(std::ceil((last - first) / step)));
  OpBuilder &b = node.builder();
  auto type = RankedTensorType::get({count}, elementType);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < count; ++i) {
    if (auto floatType = dyn_cast<FloatType>(elementType))
      values.push_back(b.getFloatAttr(floatType, first + i * step));
    else
      values.push_back(b.getIntegerAttr(elementType, int64_t(first) + i * int64_t(step)));
  }
  node.setOutput(0, ConstantOp::create(b, node.loc(), DenseElementsAttr::get(type, values)));
  return success();
}

/// DepthToSpace and SpaceToDepth are a reshape, a transpose and a reshape.
LogicalResult importDepthToSpace(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() != 4 || !type.hasStaticShape())
    return node.unsupported("the input must be 4-D with a static shape");
  int64_t block = node.intAttr("blocksize").value_or(0);
  if (block <= 0)
    return node.unsupported("blocksize must be positive");
  std::string mode = node.stringAttr("mode").value_or("DCR");
  int64_t n = type.getDimSize(0), c = type.getDimSize(1), h = type.getDimSize(2),
          w = type.getDimSize(3);
  if (c % (block * block) != 0)
    return node.unsupported("channels are not a multiple of blocksize^2");
  int64_t depth = c / (block * block);
  SmallVector<int64_t> split, perm;
  if (mode == "DCR") {
    split = {n, block, block, depth, h, w};
    perm = {0, 3, 4, 1, 5, 2};
  } else if (mode == "CRD") {
    split = {n, depth, block, block, h, w};
    perm = {0, 1, 4, 2, 5, 3};
  } else {
    return node.unsupported("mode '" + mode + "' is not supported");
  }
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value spread = ReshapeOp::create(b, loc, type.clone(split), node.input(0));
  Value moved = node.createInferred<TransposeOp>(spread, b.getDenseI64ArrayAttr(perm));
  if (!moved)
    return failure();
  node.setOutput(0, ReshapeOp::create(
                        b, loc, type.clone({n, depth, h * block, w * block}), moved));
  return success();
}

LogicalResult importSpaceToDepth(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() != 4 || !type.hasStaticShape())
    return node.unsupported("the input must be 4-D with a static shape");
  int64_t block = node.intAttr("blocksize").value_or(0);
  if (block <= 0)
    return node.unsupported("blocksize must be positive");
  int64_t n = type.getDimSize(0), c = type.getDimSize(1), h = type.getDimSize(2),
          w = type.getDimSize(3);
  if (h % block != 0 || w % block != 0)
    return node.unsupported("height and width are not multiples of blocksize");
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value spread = ReshapeOp::create(
      b, loc, type.clone({n, c, h / block, block, w / block, block}), node.input(0));
  Value moved = node.createInferred<TransposeOp>(
      spread, b.getDenseI64ArrayAttr({0, 3, 5, 1, 2, 4}));
  if (!moved)
    return failure();
  node.setOutput(0, ReshapeOp::create(
                        b, loc, type.clone({n, c * block * block, h / block, w / block}),
                        moved));
  return success();
}

/// OneHot: on_value where the position along the new axis equals the index
/// (negative indices count from depth), off_value elsewhere.
LogicalResult importOneHot(NodeImporter &node) {
  RankedTensorType indicesType = node.inputType(0);
  std::optional<SmallVector<int64_t>> depthValue;
  if (ElementsAttr constant = node.constantInput(1);
      constant && isa<FloatType>(constant.getElementType())) {
    depthValue = SmallVector<int64_t>{
        int64_t((*constant.getValues<APFloat>().begin()).convertToDouble())};
  } else {
    depthValue = node.constantInts(1, "depth");
  }
  if (!depthValue)
    return failure();
  int64_t depth = depthValue->front();
  if (depth <= 0)
    return node.unsupported("depth must be positive");
  int64_t rank = indicesType.getRank() + 1;
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", -1), rank);
  if (!axis)
    return node.unsupported("axis is out of range");
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value indices = node.input(0);
  if (!isa<IntegerType>(indicesType.getElementType()) ||
      !indicesType.getElementType().isInteger(64))
    indices = CastOp::create(b, loc, indicesType.clone(b.getI64Type()), indices);
  Value depthConstant = node.int64Constant({depth}, {});
  Value negative = node.createInferred<CompareOp>(b.getStringAttr("lt"), indices,
                                                  node.int64Constant({0}, {}));
  indices = node.createInferred<WhereOp>(
      negative, node.createInferred<AddOp>(indices, depthConstant), indices);
  SmallVector<int64_t> keptShape(indicesType.getShape());
  keptShape.insert(keptShape.begin() + *axis, 1);
  indices = ReshapeOp::create(b, loc, RankedTensorType::get(keptShape, b.getI64Type()), indices);
  SmallVector<int64_t> positionShape(rank, 1), positions(depth);
  positionShape[*axis] = depth;
  std::iota(positions.begin(), positions.end(), 0);
  Value hot = node.createInferred<CompareOp>(
      b.getStringAttr("eq"), node.int64Constant(positions, positionShape), indices);
  // values = [off_value, on_value].
  RankedTensorType valuesType = node.inputType(2);
  auto pick = [&](int64_t i) {
    Value one = SliceOp::create(b, loc, valuesType.clone({1}), node.input(2),
                                b.getDenseI64ArrayAttr({i}), b.getDenseI64ArrayAttr({1}));
    return ReshapeOp::create(b, loc, valuesType.clone(ArrayRef<int64_t>{}), one);
  };
  return node.setInferredOutput(0, node.createInferred<WhereOp>(hot, pick(1), pick(0)));
}

/// EyeLike: ones on diagonal k of a matrix shaped like the input.
LogicalResult importEyeLike(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() != 2 || !type.hasStaticShape())
    return node.unsupported("the input must be a static matrix");
  OpBuilder &b = node.builder();
  Type elementType = type.getElementType();
  if (std::optional<int64_t> dtype = node.intAttr("dtype"))
    elementType = elementTypeFor(b.getContext(), *dtype);
  if (!elementType)
    return node.unsupported("dtype is not supported");
  int64_t k = node.intAttr("k", 0);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < type.getDimSize(0); ++i)
    for (int64_t j = 0; j < type.getDimSize(1); ++j) {
      double value = j - i == k ? 1.0 : 0.0;
      values.push_back(isa<FloatType>(elementType)
                           ? Attribute(b.getFloatAttr(elementType, value))
                           : Attribute(b.getIntegerAttr(elementType, int64_t(value))));
    }
  node.setOutput(0, ConstantOp::create(b, node.loc(),
                                       DenseElementsAttr::get(type.clone(elementType), values)));
  return success();
}

} // namespace

void registerIndexingHandlers(OpRegistry &registry) {
  registry.on("Slice", 1, importSlice);
  registry.on("Split", 2, importSplit);
  registry.on("Gather", 1, importGather);
  registry.on("GatherElements", 11, importGatherElements);
  registry.on("Expand", 8, importExpand);
  registry.on("Tile", 6, importTile);
  registry.on("Pad", 2, importPad);
  registry.on("CumSum", 11, importCumSum);
  registry.on("Trilu", 14, importTrilu);
  registry.on("ConstantOfShape", 9, importConstantOfShape);
  registry.on("Range", 11, importRange);
  registry.on("DepthToSpace", 1, importDepthToSpace);
  registry.on("SpaceToDepth", 1, importSpaceToDepth);
  registry.on("OneHot", 9, importOneHot);
  registry.on("EyeLike", 9, importEyeLike);
}

} // namespace tessel::onnx_import
