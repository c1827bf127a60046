//===- OnnxExporter.cpp - The tessel dialect as an ONNX model -------------===//
//
// One ONNX node (or a few) per tessel op, in program order. The graph is
// the one Tessel compiles: batch normalizations already folded into
// convolutions, ONNX's layouts, and each op in the form the importer gave
// it, so that most ops map to the ONNX op they came from.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxExporter.h"

#include "compiler/onnx/OnnxGraphWriter.h"
#include "compiler/onnx/OnnxImporter.h"
#include "dialects/tessel/QuantizedTypes.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/QuantizedGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;

namespace tessel {
namespace {

using onnx_export::nodeNameOf;
using onnx_export::OnnxGraphWriter;

/// The opset the export writes: the first with every op below in its
/// current form (Gelu: 20; Reduce* axes as an input: 18).
constexpr int64_t kOpsetVersion = 21;
/// The IR version that came with opset 21.
constexpr int64_t kIrVersion = 10;

llvm::Error exportError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error exportError(Operation *op, const llvm::Twine &message) {
  std::string node = nodeNameOf(op);
  std::string where = node.empty() ? std::string() : "node '" + node + "': ";
  return exportError(where + op->getName().getStringRef() + " " + message);
}

void setInt(onnx::NodeProto &node, llvm::StringRef name, int64_t value) {
  onnx::AttributeProto &attribute = *node.add_attribute();
  attribute.set_name(name.str());
  attribute.set_type(onnx::AttributeProto::INT);
  attribute.set_i(value);
}

void setInts(onnx::NodeProto &node, llvm::StringRef name, ArrayRef<int64_t> values) {
  onnx::AttributeProto &attribute = *node.add_attribute();
  attribute.set_name(name.str());
  attribute.set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values)
    attribute.add_ints(value);
}

void setFloat(onnx::NodeProto &node, llvm::StringRef name, const APFloat &value) {
  onnx::AttributeProto &attribute = *node.add_attribute();
  attribute.set_name(name.str());
  attribute.set_type(onnx::AttributeProto::FLOAT);
  attribute.set_f(value.convertToFloat());
}

void setString(onnx::NodeProto &node, llvm::StringRef name, llvm::StringRef value) {
  onnx::AttributeProto &attribute = *node.add_attribute();
  attribute.set_name(name.str());
  attribute.set_type(onnx::AttributeProto::STRING);
  attribute.set_s(value.str());
}

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

bool isBoolean(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType().isInteger(1);
}

/// ONNX ops that take a tessel op's operands as they are and have no
/// attributes, by the tessel op's name.
const llvm::StringMap<llvm::StringRef> &plainOps() {
  static const llvm::StringMap<llvm::StringRef> ops = {
      {"tessel.add", "Add"},
      {"tessel.sub", "Sub"},
      {"tessel.mul", "Mul"},
      {"tessel.div", "Div"},
      {"tessel.min", "Min"},
      {"tessel.max", "Max"},
      {"tessel.pow", "Pow"},
      {"tessel.where", "Where"},
      {"tessel.relu", "Relu"},
      {"tessel.sigmoid", "Sigmoid"},
      {"tessel.tanh", "Tanh"},
      {"tessel.abs", "Abs"},
      {"tessel.neg", "Neg"},
      {"tessel.exp", "Exp"},
      {"tessel.log", "Log"},
      {"tessel.sqrt", "Sqrt"},
      {"tessel.reciprocal", "Reciprocal"},
      {"tessel.floor", "Floor"},
      {"tessel.ceil", "Ceil"},
      {"tessel.round", "Round"},
      {"tessel.sign", "Sign"},
      {"tessel.erf", "Erf"},
      {"tessel.sin", "Sin"},
      {"tessel.cos", "Cos"},
      {"tessel.tan", "Tan"},
      {"tessel.asin", "Asin"},
      {"tessel.acos", "Acos"},
      {"tessel.atan", "Atan"},
      {"tessel.sinh", "Sinh"},
      {"tessel.cosh", "Cosh"},
      {"tessel.asinh", "Asinh"},
      {"tessel.acosh", "Acosh"},
      {"tessel.atanh", "Atanh"},
      {"tessel.softplus", "Softplus"},
      {"tessel.softsign", "Softsign"},
      {"tessel.hard_swish", "HardSwish"},
      {"tessel.mish", "Mish"},
      {"tessel.matmul", "MatMul"},
      {"tessel.gather_elements", "GatherElements"},
  };
  return ops;
}

class OpExporter {
public:
  explicit OpExporter(OnnxGraphWriter &writer) : writer(writer) {}

