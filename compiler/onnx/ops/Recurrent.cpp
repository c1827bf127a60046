//===- Recurrent.cpp - LSTM, GRU and RNN ----------------------------------===//
//
// The input projection of every time step is one matrix product up front;
// the steps are one tessel.scan per direction, whose body adds the hidden
// state's projection to the step's and applies the gates, so that a target
// runs them as one loop. The sequence length is static; sequence_lens (a
// constant or a run-time input) may end each batch entry's sequence sooner,
// and the scans stop at the longest.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxImporter.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

enum class Cell { LSTM, GRU, RNN };

/// The most steps whose inputs a chunked recurrence projects with one
/// product (see chunkedProjection).
constexpr int64_t kChunkSteps = 8;

/// Whether `lengths` is the varying length of a --max-shape model (@main's
/// hidden argument) given to every batch entry.
bool isVaryingLength(Value lengths) {
  while (Operation *producer = lengths.getDefiningOp()) {
    if (!isa<CastOp, ExpandOp, ReshapeOp>(producer))
      return false;
    lengths = producer->getOperand(0);
  }
  auto argument = cast<BlockArgument>(lengths);
  auto function = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
  return function && function.getArgAttr(argument.getArgNumber(), kLengthAttr);
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
  Value zero() { return node.splatConstant(elementType, 0.0); }
  /// Where `mask` (1 or 0 in the element type) is 1, `taken`; else `kept`.
  Value select(Value mask, Value taken, Value kept) {
    Value condition = node.createInferred<CompareOp>(b.getStringAttr("gt"), mask, zero());
    return node.createInferred<WhereOp>(condition, taken, kept);
  }
  /// [sequence, batch, 1]: 1 where step t is within batch entry b's length
  /// (`lengths`: [batch] i64).
  Value stepsWithinLengths(Value lengths);
  /// Stops a run whose `lengths` lie outside `range`.
  void checkLengths(Value lengths, StringRef range);

  /// Activation `index` of the node's list (or the cell's default).
  Value activate(size_t index, Value x);
  bool readActivations(size_t directions);

  /// One direction's outputs: every step's hidden state
  /// ([sequence, 1, batch, hidden]), the last hidden and cell states.
  struct Run {
    Value hidden, lastHidden, lastCell;
  };
  Run runDirection(int64_t direction, bool reverse);

  /// What a step reads besides the states: the same at every step.
  struct StepInputs {
    int64_t direction = 0;
    Value recurrentWeight; // R^T: [hidden, gates * hidden]; GRU: update and reset only
    Value candidateWeight; // GRU without linear_before_reset: R_h^T
    Value recurrentBias;   // GRU with linear_before_reset: R_b (else in the projection)
    Value peephole;

    /// Those of the weights above that the cell has, in order.
    SmallVector<Value> invariants() const {
      SmallVector<Value> present;
      for (Value invariant : {recurrentWeight, candidateWeight, recurrentBias, peephole})
        if (invariant)
          present.push_back(invariant);
      return present;
    }
    /// The same inputs as a scan's body sees them: each weight mapped to its
    /// block argument by `inBody`.
    StepInputs mappedBy(const IRMapping &inBody) const {
      StepInputs inside = *this;
      for (Value *invariant : {&inside.recurrentWeight, &inside.candidateWeight,
                               &inside.recurrentBias, &inside.peephole})
        *invariant = inBody.lookupOrNull(*invariant);
      return inside;
    }
  };
  /// One step from hidden state `h`, cell state `c` (LSTM) and the step's
  /// input projection `x`: the next states (hidden, then cell).
  SmallVector<Value> step(const StepInputs &in, Value h, Value c, Value x);
  /// One tessel.scan over the steps of `projected` ([steps, batch, gates *
  /// hidden], the input projections), from `states`, the steps past
  /// `within` ([steps, batch, 1], or null) holding them, stopping at
  /// `length` (or null): [steps, states, batch, hidden].
  Value scanSteps(const StepInputs &in, ArrayRef<Value> states, Value projected, Value within,
                  Value length, bool reverse);
  /// The same over the steps up to the varying length, in chunks of a few
  /// steps: one tessel.scan over the chunks, whose body projects a chunk's
  /// inputs with one product (`inputWeight`, W^T, and `inputBias`) and
  /// scans its steps.
  Value scanChunks(const StepInputs &in, ArrayRef<Value> states, Value inputWeight, Value inputBias,
                   bool reverse);

  NodeImporter &node;
  OpBuilder &b;
  Location loc;
  Cell cell;
  Type elementType;
  int64_t sequence = 0, batch = 0, hiddenSize = 0, gates = 0, layout = 0;
  float clip = 0;
  bool linearBeforeReset = false;
  Value steps; // [sequence, batch, input]
  /// [sequence, batch, 1] in the element type, or null when every sequence
  /// has the full length. Floats rather than booleans: the x86 vectorizer
  /// leaves a generic that reads an i1 tensor as scalar loops.
  Value withinLength;
  /// The longest of the lengths as a 0-d i64 tensor, when withinLength is
  /// set: no state changes after it, so the scans may stop there.
  Value longestLength;
  /// Whether the inputs are projected a chunk of steps at a time: when the
  /// steps stop at a --max-shape model's varying length. One product up
  /// front would project every step up to the bound, one per step would
  /// read W at every step. On the two-layer LSTM of make bench (bound 32,
  /// one thread, Zen 4) up front took 0.220 ms at 32 steps and 0.062 ms at
  /// 1; one product per step 0.280 ms and 0.012 ms; chunks of 8 steps
  /// 0.226 ms and 0.022 ms.
  bool chunkedProjection = false;
  std::vector<std::string> activations;
  std::vector<float> alphas, betas;
};

