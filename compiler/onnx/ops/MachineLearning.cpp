//===- MachineLearning.cpp - ai.onnx.ml operators -------------------------===//
//
// Operators of the ai.onnx.ml operator set (classical machine learning:
// scikit-learn pipelines converted to ONNX), as ONNX's reference computes
// them: Binarizer, ArrayFeatureExtractor, Scaler, Normalizer, Imputer,
// LinearRegressor and LinearClassifier. The tree ensembles are
// TreeEnsembles.cpp's.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <cmath>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// Binarizer: 1 where X is above `threshold`, else 0, in X's type.
LogicalResult importBinarizer(NodeImporter &node) {
  Formula f(node);
  Value x = node.input(0);
  Type type = node.inputType(0).getElementType();
  Value above = f.compare("gt", x, f.scalar(x, node.floatAttr("threshold", 0.0f)));
  Value result = f.convert(above, type);
  if (!result)
    return failure();
  node.setOutput(0, result);
  return success();
}

/// ArrayFeatureExtractor: X's entries along its last axis at the indices
/// Y holds (flattened), the other axes kept; a 1-D X gives one row.
LogicalResult importArrayFeatureExtractor(NodeImporter &node) {
  RankedTensorType type = node.inputType(0), indicesType = node.inputType(1);
  if (!type.hasStaticShape() || !indicesType.hasStaticShape() || type.getRank() < 1)
    return node.unsupported("X and Y need static shapes");
  Formula f(node);
  int64_t count = indicesType.getNumElements();
  Value indices = f.reshape(node.input(1), {count});
  OpBuilder &b = node.builder();
  Value gathered = node.createInferred<GatherOp>(node.input(0), indices,
                                                 b.getI64IntegerAttr(type.getRank() - 1));
  if (!gathered)
    return failure();
  SmallVector<int64_t> shape(type.getShape().drop_back());
  if (shape.empty())
    shape.push_back(1);
  shape.push_back(count);
  node.setOutput(0, f.reshape(gathered, shape));
  return success();
}

/// A float list attribute as a constant of `length` entries (one given
/// entry repeats) along the last axis of a [1, length] row; null after
/// refusing a list of another length.
Value rowOf(NodeImporter &node, StringRef name, int64_t length, Type type,
            std::vector<float> values) {
  if (values.size() == 1)
    values.assign(length, values.front());
  if (int64_t(values.size()) != length) {
    (void)node.unsupported(name + " must give 1 or " + Twine(length) + " values");
    return Value();
  }
  return node.floatConstant(type, std::vector<double>(values.begin(), values.end()),
                            {1, length});
}

/// The [N, C] matrix an ai.onnx.ml op takes: X itself, or a vector as one
/// row; null after refusing another shape.
Value asMatrix(NodeImporter &node, Formula &f) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape() || type.getRank() < 1 || type.getRank() > 2) {
    (void)node.unsupported("X must be a vector or a matrix of static shape");
    return Value();
  }
  if (type.getRank() == 1)
    return f.reshape(node.input(0), {1, type.getDimSize(0)});
  return node.input(0);
}

/// Scaler: (X - offset) * scale, per feature, as floats.
LogicalResult importScaler(NodeImporter &node) {
  Formula f(node);
  Value x = asMatrix(node, f);
  if (!x)
    return failure();
  int64_t features = cast<RankedTensorType>(x.getType()).getDimSize(1);
  Type f32 = node.builder().getF32Type();
  Value offset = rowOf(node, "offset", features, f32,
                       node.floatsAttr("offset").value_or(std::vector<float>{0.0f}));
  Value scale = rowOf(node, "scale", features, f32,
                      node.floatsAttr("scale").value_or(std::vector<float>{1.0f}));
  if (!offset || !scale)
    return failure();
  Value result = f.mul(f.sub(f.convert(x, f32), offset), scale);
  if (!result)
    return failure();
  node.setOutput(0, f.reshape(result, node.inputType(0).getShape()));
  return success();
}

