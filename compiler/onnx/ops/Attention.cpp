//===- Attention.cpp - ONNX Attention, RotaryEmbedding, FlexAttention -----===//
//
// Attention: softmax(softcap(Q K^T * scale) + bias) V over [batch, heads,
// sequence, head size], with 3-D inputs split into heads, past keys and
// values prepended, grouped-query heads repeated, and the mask, causal mask
// and key padding folded into one additive bias. The steps follow ONNX's
// reference implementation, so the optional outputs match it too.
//
// FlexAttention (ai.onnx.preview): the same product and softmax, the scores
// and probabilities passed through the node's score_mod and prob_mod graphs.
//
// RotaryEmbedding: each pair (x1, x2) of a head's first rotary dimensions
// (its two halves, or its even and odd entries when interleaved) turns by
// its position's angle, (x1 cos - x2 sin, x1 sin + x2 cos), the cosines and
// sines gathered from the caches by position id.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

class AttentionBuilder {
public:
  explicit AttentionBuilder(NodeImporter &node)
      : node(node), b(node.builder()), loc(node.loc()) {}

  RankedTensorType typeOf(Value value) { return cast<RankedTensorType>(value.getType()); }
  Value reshape(Value value, ArrayRef<int64_t> shape) {
    return ReshapeOp::create(b, loc, typeOf(value).clone(shape), value);
  }
  Value transpose(Value value, ArrayRef<int64_t> perm) {
    return node.createInferred<TransposeOp>(value, b.getDenseI64ArrayAttr(perm));
  }
  Value scalar(double value) { return node.splatConstant(elementType, value); }

  /// [B, S, heads * size] -> [B, heads, S, size].
  Value splitHeads(Value value, int64_t heads) {
    RankedTensorType type = typeOf(value);
    int64_t size = type.getDimSize(2) / heads;
    return transpose(reshape(value, {type.getDimSize(0), type.getDimSize(1), heads, size}),
                     {0, 2, 1, 3});
  }

  /// Repeats each of the heads `times` in place: [h0, h0, h1, h1, ...].
  Value repeatHeads(Value value, int64_t times) {
    RankedTensorType type = typeOf(value);
    ArrayRef<int64_t> s = type.getShape();
    Value spread = reshape(value, {s[0], s[1], 1, s[2], s[3]});
    Value copies = ExpandOp::create(b, loc, type.clone({s[0], s[1], times, s[2], s[3]}),
                                    spread);
    return reshape(copies, {s[0], s[1] * times, s[2], s[3]});
  }

  /// K and V with each of their heads repeated up to Q's head count
  /// (grouped-query attention); failure, recorded, when they have unequal
  /// head counts or Q's is no multiple of theirs.
  LogicalResult repeatKeyValueHeads(Value q, Value &k, Value &v) {
    int64_t queryHeads = typeOf(q).getDimSize(1), keyHeads = typeOf(k).getDimSize(1);
    if (typeOf(v).getDimSize(1) != keyHeads)
      return node.unsupported("K and V must have as many heads");
    if (queryHeads == keyHeads)
      return success();
    if (queryHeads % keyHeads != 0)
      return node.unsupported("query heads must be a multiple of key/value heads");
    k = repeatHeads(k, queryHeads / keyHeads);
    v = repeatHeads(v, queryHeads / keyHeads);
    return success();
  }

  /// The node's `scale`, or 1 / sqrt(head size) of `q`.
  double scaleOf(Value q) {
    if (std::optional<float> given = node.floatAttr("scale"))
      return *given;
    return 1.0 / std::sqrt(double(typeOf(q).getDimSize(3)));
  }

  /// Q K^T with both factors multiplied by `rootScale`, the square root of
  /// the scale, as the references do.
  Value scaledScores(Value q, Value k, double rootScale) {
    Value factor = scalar(rootScale);
    return node.createInferred<MatMulOp>(mul(q, factor), mul(transpose(k, {0, 1, 3, 2}), factor));
  }

