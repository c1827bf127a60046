#!/usr/bin/env python3
"""LSTM, GRU and RNN nodes in the variants ONNX defines, against onnxruntime.

Each case is a one-node model with random weights (initializers) and
random inputs: directions, biases, peepholes, initial states given as
graph inputs, clip, layout 1, linear_before_reset, non-default
activations, and sequence_lens shorter than the sequence (as a graph input
or a constant; an empty sequence among them). Every case is compiled by tessel-compile and run by
tessel-run; each output (Y, Y_h, Y_c) is compared with onnxruntime's at
rtol 1e-3, atol 1e-4. onnxruntime's CPU kernels refuse layout 1
(batch first): such a case's reference is the same node in layout 0 run by
onnxruntime on the transposed inputs, its outputs transposed back. The compiled graph is also read back (--emit
tessel): a recurrence must be one tessel.scan per direction, its steps a
loop rather than ops per step, and with sequence_lens each scan must be
given the longest length, at which it may stop. Last, a run whose
sequence_lens exceed the sequence must fail, naming the node.
"""

import argparse
import os
import re

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from tessel_model_run import compile_model, differences, run_tessel

OPSET = 14
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def case(name, op, sequence=5, batch=2, inputs=3, hidden=4, direction="forward", bias=True,
         peepholes=False, initial_inputs=False, layout=0, lengths=None, lengths_input=True,
         **attributes):
    """`lengths`: the sequence_lens, fed as a graph input (`lengths_input`)
    or stored as an initializer; None leaves the input out."""
    return dict(name=name, op=op, sequence=sequence, batch=batch, inputs=inputs, hidden=hidden,
                direction=direction, bias=bias, peepholes=peepholes,
                initial_inputs=initial_inputs, layout=layout, lengths=lengths,
                lengths_input=lengths_input, attributes=attributes)


CASES = [
    case("lstm_forward", "LSTM", bias=False),
    case("lstm_bidirectional_peepholes", "LSTM", direction="bidirectional", peepholes=True,
         initial_inputs=True),
    case("lstm_reverse_clip", "LSTM", direction="reverse", clip=0.5),
    case("lstm_layout1", "LSTM", layout=1, initial_inputs=True),
    case("lstm_long", "LSTM", sequence=64, batch=1, inputs=16, hidden=32),
    case("gru_forward", "GRU"),
    case("gru_linear_before_reset_bidirectional", "GRU", direction="bidirectional",
         initial_inputs=True, linear_before_reset=1),
    case("gru_activations", "GRU", activations=["HardSigmoid", "Softsign"],
         activation_alpha=[0.3], activation_beta=[0.4]),
    case("rnn_relu", "RNN", activations=["Relu"]),
    case("rnn_bidirectional_layout1", "RNN", direction="bidirectional", layout=1,
         initial_inputs=True),
    case("lstm_lengths_bidirectional", "LSTM", batch=3, direction="bidirectional",
         peepholes=True, initial_inputs=True, lengths=[5, 2, 0]),
    case("gru_lengths_constant_reverse", "GRU", direction="reverse", initial_inputs=True,
         lengths=[3, 5], lengths_input=False),
    case("rnn_lengths_layout1", "RNN", batch=3, layout=1, initial_inputs=True,
         lengths=[1, 4, 5]),
    # Every sequence shorter than the steps: the scans stop at the longest.
    case("lstm_lengths_short_bidirectional", "LSTM", sequence=7, batch=3,
         direction="bidirectional", initial_inputs=True, lengths=[3, 1, 4]),
    case("gru_lengths_short_constant_reverse", "GRU", sequence=6, direction="reverse",
         initial_inputs=True, lengths=[2, 3], lengths_input=False),
    case("rnn_lengths_all_empty", "RNN", initial_inputs=True, lengths=[0, 0]),
]