  llvm::Error exportOp(Operation *op);
  /// Exports `value` if it is a deferred constant not yet exported.
  llvm::Error ensureDefined(Value value, const std::string &hint);

private:
  llvm::Error exportOperands(Operation *op, ValueRange operands);
  llvm::Error exportConstant(ConstantOp constant, const std::string &hint);
  void exportDequantize(DequantizeOp dequantize, const std::string &hint);
  Value integerBias(Operation *product, Value bias);
  llvm::Error exportProduct(Operation *product, Value bias);
  onnx::NodeProto &exportWindow(llvm::StringRef opType, Operation *op, ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations, bool ceilMode);
  void exportSlice(SliceOp slice);

  OnnxGraphWriter &writer;
};

/// Constants, and the dequantized constants (quantized weights) that
/// graph ops read, are exported when first read, named after their role.
bool isDeferred(Operation *op) {
  if (auto dequantize = dyn_cast<DequantizeOp>(op))
    return dequantize.getInput().getDefiningOp<ConstantOp>() != nullptr;
  return isa<ConstantOp>(op);
}

/// What the tensor read as `op`'s operand `index` is called when it is a
/// constant: the weight and bias of a product after the product's node;
/// "" for the constant's own name.
std::string operandHint(Operation *op, unsigned index) {
  if (!isProduct(op) || index == 0)
    return {};
  return nodeNameOf(op) + (index == 1 ? ".weight" : ".bias");
}

/// The name of the tensor that quantize or dequantize ops derive from
/// `name`: "x" -> "x_quantized" -> "x_dequantized".
std::string derivedName(llvm::StringRef name, llvm::StringRef suffix) {
  name.consume_back("_quantized");
  return (name + suffix).str();
}

llvm::Error OpExporter::exportConstant(ConstantOp constant, const std::string &hint) {
  auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!value)
    return exportError(constant, "holds elements that are not a dense attribute");
  llvm::Expected<std::string> initializer =
      writer.addInitializer(hint.empty() ? nodeNameOf(constant) : hint, value);
  if (!initializer)
    return initializer.takeError();
  writer.bind(constant.getResult(), *initializer);
  return llvm::Error::success();
}

llvm::Error OpExporter::ensureDefined(Value value, const std::string &hint) {
  if (writer.isNamed(value))
    return llvm::Error::success();
  if (auto constant = value.getDefiningOp<ConstantOp>())
    return exportConstant(constant, hint);
  auto dequantize = value.getDefiningOp<DequantizeOp>();
  if (!dequantize || !isDeferred(dequantize))
    return llvm::Error::success();
  if (llvm::Error error =
          ensureDefined(dequantize.getInput(), hint.empty() ? hint : hint + "_quantized"))
    return error;
  exportDequantize(dequantize, hint);
  return llvm::Error::success();
}

void OpExporter::exportDequantize(DequantizeOp dequantize, const std::string &hint) {
  std::string input = writer.nameOf(dequantize.getInput());
  std::string output = writer.nameResult(dequantize.getResult(),
                                         hint.empty() ? derivedName(input, "_dequantized") : hint);
  writer.addQuantizationNode("DequantizeLinear", input, output,
                             getQuantizedType(dequantize.getInput().getType()));
}

