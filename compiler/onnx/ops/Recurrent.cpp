//===- Recurrent.cpp - LSTM, GRU and RNN ----------------------------------===//
//
// With a static sequence length the recurrence is unrolled at import: the
// input projection of every time step is one matrix product up front, then
// each step adds the hidden state's projection and applies the gates. Both
// directions of a bidirectional layer are unrolled the same way.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

enum class Cell { LSTM, GRU, RNN };

/// Whether every element of a constant is stored as zero bits (+0.0).
bool isAllZeroBits(ElementsAttr constant) {
  ArrayRef<char> bytes;
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(constant)) {
    bytes = dense.getRawData();
  } else if (auto resource = dyn_cast_if_present<DenseResourceElementsAttr>(constant)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return false;
    bytes = blob->getData();
  } else {
    return false;
  }
  return llvm::all_of(bytes, [](char byte) { return byte == 0; });
}

class Recurrence {
public:
  Recurrence(NodeImporter &node, Cell cell)
      : node(node), b(node.builder()), loc(node.loc()), cell(cell) {}

  LogicalResult import();

private:
  RankedTensorType typeOf(Value value) { return cast<RankedTensorType>(value.getType()); }
  Value reshape(Value value, ArrayRef<int64_t> shape) {
    return ReshapeOp::create(b, loc, typeOf(value).clone(shape), value);
  }
  /// value[start : start + size] along `axis`.
  Value slice(Value value, int64_t axis, int64_t start, int64_t size) {
    RankedTensorType type = typeOf(value);
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    SmallVector<int64_t> shape(type.getShape());
    starts[axis] = start;
    shape[axis] = size;
    return SliceOp::create(b, loc, type.clone(shape), value, b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(steps));
  }
  Value add(Value lhs, Value rhs) { return node.createInferred<AddOp>(lhs, rhs); }
  Value sub(Value lhs, Value rhs) { return node.createInferred<SubOp>(lhs, rhs); }
  Value mul(Value lhs, Value rhs) { return node.createInferred<MulOp>(lhs, rhs); }
  Value matmul(Value lhs, Value rhs) { return matrixProduct(node, lhs, rhs); }
  Value transposed(Value matrix) {
    return node.createInferred<TransposeOp>(matrix, b.getDenseI64ArrayAttr({1, 0}));
  }
  Value one() { return node.splatConstant(elementType, 1.0); }

  /// Activation `index` of the node's list (or the cell's default).
  Value activate(size_t index, Value x);
  bool readActivations();

  /// One direction's outputs: every step's hidden state, the last hidden
  /// and cell states.
  struct Run {
    SmallVector<Value> hidden;
    Value lastHidden, lastCell;
  };
  FailureOr<Run> runDirection(int64_t direction, bool reverse);

  NodeImporter &node;
  OpBuilder &b;
  Location loc;
  Cell cell;
  Type elementType;
  int64_t sequence = 0, batch = 0, hiddenSize = 0, gates = 0;
  float clip = 0;
  bool linearBeforeReset = false;
  Value steps; // [sequence, batch, input]
  std::vector<std::string> activations;
  std::vector<float> alphas, betas;
};

bool Recurrence::readActivations() {
  size_t perDirection = cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1;
  std::vector<std::string> defaults =
      cell == Cell::LSTM  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : cell == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                          : std::vector<std::string>{"Tanh"};
  if (std::optional<std::vector<std::string>> given = node.stringsAttr("activations"))
    activations = *given;
  if (std::optional<std::vector<float>> given = node.floatsAttr("activation_alpha"))
    alphas = *given;
  if (std::optional<std::vector<float>> given = node.floatsAttr("activation_beta"))
    betas = *given;
  if (activations.empty())
    activations = defaults;
  if (activations.size() < perDirection) {
    (void)node.unsupported("activations lists too few functions");
    return false;
  }
  for (const std::string &name : activations)
    if (!llvm::is_contained({"Sigmoid", "Tanh", "Relu", "HardSigmoid", "LeakyRelu",
                             "Affine", "Softsign", "Softplus", "Elu", "ScaledTanh",
                             "ThresholdedRelu"},
                            name)) {
      (void)node.unsupported("activation '" + name + "' is not supported");
      return false;
    }
  return true;
}