/// Normalizer: each row divided by its largest magnitude (MAX), the sum of
/// its magnitudes (L1) or its Euclidean length (L2), at least 1e-30.
LogicalResult importNormalizer(NodeImporter &node) {
  Formula f(node);
  Value x = asMatrix(node, f);
  if (!x)
    return failure();
  std::string norm = node.stringAttr("norm").value_or("");
  OpBuilder &b = node.builder();
  x = f.convert(x, b.getF32Type());
  auto reduce = [&](StringRef kind, Value value) {
    int64_t rows = cast<RankedTensorType>(value.getType()).getDimSize(0);
    return f.reshape(
        node.createInferred<ReduceOp>(b.getStringAttr(kind), value, b.getDenseI64ArrayAttr({1})),
        {rows, 1});
  };
  Value length;
  if (norm == "MAX")
    length = reduce("max", f.abs(x));
  else if (norm == "L1")
    length = reduce("sum", f.abs(x));
  else if (norm == "L2")
    length = f.sqrt(reduce("sum", f.mul(x, x)));
  else
    return node.unsupported("norm must be MAX, L1 or L2");
  Value result = f.div(x, f.max(length, f.scalar(length, 1e-30)));
  if (!result)
    return failure();
  node.setOutput(0, f.reshape(result, node.inputType(0).getShape()));
  return success();
}

/// X (as f32, or f64) times the coefficients, one row of them per output
/// column, plus the intercepts: [N, columns]; null after refusing them.
/// The operators give their scores as f32.
Value linearScores(NodeImporter &node, Formula &f, Value x, int64_t *columns) {
  Type type = cast<RankedTensorType>(x.getType()).getElementType();
  type = type.isF64() ? type : node.builder().getF32Type();
  x = f.convert(x, type);
  int64_t features = cast<RankedTensorType>(x.getType()).getDimSize(1);
  std::vector<float> coefficients = node.floatsAttr("coefficients").value_or(std::vector<float>());
  if (coefficients.empty() || coefficients.size() % features != 0) {
    (void)node.unsupported("coefficients must give a multiple of " + Twine(features) + " values");
    return Value();
  }
  *columns = coefficients.size() / features;
  // [features, columns]: coefficient (c, j) at row j, column c.
  std::vector<double> transposed(coefficients.size());
  for (int64_t c = 0; c < *columns; ++c)
    for (int64_t j = 0; j < features; ++j)
      transposed[j * *columns + c] = coefficients[c * features + j];
  Value weights = node.floatConstant(type, transposed, {features, *columns});
  Value scores = matrixProduct(node, x, weights);
  if (std::optional<std::vector<float>> intercepts = node.floatsAttr("intercepts")) {
    Value row = rowOf(node, "intercepts", *columns, type, *intercepts);
    if (!row)
      return Value();
    scores = f.add(scores, row);
  }
  return scores;
}

/// LinearClassifier with integer labels: the linear scores, one column
/// per class (a single column for two classes becomes -s and s), then
/// post-transformed; the label is the class of the highest score, or for a
/// single column the first label where the score reaches 0 (0.5 after a
/// transform) and 0 elsewhere, as ONNX's reference does.
LogicalResult importLinearClassifier(NodeImporter &node) {
  Formula f(node);
  Value x = asMatrix(node, f);
  if (!x)
    return failure();
  std::optional<std::vector<int64_t>> labels = node.intsAttr("classlabels_ints");
  if (!labels || labels->empty())
    return node.unsupported(node.hasAttr("classlabels_strings")
                                ? "string class labels (classlabels_strings) are not supported"
                                : "classlabels_ints must name the classes");
  node.ignoreAttr("multi_class"); // the reference ignores it too
  std::string transform = node.stringAttr("post_transform").value_or("NONE");
  if (transform != "NONE" && transform != "LOGISTIC" && transform != "SOFTMAX")
    return node.unsupported("post_transform '" + transform + "' is not supported (NONE, " +
                            "LOGISTIC and SOFTMAX are)");
  int64_t columns = 0;
  Value scores = linearScores(node, f, x, &columns);
  if (!scores)
    return failure();
  OpBuilder &b = node.builder();
  int64_t samples = cast<RankedTensorType>(x.getType()).getDimSize(0);
  auto scoreType = cast<RankedTensorType>(scores.getType());
  if (columns == 1 && labels->size() == 2) {
    scores = ConcatOp::create(b, node.loc(), scoreType.clone({samples, 2}),
                              ValueRange{f.sub(f.scalar(scores, 0.0), scores), scores},
                              b.getI64IntegerAttr(1));
    columns = 2;
  }
  if (transform == "LOGISTIC")
    scores = SigmoidOp::create(b, node.loc(), scores.getType(), scores);
  else if (transform == "SOFTMAX")
    scores = SoftmaxOp::create(b, node.loc(), scores.getType(), scores, b.getI64IntegerAttr(1));
  Value label;
  if (columns > 1) {
    if (int64_t(labels->size()) != columns)
      return node.unsupported("classlabels_ints must name the " + Twine(columns) + " classes");
    Value best = node.createInferred<ArgReduceOp>(b.getStringAttr("max"), scores,
                                                  b.getI64IntegerAttr(1), b.getBoolAttr(false));
    label = node.createInferred<GatherOp>(node.int64Constant(*labels, {columns}), best,
                                          b.getI64IntegerAttr(0));
  } else {
    Value reaches = f.compare("ge", f.reshape(scores, {samples}),
                              f.scalar(scores, transform == "NONE" ? 0.0 : 0.5));
    label =
        f.select(reaches, node.int64Constant({labels->front()}, {}), node.int64Constant({0}, {}));
  }
  if (!label || !scores)
    return failure();
  node.setOutput(0, label);
  node.setOutput(1, f.convert(scores, b.getF32Type()));
  return success();
}

