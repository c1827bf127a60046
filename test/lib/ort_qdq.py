#!/usr/bin/env python3
"""Checks that ONNX models quantized by onnxruntime (QDQ format) compile with
Tessel and agree with onnxruntime's own run of the same QDQ model.

QDQ is the format in which most quantized ONNX models reach a compiler: a
float graph whose tensors pass through QuantizeLinear/DequantizeLinear
pairs, written by onnxruntime.quantization.quantize_static. A compiler that
runs such a model must recognise the pairs around each Conv, MatMul, Gemm,
Add and pooling and compute them as onnxruntime does.

The script builds small float models with onnx.helper from a fixed seed,
with weights drawn as trained networks have them (normal, kaiming std
sqrt(2 / fan_in), small biases):

  cnn              [1,3,32,32]: Conv 3x3 + Relu, depthwise Conv 3x3 stride 2
                   + Relu, pointwise Conv 1x1, a residual block (a Conv 3x3
                   + Relu branch and a Conv 1x1 branch, Add, Relu), MaxPool,
                   GlobalAveragePool, Flatten, Gemm. Two outputs: the logits
                   and the pooled feature map, so that thousands of elements
                   are compared, not only ten logits.
  mlp              [4,64]: MatMul + Add + Relu, twice.
  mobilenet-relu6  [1,8,16,16]: MobileNet's inverted residual without the
                   skip: Conv 1x1 + Clip(0, 6), depthwise Conv 3x3 stride 2 +
                   Clip(0, 6), Conv 1x1.
  fire             [1,16,16,16]: SqueezeNet's fire module, a squeeze Conv
                   1x1 + Relu, then an expand Conv 1x1 + Relu and an expand
                   Conv 3x3 + Relu joined by Concat, and the next
                   module's squeeze Conv 1x1.

Each is quantized by quantize_static (QuantFormat.QDQ, per-channel int8
weights) twice: with QUInt8 activations (asymmetric, with zero points) and
with QInt8 symmetric activations (ActivationSymmetric), calibrated by
min-max on 16 seeded random inputs. With --reduce-range the weights are
quantized to 7 bits ([-64, 64]), as onnxruntime's documentation advises for
x86 CPUs without VNNI. Each QDQ model is compiled with
tessel-compile and run by tessel-run and by onnxruntime's
InferenceSession (CPUExecutionProvider, default graph optimizations) on 8
fresh seeded inputs.

Why one quantization step, on 99.9% of the elements: both sides compute
the same integer products, but they requantize the int32 sums to 8 bits
each in their own way (a float multiplier, a fixed-point one), so a sum
that falls within rounding error of a half step may round up on one side
and down on the other. Such a step in a hidden layer can grow to two steps
at the output, which the 0.1% allowance covers; more is a real
disagreement. The step of an output is the scale of
the DequantizeLinear that produces it (the scale of the last QuantizeLinear
before the output); an output that no DequantizeLinear produces is compared
in float with a relative tolerance of 1e-4, and its line says so.

Why --reduce-range on x86 CPUs without VNNI (AVX2, AVX-512 before VNNI):
there onnxruntime's u8 x s8 kernels multiply with vpmaddubsw, which adds
each pair of adjacent u8 * s8 products into a saturating int16. With full
8-bit weights a pair reaches 2 * 255 * 127 = 64770 and is clamped to 32767,
so onnxruntime's own results are then off by up to dozens of steps on many
elements (s8 activations too: onnxruntime shifts them to u8 first). With
7-bit weights a pair is at most 2 * 255 * 64 = 32640 and no sum saturates,
so onnxruntime's integer results are exact and a fair oracle. CPUs with VNNI
(vpdpbusd) accumulate in int32 without saturation and can check full 8-bit
weights. When a model disagrees, the script also runs the QDQ model with
onnx.reference.ReferenceEvaluator in float64 and says how far each side is
from it.

Prints one line per model and activation type:
  <model> <activations>: N elements, M within one step (P%), max diff K steps
then "X of Y quantized models agree within one step on >= 99.9% of
elements". Exits 1 if a model agrees on fewer elements or a tool fails
(with what the tool printed on stderr).
"""

import argparse
import dataclasses
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                      QuantType, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

OPSET = 21
IR_VERSION = 10  # the IR version that came with opset 21
CALIBRATION_SAMPLES = 16
TEST_SAMPLES = 8
REQUIRED_PER_MILLE = 999  # of the elements within one step
STEP_SLACK = 1 + 1e-6  # one step, less the rounding of the difference itself
FLOAT_RTOL = 1e-4
BIAS_STD = 0.05

