//===- TreeEnsembles.cpp - ai.onnx.ml tree ensembles ----------------------===//
//
// TreeEnsemble (ai.onnx.ml 5), TreeEnsembleRegressor and
// TreeEnsembleClassifier (1 and 3): decision forests, as ONNX's reference
// evaluates them.
//
// The trees are constants. All samples walk all trees together, one level
// of the deepest tree at a time: a [N, trees] tensor holds the node each
// sample has reached in each tree, and a step gathers those nodes'
// features, thresholds and modes from tables, compares, and moves to the
// true or false branch. Leaves lead to themselves, so the walk ends after
// as many steps as the deepest tree has levels, every sample at a leaf;
// the leaves' weights per target are then gathered and aggregated over the
// trees. Work and memory grow with samples x trees x depth, not with the
// trees' sizes.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/TensorProto.h"
#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <cmath>
#include <map>
#include <set>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// TreeEnsemble's node modes.
enum class SplitMode : int64_t { Leq, Lt, Gte, Gt, Eq, Neq, Member };

/// TreeEnsemble's attributes, read and checked.
struct TreeEnsembleSpec {
  std::vector<double> splits, membershipValues, baseValues;
  std::vector<int64_t> features, modes, trueIds, falseIds, trueLeafs, falseLeafs, tracksMissing,
      roots;
  /// Each leaf's (target, weight) pairs.
  std::vector<SmallVector<std::pair<int64_t, double>, 1>> leafOutputs;
  int64_t targets = 0, aggregate = 1, postTransform = 0;
  /// TreeEnsembleRegressor's rule for a missing (NaN) feature: the node's
  /// nodes_missing_value_tracks_true alone decides, whatever its mode;
  /// TreeEnsemble's: the mode's comparison, or true where the node tracks.
  bool missingTakesTrackedBranch = false;
  /// The set of each MEMBER node, taken from membershipValues in the order
  /// the reference builds the trees (each node before its true branch,
  /// then its false one).
  std::map<int64_t, std::vector<double>> members;
  /// The most decisions on a path from a root to a leaf.
  int64_t depth = 0;
};

/// The deepest walk supported: a step is a few ops per level.
constexpr int64_t kMaxTreeDepth = 1024;

/// The doubles of tensor attribute `name` (empty if absent).
FailureOr<std::vector<double>> doublesAttr(NodeImporter &node, StringRef name) {
  std::vector<double> values;
  const onnx::TensorProto *tensor = node.tensorAttr(name);
  if (!tensor)
    return values;
  if (tensor->data_location() == onnx::TensorProto::EXTERNAL)
    return node.unsupported("external data in attribute '" + name + "' is not supported");
  llvm::Expected<DenseElementsAttr> data = readTensor(node.builder().getContext(), *tensor, ".");
  if (!data)
    return node.unsupported(llvm::toString(data.takeError()));
  for (Attribute element : data->getValues<Attribute>()) {
    if (auto real = dyn_cast<FloatAttr>(element))
      values.push_back(real.getValueAsDouble());
    else
      values.push_back(double(cast<IntegerAttr>(element).getValue().getSExtValue()));
  }
  return values;
}