Value Recurrence::activate(size_t index, Value x) {
  const std::string &name = activations[index];
  Type type = x.getType();
  auto alpha = [&](float fallback) {
    return b.getF32FloatAttr(index < alphas.size() ? alphas[index] : fallback);
  };
  auto beta = [&](float fallback) {
    return b.getF32FloatAttr(index < betas.size() ? betas[index] : fallback);
  };
  auto scalar = [&](FloatAttr value) {
    return node.splatConstant(elementType, value.getValueAsDouble());
  };
  if (name == "Sigmoid")
    return SigmoidOp::create(b, loc, type, x);
  if (name == "Tanh")
    return TanhOp::create(b, loc, type, x);
  if (name == "Relu")
    return ReluOp::create(b, loc, type, x);
  if (name == "HardSigmoid")
    return HardSigmoidOp::create(b, loc, type, x, alpha(0.2f), beta(0.5f));
  if (name == "LeakyRelu")
    return LeakyReluOp::create(b, loc, type, x, alpha(0.01f));
  if (name == "Elu")
    return EluOp::create(b, loc, type, x, alpha(1.0f));
  if (name == "ThresholdedRelu")
    return ThresholdedReluOp::create(b, loc, type, x, alpha(1.0f));
  if (name == "Softsign")
    return SoftsignOp::create(b, loc, type, x);
  if (name == "Softplus")
    return SoftplusOp::create(b, loc, type, x);
  if (name == "Affine")
    return add(mul(x, scalar(alpha(1.0f))), scalar(beta(0.0f)));
  // ScaledTanh: alpha * tanh(beta * x).
  Value inner = mul(x, scalar(beta(1.0f)));
  return mul(TanhOp::create(b, loc, type, inner), scalar(alpha(1.0f)));
}