# Activation type name -> (QuantType, extra options of quantize_static).
ACTIVATIONS = {
    "QUInt8": (QuantType.QUInt8, {}),
    "QInt8": (QuantType.QInt8, {"ActivationSymmetric": True}),
}


class GraphBuilder:
    """Builds a float ONNX graph one layer at a time, with weights drawn
    from `rng` and names that number themselves."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.initializers = []
        self.count = 0

    def fresh_name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def constant(self, prefix, array):
        name = self.fresh_name(prefix)
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def kaiming_weight(self, shape, fan_in):
        """Normal weights with kaiming std sqrt(2 / fan_in), as He
        initialisation and trained ReLU networks have them."""
        return self.constant("w", self.rng.normal(0.0, np.sqrt(2.0 / fan_in), shape))

    def small_bias(self, count):
        return self.constant("b", self.rng.normal(0.0, BIAS_STD, count))

    def node(self, op_type, inputs, output=None, **attributes):
        output = output or self.fresh_name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [output], **attributes))
        return output

    def conv(self, x, in_channels, out_channels, kernel, stride=1, group=1, output=None):
        """Conv with `kernel` x `kernel` filters, padded to keep the size
        (divided by `stride`)."""
        fan_in = in_channels // group * kernel * kernel
        weight = self.kaiming_weight((out_channels, in_channels // group, kernel, kernel), fan_in)
        pad = kernel // 2
        return self.node("Conv", [x, weight, self.small_bias(out_channels)], output,
                         kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[pad] * 4, group=group)

    def relu(self, x, output=None):
        return self.node("Relu", [x], output)

    def relu6(self, x):
        low = self.constant("clip_min", np.array(0.0))
        high = self.constant("clip_max", np.array(6.0))
        return self.node("Clip", [x, low, high])

    def dense(self, x, in_features, out_features):
        """MatMul by a [in, out] weight, then Add of a bias."""
        weight = self.kaiming_weight((in_features, out_features), in_features)
        product = self.node("MatMul", [x, weight])
        return self.node("Add", [product, self.small_bias(out_features)])

    def model(self, name, inputs, outputs):
        """The ModelProto of the graph: `inputs` and `outputs` are
        (name, shape) pairs of float tensors."""
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="ort_qdq.py")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


def cnn_model(rng):
    """A small CNN with the layers of real ones: plain, depthwise and
    pointwise convolutions, a residual block, max and global pooling and a
    classifier."""
    g = GraphBuilder(rng)
    x = g.relu(g.conv("x", 3, 16, 3))                    # [1,16,32,32]
    x = g.relu(g.conv(x, 16, 16, 3, stride=2, group=16))  # [1,16,16,16]
    x = g.conv(x, 16, 32, 1)                             # [1,32,16,16]
    branch = g.relu(g.conv(x, 32, 32, 3))
    shortcut = g.conv(x, 32, 32, 1)
    x = g.relu(g.node("Add", [branch, shortcut]))
    features = g.node("MaxPool", [x], "features", kernel_shape=[2, 2], strides=[2, 2])
    x = g.node("GlobalAveragePool", [features])
    x = g.node("Flatten", [x], axis=1)
    weight = g.kaiming_weight((10, 32), 32)
    g.node("Gemm", [x, weight, g.small_bias(10)], "logits", transB=1)
    return g.model("cnn", [("x", [1, 3, 32, 32])],
                   [("logits", [1, 10]), ("features", [1, 32, 8, 8])])


def mlp_model(rng):
    """Two fully connected layers with ReLU, as MatMul + Add."""
    g = GraphBuilder(rng)
    x = g.relu(g.dense("x", 64, 128))
    g.relu(g.dense(x, 128, 64), output="y")
    return g.model("mlp", [("x", [4, 64])], [("y", [4, 64])])


def mobilenet_relu6_model(rng):
    """MobileNet's expand, depthwise and project convolutions, with Relu6
    as Clip(0, 6)."""
    g = GraphBuilder(rng)
    x = g.relu6(g.conv("x", 8, 32, 1))                     # [1,32,16,16]
    x = g.relu6(g.conv(x, 32, 32, 3, stride=2, group=32))  # [1,32,8,8]
    g.conv(x, 32, 16, 1, output="y")                       # [1,16,8,8]
    return g.model("mobilenet_relu6", [("x", [1, 8, 16, 16])], [("y", [1, 16, 8, 8])])


def fire_model(rng):
    """SqueezeNet's fire module: a squeeze Conv 1x1, then an expand Conv 1x1
    and an expand Conv 3x3 whose results are joined by a Concat (inputs of
    two scales, which the concatenation requantizes to one), read by the
    next module's squeeze Conv 1x1."""
    g = GraphBuilder(rng)
    x = g.relu(g.conv("x", 16, 8, 1))       # [1,8,16,16]
    left = g.relu(g.conv(x, 8, 16, 1))      # [1,16,16,16]
    right = g.relu(g.conv(x, 8, 16, 3))     # [1,16,16,16]
    x = g.node("Concat", [left, right], axis=1)  # [1,32,16,16]
    g.conv(x, 32, 16, 1, output="y")            # the next fire's squeeze
    return g.model("fire", [("x", [1, 16, 16, 16])], [("y", [1, 16, 16, 16])])


