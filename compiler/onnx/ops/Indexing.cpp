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

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <map>
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
  if (parts < 1)
    return node.unsupported("num_outputs is " + Twine(parts) + "; it must be at least 1");
  if (llvm::any_of(*sizes, [](int64_t part) { return part < 0; }))
    return node.unsupported("a split size is negative");
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

/// "[-3, 3)", or "[-3, 3) and [-4, 4)" for one extent per tuple entry.
std::string indexRanges(ArrayRef<int64_t> extents) {
  SmallVector<std::string> ranges;
  for (int64_t extent : extents)
    ranges.push_back(("[-" + Twine(extent) + ", " + Twine(extent) + ")").str());
  return llvm::join(ranges, " and ");
}

/// Entry i of input `input` indexes an axis of extent
/// extents[i % extents.size()] (one extent for Gather, one per tuple entry
/// for GatherND) and must lie in [-extent, extent): ONNX leaves other
/// indices undefined and onnxruntime refuses them, where clamping would
/// give wrong rows silently. Constant indices are checked here, saying
/// which entry is wrong; indices known only at run time get a count of
/// those out of range, which the runtime checks before returning results.
LogicalResult checkIndices(NodeImporter &node, size_t input, ArrayRef<int64_t> extents) {
  if (extents.empty() || llvm::any_of(extents, ShapedType::isDynamic))
    return success();
  if (ElementsAttr indices = node.constantInput(input)) {
    auto values = indices.tryGetValues<APInt>();
    if (!values)
      return success();
    for (auto [position, value] : llvm::enumerate(*values)) {
      int64_t index = value.getSExtValue(), extent = extents[position % extents.size()];
      if (index < -extent || index >= extent)
        return node.unsupported("index " + Twine(index) + " (entry " + Twine(position) +
                                " of the constant indices) is out of range for an axis of "
                                "size " +
                                Twine(extent));
    }
    return success();
  }
  OpBuilder &b = node.builder();
  Value count = CountOutOfRangeOp::create(b, node.loc(), RankedTensorType::get({}, b.getI64Type()),
                                          node.input(input), b.getDenseI64ArrayAttr(extents));
  auto name = dyn_cast<NameLoc>(node.loc());
  CheckZeroOp::create(
      b, node.loc(), count, name ? name.getName() : b.getStringAttr(node.node().name()),
      b.getStringAttr(node.node().op_type() + " indices outside " + indexRanges(extents)));
  return success();
}