/// LinearRegressor: X times the coefficients (one row of them per target)
/// plus the intercepts.
LogicalResult importLinearRegressor(NodeImporter &node) {
  Formula f(node);
  Value x = asMatrix(node, f);
  if (!x)
    return failure();
  if (node.stringAttr("post_transform").value_or("NONE") != "NONE")
    return node.unsupported("only post_transform NONE is supported");
  int64_t targets = 0;
  Value scores = linearScores(node, f, x, &targets);
  if (!scores)
    return failure();
  if (targets != node.intAttr("targets", 1))
    return node.unsupported("coefficients must give one row per target");
  node.setOutput(0, f.convert(scores, node.builder().getF32Type()));
  return success();
}

/// Imputer: the entries equal to replaced_value_float (0 by default; NaN
/// names the missing ones) become the feature's imputed value.
LogicalResult importImputer(NodeImporter &node) {
  Formula f(node);
  Value x = asMatrix(node, f);
  if (!x)
    return failure();
  Type type = node.inputType(0).getElementType();
  std::optional<std::vector<float>> values = node.floatsAttr("imputed_value_floats");
  if (!isa<FloatType>(type) || !values || values->empty())
    return node.unsupported("only float inputs with imputed_value_floats are supported");
  node.ignoreAttr("imputed_value_int64s");
  node.ignoreAttr("replaced_value_int64");
  float replaced = node.floatAttr("replaced_value_float", 0.0f);
  int64_t features = cast<RankedTensorType>(x.getType()).getDimSize(1);
  Value imputed = rowOf(node, "imputed_value_floats", features, type, *values);
  if (!imputed)
    return failure();
  Value replace =
      std::isnan(replaced) ? f.isNaN(x) : f.compare("eq", x, f.scalar(x, replaced));
  Value result = f.select(replace, imputed, x);
  if (!result)
    return failure();
  node.setOutput(0, f.reshape(result, node.inputType(0).getShape()));
  return success();
}

} // namespace

void registerMachineLearningHandlers(OpRegistry &registry) {
  registry.on("ai.onnx.ml", "ArrayFeatureExtractor", 1, importArrayFeatureExtractor);
  registry.on("ai.onnx.ml", "Binarizer", 1, importBinarizer);
  registry.on("ai.onnx.ml", "Imputer", 1, importImputer);
  registry.on("ai.onnx.ml", "LinearClassifier", 1, importLinearClassifier);
  registry.on("ai.onnx.ml", "LinearRegressor", 1, importLinearRegressor);
  registry.on("ai.onnx.ml", "Normalizer", 1, importNormalizer);
  registry.on("ai.onnx.ml", "Scaler", 1, importScaler);
}

} // namespace tessel::onnx_import