MODELS = {
    "cnn": cnn_model,
    "mlp": mlp_model,
    "mobilenet-relu6": mobilenet_relu6_model,
    "fire": fire_model,
}


def input_shapes(model):
    """name -> shape of each graph input."""
    return {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in model.graph.input}


def random_inputs(rng, shapes, count):
    """`count` feeds of standard normal inputs, as normalised data is."""
    return [{name: rng.standard_normal(shape).astype(np.float32)
             for name, shape in shapes.items()} for _ in range(count)]


class ListDataReader(CalibrationDataReader):
    """Hands quantize_static a list of feeds, one at a time."""

    def __init__(self, feeds):
        self.feeds = iter(feeds)

    def get_next(self):
        return next(self.feeds, None)


def quantize_to_qdq(float_path, qdq_path, calibration_feeds, activations, reduce_range):
    """Writes the QDQ model that onnxruntime's quantize_static makes of the
    model at `float_path`, with per-channel int8 weights (7-bit if
    `reduce_range`). Shape inference runs first; its graph optimizations do
    not, so that MatMul + Add stays as written instead of becoming Gemm."""
    prepared = qdq_path.replace(".onnx", ".prepared.onnx")
    quant_pre_process(float_path, prepared, skip_optimization=True)
    activation_type, extra_options = ACTIVATIONS[activations]
    quantize_static(prepared, qdq_path, ListDataReader(calibration_feeds),
                    quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=reduce_range,
                    activation_type=activation_type, weight_type=QuantType.QInt8,
                    extra_options=extra_options)


def output_steps(model):
    """name -> quantization step of each graph output: the scale of the
    DequantizeLinear that produces it, or None when no DequantizeLinear
    with a per-tensor initializer scale does."""
    producers = {output: node for node in model.graph.node for output in node.output}
    initializers = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    steps = {}
    for output in model.graph.output:
        node = producers.get(output.name)
        scale = None
        if node is not None and node.op_type == "DequantizeLinear":
            scale = initializers.get(node.input[1])
        steps[output.name] = float(scale) if scale is not None and scale.size == 1 else None
    return steps


def run_onnxruntime(model_path, feeds):
    """onnxruntime's outputs for each feed, on the CPU with its default
    graph optimizations (which fuse the QDQ pairs into integer kernels)."""
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return [session.run(None, feed) for feed in feeds]


class ToolFailure(Exception):
    """A Tessel tool exited with an error; the message is what it said."""


def run_tool(command):
    process = subprocess.run(command, capture_output=True, text=True)
    if process.returncode != 0:
        lines = [f"{os.path.basename(command[0])} exited with {process.returncode}: "
                 + " ".join(command)]
        lines += process.stderr.strip().splitlines() or process.stdout.strip().splitlines()
        raise ToolFailure("\n  ".join(lines))


def tool_path(tools, name):
    """The path of a Tessel tool: in `tools`, else found on PATH."""
    return os.path.join(tools, name) if tools else name


def run_tessel(tools, model_path, directory, feeds, input_names, output_count):
    """Compiles the model with tessel-compile, runs each feed with
    tessel-run; returns the outputs of each feed."""
    artifact = os.path.join(directory, "model.tsl")
    run_tool([tool_path(tools, "tessel-compile"), model_path, "-o", artifact, "-q"])
    return run_artifact(tools, artifact, directory, feeds, input_names, output_count)


