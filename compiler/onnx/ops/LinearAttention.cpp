//===- LinearAttention.cpp - ONNX LinearAttention (opset 27) --------------===//
//
// Linear attention keeps per key/value head a state S [d_k, d_v] instead of
// a cache of keys: each token t decays it (gated rules: S *= exp(g_t)),
// writes its key and value (S += k_t (x) v_t; the delta rules write
// beta_t * (v_t - S^T k_t), what S does not yet recall), and its query
// reads it (o_t = scale * q_t^T S). Query heads share their group's key
// head (grouped-query attention). The tokens are imported one after
// another (at most kMaxTokens), in f32 whatever the inputs' type, as ONNX's
// reference computes them; the outputs are rounded to their types once.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include <cmath>

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// Most tokens imported one after another: compile time grows with their
/// number, a little faster (8 s for 64 tokens of two 128 x 128 heads, 25 s
/// for 128).
constexpr int64_t kMaxTokens = 128;

struct Heads {
  int64_t batch, steps, queryHeads, keyHeads, keySize, valueSize;
  int64_t group() const { return queryHeads / keyHeads; }
};

class LinearAttentionBuilder {
public:
  LinearAttentionBuilder(NodeImporter &node, Heads heads)
      : node(node), b(node.builder()), loc(node.loc()), heads(heads) {}

  Value toF32(Value value) { return convertElements(node, value, b.getF32Type()); }
  Value reshape(Value value, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(value.getType());
    return ReshapeOp::create(b, loc, type.clone(shape), value);
  }
  /// Token `step` of a packed [B, T, width] input, as [B, shape...].
  Value token(Value packed, int64_t step, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(packed.getType());
    Value slice = SliceOp::create(
        b, loc, type.clone({heads.batch, 1, type.getDimSize(2)}), packed,
        b.getDenseI64ArrayAttr({0, step, 0}), b.getDenseI64ArrayAttr({1, 1, 1}));
    SmallVector<int64_t> full{heads.batch};
    llvm::append_range(full, shape);
    return reshape(slice, full);
  }
  /// The state [B, H_kv, d_k, d_v] after token `step`.
  Value step(Value state, int64_t step, Value key, Value value, Value decay, Value beta) {
    int64_t batch = heads.batch, kv = heads.keyHeads, dk = heads.keySize, dv = heads.valueSize;
    if (decay) {
      int64_t width = cast<RankedTensorType>(decay.getType()).getDimSize(2) / kv;
      Value factor = ExpOp::create(b, loc, RankedTensorType::get({batch, kv, width, 1},
                                                                 b.getF32Type()),
                                   token(decay, step, {kv, width, 1}));
      state = node.createInferred<MulOp>(state, factor);
    }
    Value k = token(key, step, {kv, dk, 1});
    Value v = token(value, step, {kv, 1, dv});
    if (beta) {
      // S^T k, as k^T S: [B, H, 1, d_k] x [B, H, d_k, d_v].
      Value recalled = node.createInferred<MatMulOp>(reshape(k, {batch, kv, 1, dk}), state);
      int64_t rates = cast<RankedTensorType>(beta.getType()).getDimSize(2);
      v = node.createInferred<MulOp>(token(beta, step, {rates, 1, 1}),
                                     node.createInferred<SubOp>(v, recalled));
    }
    return node.createInferred<AddOp>(state, node.createInferred<MulOp>(k, v));
  }
  /// scale * q_t^T S for every query head, as [B, 1, H_q * d_v]: a group of
  /// query heads reads its key head's state.
  Value read(Value state, int64_t step, Value query, float scale) {
    int64_t batch = heads.batch, kv = heads.keyHeads;
    Value q = token(query, step, {kv, heads.group(), heads.keySize});
    Value read = node.createInferred<MatMulOp>(q, state);
    Value scaled = node.createInferred<MulOp>(read, node.splatConstant(b.getF32Type(), scale));
    return reshape(scaled, {batch, 1, heads.queryHeads * heads.valueSize});
  }

private:
  NodeImporter &node;
  OpBuilder &b;
  Location loc;
  Heads heads;
};

