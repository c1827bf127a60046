//===- Slicing.cpp - Slice, Split, Pad, Tile, Expand, ... -----------------===//
//
// Parts and copies of a tensor. The starts, sizes, pads and repeats these
// ops take as inputs decide the result shapes: they are known at compile
// time, or read at run time against the result shape the model states
// (StatedShapes.cpp, SlicingAtRunTime.cpp).
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

Value slice(NodeImporter &node, Value input, ArrayRef<int64_t> starts,
            ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(input.getType());
  OpBuilder &b = node.builder();
  return SliceOp::create(b, node.loc(), type.clone(shape), input,
                         b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(steps));
}

} // namespace

Value sliceAlong(NodeImporter &node, Value input, int64_t axis, int64_t offset, int64_t size) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
  SmallVector<int64_t> shape(type.getShape());
  starts[axis] = offset;
  shape[axis] = size;
  return slice(node, input, starts, steps, shape);
}

namespace {

/// Slice: Python-style clamped starts and ends per listed axis.
LogicalResult importSlice(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
  int64_t rank = type.getRank();
  RankedTensorType stated = node.declaredOutputType(0);
  bool atRunTime = false;
  for (size_t i = 1; i <= 4 && node.opset() >= 10; ++i)
    atRunTime |= node.input(i) && !node.constantInput(i);
  if (atRunTime && stated && stated.getRank() == rank && node.inputType(1).hasStaticShape())
    return importSliceAtRunTime(node, stated);
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
  std::optional<SmallVector<int64_t>> sizes =
      node.opset() >= 13 && node.input(1)
          ? shapeGivingInts(node, 1, "split",
                            [&]() -> std::optional<ImpliedInts> {
                              SmallVector<int64_t> parts;
                              for (size_t i = 0; i < node.numOutputs(); ++i) {
                                RankedTensorType stated = node.declaredOutputType(i);
                                if (!stated || stated.getRank() != type.getRank())
                                  return std::nullopt;
                                parts.push_back(stated.getDimSize(*axis));
                              }
                              return exactly(parts);
                            })
          : intsFrom(node, 13, 1, "split");
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
    if (node.outputUsed(i))
      node.setOutput(i, sliceAlong(node, node.input(0), *axis, offset, part));
    offset += part;
  }
  return success();
}

/// Expand broadcasts the input with the shape input (both ways).
LogicalResult importExpand(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  std::optional<SmallVector<int64_t>> shape =
      shapeGivingInts(node, 1, "shape", [&]() -> std::optional<ImpliedInts> {
        RankedTensorType stated = node.declaredOutputType(0);
        int64_t entries = node.inputType(1).getNumElements();
        if (!stated || stated.getRank() != std::max(entries, type.getRank()))
          return std::nullopt;
        // The shape aligns with the result's last axes; an entry of 1
        // keeps the input's equal dimension.
        ImpliedInts implied = exactly(stated.getShape().take_back(entries));
        int64_t inputOffset = stated.getRank() - type.getRank();
        for (auto [k, accepted] : llvm::enumerate(implied.accepted)) {
          int64_t inputAxis = stated.getRank() - entries + static_cast<int64_t>(k) - inputOffset;
          if (inputAxis >= 0 && type.getDimSize(inputAxis) == accepted.front())
            accepted.push_back(1);
        }
        return implied;
      });
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
  std::optional<SmallVector<int64_t>> repeats =
      shapeGivingInts(node, 1, "repeats", [&]() -> std::optional<ImpliedInts> {
        RankedTensorType stated = node.declaredOutputType(0);
        if (!stated || stated.getRank() != type.getRank())
          return std::nullopt;
        ImpliedInts implied;
        for (auto [size, tiled] : llvm::zip(type.getShape(), stated.getShape())) {
          if (size == 0) { // any repeat count gives an empty axis
            implied.values.push_back(1);
            implied.accepted.emplace_back();
            continue;
          }
          if (tiled % size != 0)
            return std::nullopt;
          implied.values.push_back(tiled / size);
          implied.accepted.push_back({tiled / size});
        }
        return implied;
      });
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
  std::string mode = node.stringAttr("mode").value_or("constant");
  Value value;
  if (node.opset() >= 11 && node.input(2)) {
    value = node.input(2);
    if (cast<RankedTensorType>(value.getType()).getRank() != 0)
      value = ReshapeOp::create(node.builder(), node.loc(),
                                RankedTensorType::get({}, type.getElementType()), value);
  } else {
    value = node.splatConstant(type.getElementType(), node.floatAttr("value", 0.0f));
  }
  RankedTensorType stated = node.declaredOutputType(0);
  bool atRunTime = node.opset() >= 11 && ((node.input(1) && !node.constantInput(1)) ||
                                          (node.input(3) && !node.constantInput(3)));
  if (atRunTime && stated && stated.getRank() == rank && type.hasStaticShape() &&
      node.inputType(1).hasStaticShape())
    return importPadAtRunTime(node, stated, mode, value);
  std::optional<SmallVector<int64_t>> pads = intsFrom(node, 11, 1, "pads");
  if (!pads)
    return failure();
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
  return node.setInferredOutput(
      0, node.createInferred<PadOp>(node.input(0), value,
                                    node.builder().getDenseI64ArrayAttr(allPads),
                                    node.builder().getStringAttr(mode)));
}

