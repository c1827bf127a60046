//===- Elementwise.cpp - Elementwise arithmetic and activations -----------===//

#include "compiler/onnx/ops/Formula.h"
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

/// Variadic Min, Max, Sum: a left-to-right chain of the binary op.
template <typename OpTy>
Value chain(NodeImporter &node) {
  Value result;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    Value input = node.input(i);
    if (!input)
      continue;
    result = result ? node.createInferred<OpTy>(result, input) : input;
    if (!result)
      return {};
  }
  return result;
}

template <typename OpTy>
LogicalResult importVariadic(NodeImporter &node) {
  Value result = chain<OpTy>(node);
  if (!result)
    return node.unsupported("needs at least one input");
  node.setOutput(0, result);
  return success();
}

LogicalResult importMean(NodeImporter &node) {
  Value sum = chain<AddOp>(node);
  if (!sum)
    return node.unsupported("needs at least one input");
  auto type = cast<RankedTensorType>(sum.getType());
  if (!isa<FloatType>(type.getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  int64_t count = 0;
  for (size_t i = 0; i < node.numInputs(); ++i)
    count += node.input(i) ? 1 : 0;
  OpBuilder &b = node.builder();
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value divisor = ConstantOp::create(
      b, node.loc(),
      DenseElementsAttr::get(scalarType, b.getFloatAttr(type.getElementType(),
                                                        double(count))));
  node.setOutput(0, node.createInferred<DivOp>(sum, divisor));
  return success();
}

/// Pow: the result has the base's type; another exponent type is cast.
LogicalResult importPow(NodeImporter &node) {
  Type baseType = node.inputType(0).getElementType();
  OpBuilder &b = node.builder();
  if (!isa<FloatType>(baseType)) {
    // Integer powers go through double, exact up to 2^53, and truncate back.
    RankedTensorType type = node.inputType(0);
    auto wide = [&](Value value) {
      auto valueType = cast<RankedTensorType>(value.getType());
      return CastOp::create(b, node.loc(), valueType.clone(b.getF64Type()), value);
    };
    Value power = node.createInferred<PowOp>(wide(node.input(0)), wide(node.input(1)));
    if (!power)
      return failure();
    auto powerType = cast<RankedTensorType>(power.getType());
    node.setOutput(0, CastOp::create(b, node.loc(), powerType.clone(type.getElementType()),
                                     power));
    return success();
  }
  Value exponent = node.input(1);
  RankedTensorType exponentType = node.inputType(1);
  if (exponentType.getElementType() != baseType)
    exponent = CastOp::create(
        node.builder(), node.loc(),
        RankedTensorType::get(exponentType.getShape(), baseType), exponent);
  Value result = node.createInferred<PowOp>(node.input(0), exponent);
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

LogicalResult importCompare(NodeImporter &node, StringRef predicate) {
  Value result = node.createInferred<CompareOp>(
      node.builder().getStringAttr(predicate), node.input(0), node.input(1));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

LogicalResult importWhere(NodeImporter &node) {
  Value result =
      node.createInferred<WhereOp>(node.input(0), node.input(1), node.input(2));
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

/// An activation whose float parameters are ONNX attributes with defaults.
template <typename OpTy, typename... Parameters>
LogicalResult importActivation(NodeImporter &node, Parameters... parameters) {
  if (!isa<FloatType>(node.inputType(0).getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  OpBuilder &b = node.builder();
  Value input = node.input(0);
  node.setOutput(0, OpTy::create(b, node.loc(), input.getType(), input,
                                 b.getF32FloatAttr(node.floatAttr(
                                     parameters.first, parameters.second))...));
  return success();
}

template <typename OpTy>
LogicalResult importAlphaActivation(NodeImporter &node, float alpha) {
  return importActivation<OpTy>(node, std::pair{"alpha", alpha});
}

LogicalResult importSelu(NodeImporter &node) {
  return importActivation<SeluOp>(node, std::pair{"alpha", 1.67326319217681884765625f},
                                  std::pair{"gamma", 1.05070102214813232421875f});
}

LogicalResult importHardSigmoid(NodeImporter &node) {
  return importActivation<HardSigmoidOp>(node, std::pair{"alpha", 0.2f},
                                         std::pair{"beta", 0.5f});
}

LogicalResult importCelu(NodeImporter &node) {
  if (node.floatAttr("alpha", 1.0f) == 0.0f)
    return node.unsupported("alpha = 0 divides by zero");
  return importAlphaActivation<CeluOp>(node, 1.0f);
}

LogicalResult importGelu(NodeImporter &node) {
  if (!isa<FloatType>(node.inputType(0).getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  std::string approximate = node.stringAttr("approximate").value_or("none");
  if (approximate != "none" && approximate != "tanh")
    return node.unsupported("approximate = '" + approximate +
                            "' is not 'none' or 'tanh'");
  Value input = node.input(0);
  node.setOutput(0, GeluOp::create(node.builder(), node.loc(), input.getType(),
                                   input, approximate == "tanh"));
  return success();
}

} // namespace

Value swish(NodeImporter &node, Value x, float alpha) {
  auto type = cast<RankedTensorType>(x.getType());
  OpBuilder &b = node.builder();
  Value scaled = x;
  if (alpha != 1.0f)
    scaled = node.createInferred<MulOp>(x, node.splatConstant(type.getElementType(), alpha));
  Value gate = SigmoidOp::create(b, node.loc(), type, scaled);
  return node.createInferred<MulOp>(x, gate);
}

namespace {

LogicalResult importSwish(NodeImporter &node) {
  if (!isa<FloatType>(node.inputType(0).getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  return node.setInferredOutput(0, swish(node, node.input(0), node.floatAttr("alpha", 1.0f)));
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

/// Dropout is the identity at inference, and in training mode where its
/// ratio is 0 (nothing is dropped and the kept values are scaled by
/// 1 / (1 - 0)). Dropping at random is not supported: in training mode with
/// a ratio known above 0 it is refused; with a training mode or ratio known
/// only at run time, the run stops where it would drop.
LogicalResult importDropout(NodeImporter &node) {
  for (llvm::StringRef irrelevant : {"seed", "ratio", "is_test", "consumed_inputs"})
    node.ignoreAttr(irrelevant);
  auto scalarValue = [&](size_t input) -> std::optional<double> {
    ElementsAttr value = node.constantInput(input);
    if (!value || value.getNumElements() != 1)
      return std::nullopt;
    if (isa<FloatType>(value.getElementType()))
      return (*value.getValues<APFloat>().begin()).convertToDouble();
    return (*value.getValues<APInt>().begin()).getBoolValue() ? 1.0 : 0.0;
  };
  if (node.input(2)) {
    std::optional<double> training = scalarValue(2);
    // ratio: input 1 from opset 12 on, 0.5 when omitted.
    std::optional<double> ratio = node.input(1) ? scalarValue(1) : 0.5;
    if (!(training && *training == 0.0) && !(ratio && *ratio == 0.0)) {
      if (training && ratio)
        return node.unsupported("training mode with a ratio above 0 drops values at random, "
                                "which is not supported");
      // Drops where training and the ratio is above 0.
      Formula f(node);
      Value drops = node.input(2);
      if (node.input(1))
        drops = node.createInferred<AndOp>(
            drops, f.compare("gt", node.input(1), f.scalar(node.input(1), 0.0)));
      stopUnlessZero(node, f.convert(drops, node.builder().getI64Type()),
                     "Dropout in training mode with a ratio above 0 (dropping values at random)");
    }
  }
  node.setOutput(0, node.input(0));
  if (node.outputUsed(1)) {
    // Nothing is dropped: the mask is all true.
    RankedTensorType type = node.inputType(0);
    node.setOutput(1, node.splatConstant(node.builder().getI1Type(), 1.0, type.getShape()));
  }
  return success();
}

LogicalResult importMod(NodeImporter &node) {
  bool fmod = node.intAttr("fmod", 0) != 0;
  if (isa<FloatType>(node.inputType(0).getElementType()) && !fmod)
    return node.unsupported("floating-point Mod needs fmod = 1");
  return node.setInferredOutput(
      0, node.createInferred<ModOp>(node.input(0), node.input(1),
                                    node.builder().getBoolAttr(fmod)));
}

LogicalResult importBitShift(NodeImporter &node) {
  std::string direction = node.stringAttr("direction").value_or("");
  if (direction != "LEFT" && direction != "RIGHT")
    return node.unsupported("direction must be LEFT or RIGHT");
  if (!node.inputType(0).getElementType().isUnsignedInteger())
    return node.unsupported("only unsigned integers can be shifted");
  return node.setInferredOutput(
      0, node.createInferred<BitShiftOp>(node.input(0), node.input(1),
                                         node.builder().getBoolAttr(direction == "LEFT")));
}

/// Bitwise ops take integers only (And/Or/Xor take booleans only).
template <typename OpTy>
LogicalResult importBitwise(NodeImporter &node) {
  for (size_t i = 0; i < node.numInputs(); ++i)
    if (!isa<IntegerType>(node.inputType(i).getElementType()))
      return node.unsupported("only integer inputs are supported");
  return importBinary<OpTy>(node);
}

LogicalResult importNot(NodeImporter &node) {
  Value input = node.input(0);
  if (!isa<IntegerType>(node.inputType(0).getElementType()))
    return node.unsupported("only integer and boolean inputs are supported");
  node.setOutput(0, NotOp::create(node.builder(), node.loc(), input.getType(), input));
  return success();
}

/// IsNaN is x != x: the negation of an ordered x == x.
LogicalResult importIsNaN(NodeImporter &node) {
  Value x = node.input(0);
  if (!isa<FloatType>(node.inputType(0).getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  return node.setInferredOutput(0, Formula(node).isNaN(x));
}

/// IsInf compares with +inf and -inf, as detect_positive/negative ask.
LogicalResult importIsInf(NodeImporter &node) {
  Value x = node.input(0);
  Type elementType = node.inputType(0).getElementType();
  if (!isa<FloatType>(elementType))
    return node.unsupported("only floating-point inputs are supported");
  bool positive = node.intAttr("detect_positive", 1) != 0;
  bool negative = node.intAttr("detect_negative", 1) != 0;
  OpBuilder &b = node.builder();
  auto isValue = [&](double value) {
    return node.createInferred<CompareOp>(b.getStringAttr("eq"), x,
                                          node.splatConstant(elementType, value));
  };
  double inf = std::numeric_limits<double>::infinity();
  Value result;
  if (positive && negative)
    result = node.createInferred<OrOp>(isValue(inf), isValue(-inf));
  else if (positive || negative)
    result = isValue(positive ? inf : -inf);
  else
    result = node.splatConstant(b.getI1Type(), 0.0, node.inputType(0).getShape());
  node.setOutput(0, result);
  return success();
}

/// PRelu: x where x >= 0, else slope * x (slope broadcasts to x).
LogicalResult importPRelu(NodeImporter &node) {
  Value x = node.input(0);
  Type elementType = node.inputType(0).getElementType();
  OpBuilder &b = node.builder();
  Value negative = node.createInferred<CompareOp>(b.getStringAttr("lt"), x,
                                                  node.splatConstant(elementType, 0.0));
  Value scaled = node.createInferred<MulOp>(x, node.input(1));
  return node.setInferredOutput(0, node.createInferred<WhereOp>(negative, scaled, x));
}

/// Shrink: x + bias below -lambd, x - bias above lambd, else 0.
LogicalResult importShrink(NodeImporter &node) {
  Value x = node.input(0);
  Type elementType = node.inputType(0).getElementType();
  double lambd = node.floatAttr("lambd", 0.5f), bias = node.floatAttr("bias", 0.0f);
  OpBuilder &b = node.builder();
  auto constant = [&](double value) { return node.splatConstant(elementType, value); };
  Value below = node.createInferred<CompareOp>(b.getStringAttr("lt"), x, constant(-lambd));
  Value above = node.createInferred<CompareOp>(b.getStringAttr("gt"), x, constant(lambd));
  Value raised = node.createInferred<AddOp>(x, constant(bias));
  Value lowered = node.createInferred<SubOp>(x, constant(bias));
  Value outer = node.createInferred<WhereOp>(above, lowered, constant(0.0));
  return node.setInferredOutput(0, node.createInferred<WhereOp>(below, raised, outer));
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
  // Math functions; later opsets only add types.
  registry.on("Abs", 6, importUnary<AbsOp>);
  registry.on("Neg", 6, [](NodeImporter &node) {
    // Integers negate as 0 - x; tessel.neg is for floats.
    RankedTensorType type = node.inputType(0);
    if (isa<FloatType>(type.getElementType()))
      return importUnary<NegOp>(node);
    return node.setInferredOutput(
        0, node.createInferred<SubOp>(node.splatConstant(type.getElementType(), 0.0),
                                      node.input(0)));
  });
  registry.on("Exp", 6, importUnary<ExpOp>);
  registry.on("Log", 6, importUnary<LogOp>);
  registry.on("Sqrt", 6, importUnary<SqrtOp>);
  registry.on("Reciprocal", 6, importUnary<ReciprocalOp>);
  registry.on("Floor", 6, importUnary<FloorOp>);
  registry.on("Ceil", 6, importUnary<CeilOp>);
  registry.on("Round", 11, importUnary<RoundOp>);
  registry.on("Sign", 9, importUnary<SignOp>);
  registry.on("Erf", 9, importUnary<ErfOp>);
  registry.on("Sin", 7, importUnary<SinOp>);
  registry.on("Cos", 7, importUnary<CosOp>);
  registry.on("Tan", 7, importUnary<TanOp>);
  registry.on("Asin", 7, importUnary<AsinOp>);
  registry.on("Acos", 7, importUnary<AcosOp>);
  registry.on("Atan", 7, importUnary<AtanOp>);
  registry.on("Sinh", 9, importUnary<SinhOp>);
  registry.on("Cosh", 9, importUnary<CoshOp>);
  registry.on("Asinh", 9, importUnary<AsinhOp>);
  registry.on("Acosh", 9, importUnary<AcoshOp>);
  registry.on("Atanh", 9, importUnary<AtanhOp>);
  // Activations.
  registry.on("Softplus", 1, importUnary<SoftplusOp>);
  registry.on("Softsign", 1, importUnary<SoftsignOp>);
  registry.on("HardSwish", 14, importUnary<HardSwishOp>);
  registry.on("Mish", 18, importUnary<MishOp>);
  registry.on("Swish", 24, importSwish);
  registry.on("LeakyRelu", 6, [](NodeImporter &node) {
    return importAlphaActivation<LeakyReluOp>(node, 0.01f);
  });
  registry.on("Elu", 6, [](NodeImporter &node) {
    return importAlphaActivation<EluOp>(node, 1.0f);
  });
  registry.on("ThresholdedRelu", 10, [](NodeImporter &node) {
    return importAlphaActivation<ThresholdedReluOp>(node, 1.0f);
  });
  registry.on("Selu", 6, importSelu);
  registry.on("Celu", 12, importCelu);
  registry.on("PRelu", 7, importPRelu);
  registry.on("Shrink", 9, importShrink);
  registry.on("HardSigmoid", 6, importHardSigmoid);
  registry.on("Gelu", 20, importGelu);
  registry.on("Min", 6, importVariadic<MinOp>);
  registry.on("Max", 6, importVariadic<MaxOp>);
  registry.on("Sum", 6, importVariadic<AddOp>);
  registry.on("Mean", 6, importMean);
  registry.on("Pow", 7, importPow);
  for (auto [name, predicate] :
       {std::pair{"Equal", "eq"}, std::pair{"Less", "lt"},
        std::pair{"LessOrEqual", "le"}, std::pair{"Greater", "gt"},
        std::pair{"GreaterOrEqual", "ge"}}) {
    std::string kind = predicate;
    registry.on(name, 7, [kind](NodeImporter &node) {
      return importCompare(node, kind);
    });
  }
  registry.on("Where", 9, importWhere);
  registry.on("And", 7, importBinary<AndOp>);
  registry.on("Or", 7, importBinary<OrOp>);
  registry.on("Xor", 7, importBinary<XorOp>);
  registry.on("Not", 1, importNot);
  registry.on("BitwiseNot", 18, importNot);
  registry.on("BitwiseAnd", 18, importBitwise<AndOp>);
  registry.on("BitwiseOr", 18, importBitwise<OrOp>);
  registry.on("BitwiseXor", 18, importBitwise<XorOp>);
  registry.on("BitShift", 11, importBitShift);
  registry.on("Mod", 10, importMod);
  registry.on("IsNaN", 9, importIsNaN);
  registry.on("IsInf", 10, importIsInf);
  registry.on("Clip", 6, importClip6);
  registry.on("Clip", 11, importClip11);
  registry.on("Dropout", 1, importDropout);
}

} // namespace tessel::onnx_import