LogicalResult importLinearAttention(NodeImporter &node) {
  std::string rule = node.stringAttr("update_rule").value_or("gated_delta");
  if (!llvm::is_contained({"linear", "gated", "delta", "gated_delta"}, rule))
    return node.unsupported("update_rule '" + rule +
                            "' is not 'linear', 'gated', 'delta' or 'gated_delta'");
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  std::optional<int64_t> queryHeads = node.intAttr("q_num_heads");
  std::optional<int64_t> keyHeads = node.intAttr("kv_num_heads");
  if (!queryHeads || !keyHeads || *queryHeads <= 0 || *keyHeads <= 0 ||
      *queryHeads % *keyHeads != 0)
    return node.unsupported("q_num_heads and kv_num_heads are required, and q_num_heads must "
                            "be a positive multiple of kv_num_heads");
  node.ignoreAttr("chunk_size"); // A hint for chunked kernels; the result is the same.
  RankedTensorType queryType = node.inputType(0), keyType = node.inputType(1),
                   valueType = node.inputType(2);
  for (RankedTensorType type : {queryType, keyType, valueType})
    if (type.getRank() != 3 || !type.hasStaticShape() ||
        !isa<FloatType>(type.getElementType()))
      return node.unsupported("query, key and value must be static floating-point "
                              "[batch, sequence, heads * size] tensors");
  Heads heads{queryType.getDimSize(0), queryType.getDimSize(1), *queryHeads, *keyHeads,
              queryType.getDimSize(2) / *queryHeads, valueType.getDimSize(2) / *keyHeads};
  if (queryType.getDimSize(2) % *queryHeads != 0 || valueType.getDimSize(2) % *keyHeads != 0 ||
      keyType.getShape() != ArrayRef<int64_t>{heads.batch, heads.steps,
                                             heads.keyHeads * heads.keySize} ||
      valueType.getDimSize(0) != heads.batch || valueType.getDimSize(1) != heads.steps)
    return node.unsupported("query [B, T, q_num_heads * d_k], key [B, T, kv_num_heads * d_k] "
                            "and value [B, T, kv_num_heads * d_v] disagree");
  Value decay = node.input(4), beta = node.input(5);
  if (gated != static_cast<bool>(decay) || delta != static_cast<bool>(beta))
    return node.unsupported("update_rule '" + rule + "' " +
                            (gated ? "needs" : "takes no") + " decay and " +
                            (delta ? "needs" : "takes no") + " beta");
  auto perToken = [&](size_t input, ArrayRef<int64_t> widths) {
    RankedTensorType type = node.inputType(input);
    return type.getRank() == 3 && type.getDimSize(0) == heads.batch &&
           type.getDimSize(1) == heads.steps && llvm::is_contained(widths, type.getDimSize(2));
  };
  if (decay && !perToken(4, {heads.keyHeads, heads.keyHeads * heads.keySize}))
    return node.unsupported("decay must be [B, T, kv_num_heads] or [B, T, kv_num_heads * d_k]");
  if (beta && !perToken(5, {heads.keyHeads, 1}))
    return node.unsupported("beta must be [B, T, kv_num_heads] or [B, T, 1]");
  if (heads.steps > kMaxTokens)
    return node.unsupported(Twine(heads.steps) + " tokens: at most " + Twine(kMaxTokens) +
                            " are unrolled (compiling takes about 25 s at 128); run a longer "
                            "prefill in chunks, each passing its present_state on as past_state");

  OpBuilder &b = node.builder();
  LinearAttentionBuilder builder(node, heads);
  auto stateShape = SmallVector<int64_t>{heads.batch, heads.keyHeads, heads.keySize,
                                         heads.valueSize};
  Type stateElement = queryType.getElementType();
  Value state;
  if (Value past = node.input(3)) {
    if (node.inputType(3).getShape() != ArrayRef<int64_t>(stateShape))
      return node.unsupported("past_state must be [B, kv_num_heads, d_k, d_v]");
    stateElement = node.inputType(3).getElementType();
    state = builder.toF32(past);
  } else {
    state = node.splatConstant(b.getF32Type(), 0.0, stateShape);
  }
  float scale = node.floatAttr("scale", 0.0f);
  if (scale == 0.0f)
    scale = 1.0f / std::sqrt(static_cast<float>(heads.keySize));

  Value query = builder.toF32(node.input(0)), key = builder.toF32(node.input(1)),
        value = builder.toF32(node.input(2));
  if (decay)
    decay = builder.toF32(decay);
  if (beta)
    beta = builder.toF32(beta);
  SmallVector<Value> outputs;
  for (int64_t t = 0; t < heads.steps; ++t) {
    state = builder.step(state, t, key, value, decay, beta);
    outputs.push_back(builder.read(state, t, query, scale));
  }
  Value output = outputs.size() == 1
                     ? outputs.front()
                     : node.createInferred<ConcatOp>(outputs, b.getI64IntegerAttr(1));
  if (failed(node.setInferredOutput(0, convertElements(node, output, queryType.getElementType()))))
    return failure();
  node.setOutput(1, convertElements(node, state, stateElement));
  return success();
}

} // namespace

void registerLinearAttentionHandlers(OpRegistry &registry) {
  registry.on("LinearAttention", 27, importLinearAttention);
}

} // namespace tessel::onnx_import