Value Recurrence::stepsWithinLengths(Value lengths) {
  SmallVector<int64_t> positions(sequence);
  for (int64_t t = 0; t < sequence; ++t)
    positions[t] = t;
  Value position = node.int64Constant(positions, {sequence, 1});
  Value within =
      node.createInferred<CompareOp>(b.getStringAttr("lt"), position, reshape(lengths, {1, batch}));
  Value mask = CastOp::create(b, loc, typeOf(within).clone(elementType), within);
  return reshape(mask, {sequence, batch, 1});
}

void Recurrence::checkLengths(Value lengths, StringRef range) {
  auto outside = [&](StringRef predicate, int64_t bound) {
    Value compared = node.createInferred<CompareOp>(b.getStringAttr(predicate), lengths,
                                                    node.int64Constant({bound}, {}));
    return CastOp::create(b, loc, typeOf(compared).clone(b.getI64Type()), compared);
  };
  Value count = node.createInferred<ReduceOp>(b.getStringAttr("sum"),
                                              add(outside("lt", 0), outside("gt", sequence)),
                                              b.getDenseI64ArrayAttr({0}));
  stopUnlessZero(node, count, "sequence_lens entries outside " + range);
}

bool Recurrence::readActivations(size_t directions) {
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
  // The defaults hold for each direction.
  if (activations.empty())
    for (size_t direction = 0; direction < directions; ++direction)
      llvm::append_range(activations, defaults);
  if (activations.size() < perDirection * directions) {
    (void)node.unsupported("activations lists " + std::to_string(activations.size()) +
                           " functions where " + std::to_string(directions) +
                           " direction(s) need " + std::to_string(perDirection * directions));
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

SmallVector<Value> Recurrence::step(const StepInputs &in, Value h, Value c, Value x) {
  size_t activationBase = in.direction * (cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1);
  auto gate = [&](Value all, int64_t index) {
    return slice(all, 1, index * hiddenSize, hiddenSize);
  };
  auto clipped = [&](Value x) -> Value {
    if (clip <= 0)
      return x;
    Value low = node.splatConstant(elementType, -clip), high = node.splatConstant(elementType, clip);
    return ClipOp::create(b, loc, x.getType(), x, low, high);
  };
  auto withBias = [&](Value product) {
    return in.recurrentBias ? add(product, in.recurrentBias) : product;
  };
  if (cell == Cell::LSTM) {
    // Gates in ONNX order i, o, f, c.
    Value all = add(x, matmul(h, in.recurrentWeight));
    Value inGate = gate(all, 0), outGate = gate(all, 1), forgetGate = gate(all, 2);
    if (in.peephole) {
      inGate = add(inGate, mul(slice(in.peephole, 0, 0, hiddenSize), c));
      forgetGate = add(forgetGate, mul(slice(in.peephole, 0, 2 * hiddenSize, hiddenSize), c));
    }
    Value it = activate(activationBase, clipped(inGate));
    Value ft = activate(activationBase, clipped(forgetGate));
    Value candidate = activate(activationBase + 1, clipped(gate(all, 3)));
    c = add(mul(ft, c), mul(it, candidate));
    if (in.peephole)
      outGate = add(outGate, mul(slice(in.peephole, 0, hiddenSize, hiddenSize), c));
    Value ot = activate(activationBase, clipped(outGate));
    h = mul(ot, activate(activationBase + 2, c));
    return {h, c};
  }
  if (cell == Cell::GRU) {
    // Gates in ONNX order z, r, h.
    Value updateReset = withBias(matmul(h, in.recurrentWeight));
    Value zt = activate(activationBase, clipped(add(gate(x, 0), gate(updateReset, 0))));
    Value rt = activate(activationBase, clipped(add(gate(x, 1), gate(updateReset, 1))));
    Value candidateInput;
    if (linearBeforeReset) {
      candidateInput = add(gate(x, 2), mul(rt, gate(updateReset, 2)));
    } else {
      candidateInput = add(gate(x, 2), matmul(mul(rt, h), in.candidateWeight));
    }
    Value candidate = activate(activationBase + 1, clipped(candidateInput));
    return {add(mul(sub(one(), zt), candidate), mul(zt, h))};
  }
  return {activate(activationBase, clipped(add(x, matmul(h, in.recurrentWeight))))};
}

Value Recurrence::scanSteps(const StepInputs &in, ArrayRef<Value> states, Value projected,
                            Value within, Value length, bool reverse) {
  SmallVector<Value> invariants = in.invariants();
  RankedTensorType stateType = typeOf(states.front());
  SmallVector<int64_t> stacked = {typeOf(projected).getDimSize(0),
                                  static_cast<int64_t>(states.size())};
  llvm::append_range(stacked, stateType.getShape());
  SmallVector<Value> scanned = {projected};
  if (within)
    scanned.push_back(within);
  auto scan = ScanOp::create(b, loc, stateType.clone(stacked), invariants, states, scanned, length,
                             reverse);
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&scan.getBody());
  IRMapping inBody;
  for (Value invariant : invariants)
    inBody.map(invariant, body->addArgument(invariant.getType(), loc));
  for (Value state : states)
    body->addArgument(state.getType(), loc);
  Value x =
      body->addArgument(typeOf(projected).clone(typeOf(projected).getShape().drop_front()), loc);
  Value h = body->getArgument(invariants.size());
  Value c = cell == Cell::LSTM ? body->getArgument(invariants.size() + 1) : Value();
  SmallVector<Value> next = step(in.mappedBy(inBody), h, c, x);
  if (within) {
    // Past its length a batch entry's states stay as they were. In
    // reverse, steps beyond the length come first and leave the initial
    // states for the entry's last step: its sequence runs backwards from
    // there, as ONNX specifies.
    Value withinStep = body->addArgument(typeOf(within).clone({batch, 1}), loc);
    for (auto [state, previous] :
         llvm::zip(next, body->getArguments().slice(invariants.size(), states.size())))
      state = select(withinStep, state, previous);
  }
  YieldOp::create(b, loc, next);
  return scan.getResult();
}

Value Recurrence::scanChunks(const StepInputs &in, ArrayRef<Value> states, Value inputWeight,
                             Value inputBias, bool reverse) {
  // The steps per chunk: the largest divisor of the sequence up to
  // kChunkSteps, so that the chunks tile it.
  int64_t chunk = kChunkSteps;
  while (sequence % chunk != 0)
    --chunk;
  int64_t chunks = sequence / chunk, inputSize = typeOf(steps).getDimSize(2);
  Value chunkSize = node.int64Constant({chunk}, {});
  // As many chunks as the longest length reaches into.
  Value chunksRun = node.createInferred<DivOp>(
      add(longestLength, node.int64Constant({chunk - 1}, {})), chunkSize);
  SmallVector<int64_t> firstSteps(chunks);
  for (int64_t k = 0; k < chunks; ++k)
    firstSteps[k] = k * chunk;

  // The state carried from chunk to chunk is the last chunk's steps,
  // [chunk, states, batch, hidden], its final states in its last row (its
  // first in reverse); at first every row holds the initial states.
  int64_t stateCount = states.size();
  SmallVector<Value> rows;
  for (Value state : states)
    rows.push_back(reshape(state, {1, 1, batch, hiddenSize}));
  Value initialRow = rows.size() == 1
                         ? rows.front()
                         : node.createInferred<ConcatOp>(ValueRange(rows), b.getI64IntegerAttr(1));
  auto chunkType = RankedTensorType::get({chunk, stateCount, batch, hiddenSize}, elementType);
  Value initial = ExpandOp::create(b, loc, chunkType, initialRow);

  SmallVector<Value> invariants = in.invariants();
  for (Value invariant : {inputWeight, inputBias, longestLength})
    if (invariant)
      invariants.push_back(invariant);
  SmallVector<Value> scanned = {reshape(steps, {chunks, chunk, batch, inputSize}),
                                reshape(withinLength, {chunks, chunk, batch, 1}),
                                node.int64Constant(firstSteps, {chunks})};
  auto resultType =
      RankedTensorType::get({chunks, 1, chunk, stateCount, batch, hiddenSize}, elementType);
  auto scan = ScanOp::create(b, loc, resultType, invariants, ValueRange{initial}, scanned,
                             chunksRun, reverse);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = b.createBlock(&scan.getBody());
    IRMapping inBody;
    for (Value invariant : invariants)
      inBody.map(invariant, body->addArgument(invariant.getType(), loc));
    Value previous = body->addArgument(chunkType, loc);
    SmallVector<Value> slices;
    for (Value operand : scanned)
      slices.push_back(
          body->addArgument(typeOf(operand).clone(typeOf(operand).getShape().drop_front()), loc));
    Value lastRow = slice(previous, 0, reverse ? 0 : chunk - 1, 1);
    SmallVector<Value> carried;
    for (int64_t s = 0; s < stateCount; ++s)
      carried.push_back(reshape(slice(lastRow, 1, s, 1), {batch, hiddenSize}));
    // The chunk's input projection, one product for its steps.
    Value projected = matmul(slices[0], inBody.lookup(inputWeight));
    if (inputBias)
      projected = add(projected, inBody.lookup(inputBias));
    Value length = inBody.lookup(longestLength), firstStep = slices[2];
    Value chunkSteps = scanSteps(in.mappedBy(inBody), carried, projected, slices[1],
                                 sub(length, firstStep), reverse);
    // A chunk past the length leaves the carried steps as they were, as
    // the scan's length requires of the steps it may skip.
    Value reached = node.createInferred<CompareOp>(b.getStringAttr("lt"), firstStep, length);
    YieldOp::create(b, loc,
                    ValueRange{node.createInferred<WhereOp>(reached, chunkSteps, previous)});
  }
  return reshape(scan.getResult(), {sequence, stateCount, batch, hiddenSize});
}

