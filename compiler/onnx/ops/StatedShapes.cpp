//===- StatedShapes.cpp - Shape-giving inputs known only at run time ------===//
//
// A Reshape's shape, a reduction's axes or a TopK's K decide the shape of
// the node's result, which Tessel fixes at compile time. When such an
// input is a graph input, a statement of the result's shape (a graph
// output's type, a value_info entry, the result of the elementwise ops it
// feeds, or --value-shape; GraphImporter::collectDeclaredTypes) still
// fixes it: the node is compiled for the input value that gives that
// shape, and the run checks that the input holds such a value, stopping
// with an error that names the node otherwise. Nothing is assumed that the
// run does not verify.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/ShapeInference.h"
#include "dialects/tessel/TesselDialect.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/bit.h"

#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {

Value runtimeInt64s(NodeImporter &node, size_t input) {
  RankedTensorType type = node.inputType(input);
  OpBuilder &b = node.builder();
  auto flat = RankedTensorType::get({type.getNumElements()}, b.getI64Type());
  Value value = node.input(input);
  if (type.getElementType() != b.getI64Type())
    value = CastOp::create(b, node.loc(), type.clone(b.getI64Type()), value);
  return ReshapeOp::create(b, node.loc(), flat, value);
}

void stopUnlessZero(NodeImporter &node, Value count, const Twine &problem) {
  OpBuilder &b = node.builder();
  auto name = dyn_cast<NameLoc>(node.loc());
  CheckZeroOp::create(b, node.loc(), count,
                      name ? name.getName() : b.getStringAttr(node.node().name()),
                      b.getStringAttr(problem));
}

namespace {

/// Stops the run unless each entry k of input `input` is one of
/// implied.accepted[k] (an entry with none accepts any value).
void checkImplied(NodeImporter &node, size_t input, const ImpliedInts &implied,
                  StringRef role) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto entries = static_cast<int64_t>(implied.accepted.size());
  size_t widest = 1;
  for (const SmallVector<int64_t> &accepted : implied.accepted)
    widest = std::max(widest, accepted.size());
  // One row of accepted values per entry, padded by repeating its last;
  // the mask leaves out entries that accept anything.
  SmallVector<int64_t> table, constrained;
  for (const SmallVector<int64_t> &accepted : implied.accepted) {
    constrained.push_back(accepted.empty() ? 0 : 1);
    for (size_t i = 0; i < widest; ++i)
      table.push_back(accepted.empty() ? 0 : accepted[std::min(i, accepted.size() - 1)]);
  }
  auto width = static_cast<int64_t>(widest);
  Value given = ReshapeOp::create(b, loc, RankedTensorType::get({entries, 1}, b.getI64Type()),
                                  runtimeInt64s(node, input));
  Value equal = node.createInferred<CompareOp>(b.getStringAttr("eq"), given,
                                               node.int64Constant(table, {entries, width}));
  Value hits = CastOp::create(b, loc, RankedTensorType::get({entries, width}, b.getI64Type()),
                              equal);
  Value matched = node.createInferred<ReduceOp>(b.getStringAttr("max"), hits,
                                                b.getDenseI64ArrayAttr({1}));
  Value mask = node.int64Constant(constrained, {entries});
  Value unmatched = node.createInferred<SubOp>(mask, node.createInferred<MulOp>(matched, mask));
  Value count = node.createInferred<ReduceOp>(b.getStringAttr("sum"), unmatched,
                                              b.getDenseI64ArrayAttr({0}));
  stopUnlessZero(node, count,
                 "entries of the " + role +
                     " input that disagree with the result shape the model states (compiled "
                     "for " +
                     role + " " + formatShape(implied.values) + ")");
}

} // namespace

std::optional<SmallVector<int64_t>>
shapeGivingInts(NodeImporter &node, size_t input, StringRef role,
                llvm::function_ref<std::optional<ImpliedInts>()> imply) {
  if (node.constantInput(input))
    return node.constantInts(input, role);
  RankedTensorType type = node.inputType(input);
  // A float input (OneHot's depth) counts by its integer part.
  if (type.hasStaticShape() && isa<IntegerType, FloatType>(type.getElementType()))
    if (std::optional<ImpliedInts> implied = imply())
      if (static_cast<int64_t>(implied->values.size()) == type.getNumElements() &&
          implied->accepted.size() == implied->values.size()) {
        checkImplied(node, input, *implied, role);
        return implied->values;
      }
  (void)refuseRunTimeShapeInput(node, input, role);
  return std::nullopt;
}