FailureOr<Recurrence::Run> Recurrence::runDirection(int64_t direction, bool reverse) {
  size_t activationBase = direction * (cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1);
  auto weight = [&](size_t input) {
    return reshape(slice(node.input(input), 0, direction, 1),
                   typeOf(node.input(input)).getShape().drop_front());
  };
  Value w = weight(1), r = weight(2); // [gates * hidden, input], [gates * hidden, hidden]
  // The input projection of all steps at once: [sequence, batch, gates * hidden].
  Value projected = matmul(steps, transposed(w));
  Value rT = transposed(r);
  Value inputBias, recurrentBias;
  if (node.input(3)) {
    Value bias = weight(3); // [2 * gates * hidden]
    inputBias = slice(bias, 0, 0, gates * hiddenSize);
    recurrentBias = slice(bias, 0, gates * hiddenSize, gates * hiddenSize);
    projected = add(projected, inputBias);
  }
  auto initial = [&](size_t input) -> Value {
    if (node.input(input))
      return reshape(slice(node.input(input), 0, direction, 1), {batch, hiddenSize});
    return node.splatConstant(elementType, 0.0, {batch, hiddenSize});
  };
  Value h = initial(5);
  Value c = cell == Cell::LSTM ? initial(6) : Value();
  // From a zero initial hidden state (absent, or zeros as exporters write
  // it) the first step's h x R^T is zero for the finite weights of any
  // trained model: that product is skipped.
  bool hiddenIsZero = !node.input(5) || isAllZeroBits(node.constantInput(5));
  auto recurrentProduct = [&](Value hidden, Value weight) -> Value {
    if (!hiddenIsZero)
      return matmul(hidden, weight);
    auto weightType = typeOf(weight);
    return node.splatConstant(elementType, 0.0, {batch, weightType.getDimSize(1)});
  };
  Value peephole = cell == Cell::LSTM && node.input(7) ? weight(7) : Value();
  auto gate = [&](Value all, int64_t index) {
    return slice(all, 1, index * hiddenSize, hiddenSize);
  };
  auto clipped = [&](Value x) -> Value {
    if (clip <= 0)
      return x;
    Value low = node.splatConstant(elementType, -clip), high = node.splatConstant(elementType, clip);
    return ClipOp::create(b, loc, x.getType(), x, low, high);
  };

  Run run;
  run.hidden.resize(sequence);
  for (int64_t i = 0; i < sequence; ++i) {
    int64_t t = reverse ? sequence - 1 - i : i;
    Value x = reshape(slice(projected, 0, t, 1), {batch, gates * hiddenSize});
    if (cell == Cell::LSTM) {
      // Gates in ONNX order i, o, f, c.
      Value all = add(x, recurrentProduct(h, rT));
      if (recurrentBias)
        all = add(all, recurrentBias);
      Value inGate = gate(all, 0), outGate = gate(all, 1), forgetGate = gate(all, 2);
      if (peephole) {
        inGate = add(inGate, mul(slice(peephole, 0, 0, hiddenSize), c));
        forgetGate = add(forgetGate, mul(slice(peephole, 0, 2 * hiddenSize, hiddenSize), c));
      }
      Value it = activate(activationBase, clipped(inGate));
      Value ft = activate(activationBase, clipped(forgetGate));
      Value candidate = activate(activationBase + 1, clipped(gate(all, 3)));
      c = add(mul(ft, c), mul(it, candidate));
      if (peephole)
        outGate = add(outGate, mul(slice(peephole, 0, hiddenSize, hiddenSize), c));
      Value ot = activate(activationBase, clipped(outGate));
      h = mul(ot, activate(activationBase + 2, c));
    } else if (cell == Cell::GRU) {
      // Gates in ONNX order z, r, h.
      Value hiddenProjection = recurrentProduct(h, rT);
      if (recurrentBias)
        hiddenProjection = add(hiddenProjection, recurrentBias);
      Value zt = activate(activationBase, clipped(add(gate(x, 0), gate(hiddenProjection, 0))));
      Value rt = activate(activationBase, clipped(add(gate(x, 1), gate(hiddenProjection, 1))));
      Value candidateInput;
      if (linearBeforeReset) {
        candidateInput = add(gate(x, 2), mul(rt, gate(hiddenProjection, 2)));
      } else {
        Value rh = slice(rT, 1, 2 * hiddenSize, hiddenSize);
        candidateInput = add(gate(x, 2), recurrentProduct(mul(rt, h), rh));
        if (recurrentBias)
          candidateInput = add(candidateInput, slice(recurrentBias, 0, 2 * hiddenSize, hiddenSize));
      }
      Value candidate = activate(activationBase + 1, clipped(candidateInput));
      h = add(mul(sub(one(), zt), candidate), mul(zt, h));
    } else {
      Value all = add(x, recurrentProduct(h, rT));
      if (recurrentBias)
        all = add(all, recurrentBias);
      h = activate(activationBase, clipped(all));
    }
    if (!h)
      return failure();
    run.hidden[t] = h;
    hiddenIsZero = false;
  }
  run.lastHidden = h;
  run.lastCell = c;
  return run;
}