/// The bias that a convolution or gemm whose input (per tensor) and weight
/// are dequantized 8-bit tensors reads: the i32 values Tessel's integer
/// kernel adds, dequantized. Null where Tessel would not fuse the product.
Value OpExporter::integerBias(Operation *product, Value bias) {
  auto input = product->getOperand(0).getDefiningOp<DequantizeOp>();
  auto weight = product->getOperand(1).getDefiningOp<DequantizeOp>();
  if (!bias || !input || !weight || bias.getDefiningOp<DequantizeOp>())
    return {};
  quant::QuantizedType inputType = getQuantizedType(input.getInput().getType());
  quant::QuantizedType weightType = getQuantizedType(weight.getInput().getType());
  if (quantizedAxis(inputType) || inputType.getStorageTypeIntegralWidth() != 8 ||
      weightType.getStorageTypeIntegralWidth() != 8)
    return {};
  OpBuilder b(product);
  Value integers =
      quantizedBias(b, product->getLoc(), bias, accumulatorType(inputType, weightType, 0));
  if (!integers)
    return {};
  return DequantizeOp::create(b, product->getLoc(), bias.getType(), integers);
}

llvm::Error OpExporter::exportOperands(Operation *op, ValueRange operands) {
  for (auto [index, operand] : llvm::enumerate(operands))
    if (llvm::Error error = ensureDefined(operand, operandHint(op, index)))
      return error;
  return llvm::Error::success();
}

llvm::Error OpExporter::exportProduct(Operation *product, Value bias) {
  SmallVector<Value> operands(product->getOperands());
  if (Value dequantized = integerBias(product, bias))
    operands.back() = dequantized;
  if (llvm::Error error = exportOperands(product, operands))
    return error;
  onnx::NodeProto *node = nullptr;
  if (auto conv = dyn_cast<ConvOp>(product)) {
    if (conv.getChannelsLast())
      return exportError(conv, "is channels-last, which ONNX's Conv is not");
    node = &writer.addNode("Conv", conv, operands);
    setInts(*node, "strides", conv.getStrides());
    setInts(*node, "pads", conv.getPads());
    setInts(*node, "dilations", conv.getDilations());
    setInt(*node, "group", conv.getGroup());
    return llvm::Error::success();
  }
  auto gemm = cast<GemmOp>(product);
  node = &writer.addNode("Gemm", gemm, operands);
  setFloat(*node, "alpha", gemm.getAlpha());
  setFloat(*node, "beta", gemm.getBeta());
  setInt(*node, "transA", gemm.getTransA());
  setInt(*node, "transB", gemm.getTransB());
  return llvm::Error::success();
}

onnx::NodeProto &OpExporter::exportWindow(llvm::StringRef opType, Operation *op,
                                          ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                                          bool ceilMode) {
  onnx::NodeProto &node = writer.addNode(opType, op, op->getOperands());
  setInts(node, "kernel_shape", kernel);
  setInts(node, "strides", strides);
  setInts(node, "pads", pads);
  setInts(node, "dilations", dilations);
  setInt(node, "ceil_mode", ceilMode);
  return node;
}

/// tessel.slice keeps starts and steps; the ends follow from the result's
/// extent. A negative step that runs past index 0 ends at INT64_MIN, since
/// ONNX reads an end of -1 as the last element.
void OpExporter::exportSlice(SliceOp slice) {
  ArrayRef<int64_t> extents = shapeOf(slice.getResult());
  SmallVector<int64_t> ends, axes;
  for (auto [axis, start, step, extent] :
       llvm::enumerate(slice.getStarts(), slice.getSteps(), extents)) {
    int64_t end = start + step * extent;
    ends.push_back(step < 0 && end < 0 ? std::numeric_limits<int64_t>::min() : end);
    axes.push_back(static_cast<int64_t>(axis));
  }
  std::string hint = nodeNameOf(slice);
  writer.addNode("Slice", slice,
                 {writer.nameOf(slice.getInput()),
                  writer.addInt64Initializer(hint + "_starts", slice.getStarts()),
                  writer.addInt64Initializer(hint + "_ends", ends),
                  writer.addInt64Initializer(hint + "_axes", axes),
                  writer.addInt64Initializer(hint + "_steps", slice.getSteps())});
}