/// Crops or pads each of `axes` (all, by default) to the constant `shape`,
/// centred: the larger half of the difference goes after (ONNX's
/// reference), which a pad of zeros with negative pads for the crops is.
LogicalResult importCenterCropPad(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> given = node.intsAttr("axes")) {
    axes.assign(given->begin(), given->end());
    if (!normalizeAxes(node, axes, rank))
      return failure();
  } else {
    for (int64_t axis = 0; axis < rank; ++axis)
      axes.push_back(axis);
  }
  std::optional<SmallVector<int64_t>> shape =
      shapeGivingInts(node, 1, "shape", [&]() -> std::optional<ImpliedInts> {
        RankedTensorType stated = node.declaredOutputType(0);
        if (!stated || stated.getRank() != rank)
          return std::nullopt;
        SmallVector<int64_t> sizes;
        for (int64_t axis : axes)
          sizes.push_back(stated.getDimSize(axis));
        return exactly(sizes);
      });
  if (!shape)
    return failure();
  if (shape->size() != axes.size())
    return node.unsupported("shape has " + Twine(shape->size()) + " entries for " +
                            Twine(axes.size()) + " axes");
  SmallVector<int64_t> pads(2 * rank, 0);
  for (auto [target, axis] : llvm::zip(*shape, axes)) {
    int64_t size = type.getDimSize(axis);
    if (ShapedType::isDynamic(size))
      return node.unsupported("axis " + Twine(axis) + " has no static size");
    if (target < 0)
      return node.unsupported("shape holds a negative size");
    int64_t difference = target - size;
    // Padding puts the smaller half before; cropping takes the larger half
    // after (the crop starts at (size - target) / 2).
    pads[axis] = difference >= 0 ? difference / 2 : -((-difference) / 2);
    pads[rank + axis] = difference - pads[axis];
  }
  return node.setInferredOutput(
      0, node.createInferred<PadOp>(node.input(0), node.splatConstant(type.getElementType(), 0.0),
                                    node.builder().getDenseI64ArrayAttr(pads),
                                    node.builder().getStringAttr("constant")));
}

/// Trilu keeps the upper (or lower) triangle of the last two axes from
/// diagonal k on: a select with a mask, each element's diagonal (j - i)
/// compared with k. A constant k folds the mask into a constant; one known
/// only at run time (the output's shape does not depend on it) compares in
/// the kernel.
LogicalResult importTrilu(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() < 2 || !type.hasStaticShape())
    return node.unsupported("the input must have rank 2 or more and a static shape");
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value k = node.int64Constant({0}, {});
  if (node.input(1)) {
    RankedTensorType kType = node.inputType(1);
    if (kType.getNumElements() != 1)
      return node.unsupported("k must hold one integer");
    k = ReshapeOp::create(b, loc, kType.clone(ArrayRef<int64_t>{}), node.input(1));
  }
  int64_t rows = type.getDimSize(type.getRank() - 2);
  int64_t columns = type.getDimSize(type.getRank() - 1);
  SmallVector<int64_t> diagonals;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      diagonals.push_back(j - i);
  bool upper = node.intAttr("upper", 1) != 0;
  Value keep = node.createInferred<CompareOp>(b.getStringAttr(upper ? "ge" : "le"),
                                              node.int64Constant(diagonals, {rows, columns}), k);
  if (!keep)
    return failure();
  Value zero = node.splatConstant(type.getElementType(), 0.0);
  node.setOutput(0, WhereOp::create(b, loc, type, keep, node.input(0), zero));
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