def run_artifact(tools, artifact, directory, feeds, input_names, output_count):
    """tessel-run's outputs of `artifact` for each feed (inputs written as
    .npy files under `directory`)."""
    results = []
    for index, feed in enumerate(feeds):
        sample = os.path.join(directory, f"sample_{index}")
        os.makedirs(sample, exist_ok=True)
        input_files = []
        for position, name in enumerate(input_names):
            path = os.path.join(sample, f"input_{position}.npy")
            np.save(path, feed[name])
            input_files.append(path)
        outputs = os.path.join(sample, "tessel")
        run_tool([tool_path(tools, "tessel-run"), artifact, "--input", *input_files,
                  "--output-dir", outputs])
        results.append([np.load(os.path.join(outputs, f"output_{i}.npy"))
                        for i in range(output_count)])
    return results


def within_one_step(tessel, ort, step):
    """Elements of `tessel` within one quantization step of `ort`, and the
    largest difference in steps."""
    difference = np.abs(tessel.astype(np.float64) - ort.astype(np.float64))
    return difference <= step * STEP_SLACK, float(difference.max(initial=0.0)) / step


def within_float_tolerance(tessel, ort):
    """Elements of `tessel` within FLOAT_RTOL of `ort` (relative to the
    larger of |ort| and 1), and the largest relative difference."""
    ort = ort.astype(np.float64)
    relative = np.abs(tessel.astype(np.float64) - ort) / np.maximum(np.abs(ort), 1.0)
    return relative <= FLOAT_RTOL, float(relative.max(initial=0.0))


@dataclasses.dataclass
class Agreement:
    """How closely one side's outputs follow another's."""

    elements: int = 0
    within: int = 0  # elements within one step (or FLOAT_RTOL)
    worst: float = 0.0  # the largest difference, in steps
    notes: list = dataclasses.field(default_factory=list)

    def passed(self):
        return self.elements > 0 and 1000 * self.within >= REQUIRED_PER_MILLE * self.elements

    def percent(self):
        """The share within one step, rounded down to 0.1% so that 100.0%
        means every element."""
        per_mille = 1000 * self.within // self.elements if self.elements else 0
        return f"{per_mille // 10}.{per_mille % 10}%"


def compare(model, tessel_runs, ort_runs):
    """Compares every output of every run of `model`."""
    steps = output_steps(model)
    names = [o.name for o in model.graph.output]
    agreement = Agreement()
    for tessel_outputs, ort_outputs in zip(tessel_runs, ort_runs):
        for name, tessel, ort in zip(names, tessel_outputs, ort_outputs):
            if tessel.shape != ort.shape:
                agreement.notes.append(f"output '{name}': shape {list(tessel.shape)} "
                                       f"against {list(ort.shape)}")
                agreement.elements += ort.size
                agreement.worst = float("inf")
                continue
            if steps[name] is None:
                good, largest = within_float_tolerance(tessel, ort)
                note = (f"output '{name}' is not produced by DequantizeLinear: "
                        f"compared in float, rtol {FLOAT_RTOL}")
                if note not in agreement.notes:
                    agreement.notes.append(note)
            else:
                good, largest = within_one_step(tessel, ort, steps[name])
            agreement.elements += good.size
            agreement.within += int(good.sum())
            agreement.worst = max(agreement.worst, largest)
    return agreement


def promoted_to_float64(model):
    """A copy of `model` whose float initializers (scales, float biases) are
    float64, so that onnx.reference computes its float ops in float64."""
    promoted = onnx.ModelProto()
    promoted.CopyFrom(model)
    for initializer in promoted.graph.initializer:
        array = numpy_helper.to_array(initializer)
        if array.dtype == np.float32:
            initializer.CopyFrom(numpy_helper.from_array(array.astype(np.float64), initializer.name))
    return promoted


def run_reference(model, feeds):
    """onnx.reference's outputs for each feed, computed in float64: QDQ's
    real-valued semantics (dequantize, compute, quantize) without fusion
    into integer kernels. In float32 its own rounding would move sums that
    lie near a half step by a step; in float64 products of 8-bit integers and
    float32 scales are exact and sums are off by far less than any real
    difference."""
    evaluator = ReferenceEvaluator(promoted_to_float64(model))
    return [evaluator.run(None, {name: array.astype(np.float64) for name, array in feed.items()})
            for feed in feeds]