Recurrence::Run Recurrence::runDirection(int64_t direction, bool reverse) {
  auto weight = [&](size_t input) {
    return reshape(slice(node.input(input), 0, direction, 1),
                   typeOf(node.input(input)).getShape().drop_front());
  };
  Value w = weight(1), r = weight(2); // [gates * hidden, input], [gates * hidden, hidden]
  StepInputs in;
  in.direction = direction;
  in.recurrentWeight = transposed(r);
  if (cell == Cell::GRU && !linearBeforeReset) {
    // r_t multiplies h before the candidate's product: that product is a
    // second one, and the first covers the update and reset gates alone.
    in.candidateWeight = slice(in.recurrentWeight, 1, 2 * hiddenSize, hiddenSize);
    in.recurrentWeight = slice(in.recurrentWeight, 1, 0, 2 * hiddenSize);
  }
  Value inputBias;
  if (node.input(3)) {
    Value bias = weight(3); // [2 * gates * hidden]
    inputBias = slice(bias, 0, 0, gates * hiddenSize);
    Value recurrentBias = slice(bias, 0, gates * hiddenSize, gates * hiddenSize);
    // The recurrent bias adds to the gates as the input bias does, except
    // in a GRU with linear_before_reset, where r_t scales the candidate's.
    if (cell == Cell::GRU && linearBeforeReset)
      in.recurrentBias = recurrentBias;
    else
      inputBias = add(inputBias, recurrentBias);
  }
  if (cell == Cell::LSTM && node.input(7))
    in.peephole = weight(7);
  auto initial = [&](size_t input) -> Value {
    // [directions, batch, hidden]; layout 1: [batch, directions, hidden].
    if (node.input(input))
      return reshape(slice(node.input(input), layout == 0 ? 0 : 1, direction, 1),
                     {batch, hiddenSize});
    return node.splatConstant(elementType, 0.0, {batch, hiddenSize});
  };
  SmallVector<Value> states = {initial(5)};
  if (cell == Cell::LSTM)
    states.push_back(initial(6));

  // result[t] holds [h, c] after step t; the last step is t = 0 in reverse.
  Value all;
  if (chunkedProjection) {
    all = scanChunks(in, states, transposed(w), inputBias, reverse);
  } else {
    // The input projection of all steps at once: [sequence, batch, gates * hidden].
    Value projected = matmul(steps, transposed(w));
    if (inputBias)
      projected = add(projected, inputBias);
    all = scanSteps(in, states, projected, withinLength, longestLength, reverse);
  }
  Run run;
  run.hidden = slice(all, 1, 0, 1); // [sequence, 1, batch, hidden]
  int64_t last = reverse ? 0 : sequence - 1;
  Value lastStep = slice(all, 0, last, 1);
  run.lastHidden = reshape(slice(lastStep, 1, 0, 1), {batch, hiddenSize});
  if (cell == Cell::LSTM)
    run.lastCell = reshape(slice(lastStep, 1, 1, 1), {batch, hiddenSize});
  if (withinLength) {
    // Steps past a length output zeros; so do the final states of an empty
    // sequence (as onnxruntime does, whatever the initial states).
    run.hidden = select(reshape(withinLength, {sequence, 1, batch, 1}), run.hidden, zero());
    Value nonEmpty = reshape(slice(withinLength, 0, 0, 1), {batch, 1});
    run.lastHidden = select(nonEmpty, run.lastHidden, zero());
    if (run.lastCell)
      run.lastCell = select(nonEmpty, run.lastCell, zero());
  }
  return run;
}

