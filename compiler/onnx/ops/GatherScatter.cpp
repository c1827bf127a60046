//===- GatherScatter.cpp - Gather*, Scatter*, MaxUnpool, OneHot, ... -----===//
//
// Elements chosen by index or by condition. Indices may be run-time data,
// checked against their axes (checkIndices); a condition, and NonZero's
// input, decide the result shape: known at compile time, or at run time
// when the model states the shape (the count checked when the model runs).
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include "llvm/ADT/StringExtras.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {

namespace {

/// "[-3, 3)", or "[-3, 3) and [-4, 4)" for one extent per tuple entry.
std::string indexRanges(ArrayRef<int64_t> extents) {
  SmallVector<std::string> ranges;
  for (int64_t extent : extents)
    ranges.push_back(("[-" + Twine(extent) + ", " + Twine(extent) + ")").str());
  return llvm::join(ranges, " and ");
}

} // namespace

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
  // Known to lie in range, as a loop's iteration number over an axis of
  // its trip count does.
  if (std::optional<std::pair<int64_t, int64_t>> range = node.integerRange(input);
      range && extents.size() == 1 && range->first >= -extents[0] && range->second < extents[0])
    return success();
  OpBuilder &b = node.builder();
  Value count = CountOutOfRangeOp::create(b, node.loc(), RankedTensorType::get({}, b.getI64Type()),
                                          node.input(input), b.getDenseI64ArrayAttr(extents));
  stopUnlessZero(node, count, node.node().op_type() + " indices outside " + indexRanges(extents));
  return success();
}