/// Walks every tree from its root (each node, then its true branch, then
/// its false one, as the reference builds them), taking each MEMBER node's
/// set from membership_values and measuring the depth; fails on malformed
/// trees, naming the problem.
LogicalResult walkTrees(NodeImporter &node, TreeEnsembleSpec &spec) {
  int64_t nodes = spec.modes.size(), leaves = spec.leafOutputs.size();
  size_t nextMember = 0;
  for (int64_t root : spec.roots) {
    if (root < 0 || root >= nodes)
      return node.unsupported("tree root " + Twine(root) + " is out of range");
    // (index, whether it is a leaf, decisions above it)
    SmallVector<std::tuple<int64_t, bool, int64_t>> pending;
    bool rootIsLeaf =
        spec.trueLeafs[root] && spec.falseLeafs[root] && spec.trueIds[root] == spec.falseIds[root];
    pending.push_back({rootIsLeaf ? spec.trueIds[root] : root, rootIsLeaf, 0});
    while (!pending.empty()) {
      auto [index, leaf, depth] = pending.pop_back_val();
      if (leaf) {
        if (index < 0 || index >= leaves)
          return node.unsupported("leaf " + Twine(index) + " is out of range");
        spec.depth = std::max(spec.depth, depth);
        continue;
      }
      if (index < 0 || index >= nodes)
        return node.unsupported("node " + Twine(index) + " is out of range");
      if (depth >= std::min<int64_t>(nodes, kMaxTreeDepth))
        return node.unsupported(depth >= nodes ? Twine("a tree's nodes form a cycle")
                                               : "trees deeper than " + Twine(kMaxTreeDepth) +
                                                     " levels are not supported");
      if (SplitMode(spec.modes[index]) == SplitMode::Member) {
        std::vector<double> set;
        while (nextMember < spec.membershipValues.size() &&
               !std::isnan(spec.membershipValues[nextMember]))
          set.push_back(spec.membershipValues[nextMember++]);
        ++nextMember;
        spec.members.try_emplace(index, std::move(set));
      }
      pending.push_back({spec.falseIds[index], spec.falseLeafs[index] != 0, depth + 1});
      pending.push_back({spec.trueIds[index], spec.trueLeafs[index] != 0, depth + 1});
    }
  }
  return success();
}

/// Checks `spec`'s sizes, targets, modes and functions, then walks its
/// trees; fails naming the problem.
LogicalResult checkTreeEnsemble(NodeImporter &node, TreeEnsembleSpec &spec) {
  size_t nodes = spec.modes.size();
  for (size_t size : {spec.splits.size(), spec.features.size(), spec.trueIds.size(),
                      spec.falseIds.size(), spec.trueLeafs.size(), spec.falseLeafs.size()})
    if (size != nodes)
      return node.unsupported("the nodes_* attributes must list every node");
  if (!spec.tracksMissing.empty() && spec.tracksMissing.size() != nodes)
    return node.unsupported("nodes_missing_value_tracks_true must list every node");
  if (spec.targets <= 0)
    return node.unsupported("n_targets must be positive");
  if (!spec.baseValues.empty() && int64_t(spec.baseValues.size()) != spec.targets)
    return node.unsupported("base_values must give one value per target");
  for (const auto &outputs : spec.leafOutputs)
    for (auto [target, weight] : outputs)
      if (target < 0 || target >= spec.targets)
        return node.unsupported("leaf target " + Twine(target) + " is outside n_targets");
  for (int64_t mode : spec.modes)
    if (mode < 0 || mode > int64_t(SplitMode::Member))
      return node.unsupported("node mode " + Twine(mode) + " is not one of 0 to 6");
  if (spec.aggregate < 0 || spec.aggregate > 3)
    return node.unsupported("aggregate_function must be average, sum, min or max");
  if (spec.postTransform > 4 || spec.postTransform < 0)
    return node.unsupported("post_transform " + Twine(spec.postTransform) +
                            " is not one ONNX defines (0 to 4)");
  return walkTrees(node, spec);
}

FailureOr<TreeEnsembleSpec> readTreeEnsemble(NodeImporter &node) {
  TreeEnsembleSpec spec;
  auto ints = [&](StringRef name) { return node.intsAttr(name).value_or(std::vector<int64_t>()); };
  FailureOr<std::vector<double>> splits = doublesAttr(node, "nodes_splits");
  FailureOr<std::vector<double>> modes = doublesAttr(node, "nodes_modes");
  FailureOr<std::vector<double>> weights = doublesAttr(node, "leaf_weights");
  FailureOr<std::vector<double>> members = doublesAttr(node, "membership_values");
  if (failed(splits) || failed(modes) || failed(weights) || failed(members))
    return failure();
  spec.splits = *splits;
  spec.membershipValues = *members;
  for (double mode : *modes)
    spec.modes.push_back(int64_t(mode));
  spec.features = ints("nodes_featureids");
  spec.trueIds = ints("nodes_truenodeids");
  spec.falseIds = ints("nodes_falsenodeids");
  spec.trueLeafs = ints("nodes_trueleafs");
  spec.falseLeafs = ints("nodes_falseleafs");
  spec.tracksMissing = ints("nodes_missing_value_tracks_true");
  std::vector<int64_t> leafTargets = ints("leaf_targetids");
  if (leafTargets.size() != weights->size())
    return node.unsupported("leaf_targetids and leaf_weights must list every leaf");
  for (auto [target, weight] : llvm::zip(leafTargets, *weights))
    spec.leafOutputs.push_back({{target, weight}});
  spec.roots = ints("tree_roots");
  spec.targets = node.intAttr("n_targets", 0);
  spec.aggregate = node.intAttr("aggregate_function", 1);
  spec.postTransform = node.intAttr("post_transform", 0);
  node.ignoreAttr("nodes_hitrates"); // only for runtimes that reorder nodes
  if (failed(checkTreeEnsemble(node, spec)))
    return failure();
  return spec;
}

