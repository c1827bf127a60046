//===- Bf16Products.cpp - Products computed in bf16 -----------------------===//
//
// A product computed in bf16 reads a tessel.cast of its input to bf16 and
// a bf16 constant of its weight (rounded half to even at compile time), and
// keeps its f32 result and bias: the lowering multiplies the widened bf16
// operands and sums in f32, which targets map onto bf16 dot products.
//
//===----------------------------------------------------------------------===//

#include "passes/Bf16Products.h"
#include "dialects/tessel/TesselDialect.h"
#include "passes/Passes.h"
#include "passes/QuantizedGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"

#include <cstring>

namespace tessel {
#define GEN_PASS_DEF_TESSELBF16PRODUCTSPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

bool isStaticF32(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getElementType().isF32();
}

/// `value` rounded to the nearest bf16, ties to even (a NaN stays a NaN).
uint16_t roundToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// The bf16 constant of f32 `weight`, transposed from [N, K] to [K, N] with
/// `transpose` (a gemm's B).
Value bf16Constant(OpBuilder &b, Location loc, DenseElementsAttr weight, bool transpose) {
  auto type = cast<RankedTensorType>(weight.getType());
  SmallVector<int64_t> shape(type.getShape());
  SmallVector<uint16_t> rounded;
  rounded.reserve(type.getNumElements());
  for (float value : weight.getValues<float>())
    rounded.push_back(roundToBf16(value));
  if (transpose) {
    int64_t rows = shape[0], columns = shape[1];
    SmallVector<uint16_t> transposed(rounded.size());
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t column = 0; column < columns; ++column)
        transposed[column * rows + row] = rounded[row * columns + column];
    rounded = std::move(transposed);
    std::swap(shape[0], shape[1]);
  }
  auto bf16Type = RankedTensorType::get(shape, b.getBF16Type());
  ArrayRef<char> bytes(reinterpret_cast<const char *>(rounded.data()),
                       rounded.size() * sizeof(uint16_t));
  return ConstantOp::create(b, loc, DenseElementsAttr::getFromRawBuffer(bf16Type, bytes));
}

/// The bf16 weights made so far, by f32 constant and transposition: layers
/// that share a weight share its bf16 form.
using Bf16Weights = llvm::DenseMap<std::pair<Value, unsigned>, Value>;

/// Rewrites product `op` (isBf16Product) to compute in bf16.
void computeInBf16(Operation *op, Bf16Weights &weights) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value input = op->getOperand(0);
  auto inputType = cast<RankedTensorType>(input.getType());
  op->setOperand(0, CastOp::create(b, loc, inputType.clone(b.getBF16Type()), input,
                                   /*saturate=*/false));
  Value original = op->getOperand(1);
  auto gemm = dyn_cast<GemmOp>(op);
  bool transpose = gemm && gemm.getTransB();
  Value &rounded = weights[{original, transpose}];
  if (!rounded) {
    DenseElementsAttr weight;
    matchPattern(original, m_Constant(&weight));
    // Beside the f32 constant, so that it dominates every reader.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(original);
    rounded = bf16Constant(b, original.getLoc(), weight, transpose);
  }
  op->setOperand(1, rounded);
  if (transpose)
    gemm.setTransB(false);
  op->setAttr(kPrecisionAttr, b.getStringAttr(kBf16Precision));
}

struct TesselBf16ProductsPass : impl::TesselBf16ProductsPassBase<TesselBf16ProductsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      bool requested = all ? !op->hasAttr(kPrecisionAttr) : isMarkedBf16(op);
      if (requested && isBf16Product(op))
        products.push_back(op);
    });
    Bf16Weights weights;
    for (Operation *op : products)
      computeInBf16(op, weights);
    // No canonicalization follows before kernels form, and the artifact
    // keeps every constant the entry function holds.
    for (auto &entry : weights)
      if (Operation *original = entry.first.first.getDefiningOp();
          original && original->use_empty())
        original->erase();
  }
};

} // namespace

bool isMarkedBf16(Operation *op) {
  auto precision = op->getAttrOfType<StringAttr>(kPrecisionAttr);
  return precision && precision.getValue() == kBf16Precision;
}

bool isBf16Product(Operation *op) {
  if (!isProduct(op) || op->getNumResults() != 1)
    return false;
  if (auto gemm = dyn_cast<GemmOp>(op))
    if (gemm.getTransA())
      return false;
  if (auto matmul = dyn_cast<MatMulOp>(op))
    if (matmul.getRhs().getType().getRank() != 2)
      return false;
  if (auto conv = dyn_cast<ConvOp>(op))
    if (conv.getGroup() != 1)
      return false;
  DenseElementsAttr weight;
  return isStaticF32(op->getOperand(0)) && isStaticF32(op->getOperand(1)) &&
         isStaticF32(op->getResult(0)) && matchPattern(op->getOperand(1), m_Constant(&weight));
}

} // namespace tessel