LogicalResult importGather(NodeImporter &node) {
  std::optional<int64_t> axis =
      normalizeAxis(node.intAttr("axis", 0), node.inputType(0).getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  if (failed(checkIndices(node, 1, node.inputType(0).getDimSize(*axis))))
    return failure();
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
  if (failed(checkIndices(node, 1, node.inputType(0).getDimSize(*axis))))
    return failure();
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

template <typename OpTy>
LogicalResult importCumulative(NodeImporter &node) {
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
  node.setOutput(0, OpTy::create(b, node.loc(), type, node.input(0),
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
  double length = std::max(0.0, std::ceil((last - first) / step));
  if (failed(checkComputeBudget(node, length, "range elements")))
    return failure();
  int64_t count = int64_t(length);
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
  // Divided step by step: block * block may overflow.
  if (block > c || c % block != 0 || (c / block) % block != 0)
    return node.unsupported("channels are not a multiple of blocksize^2");
  int64_t depth = c / block / block;
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
  if (failed(checkComputeBudget(node, double(depth), "one-hot positions")))
    return failure();
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
  if (failed(checkComputeBudget(node, double(type.getNumElements()), "matrix elements")))
    return failure();
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

/// TopK as k rounds of arg-max (or min): each round picks the best remaining
/// element along the axis (the lowest index among equals, as ONNX orders
/// ties) and masks it out. Linear in k, so k is bounded.
LogicalResult importTopK(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", -1), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  int64_t k = 0;
  if (node.opset() >= 10) {
    std::optional<SmallVector<int64_t>> given = node.constantInts(1, "K");
    if (!given)
      return failure();
    k = given->front();
  } else {
    k = node.intAttr("k").value_or(0);
  }
  constexpr int64_t kMaxK = 256;
  if (k < 1 || k > type.getDimSize(*axis) || k > kMaxK)
    return node.unsupported("K must be between 1 and the axis size (at most " +
                            Twine(kMaxK) + ")");
  bool largest = node.opset() < 11 || node.intAttr("largest", 1) != 0;
  node.ignoreAttr("sorted"); // the rounds produce sorted results anyway
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Type elementType = type.getElementType();
  SmallVector<int64_t> keptShape(type.getShape());
  keptShape[*axis] = 1;
  SmallVector<int64_t> positionShape(type.getRank(), 1), positions(type.getDimSize(*axis));
  positionShape[*axis] = positions.size();
  std::iota(positions.begin(), positions.end(), 0);
  Value position = node.int64Constant(positions, positionShape);
  Value excluded;
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    double infinity = std::numeric_limits<double>::infinity();
    excluded = node.splatConstant(elementType, largest ? -infinity : infinity);
  } else {
    unsigned width = elementType.getIntOrFloatBitWidth();
    APInt value = largest ? APInt::getSignedMinValue(width) : APInt::getSignedMaxValue(width);
    if (elementType.isUnsignedInteger())
      value = largest ? APInt::getMinValue(width) : APInt::getMaxValue(width);
    excluded = ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                                       ArrayRef<APInt>(value)));
  }
  Value remaining = node.input(0);
  SmallVector<Value> values, indices;
  for (int64_t round = 0; round < k; ++round) {
    Value best = node.createInferred<ArgReduceOp>(b.getStringAttr(largest ? "max" : "min"),
                                                  remaining, b.getI64IntegerAttr(*axis),
                                                  b.getBoolAttr(false));
    if (!best)
      return failure();
    Value index = ReshapeOp::create(b, loc, RankedTensorType::get(keptShape, b.getI64Type()),
                                    best);
    indices.push_back(index);
    values.push_back(GatherElementsOp::create(b, loc, type.clone(keptShape), node.input(0),
                                              index, b.getI64IntegerAttr(*axis)));
    if (round + 1 < k) {
      Value taken = node.createInferred<CompareOp>(b.getStringAttr("eq"), position, index);
      remaining = node.createInferred<WhereOp>(taken, excluded, remaining);
    }
  }
  auto join = [&](SmallVector<Value> &parts) {
    return parts.size() == 1 ? parts.front()
                             : node.createInferred<ConcatOp>(ValueRange(parts),
                                                             b.getI64IntegerAttr(*axis));
  };
  node.setOutput(0, join(values));
  if (node.outputUsed(1))
    node.setOutput(1, join(indices));
  return success();
}

/// GatherND as a Gather on the data flattened over the indexed axes: each
/// index tuple becomes one row-major offset (batch_dims = 0 only).
/// GatherND as a Gather of rows: each index tuple becomes the row offset
/// into the data flattened over the batch axes and the tuple's axes.
LogicalResult importGatherND(NodeImporter &node) {
  RankedTensorType dataType = node.inputType(0), indicesType = node.inputType(1);
  if (!dataType.hasStaticShape() || !indicesType.hasStaticShape() ||
      indicesType.getRank() < 1)
    return node.unsupported("data and indices must have static shapes");
  int64_t batchDims = node.intAttr("batch_dims", 0);
  if (batchDims < 0 || batchDims >= indicesType.getRank() || batchDims >= dataType.getRank() ||
      dataType.getShape().take_front(batchDims) != indicesType.getShape().take_front(batchDims))
    return node.unsupported("batch_dims must name leading axes that data and indices share");
  int64_t depth = indicesType.getShape().back();
  if (batchDims + depth > dataType.getRank())
    return node.unsupported("index tuples are longer than the data's rank");
  SmallVector<int64_t> dims(dataType.getShape().slice(batchDims, depth)), strides(depth, 1);
  if (failed(checkIndices(node, 1, dims)))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  for (int64_t i = depth - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  SmallVector<int64_t> tupleShape(indicesType.getRank(), 1);
  tupleShape.back() = depth;
  Value indices = node.input(1);
  if (!indicesType.getElementType().isInteger(64))
    indices = CastOp::create(b, loc, indicesType.clone(b.getI64Type()), indices);
  // Negative entries count from the end of their axis.
  Value negative = node.createInferred<CompareOp>(b.getStringAttr("lt"), indices,
                                                  node.int64Constant({0}, {}));
  Value wrapped = node.createInferred<AddOp>(indices, node.int64Constant(dims, tupleShape));
  indices = node.createInferred<WhereOp>(negative, wrapped, indices);
  Value offsets = node.createInferred<MulOp>(indices, node.int64Constant(strides, tupleShape));
  Value offset = node.createInferred<ReduceOp>(
      b.getStringAttr("sum"), offsets, b.getDenseI64ArrayAttr({indicesType.getRank() - 1}));
  int64_t rows = 1;
  for (int64_t dim : dims)
    rows *= dim;
  // Batch element i starts at row i * rows.
  int64_t batches = 1;
  for (int64_t dim : dataType.getShape().take_front(batchDims))
    batches *= dim;
  if (batchDims > 0) {
    SmallVector<int64_t> firstRows, batchShape(indicesType.getRank() - 1, 1);
    for (int64_t i = 0; i < batches; ++i)
      firstRows.push_back(i * rows);
    llvm::copy(dataType.getShape().take_front(batchDims), batchShape.begin());
    offset = node.createInferred<AddOp>(offset, node.int64Constant(firstRows, batchShape));
  }
  SmallVector<int64_t> flatShape{batches * rows};
  llvm::append_range(flatShape, dataType.getShape().drop_front(batchDims + depth));
  Value flat = ReshapeOp::create(b, loc, dataType.clone(flatShape), node.input(0));
  return node.setInferredOutput(
      0, node.createInferred<GatherOp>(flat, offset, b.getI64IntegerAttr(0)));
}

LogicalResult importScatterElements(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (!axis)
    return node.unsupported("axis is out of range");
  std::string reduction =
      node.opset() >= 16 ? node.stringAttr("reduction").value_or("none") : "none";
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return node.unsupported("reduction '" + reduction + "' is not supported");
  if (failed(checkIndices(node, 1, type.getDimSize(*axis))))
    return failure();
  OpBuilder &b = node.builder();
  node.setOutput(0, ScatterElementsOp::create(b, node.loc(), type, node.input(0),
                                              node.input(1), node.input(2),
                                              b.getI64IntegerAttr(*axis),
                                              b.getStringAttr(reduction)));
  return success();
}

LogicalResult importScatterND(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::string reduction =
      node.opset() >= 16 ? node.stringAttr("reduction").value_or("none") : "none";
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return node.unsupported("reduction '" + reduction + "' is not supported");
  if (!node.inputType(1).hasStaticShape())
    return node.unsupported("indices must have a static shape");
  if (node.inputType(1).getRank() < 1)
    return node.unsupported("indices must have at least one axis");
  int64_t depth = node.inputType(1).getShape().back();
  if (depth > type.getRank())
    return node.unsupported("index tuples are longer than the data's rank");
  if (failed(checkIndices(node, 1, type.getShape().take_front(depth))))
    return failure();
  OpBuilder &b = node.builder();
  node.setOutput(0, ScatterNDOp::create(b, node.loc(), type, node.input(0), node.input(1),
                                        node.input(2), b.getStringAttr(reduction)));
  return success();
}

/// Einsum: "..." becomes explicit letters and an implicit output (no "->")
/// the letters used once, in alphabetical order, after the ellipsis axes.
LogicalResult importEinsum(NodeImporter &node) {
  std::string equation;
  for (char c : node.stringAttr("equation").value_or(""))
    if (c != ' ')
      equation += c;
  StringRef text(equation);
  auto [left, right] = text.split("->");
  bool explicitOutput = text.contains("->");
  SmallVector<StringRef> terms;
  left.split(terms, ',');
  if (terms.size() != node.numInputs())
    return node.unsupported("the equation names " + Twine(terms.size()) +
                            " operands for " + Twine(node.numInputs()) + " inputs");
  // Letters for the ellipsis axes: upper case ones the equation does not use.
  std::string spare;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (!text.contains(c))
      spare.push_back(c);
  int64_t ellipsisRank = 0;
  SmallVector<std::string> operands;
  for (auto [i, term] : llvm::enumerate(terms)) {
    int64_t rank = node.inputType(i).getRank();
    size_t dots = term.find("...");
    std::string letters = term.str();
    if (dots != StringRef::npos) {
      int64_t covered = rank - int64_t(term.size() - 3);
      if (covered < 0 || covered > int64_t(spare.size()))
        return node.unsupported("the ellipsis does not fit operand " + Twine(i));
      ellipsisRank = std::max(ellipsisRank, covered);
      letters = term.substr(0, dots).str() + spare.substr(spare.size() - covered) +
                term.substr(dots + 3).str();
    }
    if (int64_t(letters.size()) != rank)
      return node.unsupported("operand " + Twine(i) + " has rank " + Twine(rank) +
                              " but '" + term + "' names " + Twine(letters.size()) + " axes");
    operands.push_back(letters);
  }
  std::string ellipsisLetters = spare.substr(spare.size() - ellipsisRank);
  std::string output;
  if (explicitOutput) {
    size_t dots = right.find("...");
    output = dots == StringRef::npos ? right.str()
                                     : right.substr(0, dots).str() + ellipsisLetters +
                                           right.substr(dots + 3).str();
  } else {
    std::map<char, int> uses;
    for (const std::string &letters : operands)
      for (char c : letters)
        if (!llvm::is_contained(ellipsisLetters, c))
          ++uses[c];
    output = ellipsisLetters;
    for (auto [letter, count] : uses)
      if (count == 1)
        output.push_back(letter);
  }
  // The result's extents come from the operands.
  std::map<char, int64_t> extents;
  for (auto [i, letters] : llvm::enumerate(operands))
    for (auto [letter, size] : llvm::zip(letters, node.inputType(i).getShape()))
      extents[letter] = std::max(extents[letter], size);
  SmallVector<int64_t> shape;
  for (char letter : output) {
    if (!extents.count(letter))
      return node.unsupported("output axis '" + Twine(letter) + "' is not an operand's");
    shape.push_back(extents[letter]);
  }
  std::string normalized = llvm::join(operands, ",") + "->" + output;
  SmallVector<Value> inputs;
  for (size_t i = 0; i < node.numInputs(); ++i)
    inputs.push_back(node.input(i));
  OpBuilder &b = node.builder();
  node.setOutput(0, EinsumOp::create(b, node.loc(), node.inputType(0).clone(shape), inputs,
                                     b.getStringAttr(normalized)));
  return success();
}

/// NonZero: the coordinates of the nonzero elements in row-major order, one
/// row per axis. Their count depends on the values, so the input must be
/// known at compile time (a constant, or computed from frozen inputs).
LogicalResult importNonZero(NodeImporter &node) {
  ElementsAttr values =
      node.requireConstant(0, "NonZero's output shape depends on its values: the input");
  if (!values)
    return failure();
  RankedTensorType type = node.inputType(0);
  SmallVector<bool> nonzero;
  if (isa<FloatType>(type.getElementType()))
    for (const APFloat &value : values.getValues<APFloat>())
      nonzero.push_back(!value.isZero());
  else
    for (const APInt &value : values.getValues<APInt>())
      nonzero.push_back(!value.isZero());
  int64_t rank = std::max<int64_t>(type.getRank(), 1);
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t axis = type.getRank() - 2; axis >= 0; --axis)
    strides[axis] = strides[axis + 1] * type.getDimSize(axis + 1);
  SmallVector<SmallVector<int64_t>> coordinates(rank);
  for (auto [flat, isNonzero] : llvm::enumerate(nonzero))
    if (isNonzero)
      for (int64_t axis = 0; axis < rank; ++axis)
        coordinates[axis].push_back(static_cast<int64_t>(flat) / strides[axis] %
                                    (type.getRank() ? type.getDimSize(axis) : 1));
  int64_t count = static_cast<int64_t>(coordinates[0].size());
  SmallVector<int64_t> flattened;
  for (const SmallVector<int64_t> &row : coordinates)
    llvm::append_range(flattened, row);
  node.setOutput(0, node.int64Constant(flattened, {rank, count}));
  return success();
}

/// Compress keeps the slices along the axis (of the flattened input when
/// there is none) whose condition is true; the condition must be known.
LogicalResult importCompress(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  std::optional<SmallVector<int64_t>> condition = node.constantInts(1, "condition");
  if (!condition)
    return failure();
  OpBuilder &b = node.builder();
  Value input = node.input(0);
  int64_t axis = 0;
  if (std::optional<int64_t> given = node.intAttr("axis")) {
    std::optional<int64_t> normalized = normalizeAxis(*given, type.getRank());
    if (!normalized)
      return node.unsupported("axis is out of range");
    axis = *normalized;
  } else {
    input = ReshapeOp::create(b, node.loc(), type.clone({type.getNumElements()}), input);
  }
  int64_t extent = cast<RankedTensorType>(input.getType()).getDimSize(axis);
  SmallVector<int64_t> kept;
  for (auto [i, keep] : llvm::enumerate(*condition))
    if (keep && static_cast<int64_t>(i) < extent)
      kept.push_back(i);
  if (kept.empty())
    return node.unsupported("the condition keeps nothing; empty tensors are not supported");
  return node.setInferredOutput(
      0, node.createInferred<GatherOp>(input,
                                       node.int64Constant(kept, {int64_t(kept.size())}),
                                       b.getI64IntegerAttr(axis)));
}

/// HannWindow, HammingWindow, BlackmanWindow: constants of the given size,
/// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) with N = size (periodic) or
/// size - 1 (symmetric).
LogicalResult importWindow(NodeImporter &node, double a0, double a1, double a2) {
  std::optional<SmallVector<int64_t>> size = node.constantInts(0, "size");
  if (!size)
    return failure();
  int64_t count = size->front();
  if (count <= 0)
    return node.unsupported("size must be positive");
  if (failed(checkComputeBudget(node, double(count), "window elements")))
    return failure();
  OpBuilder &b = node.builder();
  Type elementType = elementTypeFor(b.getContext(), node.intAttr("output_datatype", 1));
  if (!elementType)
    return node.unsupported("output_datatype is not supported");
  bool periodic = node.intAttr("periodic", 1) != 0;
  double period = periodic ? count : count - 1;
  SmallVector<Attribute> values;
  for (int64_t n = 0; n < count; ++n) {
    double angle = period > 0 ? 2 * M_PI * n / period : 0.0;
    double value = a0 - a1 * std::cos(angle) + a2 * std::cos(2 * angle);
    values.push_back(isa<FloatType>(elementType)
                         ? Attribute(b.getFloatAttr(elementType, value))
                         : Attribute(b.getIntegerAttr(elementType, int64_t(value))));
  }
  node.setOutput(0, ConstantOp::create(
                        b, node.loc(),
                        DenseElementsAttr::get(RankedTensorType::get({count}, elementType),
                                               values)));
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
  registry.on("CumSum", 11, importCumulative<CumSumOp>);
  registry.on("CumProd", 26, importCumulative<CumProdOp>);
  registry.on("Trilu", 14, importTrilu);
  registry.on("ConstantOfShape", 9, importConstantOfShape);
  registry.on("Range", 11, importRange);
  registry.on("DepthToSpace", 1, importDepthToSpace);
  registry.on("SpaceToDepth", 1, importSpaceToDepth);
  registry.on("OneHot", 9, importOneHot);
  registry.on("EyeLike", 9, importEyeLike);
  registry.on("TopK", 1, importTopK);
  registry.on("GatherND", 11, importGatherND);
  registry.on("Scatter", 9, importScatterElements);
  registry.on("ScatterElements", 11, importScatterElements);
  registry.on("ScatterND", 11, importScatterND);
  registry.on("Einsum", 12, importEinsum);
  registry.on("Compress", 9, importCompress);
  registry.on("NonZero", 9, importNonZero);
  registry.on("HannWindow", 17,
              [](NodeImporter &node) { return importWindow(node, 0.5, 0.5, 0.0); });
  registry.on("HammingWindow", 17, [](NodeImporter &node) {
    return importWindow(node, 25.0 / 46.0, 21.0 / 46.0, 0.0);
  });
  registry.on("BlackmanWindow", 17,
              [](NodeImporter &node) { return importWindow(node, 0.42, 0.5, 0.08); });
}

} // namespace tessel::onnx_import
