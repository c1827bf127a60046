//===- Loss.cpp - NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ------===//
//
// Inference compilers meet these in exported training graphs and
// evaluation models. Both pick each target class's (log-)probability with a
// tessel.gather_elements along the class axis, weight it and reduce.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

SmallVector<int64_t> allAxes(int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

/// The NLL loss of log-probabilities `logProb` [N, C, d...] for integer
/// `target` [N, d...], as the node's reduction, weight and ignore_index ask.
Value negativeLogLikelihood(NodeImporter &node, Value logProb, Value target,
                            Value weight) {
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  auto probType = cast<RankedTensorType>(logProb.getType());
  auto targetType = cast<RankedTensorType>(target.getType());
  Type elementType = probType.getElementType();
  std::string reduction = node.stringAttr("reduction").value_or("mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    (void)node.unsupported("reduction '" + reduction + "' is not supported");
    return {};
  }
  std::optional<int64_t> ignoreIndex = node.intAttr("ignore_index");

  // Ignored targets read class 0 and weigh nothing.
  Value counted;
  if (ignoreIndex) {
    Value ignored = node.splatConstant(targetType.getElementType(), double(*ignoreIndex));
    Value isIgnored = node.createInferred<CompareOp>(b.getStringAttr("eq"), target, ignored);
    counted = NotOp::create(b, loc, isIgnored.getType(), isIgnored);
    target = node.createInferred<WhereOp>(
        counted, target, node.splatConstant(targetType.getElementType(), 0.0));
  }
  SmallVector<int64_t> classShape(targetType.getShape());
  classShape.insert(classShape.begin() + 1, 1);
  Value classIndex = ReshapeOp::create(b, loc, targetType.clone(classShape), target);
  Value picked = GatherElementsOp::create(b, loc, probType.clone(classShape), logProb,
                                          classIndex, b.getI64IntegerAttr(1));
  picked = ReshapeOp::create(b, loc, targetType.clone(elementType), picked);

  Value weights;
  if (weight)
    weights = node.createInferred<GatherOp>(weight, target, b.getI64IntegerAttr(0));
  if (counted) {
    Value mask = CastOp::create(b, loc, targetType.clone(elementType), counted);
    weights = weights ? node.createInferred<MulOp>(weights, mask) : mask;
  }
  Value loss = NegOp::create(b, loc, picked.getType(), picked);
  if (weights)
    loss = node.createInferred<MulOp>(loss, weights);
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> axes = allAxes(targetType.getRank());
  Value sum = node.createInferred<ReduceOp>(b.getStringAttr("sum"), loss,
                                            b.getDenseI64ArrayAttr(axes));
  if (reduction == "sum")
    return sum;
  Value divisor = weights ? node.createInferred<ReduceOp>(b.getStringAttr("sum"), weights,
                                                          b.getDenseI64ArrayAttr(axes))
                          : node.splatConstant(elementType,
                                               double(targetType.getNumElements()));
  return node.createInferred<DivOp>(sum, divisor);
}

bool checkShapes(NodeImporter &node, size_t scoresInput, size_t targetInput) {
  RankedTensorType scores = node.inputType(scoresInput);
  RankedTensorType target = node.inputType(targetInput);
  if (!scores.hasStaticShape() || !target.hasStaticShape() || scores.getRank() < 2 ||
      target.getRank() != scores.getRank() - 1) {
    (void)node.unsupported("expects static [N, C, d...] scores and [N, d...] targets");
    return false;
  }
  if (!isa<FloatType>(scores.getElementType())) {
    (void)node.unsupported("only floating-point scores are supported");
    return false;
  }
  return true;
}

LogicalResult importNegativeLogLikelihoodLoss(NodeImporter &node) {
  if (!checkShapes(node, 0, 1))
    return failure();
  return node.setInferredOutput(
      0, negativeLogLikelihood(node, node.input(0), node.input(1), node.input(2)));
}

LogicalResult importSoftmaxCrossEntropyLoss(NodeImporter &node) {
  if (!checkShapes(node, 0, 1))
    return failure();
  Value logProb = logSoftmax(node, node.input(0), 1);
  Value loss = negativeLogLikelihood(node, logProb, node.input(1), node.input(2));
  if (!loss)
    return failure();
  node.setOutput(0, loss);
  if (node.outputUsed(1))
    node.setOutput(1, logProb);
  return success();
}

} // namespace

void registerLossHandlers(OpRegistry &registry) {
  registry.on("NegativeLogLikelihoodLoss", 12, importNegativeLogLikelihoodLoss);
  registry.on("SoftmaxCrossEntropyLoss", 12, importSoftmaxCrossEntropyLoss);
}

} // namespace tessel::onnx_import
