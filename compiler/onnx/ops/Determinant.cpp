//===- Determinant.cpp - Det ------------------------------------------------===//
//
// The determinant of each trailing M x M matrix by the Leibniz formula: the
// signed sum, over the M! permutations p, of the products of the entries
// (i, p(i)). Each entry is a slice of the batch, so the whole sum is
// elementwise ops over the batch shape, with no pivoting that would depend
// on the data. M! grows fast: matrices up to 5 x 5 (120 products) are
// computed so; larger ones are refused.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

constexpr int64_t kMaxOrder = 5;

/// Whether `permutation` has an odd number of inversions.
bool isOdd(ArrayRef<int64_t> permutation) {
  bool odd = false;
  for (size_t i = 0; i < permutation.size(); ++i)
    for (size_t j = i + 1; j < permutation.size(); ++j)
      odd ^= permutation[i] > permutation[j];
  return odd;
}

LogicalResult importDet(NodeImporter &node) {
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape() || type.getRank() < 2)
    return node.unsupported("the input must be a static tensor of rank 2 or more");
  int64_t rank = type.getRank(), order = type.getShape().back();
  if (type.getDimSize(rank - 2) != order)
    return node.unsupported("the input's matrices are not square");
  if (order > kMaxOrder)
    return node.unsupported("matrices larger than " + Twine(kMaxOrder) + " x " +
                            Twine(kMaxOrder) + " are not supported");
  OpBuilder &b = node.builder();
  Location loc = node.loc();
  ArrayRef<int64_t> batch = type.getShape().drop_back(2);

  // entry(i, j): the batch of the matrices' entries in row i, column j.
  auto entry = [&](int64_t row, int64_t column) -> Value {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1), shape(type.getShape());
    starts[rank - 2] = row;
    starts[rank - 1] = column;
    shape[rank - 2] = shape[rank - 1] = 1;
    Value slice = SliceOp::create(b, loc, type.clone(shape), node.input(0),
                                  b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(steps));
    return ReshapeOp::create(b, loc, type.clone(batch), slice);
  };
  SmallVector<Value> entries;
  for (int64_t row = 0; row < order; ++row)
    for (int64_t column = 0; column < order; ++column)
      entries.push_back(entry(row, column));

  SmallVector<int64_t> permutation(order);
  std::iota(permutation.begin(), permutation.end(), 0);
  Value determinant;
  do {
    Value product = entries[permutation[0]];
    for (int64_t row = 1; row < order; ++row)
      product = node.createInferred<MulOp>(product, entries[row * order + permutation[row]]);
    if (!determinant)
      determinant = isOdd(permutation) ? node.createInferred<NegOp>(product) : product;
    else if (isOdd(permutation))
      determinant = node.createInferred<SubOp>(determinant, product);
    else
      determinant = node.createInferred<AddOp>(determinant, product);
  } while (std::next_permutation(permutation.begin(), permutation.end()));
  return node.setInferredOutput(0, determinant);
}

} // namespace

void registerDeterminantHandlers(OpRegistry &registry) { registry.on("Det", 11, importDet); }

} // namespace tessel::onnx_import
