#!/usr/bin/env python3
"""A symbolic sequence length bounded with --max-shape, against onnxruntime.

Each model has inputs whose sequence dimension is the symbol 'seq'. It is
compiled once with --max-shape at a bound, then run by tessel-run at
several lengths up to the bound, each compared with onnxruntime on the
same inputs at that length (rtol 1e-3, atol 1e-4): the recurrences read
the length as their sequence_lens, what follows them computes per
position, y[-1] picks the last step within the length, and nodes that
combine positions (a Softmax, a mean, maximum or sum over the length,
attention's products) read the padding filled. An empty
sequence gives an empty Y and zero final states. Then what must be
refused: at compile time, nodes that let positions along the length meet
where no filled padding undoes it (a CumSum over it, attention's scores as
an output or into a TopK, positions counted up to twice the length or
picked by a list), a position no
length up to the bound has, an integer division by the (zero) padding; at
run time, a length past the bound, a position past the length (y[3] at
length 3) and two inputs of different lengths.
"""

import argparse
import os
import subprocess

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from tessel_model_run import differences, run_tessel

OPSET = 14


class Builder:
    """Nodes, initializers and graph inputs of one model, with random
    weights."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers, self.inputs = [], [], []

    def weight(self, name, shape):
        value = (0.5 * self.rng.standard_normal(shape)).astype(np.float32)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def ints(self, name, values):
        self.initializers.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name

    def input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name

    def node(self, op, inputs, outputs, **attributes):
        self.nodes.append(helper.make_node(op, inputs, outputs, name=outputs[0] + "_node",
                                           **attributes))
        return outputs[0]

    def recurrence(self, op, x, name, inputs, hidden, direction="forward", **attributes):
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        directions = 2 if direction == "bidirectional" else 1
        names = [x, self.weight(name + "_W", [directions, gates * hidden, inputs]),
                 self.weight(name + "_R", [directions, gates * hidden, hidden]),
                 self.weight(name + "_B", [directions, 2 * gates * hidden])]
        outputs = [name + "_Y", name + "_Y_h"] + ([name + "_Y_c"] if op == "LSTM" else [])
        self.node(op, names, outputs, hidden_size=hidden, direction=direction, **attributes)
        return outputs

    def model(self, name, outputs):
        graph = helper.make_graph(self.nodes, name, self.inputs,
                                  [onnx.ValueInfoProto(name=output) for output in outputs],
                                  self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        # The outputs' types (symbolic lengths included), as ONNX infers them.
        inferred = {info.name: info for info in
                    onnx.shape_inference.infer_shapes(model).graph.value_info}
        for output in model.graph.output:
            output.CopyFrom(inferred[output.name])
        onnx.checker.check_model(model, full_check=True)
        return model


def two_layer_lstm(seed):
    """Two stacked LSTMs (the bench's shape, smaller) and a per-step head."""
    b = Builder(seed)
    x = b.input("x", ["seq", 1, 16])
    y1, _, c1 = b.recurrence("LSTM", x, "lstm1", 16, 32)
    squeezed = b.node("Squeeze", [y1, b.ints("axes1", [1])], ["lstm1_out"])
    y2, h2, _ = b.recurrence("LSTM", squeezed, "lstm2", 32, 24)
    steps = b.node("Squeeze", [y2, b.ints("axes2", [1])], ["lstm2_out"])
    projected = b.node("MatMul", [steps, b.weight("head_W", [24, 8])], ["projected"])
    biased = b.node("Add", [projected, b.weight("head_b", [8])], ["biased"])
    head = b.node("Relu", [biased], ["head"])
    # y[-1]: the last step within the length.
    last = b.node("Gather", [steps, b.ints("last_step", -1)], ["last"], axis=0)
    return b.model("two_layer_lstm", [head, h2, c1, last]), ["x"], 12, [12, 8, 5, 1]


def batch_first_gru(seed):
    """A bidirectional GRU over batch-first inputs, transposed in and out."""
    b = Builder(seed)
    x = b.input("x", [3, "seq", 6])
    steps = b.node("Transpose", [x], ["steps"], perm=[1, 0, 2])
    y, h = b.recurrence("GRU", steps, "gru", 6, 10, direction="bidirectional",
                        linear_before_reset=1)
    out = b.node("Transpose", [y], ["out"], perm=[2, 0, 1, 3])
    return b.model("batch_first_gru", [out, h]), ["x"], 9, [9, 4]


def fourth_step(seed):
    """A GRU's fourth step, y[3], which a length of 3 or less lacks."""
    b = Builder(seed)
    y, _ = b.recurrence("GRU", b.input("x", ["seq", 2, 3]), "gru", 3, 4)
    out = b.node("Gather", [y, b.ints("fourth", 3)], ["out"], axis=0)
    return b.model("fourth_step", [out]), ["x"], 6, [6, 4]


def two_input_rnn(seed):
    """Two varying inputs added, an RNN, and a per-step Tanh."""
    b = Builder(seed)
    added = b.node("Add", [b.input("a", ["seq", 2, 4]), b.input("b", ["seq", 2, 4])], ["sum"])
    y, h = b.recurrence("RNN", added, "rnn", 4, 5, direction="reverse")
    out = b.node("Tanh", [y], ["out"])
    # A prime bound above the chunk size: chunks of one step.
    return b.model("two_input_rnn", [out, h]), ["a", "b"], 11, [11, 3]


def over_the_length(seed):
    """An LSTM's steps combined along the length: a Softmax over it, and
    their mean and maximum and the weights' sum and mean over it, which read
    the padding filled."""
    b = Builder(seed)
    y, _, _ = b.recurrence("LSTM", b.input("x", ["seq", 1, 4]), "lstm", 4, 6)
    weights = b.node("Softmax", [y], ["weights"], axis=0)
    mean = b.node("ReduceMean", [y], ["mean"], axes=[0], keepdims=0)
    largest = b.node("ReduceMax", [y], ["largest"], axes=[0, 3])
    total = b.node("ReduceSum", [weights, b.ints("steps_axis", [0])], ["total"])
    # The Softmax's weights past the length are zeros already; their mean
    # is still rescaled to the length (1 / length).
    average = b.node("ReduceMean", [weights], ["average"], axes=[0])
    return (b.model("over_the_length", [weights, mean, largest, total, average]), ["x"], 8,
            [8, 5, 1])


def self_attention(seed):
    """One head of self-attention over a batch-first sequence with an
    additive key mask: the scores pair the positions, queries against keys,
    the Softmax runs over the keys and the product with the values contracts
    them. Then the outputs' sum over the positions."""
    b = Builder(seed)
    x = b.input("x", [2, "seq", 8])
    b.inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [2, "seq"]))
    q = b.node("MatMul", [x, b.weight("Wq", [8, 8])], ["q"])
    k = b.node("MatMul", [x, b.weight("Wk", [8, 8])], ["k"])
    v = b.node("MatMul", [x, b.weight("Wv", [8, 8])], ["v"])
    keys = b.node("Transpose", [k], ["keys"], perm=[0, 2, 1])
    scores = b.node("MatMul", [q, keys], ["scores"])
    scaled = b.node("Div", [scores, b.weight("scale", [])], ["scaled"])
    key_mask = b.node("Unsqueeze", ["mask", b.ints("row_axis", [1])], ["key_mask"])
    masked = b.node("Add", [scaled, key_mask], ["masked"])
    weights = b.node("Softmax", [masked], ["attention"], axis=-1)
    out = b.node("MatMul", [weights, v], ["out"])
    pooled = b.node("ReduceSum", [out, b.ints("positions_axis", [1])], ["pooled"], keepdims=0)
    return b.model("self_attention", [out, pooled]), ["x", "mask"], 10, [10, 6, 1]


