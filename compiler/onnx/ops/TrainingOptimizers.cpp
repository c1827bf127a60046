//===- TrainingOptimizers.cpp - ai.onnx.preview.training optimizers -------===//
//
// Adagrad, Adam and Momentum (operator set ai.onnx.preview.training,
// version 1): one optimizer step on n tensors at once, each X with its
// gradient G and its accumulators, from a learning rate R and the number of
// updates done so far T (0-D). The update rules are ONNX's reference's;
// every input and output is a tensor, so they are elementwise formulas.
// Inputs are R, T, then the n X, the n G and the n of each accumulator;
// outputs the n new X, then the n of each new accumulator.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

class OptimizerStep : public Formula {
public:
  /// `groups`: X, G and the accumulators, n tensors each.
  OptimizerStep(NodeImporter &node, size_t groups) : Formula(node), groups(groups) {}

  /// The number of tensors n, checked against the inputs and outputs.
  std::optional<size_t> tensorCount() {
    size_t inputs = node.numInputs(), outputs = node.numOutputs();
    if (inputs < 2 + groups || (inputs - 2) % groups != 0 ||
        outputs != (inputs - 2) / groups * (groups - 1))
      return std::nullopt;
    return (inputs - 2) / groups;
  }
  /// Input `group` (0: X, 1: G, 2 on: the accumulators) of tensor i of n.
  Value input(size_t group, size_t i, size_t n) { return node.input(2 + group * n + i); }
  /// R and T in the tensors' type.
  Value rate(Type type) { return convert(node.input(0), type); }
  Value updates(Type type) { return convert(node.input(1), type); }
  Value constant(Type type, double value) { return node.splatConstant(type, value); }
  Value pow(Value base, Value exponent) { return node.createInferred<PowOp>(base, exponent); }
  /// norm_coefficient * X + G: the gradient of the regularized loss.
  Value regularized(Value x, Value g, double norm) { return add(mul(scalar(x, norm), x), g); }
  /// Output `group` (0: X, 1 on: the accumulators) of tensor i of n.
  void setOutput(size_t group, size_t i, size_t n, Value value) {
    if (value && node.outputUsed(group * n + i))
      node.setOutput(group * n + i, value);
  }

private:
  size_t groups;
};

/// The element type of the optimized tensors, or null after refusing them.
Type tensorElementType(NodeImporter &node) {
  Type type = node.inputType(2).getElementType();
  if (!isa<FloatType>(type)) {
    (void)node.unsupported("the optimized tensors must be floats");
    return Type();
  }
  return type;
}

/// Adagrad: H accumulates the squared gradients, and X steps by the
/// gradient over sqrt(H) + epsilon, at the rate R / (1 + T decay_factor).
LogicalResult importAdagrad(NodeImporter &node) {
  OptimizerStep step(node, 3);
  std::optional<size_t> n = step.tensorCount();
  if (!n)
    return node.unsupported("Adagrad takes R, T and n each of X, G and H, and gives n each of "
                            "the new X and H");
  Type type = tensorElementType(node);
  if (!type)
    return failure();
  double decay = node.floatAttr("decay_factor", 0.0f);
  double epsilon = node.floatAttr("epsilon", 0.0f);
  double norm = node.floatAttr("norm_coefficient", 0.0f);
  Value rate =
      step.div(step.rate(type), step.add(step.constant(type, 1.0),
                                         step.mul(step.updates(type), step.constant(type, decay))));
  for (size_t i = 0; i < *n; ++i) {
    Value x = step.input(0, i, *n), h = step.input(2, i, *n);
    Value g = step.regularized(x, step.input(1, i, *n), norm);
    Value hNew = step.add(h, step.mul(g, g));
    Value scaling = step.add(step.sqrt(hNew), step.scalar(hNew, epsilon));
    step.setOutput(0, i, *n, step.sub(x, step.div(step.mul(rate, g), scaling)));
    step.setOutput(1, i, *n, hNew);
  }
  return success();
}

