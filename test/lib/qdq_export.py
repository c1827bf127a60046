#!/usr/bin/env python3
"""Checks that `tessel-compile --emit qdq-onnx` writes the model Tessel's
post-training quantization computes: a standard QDQ ONNX model that
onnxruntime runs to Tessel's own results.

For each float model of ort_qdq.py (a CNN, an MLP, a MobileNet block, a
fire module; fixed seeds) and each activation type (u8 with zero points, s8
symmetric), the script calibrates Tessel's PTQ on 16 seeded inputs,
compiles the artifact and exports the QDQ model with the same options, then
on 8 fresh inputs compares Tessel's artifact (tessel-run) with

  - onnxruntime's run of the exported model with its basic graph
    optimizations (CPUExecutionProvider): each QuantizeLinear, DequantizeLinear
    and float op run as written, which is what the QDQ model means, and
  - onnx.reference's run of it in float64: the same semantics, computed
    without float32 rounding,

requiring agreement within one quantization step (the scale of the
DequantizeLinear that produces the output; rtol 1e-4 for a float output)
on at least 99.9% of the elements. The exported model must also pass
onnx.checker's full check.

A third line, which decides nothing, compares onnxruntime with its default
optimizations, which fuse the QDQ pairs into integer kernels. On x86 CPUs
without VNNI those multiply u8 x s8 with VPMADDUBSW into saturating 16-bit
pair sums (see ort_qdq.py). The weights here are quantized with
--weight-pairs fit-i16, so the pairs of adjacent input channels fit; but
onnxruntime's im2col also pairs the last channel of one kernel position with
the first of the next when the channel count is odd (the CNN's RGB input),
and such a pair can saturate, off by several steps. With VNNI nothing
saturates.

Prints per model and activation type:
  <model> <activations>: <nodes of the export>
  <model> <activations> onnxruntime: N elements, M within one step (P%), max diff K steps
  <model> <activations> onnx.reference: ...
  <model> <activations> onnxruntime integer kernels (not checked): ...
then "X of Y exported models agree within one step on >= 99.9% of elements".
Exits 1 if any does not, or a tool fails.
"""

import argparse
import collections
import os
import sys

import numpy as np
import onnx
import onnxruntime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_qdq import (CALIBRATION_SAMPLES, REQUIRED_PER_MILLE, TEST_SAMPLES,  # noqa: E402
                     ToolFailure, check_every_model, compare, prepare_model, run_artifact,
                     run_reference, run_tool, tool_path)

ACTIVATIONS = ("u8", "s8")


def write_calibration(directory, feeds):
    """One .npy per input, named after it, the samples stacked on a leading
    axis (a layout tessel-compile --calibration reads)."""
    os.makedirs(directory, exist_ok=True)
    for name in feeds[0]:
        np.save(os.path.join(directory, f"{name}.npy"), np.stack([feed[name] for feed in feeds]))


def run_onnxruntime(model_path, feeds, level):
    """onnxruntime's outputs for each feed, on the CPU at graph
    optimization `level`."""
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = level
    session = onnxruntime.InferenceSession(model_path, options,
                                           providers=["CPUExecutionProvider"])
    return [session.run(None, feed) for feed in feeds]


def describe_nodes(model):
    """'Conv 5, QuantizeLinear 9, ...' and the integer weight count."""
    counts = collections.Counter(node.op_type for node in model.graph.node)
    integers = sum(1 for i in model.graph.initializer
                   if i.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8) and i.dims)
    nodes = ", ".join(f"{op} {count}" for op, count in sorted(counts.items()))
    return f"{nodes}; {integers} 8-bit weight tensors"


def check_model(name, activations, args, seed):
    """Quantizes, compiles, exports and runs one model; prints its lines and
    returns whether both comparisons pass."""
    label = f"{name} {activations}"
    prepared = prepare_model(name, activations, args.work, seed)
    directory, float_path, tests = prepared.directory, prepared.float_path, prepared.tests
    calibration = os.path.join(directory, "calibration")
    write_calibration(calibration, prepared.calibration)

    artifact = os.path.join(directory, "model.tsl")
    exported = os.path.join(directory, "model_int8.onnx")
    quantize = ["--quantize", "int8", "--calibration", calibration, "--activations", activations,
                "--weight-pairs", "fit-i16", "-q"]
    compile_tool = tool_path(args.tools, "tessel-compile")
    try:
        run_tool([compile_tool, float_path, "-o", artifact, *quantize])
        run_tool([compile_tool, float_path, "-o", exported, "--emit", "qdq-onnx", *quantize])
        model = onnx.load(exported)
        onnx.checker.check_model(model, full_check=True)
        tessel_runs = run_artifact(args.tools, artifact, directory, tests, prepared.input_names,
                                   len(model.graph.output))
    except (ToolFailure, onnx.checker.ValidationError) as failure:
        print(f"{label}: FAILED ({directory})\n  {failure}")
        return False
    print(f"{label}: {describe_nodes(model)}")

    levels = onnxruntime.GraphOptimizationLevel
    passed = True
    for oracle, runs, decides in (
            ("onnxruntime", run_onnxruntime(exported, tests, levels.ORT_ENABLE_BASIC), True),
            ("onnx.reference", run_reference(model, tests), True),
            ("onnxruntime integer kernels (not checked)",
             run_onnxruntime(exported, tests, levels.ORT_ENABLE_ALL), False)):
        agreement = compare(model, tessel_runs, runs)
        for note in agreement.notes:
            if decides:
                print(f"{label} {oracle}: {note}")
        failed = decides and not agreement.passed()
        verdict = f" FAILED: below {REQUIRED_PER_MILLE / 10}%" if failed else ""
        print(f"{label} {oracle}: {agreement.elements} elements, {agreement.within} within one "
              f"step ({agreement.percent()}), max diff {agreement.worst:.3g} steps{verdict}")
        passed = passed and not failed
    return passed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True, help="folder for the models and outputs")
    parser.add_argument("--tools", help="folder of tessel-compile and tessel-run (default: PATH)")
    parser.add_argument("--seed", type=int, default=20261124, help="seed of weights and inputs")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    print(f"Tessel PTQ (min-max on {CALIBRATION_SAMPLES} inputs, fit-i16 weights) exported as "
          f"QDQ ONNX; {TEST_SAMPLES} test inputs per model")
    return check_every_model(check_model, ACTIVATIONS, args, "exported models")


if __name__ == "__main__":
    sys.exit(main())