/// ONNX-ML's post_transform of [N, K] scores, along K: 0 none, 1 softmax,
/// 2 logistic, 3 softmax_zero, 4 probit. The last two follow the reference
/// (onnx.reference's and onnxruntime's): softmax_zero leaves near-zero
/// scores near zero and gives 0.5 everywhere to a row that sums to 0;
/// probit is sqrt(2) erfinv(2x - 1) with Winitzki's approximation of the
/// inverse error function (a = 0.147).
Value applyPostTransform(NodeImporter &node, Value scores, int64_t transform) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  Formula f(node);
  Type type = scores.getType();
  switch (transform) {
  case 1:
    return SoftmaxOp::create(b, loc, type, scores, b.getI64IntegerAttr(1));
  case 2:
    return SigmoidOp::create(b, loc, type, scores);
  case 3: {
    Value largest = f.reduceKeep("max", scores, {1});
    Value nonZero = f.compare("gt", f.abs(scores), f.scalar(scores, 1e-7));
    Value exponentials = f.select(nonZero, f.exp(f.sub(scores, largest)),
                                  f.mul(scores, f.exp(f.sub(f.scalar(scores, 0.0), largest))));
    Value sum = f.sumKeep(exponentials, {1});
    return f.select(f.compare("eq", sum, f.scalar(sum, 0.0)), f.scalar(scores, 0.5),
                    f.div(exponentials, sum));
  }
  case 4: {
    Value t = f.sub(f.mul(scores, f.scalar(scores, 2.0)), f.scalar(scores, 1.0));
    Value one = f.scalar(scores, 1.0);
    Value product = f.mul(f.sub(one, t), f.add(one, t));
    Value log = f.log(product);
    constexpr double kA = 0.147;
    Value p = f.add(f.scalar(scores, 2.0 / (M_PI * kA)), f.mul(f.scalar(scores, 0.5), log));
    Value q = f.mul(f.scalar(scores, 1.0 / kA), log);
    Value magnitude = f.sqrt(f.sub(f.sqrt(f.sub(f.mul(p, p), q)), p));
    Value sign = f.select(f.compare("lt", t, f.scalar(t, 0.0)), f.scalar(t, -1.0), one);
    Value inverse = f.select(f.compare("eq", product, f.scalar(product, 0.0)),
                             f.scalar(scores, 0.0), f.mul(sign, magnitude));
    return f.mul(f.scalar(scores, 1.41421356), inverse);
  }
  default:
    return scores;
  }
}

/// Builds the walk of an ensemble's trees (see the file comment).
class TreeWalk : public Formula {
public:
  TreeWalk(NodeImporter &node, const TreeEnsembleSpec &spec, Type type)
      : Formula(node), spec(spec), type(type), decisions(spec.modes.size()),
        all(decisions + spec.leafOutputs.size()) {}

  /// A constant of `values` shaped `shape`: floats of `elementType`, or
  /// booleans (i1) or i64.
  Value constant(ArrayRef<double> values, ArrayRef<int64_t> shape, Type elementType) {
    if (elementType.isInteger(1)) {
      auto tensorType = RankedTensorType::get(shape, elementType);
      SmallVector<bool> bits;
      for (double value : values)
        bits.push_back(value != 0);
      return ConstantOp::create(b, node.loc(), tensorType,
                                DenseElementsAttr::get(tensorType, ArrayRef<bool>(bits)));
    }
    if (elementType.isInteger(64)) {
      SmallVector<int64_t> integers(values.begin(), values.end());
      return node.int64Constant(integers, shape);
    }
    return node.floatConstant(elementType, values, shape);
  }