def refused(seed, case):
    """An LSTM followed by a node that --max-shape must refuse: one that
    lets positions along the length meet in a way that no filled padding
    undoes, one that picks a position no length up to the bound has, or an
    integer division by the padding."""
    b = Builder(seed)
    y, _, _ = b.recurrence("LSTM", b.input("x", ["seq", 1, 4]), "lstm", 4, 6)
    if case == "CumSum along the length":
        out = b.node("CumSum", [y, b.ints("steps_axis", 0)], ["out"])
    elif case == "attention scores as an output":
        steps = b.node("Squeeze", [y, b.ints("direction_axis", [1, 2])], ["steps"])
        keys = b.node("Transpose", [steps], ["keys"], perm=[1, 0])
        out = b.node("MatMul", [steps, keys], ["out"])
    elif case == "TopK over the keys":
        steps = b.node("Squeeze", [y, b.ints("direction_axis", [1, 2])], ["steps"])
        keys = b.node("Transpose", [steps], ["keys"], perm=[1, 0])
        scores = b.node("MatMul", [steps, keys], ["scores"])
        out = b.node("TopK", [scores, b.ints("k", [1])], ["out", "indices"], axis=-1)
    elif case == "Range up to twice the length":
        shape = b.node("Shape", ["x"], ["shape"])
        size = b.node("Gather", [shape, b.ints("length_entry", 0)], ["size"])
        limit = b.node("Mul", [size, b.ints("two", 2)], ["limit"])
        positions = b.node("Range", [b.ints("zero", 0), limit, b.ints("one", 1)], ["positions"])
        out = b.node("Cast", [positions], ["out"], to=TensorProto.FLOAT)
        return b.model("refused", [out, y]), ["x"], 8, []
    elif case == "Gather of a list of positions":
        out = b.node("Gather", [y, b.ints("first_and_last", [0, -1])], ["out"], axis=0)
    elif case == "Gather of position 9 below bound 8":
        out = b.node("Gather", [y, b.ints("ninth", 9)], ["out"], axis=0)
    else:  # an integer division by a varying input
        b.inputs.append(helper.make_tensor_value_info("n", TensorProto.INT64, ["seq", 2]))
        out = b.node("Div", [b.ints("numerators", [[7, 9]]), "n"], ["out"])
        return b.model("refused", [out, y]), ["x", "n"], 8, []
    return b.model("refused", [out]), ["x"], 8, []