/// ReverseSequence: along the time axis, the first sequence_lens[b]
/// entries of each batch b reversed, the rest kept: one gather_elements
/// with out[t, b] = in[t < len[b] ? len[b] - 1 - t : t, b]. A length
/// beyond the time axis reverses the whole axis (ONNX leaves it undefined;
/// the indices stay within the tensor).
LogicalResult importReverseSequence(NodeImporter &node) {
  RankedTensorType type = node.inputType(0), lengthsType = node.inputType(1);
  int64_t rank = type.getRank();
  int64_t timeAxis = node.intAttr("time_axis", 0), batchAxis = node.intAttr("batch_axis", 1);
  if (!type.hasStaticShape() || rank < 2 ||
      !((timeAxis == 0 && batchAxis == 1) || (timeAxis == 1 && batchAxis == 0)))
    return node.unsupported("input must be static, of rank 2 or more, with time_axis and "
                            "batch_axis 0 and 1");
  int64_t steps = type.getDimSize(timeAxis), batch = type.getDimSize(batchAxis);
  if (!lengthsType.hasStaticShape() || lengthsType.getRank() != 1 ||
      lengthsType.getDimSize(0) != batch)
    return node.unsupported("sequence_lens must hold one length per batch entry");
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  RankedTensorType indexType = RankedTensorType::get(type.getShape(), b.getI64Type());
  // Time and lengths as [T, 1] and [1, B] (or transposed), broadcasting to
  // the indices of every (t, b).
  SmallVector<int64_t> timeShape(2, 1), batchShape(2, 1);
  timeShape[timeAxis] = steps, batchShape[batchAxis] = batch;
  SmallVector<int64_t> times;
  for (int64_t t = 0; t < steps; ++t)
    times.push_back(t);
  Value time = node.int64Constant(times, timeShape);
  Value lengths = CastOp::create(b, loc, lengthsType.clone(b.getI64Type()), node.input(1));
  lengths = ReshapeOp::create(b, loc, indexType.clone(batchShape), lengths);
  lengths = node.createInferred<MinOp>(lengths, node.int64Constant({steps}, {}));
  Value reversed = node.createInferred<SubOp>(
      node.createInferred<SubOp>(lengths, node.int64Constant({1}, {})), time);
  Value inside = node.createInferred<CompareOp>(b.getStringAttr("lt"), time, lengths);
  Value indices = node.createInferred<WhereOp>(inside, reversed, time);
  if (!indices)
    return failure();
  SmallVector<int64_t> planeShape(type.getShape().take_front(2));
  planeShape.append(rank - 2, 1);
  indices = ReshapeOp::create(b, loc, indexType.clone(planeShape),
                              ExpandOp::create(b, loc, indexType.clone(type.getShape().take_front(2)),
                                               indices));
  indices = ExpandOp::create(b, loc, indexType, indices);
  node.setOutput(0, GatherElementsOp::create(b, loc, type, node.input(0), indices,
                                             b.getI64IntegerAttr(timeAxis)));
  return success();
}

} // namespace

void registerSlicingHandlers(OpRegistry &registry) {
  registry.on("Slice", 1, importSlice);
  registry.on("Split", 2, importSplit);
  registry.on("Expand", 8, importExpand);
  registry.on("Tile", 6, importTile);
  registry.on("Pad", 2, importPad);
  registry.on("CenterCropPad", 18, importCenterCropPad);
  registry.on("ReverseSequence", 10, importReverseSequence);
  registry.on("Trilu", 14, importTrilu);
  registry.on("DepthToSpace", 1, importDepthToSpace);
  registry.on("SpaceToDepth", 1, importSpaceToDepth);
}

} // namespace tessel::onnx_import
