//===- TreeEnsembles.cpp - ai.onnx.ml tree ensembles ----------------------===//
//
// TreeEnsemble (ai.onnx.ml 5), TreeEnsembleRegressor and
// TreeEnsembleClassifier (1 and 3): decision forests, as ONNX's reference
// evaluates them.
//
// The trees are constants, so each leaf is known with the conditions on
// its path. Every decision node's condition is computed for all samples at
// once ([N, nodes]); a leaf is reached where as many of its path's
// conditions hold as it has (two products with 0/1 matrices); and the
// leaves' weights are aggregated per target (one more product, or a masked
// min or max).
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

/// A leaf and the decisions on the path from its tree's root: each a node
/// and whether its condition holds there.
struct LeafPath {
  int64_t leaf;
  SmallVector<std::pair<int64_t, bool>> decisions;
};

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
  std::vector<LeafPath> paths;
};

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

/// Walks every tree from its root, recording each leaf's path and each
/// MEMBER node's set; fails on malformed trees, naming the problem.
LogicalResult walkTrees(NodeImporter &node, TreeEnsembleSpec &spec) {
  size_t nodes = spec.modes.size(), leaves = spec.leafOutputs.size();
  size_t nextMember = 0;
  std::string problem;
  std::function<void(int64_t, bool, SmallVector<std::pair<int64_t, bool>> &)> walk =
      [&](int64_t index, bool leaf, SmallVector<std::pair<int64_t, bool>> &decisions) {
        if (!problem.empty())
          return;
        if (leaf) {
          if (index < 0 || size_t(index) >= leaves)
            problem = "leaf " + std::to_string(index) + " is out of range";
          else
            spec.paths.push_back({index, decisions});
          return;
        }
        if (index < 0 || size_t(index) >= nodes) {
          problem = "node " + std::to_string(index) + " is out of range";
          return;
        }
        if (decisions.size() >= nodes) {
          problem = "a tree's nodes form a cycle";
          return;
        }
        if (SplitMode(spec.modes[index]) == SplitMode::Member) {
          std::vector<double> &set = spec.members[index];
          while (nextMember < spec.membershipValues.size() &&
                 !std::isnan(spec.membershipValues[nextMember]))
            set.push_back(spec.membershipValues[nextMember++]);
          ++nextMember;
        }
        for (bool branch : {true, false}) {
          decisions.push_back({index, branch});
          walk(branch ? spec.trueIds[index] : spec.falseIds[index],
               (branch ? spec.trueLeafs[index] : spec.falseLeafs[index]) != 0, decisions);
          decisions.pop_back();
        }
      };
  for (int64_t root : spec.roots) {
    SmallVector<std::pair<int64_t, bool>> decisions;
    // A tree that is one leaf: a root whose branches are that same leaf.
    bool rootIsLeaf = root >= 0 && size_t(root) < nodes && spec.trueLeafs[root] &&
                      spec.falseLeafs[root] && spec.trueIds[root] == spec.falseIds[root];
    walk(rootIsLeaf ? spec.trueIds[root] : root, rootIsLeaf, decisions);
  }
  if (!problem.empty())
    return node.unsupported(problem);
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
  if (spec.postTransform > 2 || spec.postTransform < 0)
    return node.unsupported("post_transform " + Twine(spec.postTransform) +
                            " is not supported (none, softmax and logistic are)");
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

class TreeEnsembleBuilder : public Formula {
public:
  TreeEnsembleBuilder(NodeImporter &node, const TreeEnsembleSpec &spec, Type type)
      : Formula(node), spec(spec), type(type) {}

  Value constant(ArrayRef<double> values, ArrayRef<int64_t> shape, Type elementType) {
    auto tensorType = RankedTensorType::get(shape, elementType);
    if (isa<IntegerType>(elementType)) {
      SmallVector<bool> bits;
      for (double value : values)
        bits.push_back(value != 0);
      return ConstantOp::create(b, node.loc(), tensorType,
                                DenseElementsAttr::get(tensorType, ArrayRef<bool>(bits)));
    }
    SmallVector<APFloat> floats;
    for (double value : values) {
      APFloat real(value);
      bool lost;
      real.convert(cast<FloatType>(elementType).getFloatSemantics(), APFloat::rmNearestTiesToEven,
                   &lost);
      floats.push_back(real);
    }
    return ConstantOp::create(b, node.loc(), tensorType,
                              DenseElementsAttr::get(tensorType, floats));
  }
  Value matmul(Value lhs, Value rhs) { return matrixProduct(node, lhs, rhs); }
  Value logicalOr(Value x, Value y) { return node.createInferred<OrOp>(x, y); }
  Value logicalNot(Value x) { return NotOp::create(b, node.loc(), x.getType(), x); }

  /// [N, K] i1: whether the condition of each decision node (column k is
  /// node decisionNodes[k]) holds for each sample.
  Value conditions(Value x, ArrayRef<int64_t> decisionNodes) {
    int64_t count = decisionNodes.size();
    SmallVector<int64_t> features;
    std::vector<double> splits;
    for (int64_t index : decisionNodes) {
      features.push_back(spec.features[index]);
      splits.push_back(spec.splits[index]);
    }
    Value columns = node.createInferred<GatherOp>(x, node.int64Constant(features, {count}),
                                                  b.getI64IntegerAttr(1));
    Value splitRow = constant(splits, {1, count}, type);
    Value holds;
    for (SplitMode mode : {SplitMode::Leq, SplitMode::Lt, SplitMode::Gte, SplitMode::Gt,
                           SplitMode::Eq, SplitMode::Neq, SplitMode::Member}) {
      std::vector<double> mask;
      for (int64_t index : decisionNodes)
        mask.push_back(SplitMode(spec.modes[index]) == mode);
      if (llvm::none_of(mask, [](double bit) { return bit != 0; }))
        continue;
      Value modeHolds = mode == SplitMode::Member ? memberships(columns, decisionNodes)
                                                  : compareMode(mode, columns, splitRow);
      holds =
          holds ? select(constant(mask, {1, count}, b.getI1Type()), modeHolds, holds) : modeHolds;
    }
    std::vector<double> tracks;
    for (int64_t index : decisionNodes)
      tracks.push_back(!spec.tracksMissing.empty() && spec.tracksMissing[index] != 0);
    Value trackedRow = constant(tracks, {1, count}, b.getI1Type());
    Value missing = logicalNot(compare("eq", columns, columns));
    if (spec.missingTakesTrackedBranch)
      return select(missing, node.createInferred<AndOp>(missing, trackedRow), holds);
    if (llvm::any_of(tracks, [](double bit) { return bit != 0; }))
      holds = logicalOr(holds, node.createInferred<AndOp>(missing, trackedRow));
    return holds;
  }

  /// [N, L]: 1 where a sample reaches leaf path l, from the decisions'
  /// `holds` ([N, K] in the ensemble's type).
  Value reached(Value holds, const DenseMap<int64_t, int64_t> &column) {
    int64_t count = column.size(), leaves = spec.paths.size();
    std::vector<double> wantTrue(count * leaves), wantFalse(count * leaves), lengths(leaves);
    for (auto [l, path] : llvm::enumerate(spec.paths)) {
      lengths[l] = path.decisions.size();
      for (auto [index, branch] : path.decisions)
        (branch ? wantTrue : wantFalse)[column.lookup(index) * leaves + l] = 1;
    }
    Value one = scalar(holds, 1.0);
    Value satisfied = add(matmul(holds, constant(wantTrue, {count, leaves}, type)),
                          matmul(sub(one, holds), constant(wantFalse, {count, leaves}, type)));
    return compare("eq", satisfied, constant(lengths, {1, leaves}, type));
  }

  /// [N, targets]: the reached leaves' weights aggregated per target,
  /// plus the base values.
  Value aggregate(Value reachedLeaves) {
    int64_t leaves = spec.paths.size(), targets = spec.targets;
    Value result;
    if (spec.aggregate <= 1) { // average, sum
      std::vector<double> weights(leaves * targets);
      for (auto [l, path] : llvm::enumerate(spec.paths))
        for (auto [target, weight] : spec.leafOutputs[path.leaf])
          weights[l * targets + target] += weight;
      result = matmul(convert(reachedLeaves, type), constant(weights, {leaves, targets}, type));
      if (spec.aggregate == 0)
        result = div(result, scalar(result, double(spec.roots.size())));
    } else {
      // Min or max: each target's reached leaves, the others the type's
      // largest or lowest finite value (the reference's start).
      bool isMin = spec.aggregate == 2;
      const llvm::fltSemantics &semantics = cast<FloatType>(type).getFloatSemantics();
      double start = APFloat::getLargest(semantics, /*Negative=*/!isMin).convertToDouble();
      std::vector<double> targetMask(targets * leaves), weights(targets * leaves, start);
      for (auto [l, path] : llvm::enumerate(spec.paths))
        for (auto [target, weight] : spec.leafOutputs[path.leaf]) {
          double &slot = weights[target * leaves + l];
          slot = isMin ? std::min(slot, weight) : std::max(slot, weight);
          targetMask[target * leaves + l] = 1;
        }
      int64_t samples = cast<RankedTensorType>(reachedLeaves.getType()).getDimSize(0);
      Value counted =
          node.createInferred<AndOp>(reshape(reachedLeaves, {samples, 1, leaves}),
                                     constant(targetMask, {1, targets, leaves}, b.getI1Type()));
      Value values = select(counted, constant(weights, {1, targets, leaves}, type),
                            constant({start}, {}, type));
      result = node.createInferred<ReduceOp>(b.getStringAttr(isMin ? "min" : "max"), values,
                                             b.getDenseI64ArrayAttr({2}));
    }
    if (spec.baseValues.empty())
      return result;
    return add(result, constant(spec.baseValues, {1, targets}, type));
  }

private:
  Value compareMode(SplitMode mode, Value columns, Value splitRow) {
    switch (mode) {
    case SplitMode::Leq:
      return compare("le", columns, splitRow);
    case SplitMode::Lt:
      return compare("lt", columns, splitRow);
    case SplitMode::Gte:
      return compare("ge", columns, splitRow);
    case SplitMode::Gt:
      return compare("gt", columns, splitRow);
    case SplitMode::Eq:
      return compare("eq", columns, splitRow);
    case SplitMode::Neq:
      return logicalNot(compare("eq", columns, splitRow));
    case SplitMode::Member:
      break;
    }
    llvm_unreachable("membership is memberships'");
  }
  /// [N, K] i1: whether each MEMBER node's feature is in its set: the
  /// feature compared with every member, and the matches counted per node.
  Value memberships(Value columns, ArrayRef<int64_t> decisionNodes) {
    int64_t count = decisionNodes.size();
    SmallVector<int64_t> memberColumn;
    std::vector<double> memberValues, memberOf;
    for (auto [k, index] : llvm::enumerate(decisionNodes)) {
      auto set = spec.members.find(index);
      if (set == spec.members.end())
        continue;
      for (double value : set->second) {
        memberColumn.push_back(k);
        memberValues.push_back(value);
      }
    }
    int64_t members = memberColumn.size();
    if (members == 0)
      return constant(std::vector<double>(count, 0.0), {1, count}, b.getI1Type());
    memberOf.assign(members * count, 0.0);
    for (auto [m, k] : llvm::enumerate(memberColumn))
      memberOf[m * count + k] = 1;
    Value candidates = node.createInferred<GatherOp>(
        columns, node.int64Constant(memberColumn, {members}), b.getI64IntegerAttr(1));
    Value matches =
        convert(compare("eq", candidates, constant(memberValues, {1, members}, type)), type);
    Value counts = matmul(matches, constant(memberOf, {members, count}, type));
    return compare("gt", counts, scalar(counts, 0.0));
  }

  const TreeEnsembleSpec &spec;
  Type type;
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
  if (failed(checkComputeBudget(node,
                                double(type.getDimSize(0)) * double(spec.modes.size()) *
                                    double(std::max<size_t>(spec.paths.size(), 1)),
                                "node and leaf pairs")))
    return failure();
  Type elementType = type.getElementType();
  TreeEnsembleBuilder f(node, spec, elementType);
  // The decision nodes on some path, each a column of the conditions.
  SmallVector<int64_t> decisionNodes;
  DenseMap<int64_t, int64_t> column;
  for (const LeafPath &path : spec.paths)
    for (auto [index, branch] : path.decisions)
      if (column.try_emplace(index, decisionNodes.size()).second)
        decisionNodes.push_back(index);
  int64_t samples = type.getDimSize(0), leaves = spec.paths.size();
  Value reached;
  if (decisionNodes.empty()) // every tree is one leaf
    reached = f.constant(std::vector<double>(samples * leaves, 1.0), {samples, leaves},
                         node.builder().getI1Type());
  else
    reached = f.reached(f.convert(f.conditions(x, decisionNodes), elementType), column);
  Value result = leaves ? f.aggregate(reached)
                        : f.constant(std::vector<double>(samples * spec.targets, 0.0),
                                     {samples, spec.targets}, elementType);
  OpBuilder &b = node.builder();
  if (result && spec.postTransform == 1)
    result = SoftmaxOp::create(b, node.loc(), result.getType(), result, b.getI64IntegerAttr(1));
  else if (result && spec.postTransform == 2)
    result = SigmoidOp::create(b, node.loc(), result.getType(), result);
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

/// TreeEnsembleRegressor's attributes (ai.onnx.ml 1 and 3): every node of
/// every tree is listed by (tree id, node id), a tree's root being its
/// first listed node; leaves are the nodes of mode LEAF, whose outputs the
/// target_* attributes list (several per leaf where there are several
/// targets).
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
/// that sum and the first 1 minus it (or its negation before a logistic or
/// softmax), as the reference computes them. The label is the class of the
/// highest score (the first of equal ones), from classlabels_int64s.
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
  if (transform > 2)
    return node.unsupported("post_transform SOFTMAX_ZERO and PROBIT are not supported");
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
    Value negative = transform == 0 ? f.sub(f.scalar(positive, 1.0), positive)
                                    : f.sub(f.scalar(positive, 0.0), positive);
    scores = ConcatOp::create(b, node.loc(), RankedTensorType::get({samples, 2}, b.getF32Type()),
                              ValueRange{negative, positive}, b.getI64IntegerAttr(1));
  }
  if (transform == 1)
    scores = SoftmaxOp::create(b, node.loc(), scores.getType(), scores, b.getI64IntegerAttr(1));
  else if (transform == 2)
    scores = SigmoidOp::create(b, node.loc(), scores.getType(), scores);
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