  /// `mask` as an additive bias: booleans select 0 or -inf; a mask shorter
  /// than the keys is padded with "masked".
  Value maskBias(Value mask, int64_t keyLength) {
    RankedTensorType type = typeOf(mask);
    int64_t missing = keyLength - type.getShape().back();
    bool isBool = type.getElementType().isInteger(1);
    if (missing > 0) {
      SmallVector<int64_t> pads(2 * type.getRank(), 0);
      pads.back() = missing;
      Value fill = isBool ? node.splatConstant(b.getI1Type(), 0.0) : scalar(-infinity);
      mask = node.createInferred<PadOp>(mask, fill, b.getDenseI64ArrayAttr(pads),
                                        b.getStringAttr("constant"));
    }
    if (isBool)
      mask = node.createInferred<WhereOp>(mask, scalar(0.0), scalar(-infinity));
    return mask;
  }

  /// -inf above the diagonal shifted by the past length: query i sees keys
  /// up to past + i.
  Value causalBias(int64_t queryLength, int64_t keyLength, int64_t pastLength) {
    SmallVector<Attribute> values;
    for (int64_t i = 0; i < queryLength; ++i)
      for (int64_t j = 0; j < keyLength; ++j)
        values.push_back(b.getFloatAttr(elementType,
                                        j - pastLength > i ? -infinity : 0.0));
    auto type = RankedTensorType::get({queryLength, keyLength}, elementType);
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
  }

  /// Keys at or beyond each batch's non-padded length are masked:
  /// [B] lengths -> [B, 1, 1, keyLength] bias.
  Value paddingBias(Value lengths, int64_t keyLength) {
    int64_t batch = typeOf(lengths).getDimSize(0);
    SmallVector<int64_t> positions(keyLength);
    for (int64_t j = 0; j < keyLength; ++j)
      positions[j] = j;
    Value position = node.int64Constant(positions, {1, keyLength});
    Value length = reshape(lengths, {batch, 1});
    if (!typeOf(length).getElementType().isInteger(64))
      length = CastOp::create(b, loc, typeOf(length).clone(b.getI64Type()), length);
    Value valid = node.createInferred<CompareOp>(b.getStringAttr("lt"), position, length);
    Value bias = node.createInferred<WhereOp>(valid, scalar(0.0), scalar(-infinity));
    return reshape(bias, {batch, 1, 1, keyLength});
  }

  Value add(Value lhs, Value rhs) {
    if (!lhs)
      return rhs;
    return node.createInferred<AddOp>(lhs, rhs);
  }
  Value mul(Value lhs, Value rhs) { return node.createInferred<MulOp>(lhs, rhs); }

  NodeImporter &node;
  OpBuilder &b;
  Location loc;
  Type elementType;
  static constexpr double infinity = std::numeric_limits<double>::infinity();
};