LogicalResult Recurrence::import() {
  RankedTensorType xType = node.inputType(0);
  if (!xType.hasStaticShape() || xType.getRank() != 3)
    return node.unsupported("X must be a static 3-D tensor");
  if (!isa<FloatType>(xType.getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  elementType = xType.getElementType();
  int64_t layout = node.intAttr("layout", 0);
  steps = layout == 0 ? node.input(0)
                      : node.createInferred<TransposeOp>(node.input(0),
                                                         b.getDenseI64ArrayAttr({1, 0, 2}));
  sequence = typeOf(steps).getDimSize(0);
  // Every step becomes its own ops.
  if (failed(checkComputeBudget(node, double(sequence), "unrolled steps", kMaxUnrolledSteps)))
    return failure();
  batch = typeOf(steps).getDimSize(1);
  gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  hiddenSize = node.intAttr("hidden_size").value_or(node.inputType(2).getDimSize(2));
  clip = node.floatAttr("clip", 0.0f);
  if (cell == Cell::GRU)
    linearBeforeReset = node.intAttr("linear_before_reset", 0) != 0;
  if (cell == Cell::LSTM && node.intAttr("input_forget", 0) != 0)
    return node.unsupported("input_forget is not supported");
  if (node.input(4)) {
    // Sequence lengths: only the full length is supported.
    std::optional<SmallVector<int64_t>> lengths = node.constantInts(4, "sequence_lens");
    if (!lengths)
      return failure();
    if (llvm::any_of(*lengths, [&](int64_t length) { return length != sequence; }))
      return node.unsupported("sequence_lens shorter than the sequence are not supported");
  }
  if (!readActivations())
    return failure();
  std::string direction = node.stringAttr("direction").value_or("forward");
  SmallVector<bool> reversed;
  if (direction == "forward")
    reversed = {false};
  else if (direction == "reverse")
    reversed = {true};
  else if (direction == "bidirectional")
    reversed = {false, true};
  else
    return node.unsupported("direction '" + direction + "' is not supported");

  SmallVector<Run> runs;
  for (auto [index, reverse] : llvm::enumerate(reversed)) {
    FailureOr<Run> run = runDirection(index, reverse);
    if (failed(run))
      return failure();
    runs.push_back(*run);
  }
  // Y: [sequence, directions, batch, hidden] (layout 1: [batch, sequence,
  // directions, hidden]); Y_h and Y_c: [directions, batch, hidden].
  auto stack = [&](ArrayRef<Value> parts, int64_t axis) {
    return parts.size() == 1 ? parts.front()
                             : node.createInferred<ConcatOp>(ValueRange(parts),
                                                             b.getI64IntegerAttr(axis));
  };
  if (node.outputUsed(0)) {
    SmallVector<Value> perStep;
    for (int64_t t = 0; t < sequence; ++t) {
      SmallVector<Value> perDirection;
      for (const Run &run : runs)
        perDirection.push_back(reshape(run.hidden[t], {1, 1, batch, hiddenSize}));
      perStep.push_back(stack(perDirection, 1));
    }
    Value y = stack(perStep, 0);
    if (layout != 0)
      y = node.createInferred<TransposeOp>(y, b.getDenseI64ArrayAttr({2, 0, 1, 3}));
    node.setOutput(0, y);
  }
  auto finalState = [&](auto member) {
    SmallVector<Value> parts;
    for (const Run &run : runs)
      parts.push_back(reshape(run.*member, {1, batch, hiddenSize}));
    Value state = stack(parts, 0);
    if (layout != 0)
      state = node.createInferred<TransposeOp>(state, b.getDenseI64ArrayAttr({1, 0, 2}));
    return state;
  };
  if (node.outputUsed(1))
    node.setOutput(1, finalState(&Run::lastHidden));
  if (cell == Cell::LSTM && node.outputUsed(2))
    node.setOutput(2, finalState(&Run::lastCell));
  return success();
}

} // namespace

void registerRecurrentHandlers(OpRegistry &registry) {
  registry.on("LSTM", 7, [](NodeImporter &node) { return Recurrence(node, Cell::LSTM).import(); });
  registry.on("GRU", 7, [](NodeImporter &node) { return Recurrence(node, Cell::GRU).import(); });
  registry.on("RNN", 7, [](NodeImporter &node) { return Recurrence(node, Cell::RNN).import(); });
}

} // namespace tessel::onnx_import
