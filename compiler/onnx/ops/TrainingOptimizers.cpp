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

  /// Checks that the node takes R, T and n tensors of each group and gives
  /// n of each but G, of one float type; refuses it naming `layout`
  /// otherwise.
  LogicalResult check(const Twine &layout) {
    size_t inputs = node.numInputs(), outputs = node.numOutputs();
    if (inputs < 2 + groups || (inputs - 2) % groups != 0 ||
        outputs != (inputs - 2) / groups * (groups - 1))
      return node.unsupported(layout);
    count = (inputs - 2) / groups;
    type = node.inputType(2).getElementType();
    if (!isa<FloatType>(type))
      return node.unsupported("the optimized tensors must be floats");
    return success();
  }
  /// The number of tensors n.
  size_t tensors() const { return count; }
  /// Input `group` (0: X, 1: G, 2 on: the accumulators) of tensor i.
  Value input(size_t group, size_t i) { return node.input(2 + group * count + i); }
  /// Output `group` (0: X, 1 on: the accumulators) of tensor i.
  void setOutput(size_t group, size_t i, Value value) {
    if (value && node.outputUsed(group * count + i))
      node.setOutput(group * count + i, value);
  }
  /// R and T, and constants, in the tensors' type.
  Value rate() { return convert(node.input(0), type); }
  Value updates() { return convert(node.input(1), type); }
  Value constant(double value) { return node.splatConstant(type, value); }
  /// Whether T > 0 (not the first update).
  Value afterFirstUpdate() { return compare("gt", updates(), constant(0.0)); }
  Value pow(Value base, Value exponent) { return node.createInferred<PowOp>(base, exponent); }
  /// norm_coefficient * X + G: the gradient of the regularized loss.
  Value regularized(Value x, Value g, double norm) { return add(mul(scalar(x, norm), x), g); }

private:
  size_t groups, count = 0;
  Type type;
};

/// Adagrad: H accumulates the squared gradients, and X steps by the
/// gradient over sqrt(H) + epsilon, at the rate R / (1 + T decay_factor).
LogicalResult importAdagrad(NodeImporter &node) {
  OptimizerStep step(node, 3);
  if (failed(step.check("Adagrad takes R, T and n each of X, G and H, and gives n each of the "
                        "new X and H")))
    return failure();
  double decay = node.floatAttr("decay_factor", 0.0f);
  double epsilon = node.floatAttr("epsilon", 0.0f);
  double norm = node.floatAttr("norm_coefficient", 0.0f);
  Value rate = step.div(
      step.rate(), step.add(step.constant(1.0), step.mul(step.updates(), step.constant(decay))));
  for (size_t i = 0; i < step.tensors(); ++i) {
    Value x = step.input(0, i), h = step.input(2, i);
    Value g = step.regularized(x, step.input(1, i), norm);
    Value hNew = step.add(h, step.mul(g, g));
    Value scaling = step.add(step.sqrt(hNew), step.scalar(hNew, epsilon));
    step.setOutput(0, i, step.sub(x, step.div(step.mul(rate, g), scaling)));
    step.setOutput(1, i, hNew);
  }
  return success();
}

/// Adam: V and H are running means of the gradient and its square; X steps
/// by V / (sqrt(H) + epsilon), the rate correcting their bias from the
/// second update on.
LogicalResult importAdam(NodeImporter &node) {
  OptimizerStep step(node, 4);
  if (failed(step.check("Adam takes R, T and n each of X, G, V and H, and gives n each of the "
                        "new X, V and H")))
    return failure();
  double alpha = node.floatAttr("alpha", 0.9f), beta = node.floatAttr("beta", 0.999f);
  double epsilon = node.floatAttr("epsilon", 1e-6f);
  double norm = node.floatAttr("norm_coefficient", 0.0f);
  double normPost = node.floatAttr("norm_coefficient_post", 0.0f);
  // R sqrt(1 - beta^T) / (1 - alpha^T) where T > 0, else R.
  Value updates = step.updates(), rate = step.rate();
  Value one = step.constant(1.0);
  Value corrected =
      step.div(step.mul(rate, step.sqrt(step.sub(one, step.pow(step.constant(beta), updates)))),
               step.sub(one, step.pow(step.constant(alpha), updates)));
  Value adjusted = step.select(step.afterFirstUpdate(), corrected, rate);
  for (size_t i = 0; i < step.tensors(); ++i) {
    Value x = step.input(0, i);
    Value g = step.regularized(x, step.input(1, i), norm);
    Value v = step.input(2, i), h = step.input(3, i);
    Value vNew =
        step.add(step.mul(step.scalar(v, alpha), v), step.mul(step.scalar(g, 1 - alpha), g));
    Value hNew = step.add(step.mul(step.scalar(h, beta), h),
                          step.mul(step.scalar(g, 1 - beta), step.mul(g, g)));
    Value scaling = step.add(step.sqrt(hNew), step.scalar(hNew, epsilon));
    Value xNew = step.sub(x, step.mul(adjusted, step.div(vNew, scaling)));
    step.setOutput(0, i, step.mul(step.scalar(x, 1 - normPost), xNew));
    step.setOutput(1, i, vNew);
    step.setOutput(2, i, hNew);
  }
  return success();
}

/// Momentum: V = alpha V + beta G (the gradient counting fully at T = 0),
/// and X steps by R V, or with mode 'nesterov' by R (G + alpha V).
LogicalResult importMomentum(NodeImporter &node) {
  OptimizerStep step(node, 3);
  if (failed(step.check("Momentum takes R, T and n each of X, G and V, and gives n each of the "
                        "new X and V")))
    return failure();
  std::string mode = node.stringAttr("mode").value_or("");
  if (mode != "standard" && mode != "nesterov")
    return node.unsupported("mode must be 'standard' or 'nesterov'");
  std::optional<float> alpha = node.floatAttr("alpha"), beta = node.floatAttr("beta");
  std::optional<float> norm = node.floatAttr("norm_coefficient");
  if (!alpha || !beta || !norm)
    return node.unsupported("alpha, beta and norm_coefficient are required");
  Value gradientWeight =
      step.select(step.afterFirstUpdate(), step.constant(*beta), step.constant(1.0));
  Value rate = step.rate();
  for (size_t i = 0; i < step.tensors(); ++i) {
    Value x = step.input(0, i), v = step.input(2, i);
    Value g = step.regularized(x, step.input(1, i), *norm);
    Value vNew = step.add(step.mul(step.scalar(v, *alpha), v), step.mul(gradientWeight, g));
    Value direction =
        mode == "nesterov" ? step.add(g, step.mul(step.scalar(vNew, *alpha), vNew)) : vNew;
    step.setOutput(0, i, step.sub(x, step.mul(rate, direction)));
    step.setOutput(1, i, vNew);
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