/// RotaryEmbedding on [B, H, S, D] or [B, S, H * D] (num_heads), the
/// rotation applied where it broadcasts: the caches' [B, S, D' / 2] become
/// [B, 1, S, D' / 2] or [B, S, 1, D' / 2].
LogicalResult importRotaryEmbedding(NodeImporter &node) {
  AttentionBuilder a(node);
  RankedTensorType type = node.inputType(0);
  int64_t rank = type.getRank();
  if ((rank != 3 && rank != 4) || !type.hasStaticShape())
    return node.unsupported("the input must be 3-D or 4-D, of a static shape");
  if (!isa<FloatType>(type.getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  a.elementType = type.getElementType();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t batch = shape[0], sequence = rank == 4 ? shape[2] : shape[1];
  Value x = node.input(0);
  if (rank == 3) {
    int64_t heads = node.intAttr("num_heads").value_or(0);
    if (heads <= 0 || shape[2] % heads != 0)
      return node.unsupported("a 3-D input needs num_heads dividing its hidden size");
    x = a.reshape(x, {batch, sequence, heads, shape[2] / heads});
  } else {
    node.ignoreAttr("num_heads");
  }
  SmallVector<int64_t> split(a.typeOf(x).getShape());
  int64_t headSize = split[3];
  int64_t rotary = node.intAttr("rotary_embedding_dim").value_or(0);
  if (rotary == 0)
    rotary = headSize;
  if (rotary < 0 || rotary > headSize || rotary % 2 != 0)
    return node.unsupported("rotary_embedding_dim " + Twine(rotary) +
                            " is not an even size within the head's " + Twine(headSize));
  int64_t half = rotary / 2;

  Value cos = node.input(1), sin = node.input(2);
  if (node.input(3)) {
    cos = node.createInferred<GatherOp>(cos, node.input(3), a.b.getI64IntegerAttr(0));
    sin = node.createInferred<GatherOp>(sin, node.input(3), a.b.getI64IntegerAttr(0));
    if (!cos || !sin)
      return failure();
  }
  for (Value cache : {cos, sin})
    if (a.typeOf(cache).getShape() != ArrayRef<int64_t>{batch, sequence, half})
      return node.unsupported("the caches must give [batch, sequence, rotary dimensions / 2]");
  SmallVector<int64_t> cacheShape = rank == 4 ? SmallVector<int64_t>{batch, 1, sequence, half}
                                              : SmallVector<int64_t>{batch, sequence, 1, half};
  cos = a.reshape(cos, cacheShape);
  sin = a.reshape(sin, cacheShape);

  // The last axis of x from `start`, `count` entries `step` apart.
  auto lastAxis = [&](Value value, int64_t start, int64_t step, int64_t count) -> Value {
    SmallVector<int64_t> part(split);
    part[3] = count;
    return SliceOp::create(a.b, a.loc, a.typeOf(value).clone(part), value,
                           a.b.getDenseI64ArrayAttr({0, 0, 0, start}),
                           a.b.getDenseI64ArrayAttr({1, 1, 1, step}));
  };
  bool interleaved = node.intAttr("interleaved").value_or(0) != 0;
  Value x1 = interleaved ? lastAxis(x, 0, 2, half) : lastAxis(x, 0, 1, half);
  Value x2 = interleaved ? lastAxis(x, 1, 2, half) : lastAxis(x, half, 1, half);
  Value real = node.createInferred<SubOp>(a.mul(cos, x1), a.mul(sin, x2));
  Value imaginary = a.add(a.mul(sin, x1), a.mul(cos, x2));
  if (!real || !imaginary)
    return failure();
  Value rotated;
  if (interleaved) {
    SmallVector<int64_t> pairs(split);
    pairs[3] = half;
    pairs.push_back(1);
    Value both = node.createInferred<ConcatOp>(
        ValueRange{a.reshape(real, pairs), a.reshape(imaginary, pairs)},
        a.b.getI64IntegerAttr(4));
    SmallVector<int64_t> joined(split);
    joined[3] = rotary;
    rotated = both ? a.reshape(both, joined) : Value();
  } else {
    rotated = node.createInferred<ConcatOp>(ValueRange{real, imaginary}, a.b.getI64IntegerAttr(3));
  }
  if (rotated && rotary < headSize)
    rotated = node.createInferred<ConcatOp>(
        ValueRange{rotated, lastAxis(x, rotary, 1, headSize - rotary)}, a.b.getI64IntegerAttr(3));
  if (!rotated)
    return failure();
  node.setOutput(0, rank == 3 ? a.reshape(rotated, shape) : rotated);
  return success();
}

LogicalResult importAttention(NodeImporter &node) {
  AttentionBuilder a(node);
  RankedTensorType queryType = node.inputType(0);
  int64_t rank = queryType.getRank();
  if ((rank != 3 && rank != 4) || node.inputType(1).getRank() != rank ||
      node.inputType(2).getRank() != rank)
    return node.unsupported("Q, K and V must all be 3-D or all 4-D");
  for (size_t i = 0; i < 3; ++i)
    if (!node.inputType(i).hasStaticShape())
      return node.unsupported("Q, K and V must have static shapes");
  if (!isa<FloatType>(queryType.getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  a.elementType = queryType.getElementType();
  // The softmax runs in the input type, summing f16 in f32, whatever this
  // asks.
  node.ignoreAttr("softmax_precision");

  Value q = node.input(0), k = node.input(1), v = node.input(2);
  if (rank == 3) {
    std::optional<int64_t> queryHeads = node.intAttr("q_num_heads");
    std::optional<int64_t> keyHeads = node.intAttr("kv_num_heads");
    if (!queryHeads || !keyHeads || *queryHeads <= 0 || *keyHeads <= 0)
      return node.unsupported("3-D inputs need q_num_heads and kv_num_heads");
    q = a.splitHeads(q, *queryHeads);
    k = a.splitHeads(k, *keyHeads);
    v = a.splitHeads(v, *keyHeads);
  } else {
    node.ignoreAttr("q_num_heads");
    node.ignoreAttr("kv_num_heads");
  }
  int64_t pastLength = 0;
  if (node.input(4)) {
    pastLength = node.inputType(4).getDimSize(2);
    k = node.createInferred<ConcatOp>(ValueRange{node.input(4), k},
                                      a.b.getI64IntegerAttr(2));
  }
  if (node.input(5))
    v = node.createInferred<ConcatOp>(ValueRange{node.input(5), v},
                                      a.b.getI64IntegerAttr(2));
  if (!q || !k || !v)
    return failure();
  if (node.outputUsed(1))
    node.setOutput(1, k);
  if (node.outputUsed(2))
    node.setOutput(2, v);

  int64_t queryLength = a.typeOf(q).getDimSize(2), keyLength = a.typeOf(k).getDimSize(2);
  if (failed(a.repeatKeyValueHeads(q, k, v)))
    return failure();
  Value scores = a.scaledScores(q, k, std::sqrt(a.scaleOf(q)));
  if (!scores)
    return failure();
  float softcap = node.floatAttr("softcap", 0.0f);
  if (softcap > 0) {
    Value scaled = node.createInferred<DivOp>(scores, a.scalar(softcap));
    scores = a.mul(TanhOp::create(a.b, a.loc, scaled.getType(), scaled), a.scalar(softcap));
  }

  Value bias;
  if (node.input(3))
    bias = a.maskBias(node.input(3), keyLength);
  if (node.intAttr("is_causal", 0) != 0) {
    if (failed(checkComputeBudget(node, double(queryLength) * double(keyLength),
                                  "causal mask elements")))
      return failure();
    bias = a.add(bias, a.causalBias(queryLength, keyLength, pastLength));
  }
  if (node.input(6))
    bias = a.add(bias, a.paddingBias(node.input(6), keyLength));
  Value biased = bias ? a.add(scores, bias) : scores;
  if (!biased)
    return failure();
  auto biasedType = a.typeOf(biased);
  Value weights = SoftmaxOp::create(a.b, a.loc, biasedType, biased,
                                    a.b.getI64IntegerAttr(biasedType.getRank() - 1));
  Value y = node.createInferred<MatMulOp>(weights, v);
  if (!y)
    return failure();
  if (rank == 3) {
    RankedTensorType type = a.typeOf(y);
    y = a.reshape(a.transpose(y, {0, 2, 1, 3}),
                  {type.getDimSize(0), type.getDimSize(2),
                   type.getDimSize(1) * type.getDimSize(3)});
  }
  node.setOutput(0, y);
  if (node.outputUsed(3)) {
    int64_t mode = node.intAttr("qk_matmul_output_mode", 0);
    node.setOutput(3, mode == 3 ? weights : mode == 2 ? biased : scores);
  }
  return success();
}

/// FlexAttention's softmax type: softmax_precision when given, else f32
/// for f16 and bf16 inputs and the inputs' own type otherwise; null for a
/// softmax_precision it cannot be.
Type softmaxType(NodeImporter &node, Type inputType) {
  OpBuilder &b = node.builder();
  std::optional<int64_t> precision = node.intAttr("softmax_precision");
  if (!precision)
    return inputType.isF16() || inputType.isBF16() ? b.getF32Type() : inputType;
  switch (*precision) {
  case 1: // FLOAT
    return b.getF32Type();
  case 10: // FLOAT16
    return b.getF16Type();
  case 16: // BFLOAT16
    return b.getBF16Type();
  case 11: // DOUBLE
    return b.getF64Type();
  default:
    return {};
  }
}

/// FlexAttention (ai.onnx.preview 1): softmax(score_mod(Q K^T * scale))
/// V over [batch, heads, sequence, size], the probabilities passed through
/// prob_mod, grouped-query heads repeated. The node's two graphs are
/// imported in place, applied to the whole scores and probabilities; both
/// and the softmax are computed in the softmax's type, as the reference
/// does, and the result is rounded to V's type.
LogicalResult importFlexAttention(NodeImporter &node) {
  AttentionBuilder a(node);
  for (size_t i = 0; i < 3; ++i)
    if (node.inputType(i).getRank() != 4 || !node.inputType(i).hasStaticShape())
      return node.unsupported("Q, K and V must be 4-D, of static shapes");
  if (!isa<FloatType>(node.inputType(0).getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  a.elementType = node.inputType(0).getElementType();
  Type computeType = softmaxType(node, a.elementType);
  if (!computeType)
    return node.unsupported("softmax_precision must be FLOAT, FLOAT16, BFLOAT16 or DOUBLE");

  Value q = node.input(0), k = node.input(1), v = node.input(2);
  if (failed(a.repeatKeyValueHeads(q, k, v)))
    return failure();
  // The reference takes sqrt(scale) in f32, then rounds it to the inputs'
  // type.
  Value scores = a.scaledScores(q, k, std::sqrt(static_cast<float>(a.scaleOf(q))));
  if (!scores)
    return failure();
  auto inComputeType = [&](Value value) -> Value {
    RankedTensorType type = a.typeOf(value);
    if (type.getElementType() == computeType)
      return value;
    return CastOp::create(a.b, a.loc, type.clone(computeType), value);
  };
  // A graph of the node applied to `value`: its one output, of `value`'s
  // shape, in the softmax's type.
  auto modify = [&](StringRef graph, Value value) -> Value {
    if (!node.hasAttr(graph))
      return value;
    std::optional<SmallVector<Value>> outputs = node.callGraphAttr(graph, {value});
    if (!outputs)
      return {};
    if (outputs->size() != 1 || !(*outputs)[0] ||
        a.typeOf((*outputs)[0]).getShape() != a.typeOf(value).getShape()) {
      (void)node.unsupported("graph '" + graph + "' must give one output of its input's shape");
      return {};
    }
    return inComputeType((*outputs)[0]);
  };
  scores = modify("score_mod", inComputeType(scores));
  if (!scores)
    return failure();
  Value probabilities = modify("prob_mod", SoftmaxOp::create(a.b, a.loc, scores.getType(), scores,
                                                             a.b.getI64IntegerAttr(3)));
  if (!probabilities)
    return failure();
  Value y = node.createInferred<MatMulOp>(probabilities, inComputeType(v));
  if (!y)
    return failure();
  Type outputType = a.typeOf(node.input(2)).getElementType();
  if (outputType != computeType)
    y = CastOp::create(a.b, a.loc, a.typeOf(y).clone(outputType), y);
  node.setOutput(0, y);
  return success();
}

} // namespace

void registerAttentionHandlers(OpRegistry &registry) {
  registry.on("Attention", 23, importAttention);
  registry.on("RotaryEmbedding", 23, importRotaryEmbedding);
  registry.on("ai.onnx.preview", "FlexAttention", 1, importFlexAttention);
}

} // namespace tessel::onnx_import