namespace {

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

/// TensorScatter (opset 24, a KV cache update): the update's positions
/// along the sequence axis, shifted by each batch entry's write index (0
/// without them) and wrapped around the cache in "circular" mode, are the
/// indices of one ScatterElements of the update into the past cache. A
/// "linear" write past the cache's end is an error when the model runs.
LogicalResult importTensorScatter(NodeImporter &node) {
  RankedTensorType cacheType = node.inputType(0);
  RankedTensorType updateType = node.inputType(1);
  int64_t rank = cacheType.getRank();
  if (!cacheType.hasStaticShape() || !updateType.hasStaticShape() ||
      updateType.getRank() != rank || rank < 2)
    return node.unsupported("past_cache and update must have static shapes of one rank, "
                            "at least 2");
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", -2), rank);
  if (!axis || *axis == 0)
    return node.unsupported("axis must name a sequence axis other than the batch axis 0");
  int64_t capacity = cacheType.getDimSize(*axis), length = updateType.getDimSize(*axis);
  for (int64_t dim = 0; dim < rank; ++dim)
    if (dim != *axis && updateType.getDimSize(dim) != cacheType.getDimSize(dim))
      return node.unsupported("update must match past_cache on every axis but the sequence "
                              "axis " + Twine(*axis));
  if (length > capacity)
    return node.unsupported("update's sequence of " + Twine(length) +
                            " is longer than the cache's " + Twine(capacity));
  std::string mode = node.stringAttr("mode").value_or("linear");
  if (mode != "linear" && mode != "circular")
    return node.unsupported("mode '" + mode + "' is not 'linear' or 'circular'");
  int64_t batch = cacheType.getDimSize(0);
  if (node.input(2) && node.inputType(2).getShape() != ArrayRef<int64_t>{batch})
    return node.unsupported("write_indices must hold one index per batch entry (" +
                            Twine(batch) + ")");

  // positions[b, ..., s, ...] = write_indices[b] + s.
  SmallVector<int64_t> alongAxis(rank, 1), alongBatch(rank, 1);
  alongAxis[*axis] = length;
  alongBatch[0] = batch;
  Value positions = node.int64Constant(llvm::to_vector(llvm::seq<int64_t>(0, length)), alongAxis);
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  if (node.input(2)) {
    Value starts = ReshapeOp::create(b, loc, RankedTensorType::get(alongBatch, b.getI64Type()),
                                     node.input(2));
    positions = node.createInferred<AddOp>(starts, positions);
  }
  if (mode == "circular")
    positions = node.createInferred<ModOp>(positions, node.int64Constant({capacity}, {}),
                                           b.getBoolAttr(false));
  Value indices = ExpandOp::create(b, loc, updateType.clone(b.getI64Type()), positions);
  Value outside = CountOutOfRangeOp::create(b, loc, RankedTensorType::get({}, b.getI64Type()),
                                            indices, b.getDenseI64ArrayAttr({capacity}));
  stopUnlessZero(node, outside,
                 "TensorScatter writes past the cache's " + Twine(capacity) +
                     " positions (write_indices + update length > max_sequence_length)");
  node.setOutput(0, ScatterElementsOp::create(b, loc, cacheType, node.input(0), indices,
                                              node.input(1), b.getI64IntegerAttr(*axis),
                                              b.getStringAttr("none")));
  return success();
}

/// MaxUnpool puts each input element at its MaxPool index in zeros of the
/// shape the pooling's attributes infer. Indices are flat over that whole
/// tensor (as MaxPool's Indices give them), so it is one scatter into it
/// flattened. An output_shape larger than the inferred one pads it at the
/// end, as ONNX's reference and test data do (onnxruntime indexes the larger
/// shape instead).
LogicalResult importMaxUnpool(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape() || type.getRank() < 3 ||
      node.inputType(1).getShape() != type.getShape())
    return node.unsupported("X must be a static [N, C, spatial...] tensor with indices of its shape");
  int64_t spatial = type.getRank() - 2;
  std::vector<int64_t> kernel = node.intsAttr("kernel_shape").value_or(std::vector<int64_t>{});
  std::vector<int64_t> strides =
      node.intsAttr("strides").value_or(std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads =
      node.intsAttr("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  if (static_cast<int64_t>(kernel.size()) != spatial ||
      static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return node.unsupported("kernel_shape, strides and pads must give every spatial axis");
  SmallVector<int64_t> inferred(type.getShape().take_front(2));
  for (int64_t axis = 0; axis < spatial; ++axis)
    inferred.push_back((type.getDimSize(axis + 2) - 1) * strides[axis] + kernel[axis] -
                       pads[axis] - pads[axis + spatial]);
  if (llvm::any_of(inferred, [](int64_t extent) { return extent <= 0; }))
    return node.unsupported("the pads leave no output");
  SmallVector<int64_t> shape = inferred;
  if (node.input(2)) {
    std::optional<SmallVector<int64_t>> given =
        shapeGivingInts(node, 2, "output_shape", [&] { return statedShape(node); });
    if (!given)
      return failure();
    if (given->size() != shape.size() ||
        llvm::any_of(llvm::zip(*given, inferred),
                     [](auto pair) { return std::get<0>(pair) < std::get<1>(pair); }))
      return node.unsupported("output_shape must be at least the inferred shape " +
                              formatShape(inferred));
    shape = *given;
  }
  RankedTensorType inferredType = type.clone(inferred);
  if (failed(checkComputeBudget(node, double(type.clone(shape).getNumElements()),
                                "output elements", kMaxComputedElements)) ||
      failed(checkIndices(node, 1, {inferredType.getNumElements()})))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto flat = [&](Value value, int64_t elements) {
    auto valueType = cast<RankedTensorType>(value.getType());
    return ReshapeOp::create(b, loc, valueType.clone({elements}), value);
  };
  Value zeros =
      node.splatConstant(type.getElementType(), 0.0, {inferredType.getNumElements()});
  Value scattered = ScatterElementsOp::create(
      b, loc, zeros.getType(), zeros, flat(node.input(1), type.getNumElements()),
      flat(node.input(0), type.getNumElements()), b.getI64IntegerAttr(0),
      b.getStringAttr("none"));
  Value unpooled = ReshapeOp::create(b, loc, inferredType, scattered);
  if (shape != inferred) {
    SmallVector<int64_t> padding(inferred.size(), 0);
    for (auto [extent, given] : llvm::zip(inferred, shape))
      padding.push_back(given - extent);
    unpooled = node.createInferred<PadOp>(unpooled, node.splatConstant(type.getElementType(), 0.0),
                                          b.getDenseI64ArrayAttr(padding),
                                          b.getStringAttr("constant"));
  }
  return node.setInferredOutput(0, unpooled);
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

/// OneHot: on_value where the position along the new axis equals the index
/// (negative indices count from depth), off_value elsewhere.
LogicalResult importOneHot(NodeImporter &node) {
  RankedTensorType indicesType = node.inputType(0);
  std::optional<SmallVector<int64_t>> depthValue;
  if (ElementsAttr constant = node.constantInput(1);
      constant && isa<FloatType>(constant.getElementType())) {
    depthValue = SmallVector<int64_t>{
        int64_t((*constant.getValues<APFloat>().begin()).convertToDouble())};
  }
  int64_t rank = indicesType.getRank() + 1;
  std::optional<int64_t> axis = normalizeAxis(node.intAttr("axis", -1), rank);
  if (!axis)
    return node.unsupported("axis is out of range");
  if (!depthValue)
    depthValue = shapeGivingInts(node, 1, "depth", [&]() -> std::optional<ImpliedInts> {
      RankedTensorType stated = node.declaredOutputType(0);
      if (!stated || stated.getRank() != rank)
        return std::nullopt;
      return exactly({stated.getDimSize(*axis)});
    });
  if (!depthValue)
    return failure();
  int64_t depth = depthValue->front();
  if (depth <= 0)
    return node.unsupported("depth must be positive");
  if (failed(checkComputeBudget(node, double(depth), "one-hot positions")))
    return failure();
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

} // namespace

/// The positions of the `kept` nonzero entries of `flags` (a 1-D tensor)
/// known only at run time, kept being the count the model states, after a
/// run-time check that `kept` flags are nonzero (`what` names them in the
/// error). Each nonzero flag writes its position to the entry its running
/// count names, every other flag to a spare entry past the end, which is
/// dropped: one pass over the flags. Entries stay within `flags` even when
/// the count is wrong: a gather reading them may run before the check
/// stops the run.
Value positionsOfNonzero(NodeImporter &node, Value flags, int64_t kept, const Twine &what) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto flagsType = cast<RankedTensorType>(flags.getType());
  int64_t count = flagsType.getNumElements();
  auto i64 = [&](ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, b.getI64Type()); };
  Value nonzero = node.createInferred<NotOp>(node.createInferred<CompareOp>(
      b.getStringAttr("eq"), flags, node.splatConstant(flagsType.getElementType(), 0.0)));
  Value keep = CastOp::create(b, loc, i64({count}), nonzero);
  Value sum = node.createInferred<ReduceOp>(b.getStringAttr("sum"), keep,
                                            b.getDenseI64ArrayAttr({0}));
  Value wrongCount = node.createInferred<NotOp>(node.createInferred<CompareOp>(
      b.getStringAttr("eq"), sum, node.int64Constant({kept}, {})));
  stopUnlessZero(node, CastOp::create(b, loc, i64({}), wrongCount),
                 what + " than the " + Twine(kept) + " the model states");
  Value running = CumSumOp::create(b, loc, i64({count}), keep, b.getI64IntegerAttr(0),
                                   b.getBoolAttr(false), b.getBoolAttr(false));
  Value spare = node.int64Constant({kept}, {});
  Value entry = node.createInferred<MinOp>(
      node.createInferred<WhereOp>(
          nonzero, node.createInferred<SubOp>(running, node.int64Constant({1}, {})), spare),
      spare);
  SmallVector<int64_t> positions(count);
  std::iota(positions.begin(), positions.end(), 0);
  Value written = ScatterElementsOp::create(
      b, loc, i64({kept + 1}), node.int64Constant(SmallVector<int64_t>(kept + 1, 0), {kept + 1}),
      entry, node.int64Constant(positions, {count}), b.getI64IntegerAttr(0),
      b.getStringAttr("none"));
  return SliceOp::create(b, loc, i64({kept}), written, b.getDenseI64ArrayAttr({0}),
                         b.getDenseI64ArrayAttr({1}));
}

namespace {

/// An empty constant shaped like `value` but with `axis` of size 0.
Value emptyAlong(NodeImporter &node, Value value, int64_t axis) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = 0;
  return ConstantOp::create(node.builder(), node.loc(),
                            DenseElementsAttr::get(type.clone(shape), ArrayRef<Attribute>{}));
}

/// Compress with a condition known only at run time, keeping the `kept`
/// slices the model states.
LogicalResult compressAtRunTime(NodeImporter &node, Value input, int64_t axis, int64_t kept) {
  if (kept == 0)
    return node.setInferredOutput(0, emptyAlong(node, input, axis));
  OpBuilder &b = node.builder();
  int64_t conditions = node.inputType(1).getNumElements();
  if (failed(checkComputeBudget(node, double(kept) * double(conditions), "position comparisons")))
    return failure();
  Value condition =
      ReshapeOp::create(b, node.loc(), node.inputType(1).clone({conditions}), node.input(1));
  Value position =
      positionsOfNonzero(node, condition, kept, "Compress condition keeping another number of slices");
  return node.setInferredOutput(
      0, node.createInferred<GatherOp>(input, position, b.getI64IntegerAttr(axis)));
}

/// Compress keeps the slices along the axis (of the flattened input when
/// there is none) whose condition is true; the condition must be known.
LogicalResult importCompress(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape())
    return node.unsupported("the input must have a static shape");
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
  RankedTensorType stated = node.declaredOutputType(0);
  if (!node.constantInput(1) && stated &&
      stated.getRank() == cast<RankedTensorType>(input.getType()).getRank() &&
      node.inputType(1).hasStaticShape() && node.inputType(1).getNumElements() <= extent)
    return compressAtRunTime(node, input, axis, stated.getDimSize(axis));
  std::optional<SmallVector<int64_t>> condition = node.constantInts(1, "condition");
  if (!condition)
    return failure();
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

/// NonZero: the coordinates of the nonzero elements in row-major order, one
/// row per axis. Their count depends on the values, so the input must be
/// known at compile time (a constant, or computed from frozen inputs).
/// NonZero of an input known only at run time, with the count of nonzero
/// elements the model states: their row-major positions, each split into
/// its coordinates.
LogicalResult nonZeroAtRunTime(NodeImporter &node, int64_t count) {
  RankedTensorType type = node.inputType(0);
  int64_t rank = std::max<int64_t>(type.getRank(), 1);
  if (count == 0) {
    node.setOutput(0, node.int64Constant({}, {rank, 0}));
    return success();
  }
  if (failed(checkComputeBudget(node, double(count) * double(type.getNumElements()),
                                "position comparisons")))
    return failure();
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Value flat = ReshapeOp::create(b, loc, type.clone({type.getNumElements()}), node.input(0));
  Value position =
      positionsOfNonzero(node, flat, count, "NonZero input with another number of nonzero elements");
  SmallVector<Value> rows;
  int64_t stride = type.getNumElements();
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t size = type.getRank() ? type.getDimSize(axis) : 1;
    stride /= std::max<int64_t>(size, 1);
    // (position / stride) mod size, from truncating division of positives.
    Value quotient = node.createInferred<DivOp>(position, node.int64Constant({stride}, {}));
    Value sizeValue = node.int64Constant({size}, {});
    Value coordinate = node.createInferred<SubOp>(
        quotient,
        node.createInferred<MulOp>(node.createInferred<DivOp>(quotient, sizeValue), sizeValue));
    rows.push_back(ReshapeOp::create(b, loc, RankedTensorType::get({1, count}, b.getI64Type()),
                                     coordinate));
  }
  return node.setInferredOutput(0, node.createInferred<ConcatOp>(rows, b.getI64IntegerAttr(0)));
}

LogicalResult importNonZero(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  RankedTensorType stated = node.declaredOutputType(0);
  if (!node.constantInput(0) && type.hasStaticShape() && stated && stated.getRank() == 2 &&
      stated.getDimSize(0) == std::max<int64_t>(type.getRank(), 1))
    return nonZeroAtRunTime(node, stated.getDimSize(1));
  ElementsAttr values =
      node.requireConstant(0, "NonZero's output shape depends on its values: unless the model "
                              "states it, the input");
  if (!values)
    return failure();
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

} // namespace

void registerGatherScatterHandlers(OpRegistry &registry) {
  registry.on("Gather", 1, importGather);
  registry.on("GatherElements", 11, importGatherElements);
  registry.on("GatherND", 11, importGatherND);
  registry.on("Scatter", 9, importScatterElements);
  registry.on("ScatterElements", 11, importScatterElements);
  registry.on("ScatterND", 11, importScatterND);
  registry.on("MaxUnpool", 9, importMaxUnpool);
  registry.on("OneHot", 9, importOneHot);
  registry.on("Compress", 9, importCompress);
  registry.on("NonZero", 9, importNonZero);
  registry.on("TensorScatter", 24, importTensorScatter);
}

} // namespace tessel::onnx_import