def explain_disagreement(model, feeds, tessel_runs, ort_runs):
    """Prints how far Tessel and onnxruntime each are from onnx.reference
    on the same inputs, to tell which side is off."""
    try:
        reference_runs = run_reference(model, feeds)
    except Exception as error:  # a missing op in onnx.reference, say
        print(f"  onnx.reference could not run the model: {error}")
        return
    for side, runs in (("Tessel", tessel_runs), ("onnxruntime", ort_runs)):
        agreement = compare(model, runs, reference_runs)
        print(f"  {side} against onnx.reference (float64): {agreement.within} of {agreement.elements} "
              f"within one step ({agreement.percent()}), max diff {agreement.worst:.3g} steps")


@dataclasses.dataclass
class PreparedModel:
    """A float model of MODELS saved in its own folder, with its inputs."""
    directory: str
    float_path: str
    input_names: list
    calibration: list  # feeds
    tests: list


def prepare_model(name, activations, work, seed):
    """Builds float model `name` from `seed` into `work`/name-activations and
    draws its calibration and test feeds (seeds + 1 and + 2)."""
    directory = os.path.join(work, f"{name}-{activations}")
    os.makedirs(directory, exist_ok=True)
    float_model = MODELS[name](np.random.default_rng(seed))
    float_path = os.path.join(directory, "float.onnx")
    onnx.save(float_model, float_path)
    shapes = input_shapes(float_model)
    return PreparedModel(
        directory, float_path, list(shapes),
        random_inputs(np.random.default_rng(seed + 1), shapes, CALIBRATION_SAMPLES),
        random_inputs(np.random.default_rng(seed + 2), shapes, TEST_SAMPLES))


def check_model(name, activations, args, seed):
    """Builds, quantizes, compiles and runs one model; prints its line and
    returns whether it agrees on at least REQUIRED_PER_MILLE of elements."""
    prepared = prepare_model(name, activations, args.work, seed)
    directory, tests = prepared.directory, prepared.tests

    qdq_path = os.path.join(directory, "model.onnx")
    quantize_to_qdq(prepared.float_path, qdq_path, prepared.calibration, activations,
                    args.reduce_range)
    qdq_model = onnx.load(qdq_path)
    label = f"{name} {activations}"
    try:
        tessel_runs = run_tessel(args.tools, qdq_path, directory, tests, prepared.input_names,
                                 len(qdq_model.graph.output))
    except ToolFailure as failure:
        print(f"{label}: FAILED, a tool failed ({qdq_path})\n  {failure}")
        return False
    ort_runs = run_onnxruntime(qdq_path, tests)
    agreement = compare(qdq_model, tessel_runs, ort_runs)
    for note in agreement.notes:
        print(f"{label}: {note}")
    verdict = "" if agreement.passed() else f" FAILED: below {REQUIRED_PER_MILLE / 10}% ({qdq_path})"
    print(f"{label}: {agreement.elements} elements, {agreement.within} within one step "
          f"({agreement.percent()}), max diff {agreement.worst:.3g} steps{verdict}")
    if not agreement.passed():
        explain_disagreement(qdq_model, tests, tessel_runs, ort_runs)
    return agreement.passed()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True, help="folder for the models and outputs")
    parser.add_argument("--tools", help="folder of tessel-compile and tessel-run (default: PATH)")
    parser.add_argument("--seed", type=int, default=20261201, help="seed of weights and inputs")
    parser.add_argument("--reduce-range", action="store_true",
                        help="quantize weights to 7 bits (for onnxruntime on x86 without VNNI)")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    weights = "7-bit (reduce_range)" if args.reduce_range else "8-bit"
    print(f"quantize_static QDQ, per-channel {weights} QInt8 weights, min-max calibration "
          f"on {CALIBRATION_SAMPLES} inputs; {TEST_SAMPLES} test inputs per model")

    return check_every_model(check_model, ACTIVATIONS, args, "quantized models")


def check_every_model(check, activation_kinds, args, what):
    """Runs check(name, activations, args, seed) on every model with each
    activation kind (each model its own seed) and prints how many of `what`
    agree; returns the exit status."""
    results = []
    for model_index, name in enumerate(MODELS):
        for activations in activation_kinds:
            results.append(check(name, activations, args, args.seed + 10 * model_index))
    print(f"{sum(results)} of {len(results)} {what} agree within one step "
          f"on >= {REQUIRED_PER_MILLE / 10}% of elements")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