llvm::Error OpExporter::exportOp(Operation *op) {
  bool quantizedOperand = llvm::any_of(op->getOperandTypes(), isQuantized) ||
                          llvm::any_of(op->getResultTypes(), isQuantized);
  if (quantizedOperand && !isa<ConstantOp, QuantizeOp, DequantizeOp, RequantizeOp>(op))
    return exportError(op, "computes on quantized integers; the QDQ export writes float "
                           "ops between QuantizeLinear and DequantizeLinear");
  if (isa<ConvOp, GemmOp>(op))
    return exportProduct(op, op->getNumOperands() == 3 ? op->getOperand(2) : Value());
  if (llvm::Error error = exportOperands(op, op->getOperands()))
    return error;
  auto found = plainOps().find(op->getName().getStringRef());
  if (found != plainOps().end()) {
    writer.addNode(found->second, op, op->getOperands());
    return llvm::Error::success();
  }
  std::string hint = nodeNameOf(op);
  auto withShape = [&](llvm::StringRef opType, Value input, ArrayRef<int64_t> shape) {
    return &writer.addNode(
        opType, op, {writer.nameOf(input), writer.addInt64Initializer(hint + "_shape", shape)});
  };
  return llvm::TypeSwitch<Operation *, llvm::Error>(op)
      .Case([&](QuantizeOp quantize) -> llvm::Error {
        std::string input = writer.nameOf(quantize.getInput());
        writer.addQuantizationNode(
            "QuantizeLinear", input,
            writer.nameResult(quantize.getResult(), derivedName(input, "_quantized")),
            getQuantizedType(quantize.getType()));
        return llvm::Error::success();
      })
      .Case([&](DequantizeOp dequantize) -> llvm::Error {
        exportDequantize(dequantize, "");
        return llvm::Error::success();
      })
      .Case([&](RequantizeOp requantize) -> llvm::Error {
        std::string input = writer.nameOf(requantize.getInput());
        std::string real = writer.uniqueTensorName(derivedName(input, "_dequantized"));
        writer.addQuantizationNode("DequantizeLinear", input, real,
                                   getQuantizedType(requantize.getInput().getType()));
        writer.addQuantizationNode(
            "QuantizeLinear", real,
            writer.nameResult(requantize.getResult(), derivedName(input, "_requantized")),
            getQuantizedType(requantize.getType()));
        return llvm::Error::success();
      })
      .Case([&](ConvOp conv) -> llvm::Error { return exportProduct(conv, conv.getBias()); })
      .Case([&](GemmOp gemm) -> llvm::Error { return exportProduct(gemm, gemm.getC()); })
      .Case([&](CompareOp compare) -> llvm::Error {
        static const llvm::StringMap<llvm::StringRef> predicates = {{"eq", "Equal"},
                                                                    {"lt", "Less"},
                                                                    {"le", "LessOrEqual"},
                                                                    {"gt", "Greater"},
                                                                    {"ge", "GreaterOrEqual"}};
        auto predicate = predicates.find(compare.getPredicate());
        if (predicate == predicates.end())
          return exportError(compare, "has an unknown predicate");
        writer.addNode(predicate->second, compare, compare->getOperands());
        return llvm::Error::success();
      })
      .Case<AndOp, OrOp, XorOp>([&](auto logical) -> llvm::Error {
        llvm::StringRef name = logical->getName().stripDialect();
        std::string opType = (name == "and" ? "And" : name == "or" ? "Or" : "Xor");
        if (!isBoolean(logical.getLhs()))
          opType = "Bitwise" + opType;
        writer.addNode(opType, logical, logical->getOperands());
        return llvm::Error::success();
      })
      .Case([&](NotOp notOp) -> llvm::Error {
        writer.addNode(isBoolean(notOp.getInput()) ? "Not" : "BitwiseNot", notOp,
                       notOp->getOperands());
        return llvm::Error::success();
      })
      .Case([&](ModOp mod) -> llvm::Error {
        setInt(writer.addNode("Mod", mod, mod->getOperands()), "fmod", mod.getFmod());
        return llvm::Error::success();
      })
      .Case([&](CastOp cast) -> llvm::Error {
        Type element = cast.getType().getElementType();
        std::optional<int32_t> dataType = onnx_export::onnxDataType(element);
        if (!dataType)
          return exportError(cast, "converts to a type ONNX tensors cannot hold");
        setInt(writer.addNode("Cast", cast, cast->getOperands()), "to", *dataType);
        return llvm::Error::success();
      })
      .Case<LeakyReluOp, EluOp, CeluOp, ThresholdedReluOp>([&](auto activation) -> llvm::Error {
        static const llvm::StringMap<llvm::StringRef> names = {
            {"tessel.leaky_relu", "LeakyRelu"},
            {"tessel.elu", "Elu"},
            {"tessel.celu", "Celu"},
            {"tessel.thresholded_relu", "ThresholdedRelu"}};
        setFloat(writer.addNode(names.lookup(activation->getName().getStringRef()), activation,
                                activation->getOperands()),
                 "alpha", activation.getAlpha());
        return llvm::Error::success();
      })
      .Case([&](SeluOp activation) -> llvm::Error {
        onnx::NodeProto &node = writer.addNode("Selu", activation, activation->getOperands());
        setFloat(node, "alpha", activation.getAlpha());
        setFloat(node, "gamma", activation.getGamma());
        return llvm::Error::success();
      })
      .Case([&](HardSigmoidOp activation) -> llvm::Error {
        onnx::NodeProto &node =
            writer.addNode("HardSigmoid", activation, activation->getOperands());
        setFloat(node, "alpha", activation.getAlpha());
        setFloat(node, "beta", activation.getBeta());
        return llvm::Error::success();
      })
      .Case([&](GeluOp gelu) -> llvm::Error {
        setString(writer.addNode("Gelu", gelu, gelu->getOperands()), "approximate",
                  gelu.getTanh() ? "tanh" : "none");
        return llvm::Error::success();
      })
      .Case([&](ClipOp clip) -> llvm::Error {
        auto optional = [&](Value bound) { return bound ? writer.nameOf(bound) : std::string(); };
        writer.addNode(
            "Clip", clip,
            {writer.nameOf(clip.getInput()), optional(clip.getMin()), optional(clip.getMax())});
        return llvm::Error::success();
      })
      .Case([&](MaxPoolOp pool) -> llvm::Error {
        if (pool.getChannelsLast())
          return exportError(pool, "is channels-last, which ONNX's MaxPool is not");
        exportWindow("MaxPool", pool, pool.getKernelShape(), pool.getStrides(), pool.getPads(),
                     pool.getDilations(), pool.getCeilMode());
        return llvm::Error::success();
      })
      .Case([&](AveragePoolOp pool) -> llvm::Error {
        if (pool.getChannelsLast())
          return exportError(pool, "is channels-last, which ONNX's AveragePool is not");
        setInt(exportWindow("AveragePool", pool, pool.getKernelShape(), pool.getStrides(),
                            pool.getPads(), pool.getDilations(), pool.getCeilMode()),
               "count_include_pad", pool.getCountIncludePad());
        return llvm::Error::success();
      })
      .Case([&](GlobalAveragePoolOp pool) -> llvm::Error {
        if (pool.getChannelsLast())
          return exportError(pool, "is channels-last, which ONNX's GlobalAveragePool is not");
        writer.addNode("GlobalAveragePool", pool, pool->getOperands());
        return llvm::Error::success();
      })
      .Case([&](BatchNormOp norm) -> llvm::Error {
        setFloat(writer.addNode("BatchNormalization", norm, norm->getOperands()), "epsilon",
                 norm.getEpsilon());
        return llvm::Error::success();
      })
      .Case([&](LayerNormOp norm) -> llvm::Error {
        onnx::NodeProto &node = writer.addNode("LayerNormalization", norm, norm->getOperands());
        setInt(node, "axis", -1);
        setFloat(node, "epsilon", norm.getEpsilon());
        return llvm::Error::success();
      })
      .Case([&](SoftmaxOp softmax) -> llvm::Error {
        setInt(writer.addNode("Softmax", softmax, softmax->getOperands()), "axis",
               softmax.getAxis());
        return llvm::Error::success();
      })
      .Case([&](ReduceOp reduce) -> llvm::Error {
        // No axes is the identity in tessel, every axis in ONNX.
        if (reduce.getAxes().empty()) {
          writer.addNode("Identity", reduce, reduce->getOperands());
          return llvm::Error::success();
        }
        static const llvm::StringMap<llvm::StringRef> kinds = {{"sum", "ReduceSum"},
                                                               {"prod", "ReduceProd"},
                                                               {"max", "ReduceMax"},
                                                               {"min", "ReduceMin"}};
        auto kind = kinds.find(reduce.getKind());
        if (kind == kinds.end())
          return exportError(reduce, "has an unknown kind");
        onnx::NodeProto &node =
            writer.addNode(kind->second, reduce,
                           {writer.nameOf(reduce.getInput()),
                            writer.addInt64Initializer(hint + "_axes", reduce.getAxes())});
        setInt(node, "keepdims", 0);
        return llvm::Error::success();
      })
      .Case([&](ArgReduceOp reduce) -> llvm::Error {
        onnx::NodeProto &node = writer.addNode(reduce.getKind() == "max" ? "ArgMax" : "ArgMin",
                                               reduce, reduce->getOperands());
        setInt(node, "axis", reduce.getAxis());
        setInt(node, "keepdims", 0);
        setInt(node, "select_last_index", reduce.getSelectLast());
        return llvm::Error::success();
      })
      .Case([&](FlattenOp flatten) -> llvm::Error {
        setInt(writer.addNode("Flatten", flatten, flatten->getOperands()), "axis",
               flatten.getAxis());
        return llvm::Error::success();
      })
      .Case([&](ReshapeOp reshape) -> llvm::Error {
        ArrayRef<int64_t> shape = shapeOf(reshape.getResult());
        // Without allowzero, ONNX copies a 0 in the shape from the input.
        onnx::NodeProto *node = withShape("Reshape", reshape.getInput(), shape);
        if (llvm::is_contained(shape, 0))
          setInt(*node, "allowzero", 1);
        return llvm::Error::success();
      })
      .Case([&](ExpandOp expand) -> llvm::Error {
        withShape("Expand", expand.getInput(), shapeOf(expand.getResult()));
        return llvm::Error::success();
      })
      .Case([&](TransposeOp transpose) -> llvm::Error {
        setInts(writer.addNode("Transpose", transpose, transpose->getOperands()), "perm",
                transpose.getPerm());
        return llvm::Error::success();
      })
      .Case([&](SliceOp slice) -> llvm::Error {
        exportSlice(slice);
        return llvm::Error::success();
      })
      .Case([&](GatherOp gather) -> llvm::Error {
        setInt(writer.addNode("Gather", gather, gather->getOperands()), "axis", gather.getAxis());
        return llvm::Error::success();
      })
      .Case([&](PadOp pad) -> llvm::Error {
        onnx::NodeProto &node =
            writer.addNode("Pad", pad,
                           {writer.nameOf(pad.getInput()),
                            writer.addInt64Initializer(hint + "_pads", pad.getPads()),
                            writer.nameOf(pad.getValue())});
        setString(node, "mode", pad.getMode());
        return llvm::Error::success();
      })
      .Case([&](ScatterElementsOp scatter) -> llvm::Error {
        onnx::NodeProto &node = writer.addNode("ScatterElements", scatter, scatter->getOperands());
        setInt(node, "axis", scatter.getAxis());
        setString(node, "reduction", scatter.getReduction());
        return llvm::Error::success();
      })
      .Case([&](ScatterNDOp scatter) -> llvm::Error {
        setString(writer.addNode("ScatterND", scatter, scatter->getOperands()), "reduction",
                  scatter.getReduction());
        return llvm::Error::success();
      })
      .Case([&](EinsumOp einsum) -> llvm::Error {
        setString(writer.addNode("Einsum", einsum, einsum->getOperands()), "equation",
                  einsum.getEquation());
        return llvm::Error::success();
      })
      .Case([&](ConcatOp concat) -> llvm::Error {
        setInt(writer.addNode("Concat", concat, concat->getOperands()), "axis", concat.getAxis());
        return llvm::Error::success();
      })
      .Default([&](Operation *other) -> llvm::Error {
        return exportError(other, "has no ONNX form to export");
      });
}