  /// [N, trees] i64: the leaf (numbered after the decision nodes) each
  /// sample reaches in each tree.
  Value walk(Value x) {
    // Features and thresholds compare as f64: thresholds given as doubles
    // (scikit-learn's are midpoints between f32 features) would move onto a
    // feature's value if rounded to f32.
    Type f64 = b.getF64Type();
    x = convert(x, f64);
    int64_t samples = cast<RankedTensorType>(x.getType()).getDimSize(0);
    int64_t trees = spec.roots.size();
    std::vector<double> starts;
    for (int64_t root : spec.roots) {
      bool rootIsLeaf = spec.trueLeafs[root] && spec.falseLeafs[root] &&
                        spec.trueIds[root] == spec.falseIds[root];
      starts.push_back(rootIsLeaf ? decisions + spec.trueIds[root] : root);
    }
    std::vector<double> rows;
    for (int64_t n = 0; n < samples; ++n)
      rows.insert(rows.end(), starts.begin(), starts.end());
    Value reached = constant(rows, {samples, trees}, b.getI64Type());
    if (spec.depth == 0)
      return reached;
    // Node tables; a leaf's branches lead to itself.
    std::vector<double> features(all, 0), splits(all, 0), modes(all, 0), tracks(all, 0),
        onTrue(all), onFalse(all);
    for (int64_t i = 0; i < all; ++i) {
      onTrue[i] = onFalse[i] = i;
      if (i >= decisions)
        continue;
      features[i] = spec.features[i];
      splits[i] = spec.splits[i];
      modes[i] = spec.modes[i];
      tracks[i] = !spec.tracksMissing.empty() && spec.tracksMissing[i] != 0;
      onTrue[i] = spec.trueLeafs[i] ? decisions + spec.trueIds[i] : spec.trueIds[i];
      onFalse[i] = spec.falseLeafs[i] ? decisions + spec.falseIds[i] : spec.falseIds[i];
    }
    Type i64 = b.getI64Type(), i1 = b.getI1Type();
    Value featureTable = constant(features, {all}, i64);
    Value splitTable = constant(splits, {all}, f64);
    Value modeTable = constant(modes, {all}, i64);
    Value trackTable = constant(tracks, {all}, i1);
    Value trueTable = constant(onTrue, {all}, i64), falseTable = constant(onFalse, {all}, i64);
    Value memberTable = memberships(all);
    for (int64_t level = 0; level < spec.depth; ++level) {
      Value value = GatherElementsOp::create(
          b, node.loc(), cast<RankedTensorType>(reached.getType()).clone(f64), x,
          gather(featureTable, reached), b.getI64IntegerAttr(1));
      Value holds = condition(value, reached, gather(splitTable, reached),
                              gather(modeTable, reached), memberTable);
      Value missing = isNaN(value);
      Value tracked = gather(trackTable, reached);
      holds = spec.missingTakesTrackedBranch
                  ? select(missing, tracked, holds)
                  : logicalOr(holds, node.createInferred<AndOp>(missing, tracked));
      reached = select(holds, gather(trueTable, reached), gather(falseTable, reached));
    }
    return reached;
  }