/// Adam: V and H are running means of the gradient and its square; X steps
/// by V / (sqrt(H) + epsilon), the rate correcting their bias from the
/// second update on.
LogicalResult importAdam(NodeImporter &node) {
  OptimizerStep step(node, 4);
  std::optional<size_t> n = step.tensorCount();
  if (!n)
    return node.unsupported("Adam takes R, T and n each of X, G, V and H, and gives n each of "
                            "the new X, V and H");
  Type type = tensorElementType(node);
  if (!type)
    return failure();
  double alpha = node.floatAttr("alpha", 0.9f), beta = node.floatAttr("beta", 0.999f);
  double epsilon = node.floatAttr("epsilon", 1e-6f);
  double norm = node.floatAttr("norm_coefficient", 0.0f);
  double normPost = node.floatAttr("norm_coefficient_post", 0.0f);
  // R sqrt(1 - beta^T) / (1 - alpha^T) where T > 0, else R.
  Value updates = step.updates(type), rate = step.rate(type);
  Value one = step.constant(type, 1.0);
  Value corrected = step.div(
      step.mul(rate, step.sqrt(step.sub(one, step.pow(step.constant(type, beta), updates)))),
      step.sub(one, step.pow(step.constant(type, alpha), updates)));
  Value adjusted =
      step.select(step.compare("gt", updates, step.constant(type, 0.0)), corrected, rate);
  for (size_t i = 0; i < *n; ++i) {
    Value x = step.input(0, i, *n);
    Value g = step.regularized(x, step.input(1, i, *n), norm);
    Value v = step.input(2, i, *n), h = step.input(3, i, *n);
    Value vNew =
        step.add(step.mul(step.scalar(v, alpha), v), step.mul(step.scalar(g, 1 - alpha), g));
    Value hNew = step.add(step.mul(step.scalar(h, beta), h),
                          step.mul(step.scalar(g, 1 - beta), step.mul(g, g)));
    Value scaling = step.add(step.sqrt(hNew), step.scalar(hNew, epsilon));
    Value xNew = step.sub(x, step.mul(adjusted, step.div(vNew, scaling)));
    step.setOutput(0, i, *n, step.mul(step.scalar(x, 1 - normPost), xNew));
    step.setOutput(1, i, *n, vNew);
    step.setOutput(2, i, *n, hNew);
  }
  return success();
}

/// Momentum: V = alpha V + beta G (the gradient counting fully at T = 0),
/// and X steps by R V, or with mode 'nesterov' by R (G + alpha V).
LogicalResult importMomentum(NodeImporter &node) {
  OptimizerStep step(node, 3);
  std::optional<size_t> n = step.tensorCount();
  if (!n)
    return node.unsupported("Momentum takes R, T and n each of X, G and V, and gives n each "
                            "of the new X and V");
  Type type = tensorElementType(node);
  if (!type)
    return failure();
  std::string mode = node.stringAttr("mode").value_or("");
  if (mode != "standard" && mode != "nesterov")
    return node.unsupported("mode must be 'standard' or 'nesterov'");
  std::optional<float> alpha = node.floatAttr("alpha"), beta = node.floatAttr("beta");
  std::optional<float> norm = node.floatAttr("norm_coefficient");
  if (!alpha || !beta || !norm)
    return node.unsupported("alpha, beta and norm_coefficient are required");
  Value updates = step.updates(type);
  Value gradientWeight = step.select(step.compare("gt", updates, step.constant(type, 0.0)),
                                     step.constant(type, *beta), step.constant(type, 1.0));
  Value rate = step.rate(type);
  for (size_t i = 0; i < *n; ++i) {
    Value x = step.input(0, i, *n), v = step.input(2, i, *n);
    Value g = step.regularized(x, step.input(1, i, *n), *norm);
    Value vNew = step.add(step.mul(step.scalar(v, *alpha), v), step.mul(gradientWeight, g));
    Value direction =
        mode == "nesterov" ? step.add(g, step.mul(step.scalar(vNew, *alpha), vNew)) : vNew;
    step.setOutput(0, i, *n, step.sub(x, step.mul(rate, direction)));
    step.setOutput(1, i, *n, vNew);
  }
  return success();
}

} // namespace

void registerTrainingOptimizerHandlers(OpRegistry &registry) {
  registry.on("ai.onnx.preview.training", "Adagrad", 1, importAdagrad);
  registry.on("ai.onnx.preview.training", "Adam", 1, importAdam);
  registry.on("ai.onnx.preview.training", "Momentum", 1, importMomentum);
}

} // namespace tessel::onnx_import