void setValueInfo(onnx::ValueInfoProto &info, const std::string &name, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  info.set_name(name);
  onnx::TypeProto::Tensor &tensorType = *info.mutable_type()->mutable_tensor_type();
  tensorType.set_elem_type(onnx_export::onnxDataType(tensor.getElementType()).value_or(0));
  onnx::TensorShapeProto &shape = *tensorType.mutable_shape();
  for (int64_t dim : tensor.getShape())
    shape.add_dim()->set_dim_value(dim);
}

} // namespace

llvm::Error exportOnnxModel(ModuleOp module, const OnnxExportInfo &info, llvm::raw_ostream &out) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || !main.getBody().hasOneBlock())
    return exportError("the module has no main function of one block to export");
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("tessel");
  model.set_producer_version(info.producerVersion);
  model.set_doc_string(info.description);
  onnx::OperatorSetIdProto &opset = *model.add_opset_import();
  opset.set_domain("");
  opset.set_version(kOpsetVersion);
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name("main");
  OnnxGraphWriter writer(graph);

  auto valueName = [](StringAttr name, const char *kind, unsigned index) {
    return name ? name.str() : kind + std::to_string(index);
  };
  for (BlockArgument argument : main.getArguments()) {
    unsigned index = argument.getArgNumber();
    if (isQuantized(argument.getType()) ||
        !onnx_export::onnxDataType(cast<RankedTensorType>(argument.getType()).getElementType()))
      return exportError("input " + llvm::Twine(index) + " has a type ONNX cannot hold");
    std::string name =
        writer.define(argument, valueName(main.getArgAttrOfType<StringAttr>(index, kValueNameAttr),
                                          "input_", index));
    setValueInfo(*graph.add_input(), name, argument.getType());
  }
  // A result that only the return reads takes the output's name (a
  // constant one is an initializer of its own).
  Operation *terminator = main.front().getTerminator();
  SmallVector<std::string> outputNames;
  for (auto [index, result] : llvm::enumerate(terminator->getOperands())) {
    unsigned i = static_cast<unsigned>(index);
    outputNames.push_back(
        valueName(main.getResultAttrOfType<StringAttr>(i, kValueNameAttr), "output_", i));
    if (isa<OpResult>(result) && result.hasOneUse() && !isDeferred(result.getDefiningOp()))
      writer.define(result, outputNames.back());
  }

  OpExporter exporter(writer);
  // The exporter adds ops (quantized biases) as it goes: iterate over a
  // snapshot.
  // Index checks are Tessel's own; ONNX runtimes check indices themselves.
  SmallVector<Operation *> ops;
  for (Operation &op : main.front().without_terminator())
    if (!isa<CountOutOfRangeOp, CheckZeroOp>(op))
      ops.push_back(&op);
  for (Operation *op : ops)
    if (!isDeferred(op))
      if (llvm::Error error = exporter.exportOp(op))
        return error;

  for (auto [index, result] : llvm::enumerate(terminator->getOperands())) {
    const std::string &name = outputNames[index];
    if (isQuantized(result.getType()))
      return exportError("output " + llvm::Twine(index) +
                         " is quantized; the export's outputs are float");
    if (llvm::Error error = exporter.ensureDefined(result, ""))
      return error;
    if (writer.nameOf(result) != name)
      writer.addNode("Identity", name + "_Identity", {writer.nameOf(result)}, {name});
    setValueInfo(*graph.add_output(), name, result.getType());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return exportError("the ONNX model is too large to serialize (protobuf's 2 GB limit)");
  out << bytes;
  return llvm::Error::success();
}

} // namespace tessel
