//===- MachineLearning.cpp - ai.onnx.ml operators -------------------------===//
//
// Operators of the ai.onnx.ml operator set (classical machine learning:
// scikit-learn pipelines converted to ONNX), as ONNX's reference computes
// them: Binarizer and ArrayFeatureExtractor. The tree ensembles are
// TreeEnsembles.cpp's.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

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

} // namespace

void registerMachineLearningHandlers(OpRegistry &registry) {
  registry.on("ai.onnx.ml", "ArrayFeatureExtractor", 1, importArrayFeatureExtractor);
  registry.on("ai.onnx.ml", "Binarizer", 1, importBinarizer);
}

} // namespace tessel::onnx_import