  /// [N, targets]: the weights of the `reached` leaves aggregated over the
  /// trees per target, plus the base values, then post-transformed.
  Value scores(Value reached) {
    int64_t leaves = spec.leafOutputs.size(), targets = spec.targets;
    int64_t trees = spec.roots.size();
    bool sums = spec.aggregate <= 1, isMin = spec.aggregate == 2;
    // A leaf's weight for each target: the sum, min or max of its outputs
    // there, or (min and max) the type's largest or lowest finite value
    // where it has none, the reference's start.
    double start = sums ? 0.0
                        : APFloat::getLargest(cast<FloatType>(type).getFloatSemantics(),
                                              /*Negative=*/!isMin)
                              .convertToDouble();
    std::vector<double> weights(leaves * targets, start);
    std::vector<bool> given(leaves * targets, false);
    for (int64_t l = 0; l < leaves; ++l)
      for (auto [target, weight] : spec.leafOutputs[l]) {
        double &slot = weights[l * targets + target];
        slot = sums || !given[l * targets + target]
                   ? (sums ? slot + weight : weight)
                   : (isMin ? std::min(slot, weight) : std::max(slot, weight));
        given[l * targets + target] = true;
      }
    Value leaf = sub(reached, node.int64Constant({decisions}, {}));
    Value perTree = gather(constant(weights, {leaves, targets}, type), leaf);
    Value result =
        node.createInferred<ReduceOp>(b.getStringAttr(sums ? "sum" : (isMin ? "min" : "max")),
                                      perTree, b.getDenseI64ArrayAttr({1}));
    if (spec.aggregate == 0)
      result = div(result, scalar(result, double(trees)));
    if (!spec.baseValues.empty())
      result = add(result, constant(spec.baseValues, {1, targets}, type));
    return result ? applyPostTransform(node, result, spec.postTransform) : result;
  }

private:
  Value gather(Value table, Value indices) {
    return node.createInferred<GatherOp>(table, indices, b.getI64IntegerAttr(0));
  }
  Value logicalOr(Value x, Value y) { return node.createInferred<OrOp>(x, y); }

  /// [all, S]: each MEMBER node's set, padded with NaN (which equals
  /// nothing); null when no node tests membership.
  Value memberships(int64_t all) {
    size_t widest = 0;
    for (const auto &[index, set] : spec.members)
      widest = std::max(widest, set.size());
    if (widest == 0)
      return Value();
    std::vector<double> table(all * widest, std::nan(""));
    for (const auto &[index, set] : spec.members)
      std::copy(set.begin(), set.end(), table.begin() + index * widest);
    return constant(table, {all, int64_t(widest)}, b.getF64Type());
  }

  /// [N, trees] i1: whether `value` meets the condition of the nodes
  /// `reached`, their thresholds `split` and modes `mode`.
  Value condition(Value value, Value reached, Value split, Value mode, Value memberTable) {
    auto isMode = [&](SplitMode wanted) {
      return compare("eq", mode, node.int64Constant({int64_t(wanted)}, {}));
    };
    Value holds = compare("le", value, split);
    for (auto [wanted, predicate] : {std::pair{SplitMode::Lt, "lt"},
                                     {SplitMode::Gte, "ge"},
                                     {SplitMode::Gt, "gt"},
                                     {SplitMode::Eq, "eq"}})
      holds = select(isMode(wanted), compare(predicate, value, split), holds);
    holds = select(isMode(SplitMode::Neq), logicalNot(compare("eq", value, split)), holds);
    if (memberTable) {
      auto rowsType = cast<RankedTensorType>(reached.getType());
      int64_t samples = rowsType.getDimSize(0), trees = rowsType.getDimSize(1);
      Value sets = gather(memberTable, reached);
      Value hits =
          convert(compare("eq", reshape(value, {samples, trees, 1}), sets), b.getF32Type());
      Value most =
          node.createInferred<ReduceOp>(b.getStringAttr("max"), hits, b.getDenseI64ArrayAttr({2}));
      Value member = compare("gt", most, scalar(hits, 0.0));
      holds = select(isMode(SplitMode::Member), member, holds);
    }
    return holds;
  }

  const TreeEnsembleSpec &spec;
  Type type;
  int64_t decisions, all;
};

/// `x` ([N, features], floats) through every tree of `spec`: [N, targets],
/// each target summing (or averaging, or taking the min or max of) the
/// weights of the leaves reached, then post-transformed.
FailureOr<Value> treeEnsembleScores(NodeImporter &node, Value x, const TreeEnsembleSpec &spec) {
  auto type = cast<RankedTensorType>(x.getType());
  for (int64_t feature : spec.features)
    if (feature < 0 || feature >= type.getDimSize(1))
      return node.unsupported("node feature " + Twine(feature) + " is outside X's " +
                              Twine(type.getDimSize(1)) + " features");
  int64_t widest = 0;
  for (const auto &[index, set] : spec.members)
    widest = std::max<int64_t>(widest, set.size());
  double perSample = double(spec.roots.size()) *
                     double(spec.depth * (1 + widest) + std::max<int64_t>(spec.targets, 1));
  if (failed(
          checkComputeBudget(node, double(type.getDimSize(0)) * perSample, "tree walk elements")))
    return failure();
  Type elementType = type.getElementType();
  TreeWalk f(node, spec, elementType);
  if (spec.roots.empty() || spec.leafOutputs.empty())
    return node.unsupported("the ensemble has no trees or no leaves");
  Value result = f.scores(f.walk(x));
  if (!result)
    return failure();
  return result;
}

