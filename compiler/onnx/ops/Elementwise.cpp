//===- Elementwise.cpp - Elementwise arithmetic and activations -----------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

template <typename OpTy>
LogicalResult importBinary(NodeImporter &node) {
  Value result = node.createInferred<OpTy>(node.input(0), node.input(1));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

template <typename OpTy>
LogicalResult importUnary(NodeImporter &node) {
  Value input = node.input(0);
  if (!isa<FloatType>(node.inputType(0).getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  node.setOutput(0, OpTy::create(node.builder(), node.loc(), input.getType(), input));
  return success();
}

/// Opset 6: the bounds are float attributes.
LogicalResult importClip6(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!isa<FloatType>(type.getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  OpBuilder &b = node.builder();
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  auto bound = [&](llvm::StringRef name, float fallback) -> Value {
    float value = node.floatAttr(name, fallback);
    return ConstantOp::create(
        b, node.loc(),
        DenseElementsAttr::get(scalarType, b.getFloatAttr(type.getElementType(), value)));
  };
  Value min = bound("min", std::numeric_limits<float>::lowest());
  Value max = bound("max", std::numeric_limits<float>::max());
  node.setOutput(0, ClipOp::create(b, node.loc(), type, node.input(0), min, max));
  return success();
}

/// Opset 11 and later: the bounds are optional scalar inputs.
LogicalResult importClip11(NodeImporter &node) {
  node.setOutput(0, ClipOp::create(node.builder(), node.loc(),
                                   node.input(0).getType(), node.input(0),
                                   node.input(1), node.input(2)));
  return success();
}

/// Dropout is the identity at inference. Its mask output and training mode
/// are not.
LogicalResult importDropout(NodeImporter &node) {
  if (node.outputUsed(1))
    return node.unsupported("the mask output is not supported");
  // The drop ratio and seed only matter when training.
  for (llvm::StringRef irrelevant : {"seed", "ratio", "is_test", "consumed_inputs"})
    node.ignoreAttr(irrelevant);
  if (node.input(2)) {
    ElementsAttr training = node.constantInput(2);
    if (!training || training.getNumElements() != 1 ||
        (*training.getValues<APInt>().begin()).getBoolValue())
      return node.unsupported("training mode is not supported");
  }
  node.setOutput(0, node.input(0));
  return success();
}

} // namespace

void registerElementwiseHandlers(OpRegistry &registry) {
  // Opset 7 introduced multidirectional broadcasting; 13 and 14 only add types.
  registry.on("Add", 7, importBinary<AddOp>);
  registry.on("Sub", 7, importBinary<SubOp>);
  registry.on("Mul", 7, importBinary<MulOp>);
  registry.on("Div", 7, importBinary<DivOp>);
  registry.on("Relu", 6, importUnary<ReluOp>);
  registry.on("Sigmoid", 6, importUnary<SigmoidOp>);
  registry.on("Tanh", 6, importUnary<TanhOp>);
  registry.on("Clip", 6, importClip6);
  registry.on("Clip", 11, importClip11);
  registry.on("Dropout", 1, importDropout);
}

} // namespace tessel::onnx_import