def compile_bounded(model, names, bound, work):
    """Compiles `model` with each of `names` bounded at `bound` along its
    'seq' dimension: (artifact, exit status, stderr)."""
    os.makedirs(work, exist_ok=True)
    model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
    onnx.save(model, model_path)
    flags = []
    for graph_input in model.graph.input:
        if graph_input.name in names:
            dims = [str(bound) if d.dim_param == "seq" else str(d.dim_value)
                    for d in graph_input.type.tensor_type.shape.dim]
            flags += ["--max-shape", graph_input.name + "=" + "x".join(dims)]
    completed = subprocess.run(["tessel-compile", model_path, "-o", artifact, "-q", *flags],
                               capture_output=True, text=True)
    return artifact, completed.returncode, completed.stderr.strip()


def feeds_at(model, length, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for graph_input in model.graph.input:
        shape = [length if d.dim_param == "seq" else d.dim_value
                 for d in graph_input.type.tensor_type.shape.dim]
        feeds[graph_input.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    passed = failed = 0

    def verdict(ok, line):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(line)

    artifacts = {}
    makers = [two_layer_lstm, batch_first_gru, fourth_step, two_input_rnn, over_the_length,
              self_attention]
    for seed, make in enumerate(makers):
        model, names, bound, lengths = make(seed)
        name = model.graph.name
        work = os.path.join(args.work, name)
        artifact, status, message = compile_bounded(model, names, bound, work)
        if status != 0:
            verdict(False, f"{name}: compile failed: {message}")
            continue
        artifacts[name] = (model, artifact, bound)
        session = onnxruntime.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        outputs = [output.name for output in model.graph.output]
        for length in lengths:
            feeds = feeds_at(model, length, seed + length)
            expected = session.run(outputs, feeds)
            actual, _, message = run_tessel(artifact, feeds, work, len(outputs))
            errors = [message] if actual is None else differences(outputs, expected, actual,
                                                                  rtol=1e-3, atol=1e-4)
            shapes = ", ".join(str(list(value.shape)) for value in expected)
            verdict(not errors, f"{name} (bound {bound}) at length {length}: {shapes}: "
                    f"{'; '.join(errors) if errors else 'match onnxruntime'}")

    cases = ["CumSum along the length", "attention scores as an output", "TopK over the keys",
             "Range up to twice the length",
             "Gather of a list of positions", "Gather of position 9 below bound 8",
             "integer Div by a varying input"]
    for seed, case in enumerate(cases):
        model, names, bound, _ = refused(seed, case)
        work = os.path.join(args.work, f"refused{seed}")
        artifact, status, message = compile_bounded(model, names, bound, work)
        written = "written" if os.path.exists(artifact) else "not written"
        verdict(status != 0 and written == "not written",
                f"{case}: exit {status}, artifact {written}: {message}")

    model, artifact, bound = artifacts["two_layer_lstm"]
    feeds = feeds_at(model, bound + 1, 0)
    actual, status, message = run_tessel(artifact, feeds, args.work, 4)
    verdict(actual is None, f"length {bound + 1}: exit {status}: {message}")
    # An empty sequence: no steps, and the final states are the initial
    # ones (zeros), as onnxruntime gives for a sequence_lens of 0.
    model, artifact, bound = artifacts["batch_first_gru"]
    actual, _, message = run_tessel(artifact, feeds_at(model, 0, 0), args.work, 2)
    empty = actual is not None and actual[0].shape == (3, 0, 2, 10) and not actual[1].any()
    verdict(empty, "batch_first_gru at length 0: " + (
        f"{list(actual[0].shape)}, final states all zero: {not actual[1].any()}"
        if actual is not None else message))
    model, artifact, bound = artifacts["fourth_step"]
    actual, status, message = run_tessel(artifact, feeds_at(model, 3, 0), args.work, 1)
    verdict(actual is None, f"y[3] at length 3: exit {status}: {message}")
    model, artifact, bound = artifacts["two_input_rnn"]
    feeds = feeds_at(model, 3, 0)
    feeds["b"] = feeds_at(model, 2, 0)["b"]
    actual, status, message = run_tessel(artifact, feeds, args.work, 2)
    verdict(actual is None, f"lengths 3 and 2: exit {status}: {message}")

    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