/// Imports a tree ensemble node whose only output is its scores.
LogicalResult importScores(NodeImporter &node, FailureOr<TreeEnsembleSpec> spec) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() != 2 || !type.hasStaticShape() || !isa<FloatType>(type.getElementType()))
    return node.unsupported("X must be a float matrix of static shape [N, features]");
  if (failed(spec))
    return failure();
  FailureOr<Value> scores = treeEnsembleScores(node, node.input(0), *spec);
  if (failed(scores))
    return failure();
  node.setOutput(0, *scores);
  return success();
}

/// TreeEnsemble (ai.onnx.ml 5).
LogicalResult importTreeEnsemble(NodeImporter &node) {
  return importScores(node, readTreeEnsemble(node));
}

/// The doubles of float list attribute `name`, or of its `name`_as_tensor
/// form (version 3 on).
FailureOr<std::vector<double>> floatsOrTensor(NodeImporter &node, StringRef name) {
  if (std::optional<std::vector<float>> floats = node.floatsAttr(name))
    return std::vector<double>(floats->begin(), floats->end());
  return doublesAttr(node, (name + "_as_tensor").str());
}

/// TreeEnsembleRegressor's and TreeEnsembleClassifier's attributes
/// (ai.onnx.ml 1 and 3): every node of every tree is listed by (tree id,
/// node id), a tree's root being its first listed node; leaves are the
/// nodes of mode LEAF, whose outputs the `outputs`_* attributes list
/// (target_* or class_*; several per leaf where there are several targets).
FailureOr<TreeEnsembleSpec> readLegacyTreeEnsemble(NodeImporter &node, StringRef outputs) {
  TreeEnsembleSpec spec;
  spec.missingTakesTrackedBranch = true;
  auto ints = [&](StringRef name) { return node.intsAttr(name).value_or(std::vector<int64_t>()); };
  std::vector<int64_t> treeIds = ints("nodes_treeids"), nodeIds = ints("nodes_nodeids");
  std::vector<int64_t> trueNodeIds = ints("nodes_truenodeids");
  std::vector<int64_t> falseNodeIds = ints("nodes_falsenodeids");
  std::vector<std::string> modeNames =
      node.stringsAttr("nodes_modes").value_or(std::vector<std::string>());
  FailureOr<std::vector<double>> values = floatsOrTensor(node, "nodes_values");
  FailureOr<std::vector<double>> weights = floatsOrTensor(node, (outputs + "_weights").str());
  FailureOr<std::vector<double>> base = floatsOrTensor(node, "base_values");
  if (failed(values) || failed(weights) || failed(base))
    return failure();
  node.ignoreAttr("nodes_hitrates");
  node.ignoreAttr("nodes_hitrates_as_tensor");
  size_t nodes = treeIds.size();
  for (size_t size :
       {nodeIds.size(), trueNodeIds.size(), falseNodeIds.size(), modeNames.size(), values->size()})
    if (size != nodes)
      return node.unsupported("the nodes_* attributes must list every node");
  spec.features = ints("nodes_featureids");
  spec.tracksMissing = ints("nodes_missing_value_tracks_true");
  spec.splits = *values;
  spec.baseValues = *base;
  spec.targets = node.intAttr("n_targets", 1);

  std::map<std::pair<int64_t, int64_t>, int64_t> indexOf;
  for (size_t i = 0; i < nodes; ++i)
    indexOf.try_emplace({treeIds[i], nodeIds[i]}, i);
  static const std::map<std::string, SplitMode> kModes = {
      {"BRANCH_LEQ", SplitMode::Leq}, {"BRANCH_LT", SplitMode::Lt}, {"BRANCH_GTE", SplitMode::Gte},
      {"BRANCH_GT", SplitMode::Gt},   {"BRANCH_EQ", SplitMode::Eq}, {"BRANCH_NEQ", SplitMode::Neq}};
  std::vector<bool> isLeaf(nodes);
  for (size_t i = 0; i < nodes; ++i) {
    isLeaf[i] = modeNames[i] == "LEAF";
    auto mode = kModes.find(modeNames[i]);
    if (!isLeaf[i] && mode == kModes.end())
      return node.unsupported("node mode '" + modeNames[i] + "' is not supported");
    spec.modes.push_back(int64_t(isLeaf[i] ? SplitMode::Leq : mode->second));
  }
  // Branches by index; a leaf's branches are itself, which marks a tree
  // that is one leaf.
  for (size_t i = 0; i < nodes; ++i) {
    for (auto [ids, indices, leafs] :
         {std::tuple{&trueNodeIds, &spec.trueIds, &spec.trueLeafs},
          std::tuple{&falseNodeIds, &spec.falseIds, &spec.falseLeafs}}) {
      int64_t target = int64_t(i);
      if (!isLeaf[i]) {
        auto found = indexOf.find({treeIds[i], (*ids)[i]});
        if (found == indexOf.end())
          return node.unsupported("node " + Twine(nodeIds[i]) + " of tree " + Twine(treeIds[i]) +
                                  " branches to node " + Twine((*ids)[i]) +
                                  ", which is not listed");
        target = found->second;
      }
      indices->push_back(target);
      leafs->push_back(isLeaf[target]);
    }
  }
  spec.leafOutputs.resize(nodes);
  std::vector<int64_t> targetTrees = ints((outputs + "_treeids").str());
  std::vector<int64_t> targetNodes = ints((outputs + "_nodeids").str());
  std::vector<int64_t> targetIds = ints((outputs + "_ids").str());
  if (targetTrees.size() != weights->size() || targetNodes.size() != weights->size() ||
      targetIds.size() != weights->size())
    return node.unsupported("the " + outputs + "_* attributes must list every leaf output");
  for (size_t k = 0; k < weights->size(); ++k) {
    auto found = indexOf.find({targetTrees[k], targetNodes[k]});
    if (found == indexOf.end() || !isLeaf[found->second])
      return node.unsupported(outputs + " " + Twine(k) + " names node " + Twine(targetNodes[k]) +
                              " of tree " + Twine(targetTrees[k]) + ", which is not a leaf");
    spec.leafOutputs[found->second].push_back({targetIds[k], (*weights)[k]});
  }
  std::map<int64_t, int64_t> roots;
  for (size_t i = 0; i < nodes; ++i)
    roots.try_emplace(treeIds[i], i);
  for (auto [tree, root] : roots)
    spec.roots.push_back(root);

  static const std::map<std::string, int64_t> kAggregates = {
      {"AVERAGE", 0}, {"SUM", 1}, {"MIN", 2}, {"MAX", 3}};
  static const std::map<std::string, int64_t> kTransforms = {
      {"NONE", 0}, {"SOFTMAX", 1}, {"LOGISTIC", 2}, {"SOFTMAX_ZERO", 3}, {"PROBIT", 4}};
  std::string aggregate = node.stringAttr("aggregate_function").value_or("SUM");
  std::string transform = node.stringAttr("post_transform").value_or("NONE");
  if (!kAggregates.count(aggregate) || !kTransforms.count(transform))
    return node.unsupported("aggregate_function '" + aggregate + "' or post_transform '" +
                            transform + "' is not one ONNX defines");
  spec.aggregate = kAggregates.at(aggregate);
  spec.postTransform = kTransforms.at(transform);
  return spec;
}

