#!/usr/bin/env python3
"""ONNX Scan nodes against onnxruntime, and how Tessel runs their steps.

Each case is a Scan (opset 16) whose body accumulates: the state becomes
state * decay + step (decay a constant of the main graph, or a graph input
the body reads from the outer scope), and each scan output is the new
state or a function of it. The cases vary the scan input's axis and
direction and the scan output's axis and direction, and include one whose
states differ in type. Each is compiled by tessel-compile, run by tessel-run
and compared with onnxruntime (rtol 1e-5, atol 1e-6). The compiled graph
is read back (--emit tessel): a Scan whose states share one type and whose
inputs one direction is one tessel.scan (its steps a loop), any other is
unrolled.
"""

import argparse
import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

OPSET = 16
STEPS, WIDTH = 6, 4


def case(name, input_axis=0, input_direction=0, output_axis=0, output_direction=0,
         decay_input=False, second_state=False):
    return dict(name=name, input_axis=input_axis, input_direction=input_direction,
                output_axis=output_axis, output_direction=output_direction,
                decay_input=decay_input, second_state=second_state)


CASES = [
    case("forward"),
    case("reverse_input", input_direction=1),
    case("reverse_output", output_direction=1),
    case("reverse_both", input_direction=1, output_direction=1),
    case("input_axis_1", input_axis=1),
    case("output_axis_1", output_axis=1),
    case("outer_scope_input", decay_input=True),
    case("states_of_two_types", second_state=True),
]


def build(spec):
    value = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    body_nodes = [helper.make_node("Mul", ["s_in", "decay"], ["scaled"]),
                  helper.make_node("Add", ["scaled", "x"], ["s_out"]),
                  helper.make_node("Tanh", ["s_out"], ["y"])]
    body_inputs, body_outputs = [value("s_in", [2, WIDTH])], [value("s_out", [2, WIDTH])]
    node_inputs, node_outputs = ["s0"], ["s_final"]
    graph_inputs, graph_outputs = [value("s0", [2, WIDTH])], [value("s_final", [2, WIDTH])]
    if spec["second_state"]:
        body_nodes.append(helper.make_node("Add", ["count_in", "one"], ["count_out"]))
        body_inputs.append(value("count_in", [1]))
        body_outputs.append(value("count_out", [1]))
        node_inputs.append("count0")
        node_outputs.append("count_final")
        graph_inputs.append(value("count0", [1]))
        graph_outputs.append(value("count_final", [1]))
    body_inputs.append(value("x", [2, WIDTH]))
    body_outputs.append(value("y", [2, WIDTH]))
    scanned_shape = [STEPS, 2, WIDTH] if spec["input_axis"] == 0 else [2, STEPS, WIDTH]
    output_shape = [STEPS, 2, WIDTH] if spec["output_axis"] == 0 else [2, STEPS, WIDTH]
    node_inputs.append("xs")
    node_outputs.append("ys")
    graph_inputs.append(value("xs", scanned_shape))
    graph_outputs.append(value("ys", output_shape))
    initializers = []
    if spec["second_state"]:
        initializers.append(numpy_helper.from_array(np.array([1.0], np.float32), "one"))
    if spec["decay_input"]:
        graph_inputs.append(value("decay", [WIDTH]))
    else:
        initializers.append(numpy_helper.from_array(
            np.array([0.9, 0.5, -0.5, 1.0], np.float32), "decay"))
    body = helper.make_graph(body_nodes, "body", body_inputs, body_outputs)
    scan = helper.make_node("Scan", node_inputs, node_outputs, name=spec["name"], body=body,
                            num_scan_inputs=1, scan_input_axes=[spec["input_axis"]],
                            scan_input_directions=[spec["input_direction"]],
                            scan_output_axes=[spec["output_axis"]],
                            scan_output_directions=[spec["output_direction"]])
    graph = helper.make_graph([scan], spec["name"], graph_inputs, graph_outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(3)
    feeds = {value.name: rng.standard_normal(
        [d.dim_value for d in value.type.tensor_type.shape.dim]).astype(np.float32)
        for value in graph_inputs}
    return model, feeds, [output.name for output in graph_outputs]


def run_tessel(artifact, feeds, work, count):
    paths = []
    for name, array in feeds.items():
        paths.append(os.path.join(work, name + ".npy"))
        np.save(paths[-1], array)
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    completed = subprocess.run(["tessel-run", artifact, "--input", *paths, "--output-dir", out],
                               capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip())
    return [np.load(os.path.join(out, f"output_{i}.npy")) for i in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    onnxruntime.set_default_logger_severity(3)
    failed = 0
    for spec in CASES:
        model, feeds, outputs = build(spec)
        work = os.path.join(args.work, spec["name"])
        os.makedirs(work, exist_ok=True)
        model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
        onnx.save(model, model_path)
        subprocess.run(["tessel-compile", model_path, "-o", artifact, "-q"], check=True)
        graph = subprocess.run(["tessel-compile", model_path, "--emit", "tessel", "-q"],
                               check=True, capture_output=True, text=True).stdout
        form = "one tessel.scan" if len(re.findall(r"= tessel\.scan ", graph)) == 1 else \
            "unrolled" if "tessel.scan" not in graph else "several tessel.scan"
        session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        expected = session.run(outputs, feeds)
        actual = run_tessel(artifact, feeds, work, len(outputs))
        errors = [f"{name} differs by {np.abs(got - want).max():.3g}" if want.shape == got.shape
                  else f"{name} has shape {got.shape}, expected {want.shape}"
                  for name, want, got in zip(outputs, expected, actual)
                  if want.shape != got.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6)]
        failed += bool(errors)
        verdict = "; ".join(errors) if errors else "match onnxruntime"
        print(f"{spec['name']}: {form}; {', '.join(outputs)} {verdict}")
    print(f"{len(CASES) - failed} passed, {failed} failed")


if __name__ == "__main__":
    main()