def build(spec, layout, seed):
    """The case's model in `layout` and its feeds, the same for both layouts
    up to transposition."""
    rng = np.random.default_rng(seed)
    op, hidden, gates = spec["op"], spec["hidden"], GATES[spec["op"]]
    directions = 2 if spec["direction"] == "bidirectional" else 1
    sequence, batch = spec["sequence"], spec["batch"]

    def weight(name, shape):
        return numpy_helper.from_array((0.5 * rng.standard_normal(shape)).astype(np.float32),
                                       name)

    initializers = [weight("W", [directions, gates * hidden, spec["inputs"]]),
                    weight("R", [directions, gates * hidden, hidden])]
    names = ["X", "W", "R", "", "", "", "", ""]
    if spec["bias"]:
        initializers.append(weight("B", [directions, 2 * gates * hidden]))
        names[3] = "B"
    x_shape, state_shape = [sequence, batch, spec["inputs"]], [directions, batch, hidden]
    y_shape = [sequence, directions, batch, hidden]
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    if layout == 1:
        x_shape, state_shape = [batch, sequence, spec["inputs"]], [batch, directions, hidden]
        y_shape = [batch, sequence, directions, hidden]
        feeds["X"] = feeds["X"].transpose(1, 0, 2)
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    if spec["initial_inputs"]:
        states = ["initial_h"] + (["initial_c"] if op == "LSTM" else [])
        for position, state in zip([5, 6], states):
            graph_inputs.append(helper.make_tensor_value_info(state, TensorProto.FLOAT,
                                                              state_shape))
            value = rng.standard_normal([directions, batch, hidden]).astype(np.float32)
            feeds[state] = value.transpose(1, 0, 2) if layout == 1 else value
            names[position] = state
    if spec["lengths"] is not None:
        lengths = np.array(spec["lengths"], np.int32)
        if spec["lengths_input"]:
            graph_inputs.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32,
                                                              [batch]))
            feeds["sequence_lens"] = lengths
        else:
            initializers.append(numpy_helper.from_array(lengths, "sequence_lens"))
        names[4] = "sequence_lens"
    if spec["peepholes"]:
        initializers.append(weight("P", [directions, 3 * hidden]))
        names[7] = "P"
    while names[-1] == "":
        names.pop()

    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    graph_outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)] + [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, state_shape)
        for name in outputs[1:]]
    node = helper.make_node(op, names, outputs, name=spec["name"], hidden_size=hidden,
                            direction=spec["direction"], layout=layout,
                            **spec["attributes"])
    graph = helper.make_graph([node], spec["name"], graph_inputs, graph_outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    return model, feeds, outputs, directions


def reference_outputs(spec, seed, outputs, work):
    """onnxruntime's outputs for the case, through its layout-0 twin for
    layout 1."""
    model, feeds, _, _ = build(spec, 0, seed)
    path = os.path.join(work, "reference.onnx")
    onnx.save(model, path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = session.run(outputs, feeds)
    if spec["layout"] == 0:
        return expected
    # Y: [sequence, directions, batch, hidden] -> [batch, sequence, directions,
    # hidden]; Y_h, Y_c: [directions, batch, hidden] -> [batch, directions, hidden].
    return [expected[0].transpose(2, 0, 1, 3)] + [state.transpose(1, 0, 2)
                                                  for state in expected[1:]]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    failed = 0
    for seed, spec in enumerate(CASES):
        model, feeds, outputs, directions = build(spec, spec["layout"], seed)
        work = os.path.join(args.work, spec["name"])
        os.makedirs(work, exist_ok=True)
        model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
        onnx.save(model, model_path)
        graph = compile_model(model_path, artifact)
        scans = len(re.findall(r"= tessel\.scan ", graph))
        stopping = len(re.findall(r"= tessel\.scan .* length\(", graph))
        products = len(re.findall(r"= tessel\.matmul ", graph))

        expected = reference_outputs(spec, seed, outputs, work)
        actual, _, message = run_tessel(artifact, feeds, work, len(outputs))
        if actual is None:
            raise RuntimeError(message)
        errors = differences(outputs, expected, actual, rtol=1e-3, atol=1e-4)
        verdict = "; ".join(errors) if errors else "match onnxruntime"
        stopping_expected = directions if spec["lengths"] is not None else 0
        failed += bool(errors) or scans != directions or stopping != stopping_expected
        stops = f" ({stopping} stop at the longest length)" if stopping else ""
        print(f"{spec['name']}: {scans} scans for {directions} directions{stops}, {products} "
              f"matrix products; {', '.join(outputs)} {verdict}")

    # Lengths beyond the sequence are refused when the model runs.
    spec = next(spec for spec in CASES if spec["name"] == "lstm_lengths_bidirectional")
    work = os.path.join(args.work, spec["name"])
    _, feeds, outputs, _ = build(spec, spec["layout"], 0)
    feeds["sequence_lens"] = np.array([5, 6, 1], np.int32)
    actual, status, message = run_tessel(os.path.join(work, "model.tsl"), feeds, work,
                                         len(outputs))
    print(f"sequence_lens [5, 6, 1]: exit {status}: {message}")
    failed += actual is not None

    print(f"{len(CASES) + 1 - failed} passed, {failed} failed")


if __name__ == "__main__":
    main()