LogicalResult importTreeEnsembleRegressor(NodeImporter &node) {
  FailureOr<TreeEnsembleSpec> spec = readLegacyTreeEnsemble(node, "target");
  if (failed(spec) || failed(checkTreeEnsemble(node, *spec)))
    return failure();
  return importScores(node, spec);
}

/// TreeEnsembleClassifier (ai.onnx.ml 1 and 3): the class weights of the
/// leaves reached summed per class onto the base values; with a single
/// class id among the weights (a binary classifier) the second score is
/// that sum and the first 1 minus it (its negation before a logistic,
/// softmax or softmax_zero), as the reference computes them. The label is
/// the class of the highest score (the first of equal ones), from
/// classlabels_int64s.
LogicalResult importTreeEnsembleClassifier(NodeImporter &node) {
  std::optional<std::vector<int64_t>> labels = node.intsAttr("classlabels_int64s");
  if (!labels || labels->empty())
    return node.unsupported(node.hasAttr("classlabels_strings")
                                ? "string class labels (classlabels_strings) are not supported"
                                : "classlabels_int64s must name the classes");
  FailureOr<TreeEnsembleSpec> spec = readLegacyTreeEnsemble(node, "class");
  if (failed(spec))
    return failure();
  if (spec->aggregate != 1)
    return node.unsupported("a classifier sums its trees' class weights");
  std::set<int64_t> classIds;
  for (const auto &outputs : spec->leafOutputs)
    for (auto [id, weight] : outputs)
      classIds.insert(id);
  bool binary = classIds.size() == 1;
  int64_t classes = labels->size();
  int64_t transform = spec->postTransform;
  // The scores as targets; the binary case's second column is made below.
  spec->targets = classes;
  spec->postTransform = 0;
  if (failed(checkTreeEnsemble(node, *spec)))
    return failure();
  if (classes == 1 && (!binary || (*labels)[0] != 1))
    return node.unsupported("a single class label must be 1, for a binary classifier");
  if (binary && classes > 2)
    return node.unsupported("the class weights name one class of more than two");

  RankedTensorType type = node.inputType(0);
  if (type.getRank() != 2 || !type.hasStaticShape())
    return node.unsupported("X must be a matrix of static shape [N, features]");
  Formula f(node);
  OpBuilder &b = node.builder();
  // Integer features are compared as floats, as the reference does.
  Type featureType =
      isa<FloatType>(type.getElementType()) ? type.getElementType() : Type(b.getF32Type());
  FailureOr<Value> sums = treeEnsembleScores(node, f.convert(node.input(0), featureType), *spec);
  if (failed(sums))
    return failure();
  Value scores = f.convert(*sums, b.getF32Type());
  int64_t samples = type.getDimSize(0);
  if (binary) {
    // [N, 2]: the summed column (the first: class ids all name one) is
    // the second score, the first derived from it.
    Value positive =
        SliceOp::create(b, node.loc(), RankedTensorType::get({samples, 1}, b.getF32Type()), scores,
                        b.getDenseI64ArrayAttr({0, 0}), b.getDenseI64ArrayAttr({1, 1}));
    // The reference's rule: 1 - p for no transform and probit, else -p.
    bool complement = transform == 0 || transform == 4;
    Value negative = complement ? f.sub(f.scalar(positive, 1.0), positive)
                                : f.sub(f.scalar(positive, 0.0), positive);
    scores = ConcatOp::create(b, node.loc(), RankedTensorType::get({samples, 2}, b.getF32Type()),
                              ValueRange{negative, positive}, b.getI64IntegerAttr(1));
  }
  scores = applyPostTransform(node, scores, transform);
  Value best = node.createInferred<ArgReduceOp>(b.getStringAttr("max"), scores,
                                                b.getI64IntegerAttr(1), b.getBoolAttr(false));
  // Class index to label; a binary classifier with the single label 1
  // gives 1 for the second score and 0 for the first.
  std::vector<int64_t> table = classes == 1 ? std::vector<int64_t>{0, 1} : *labels;
  Value label = node.createInferred<GatherOp>(node.int64Constant(table, {int64_t(table.size())}),
                                              best, b.getI64IntegerAttr(0));
  if (!label || !scores)
    return failure();
  node.setOutput(0, label);
  node.setOutput(1, scores);
  return success();
}

} // namespace

void registerTreeEnsembleHandlers(OpRegistry &registry) {
  registry.on("ai.onnx.ml", "TreeEnsemble", 5, importTreeEnsemble);
  registry.on("ai.onnx.ml", "TreeEnsembleClassifier", 1, importTreeEnsembleClassifier);
  registry.on("ai.onnx.ml", "TreeEnsembleRegressor", 1, importTreeEnsembleRegressor);
}

} // namespace tessel::onnx_import