LogicalResult refuseRunTimeShapeInput(NodeImporter &node, size_t input, StringRef role) {
  return node.unsupported("the " + role +
                          " input must be a constant, or the shape of the node's result "
                          "stated (in the model, or with --value-shape)" +
                          freezeHint(node.input(input)));
}

Value axisTable(NodeImporter &node, Value axes, int64_t rank) {
  OpBuilder &b = node.builder();
  auto entries = cast<RankedTensorType>(axes.getType()).getDimSize(0);
  Value rankValue = node.int64Constant({rank}, {});
  Value negative = node.createInferred<CompareOp>(b.getStringAttr("lt"), axes,
                                                  node.int64Constant({0}, {}));
  Value normalized =
      node.createInferred<WhereOp>(negative, node.createInferred<AddOp>(axes, rankValue), axes);
  SmallVector<int64_t> positions(rank);
  std::iota(positions.begin(), positions.end(), 0);
  Value named = node.createInferred<CompareOp>(b.getStringAttr("eq"), normalized,
                                               node.int64Constant(positions, {1, rank}));
  return CastOp::create(b, node.loc(), RankedTensorType::get({entries, rank}, b.getI64Type()),
                        named);
}

Value selectAlongRunTimeAxis(NodeImporter &node, size_t input, int64_t rank,
                             ArrayRef<std::pair<int64_t, Value>> candidates, Value *namedAny) {
  OpBuilder &b = node.builder();
  Value axis = ReshapeOp::create(b, node.loc(), RankedTensorType::get({}, b.getI64Type()),
                                 runtimeInt64s(node, input));
  auto names = [&](int64_t candidate) {
    auto equals = [&](int64_t value) {
      return node.createInferred<CompareOp>(b.getStringAttr("eq"), axis,
                                            node.int64Constant({value}, {}));
    };
    return node.createInferred<OrOp>(equals(candidate), equals(candidate - rank));
  };
  Value result = candidates.back().second;
  Value named = namedAny ? names(candidates.back().first) : Value();
  for (auto [candidate, computed] : llvm::reverse(candidates.drop_back())) {
    Value chosen = names(candidate);
    result = node.createInferred<WhereOp>(chosen, computed, result);
    if (namedAny)
      named = node.createInferred<OrOp>(named, chosen);
  }
  if (namedAny)
    *namedAny = named;
  return result;
}

std::optional<ImpliedInts> statedShape(NodeImporter &node, size_t output) {
  if (RankedTensorType stated = node.declaredOutputType(output))
    return exactly(stated.getShape());
  return std::nullopt;
}

SmallVector<SmallVector<int64_t>>
axisSetsGiving(int64_t rank, int64_t count, llvm::function_ref<bool(ArrayRef<int64_t>)> gives) {
  constexpr int64_t kMaxRank = 16; // 2^16 candidate sets at most
  SmallVector<SmallVector<int64_t>> sets;
  if (rank > kMaxRank || count > rank || count < 0)
    return sets;
  for (uint64_t set = 0; set < (uint64_t(1) << rank); ++set) {
    if (llvm::popcount(set) != count)
      continue;
    SmallVector<int64_t> axes;
    for (int64_t axis = 0; axis < rank; ++axis)
      if (set & (uint64_t(1) << axis))
        axes.push_back(axis);
    if (gives(axes))
      sets.push_back(std::move(axes));
  }
  return sets;
}

ImpliedInts anyOrderOf(ArrayRef<int64_t> axes, int64_t rank) {
  ImpliedInts implied;
  implied.values.assign(axes.begin(), axes.end());
  SmallVector<int64_t> accepted(axes.begin(), axes.end());
  for (int64_t axis : axes)
    accepted.push_back(axis - rank);
  implied.accepted.assign(axes.size(), accepted);
  return implied;
}

ImpliedInts exactly(ArrayRef<int64_t> values) {
  ImpliedInts implied;
  implied.values.assign(values.begin(), values.end());
  for (int64_t value : values)
    implied.accepted.push_back({value});
  return implied;
}

} // namespace tessel::onnx_import