LogicalResult Recurrence::import() {
  RankedTensorType xType = node.inputType(0);
  if (!xType.hasStaticShape() || xType.getRank() != 3)
    return node.unsupported("X must be a static 3-D tensor");
  if (!isa<FloatType>(xType.getElementType()))
    return node.unsupported("only floating-point inputs are supported");
  elementType = xType.getElementType();
  layout = node.intAttr("layout", 0);
  steps = layout == 0 ? node.input(0)
                      : node.createInferred<TransposeOp>(node.input(0),
                                                         b.getDenseI64ArrayAttr({1, 0, 2}));
  sequence = typeOf(steps).getDimSize(0);
  batch = typeOf(steps).getDimSize(1);
  gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  hiddenSize = node.intAttr("hidden_size").value_or(node.inputType(2).getDimSize(2));
  clip = node.floatAttr("clip", 0.0f);
  if (cell == Cell::GRU)
    linearBeforeReset = node.intAttr("linear_before_reset", 0) != 0;
  if (cell == Cell::LSTM && node.intAttr("input_forget", 0) != 0)
    return node.unsupported("input_forget is not supported");
  if (Value given = node.input(4)) {
    RankedTensorType lengthsType = typeOf(given);
    if (lengthsType.getRank() != 1 || lengthsType.getDimSize(0) != batch)
      return node.unsupported("sequence_lens must hold one length per batch entry (" +
                              std::to_string(batch) + ")");
    std::string range = "[0, " + std::to_string(sequence) + "]";
    Value lengths = runtimeInt64s(node, 4);
    if (ElementsAttr known = node.constantInput(4)) {
      bool allFull = true;
      for (const APInt &length : known.getValues<APInt>()) {
        if (length.getSExtValue() < 0 || length.getSExtValue() > sequence)
          return node.unsupported("sequence_lens holds " + std::to_string(length.getSExtValue()) +
                                  ", outside " + range);
        allFull &= length.getSExtValue() == sequence;
      }
      // Lengths known to be full need no masking.
      if (allFull)
        lengths = Value();
    } else {
      checkLengths(lengths, range);
      chunkedProjection = sequence > 0 && isVaryingLength(node.input(4));
    }
    if (lengths) {
      withinLength = stepsWithinLengths(lengths);
      longestLength = node.createInferred<ReduceOp>(b.getStringAttr("max"), lengths,
                                                    b.getDenseI64ArrayAttr({0}));
    }
  }
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
  if (!readActivations(reversed.size()))
    return failure();

  SmallVector<Run> runs;
  for (auto [index, reverse] : llvm::enumerate(reversed))
    runs.push_back(runDirection(index, reverse));
  // Y: [sequence, directions, batch, hidden] (layout 1: [batch, sequence,
  // directions, hidden]); Y_h and Y_c: [directions, batch, hidden].
  auto stack = [&](ArrayRef<Value> parts, int64_t axis) {
    return parts.size() == 1 ? parts.front()
                             : node.createInferred<ConcatOp>(ValueRange(parts),
                                                             b.getI64IntegerAttr(axis));
  };
  if (node.outputUsed(0)) {
    SmallVector<Value> perDirection;
    for (const Run &run : runs)
      perDirection.push_back(run.hidden);
    Value y = stack(perDirection, 1);
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
