#!/usr/bin/env python3
"""Compiles one model per indexing op whose indices are a graph input, then
runs each with indices in range (outputs compared with onnxruntime's, which
must match exactly: these ops only move elements) and with one index out of
range above and one below (the run must fail, naming the node; onnxruntime
refuses such indices too). Prints one line per run for FileCheck.
"""

import argparse
import os
import subprocess

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper
from tessel_model_run import run_tessel

OPSET = 18


def gather_case(rng):
    data = rng.standard_normal((5, 4)).astype(np.float32)
    indices = rng.integers(-5, 5, (2, 3))
    return "Gather", {"axis": 0}, data, indices, [2, 3, 4], [5]


def gather_elements_case(rng):
    data = rng.standard_normal((3, 6)).astype(np.float32)
    indices = rng.integers(-6, 6, (3, 2))
    return "GatherElements", {"axis": 1}, data, indices, [3, 2], [6]


def gather_nd_case(rng):
    data = rng.standard_normal((3, 4, 2)).astype(np.float32)
    indices = np.stack([rng.integers(-3, 3, 5), rng.integers(-4, 4, 5)], axis=-1)
    return "GatherND", {}, data, indices, [5, 2], [3, 4]


def scatter_elements_case(rng):
    data = rng.standard_normal((4, 3)).astype(np.float32)
    indices = rng.integers(-4, 4, (2, 3))
    return "ScatterElements", {"axis": 0, "reduction": "add"}, data, indices, [4, 3], [4]


def scatter_nd_case(rng):
    data = rng.standard_normal((6, 2)).astype(np.float32)
    indices = rng.integers(-6, 6, (3, 1))
    return "ScatterND", {"reduction": "add"}, data, indices, [6, 2], [6]


CASES = [gather_case, gather_elements_case, gather_nd_case, scatter_elements_case,
         scatter_nd_case]


def build_model(op, attributes, data, indices, output_shape):
    name = op.lower() + "_node"
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, data.shape),
              helper.make_tensor_value_info("indices", TensorProto.INT64, indices.shape)]
    node_inputs = ["data", "indices"]
    if op.startswith("Scatter"):
        updates_shape = indices.shape if op == "ScatterElements" else \
            indices.shape[:-1] + data.shape[indices.shape[-1]:]
        inputs.append(helper.make_tensor_value_info("updates", TensorProto.FLOAT,
                                                    updates_shape))
        node_inputs.append("updates")
    node = helper.make_node(op, node_inputs, ["result"], name=name, **attributes)
    graph = helper.make_graph(
        [node], op.lower(), inputs,
        [helper.make_tensor_value_info("result", TensorProto.FLOAT, output_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    onnxruntime.set_default_logger_severity(4)  # its refusals are expected here
    rng = np.random.default_rng(7)
    for case in CASES:
        op, attributes, data, indices, output_shape, extents = case(rng)
        model = build_model(op, attributes, data, indices, output_shape)
        work = os.path.join(args.work, op)
        os.makedirs(work, exist_ok=True)
        model_path = os.path.join(work, "model.onnx")
        artifact = os.path.join(work, "model.tsl")
        onnx.save(model, model_path)
        subprocess.run(["tessel-compile", model_path, "-o", artifact, "-q"], check=True)
        reference = onnxruntime.InferenceSession(model_path,
                                                 providers=["CPUExecutionProvider"])

        feeds = {"data": data, "indices": indices}
        if op.startswith("Scatter"):
            shape = [i.shape for i in reference.get_inputs() if i.name == "updates"][0]
            feeds["updates"] = rng.standard_normal(shape).astype(np.float32)
        expected = reference.run(None, feeds)[0]
        outputs, code, message = run_tessel(artifact, feeds, work, 1)
        actual = outputs[0] if outputs else None
        if actual is None:
            print(f"{op}: in range: tessel-run failed ({code}): {message}")
        else:
            same = actual.shape == expected.shape and np.array_equal(actual, expected)
            print(f"{op}: in range: {'same as onnxruntime' if same else 'DIFFERS'}")

        # One index one past the end of its axis, one one before the start.
        for label, position, value in [("above", 0, extents[0]), ("below", -1, -extents[-1] - 1)]:
            bad = indices.copy()
            bad.flat[position] = value
            bad_feeds = dict(feeds, indices=bad)
            try:
                reference.run(None, bad_feeds)
                ort = "onnxruntime accepts it"
            except Exception:  # onnxruntime raises its own exception types
                ort = "onnxruntime refuses it"
            outputs, code, message = run_tessel(artifact, bad_feeds, work, 1)
            actual = outputs[0] if outputs else None
            outcome = "ran" if actual is not None else f"exit {code}: {message}"
            print(f"{op}: {label}: {ort}; tessel {outcome}")


if __name__ == "__main__":
    main()
