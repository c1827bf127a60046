#!/usr/bin/env python3
"""Proves Tessel's INT8 QLinearConv and QLinearMatMul bit-exact on random cases.

Draws configurations of QLinearConv and QLinearMatMul from a seed and packs
them a batch at a time into ONNX models whose nodes are independent (graph
input xI, graph output yI). Every scale, zero point, weight and bias is an
initializer, so that Tessel compiles the nodes onto its integer path.
Expected outputs come from onnx.reference.ReferenceEvaluator: products
accumulated in int32, scaled by x_scale * w_scale / y_scale, offset by the
output zero point, rounded half to even and saturated to the 8-bit output
type. Each model is compiled with tessel-compile and checked with tessel-run
at rtol 0, atol 0.

About 60% are QLinearConv: batch 1-2, 1-16 channels, plain, grouped or
depthwise (1 or 2 filters per channel), 2-D (3 in 4), 1-D or small 3-D,
kernels 1-4, strides 1-3, dilations 1-2, pads 0-2 per side; x u8 or i8,
w i8 with zero point 0 or random or u8, w_scale per tensor or per output
channel, an int32 bias in half of them. The rest are QLinearMatMul: M 1-12,
K 1-48, N 1-24, 2-D or a batched (up to 3) with b 2-D, batched or of batch 1,
b_scale per tensor or per column. Every zero point but w's is random and
every tensor uniform over its type; x and w scales are log-uniform in
[1e-3, 1e-1].

Two limits of onnx.reference shape the convolutions drawn: its Conv fails
on a pad wider than the dilated kernel, and it broadcasts a per-channel
w_scale correctly only for 2-D convolutions (it expands the scale to
[1, F, 1, 1]), so per-channel scales are drawn for 2-D convolutions only.
A per-channel (or per-column) scale comes with a zero point per channel
(column), as quantizers write them, or with one zero point for all.

With --space npu, every configuration is one the NPU target runs (2-D
convolutions of batch 1 or 2 and one group or depthwise (one in four), 2-D
products and 3-D ones of 2-D or batched weights, with weights of any
8-bit type and zero points; padding shorter than the dilated kernel), larger
so that the
layers take several folds, filter chunks and tiles (up to 48 channels, 70
filters, 16 x 16 inputs; products up to 40 x 100 x 70). They are compiled
with --target npu, and the placement tessel-compile prints must show every
one's product on the NPU.

With --space amx, every configuration is one that x86 CPUs with AMX-INT8
compute on AMX tiles: 2-D convolutions of one group whose input channels
are a multiple of four (4 to 128, so that the reduction takes several
64-byte steps, of equal sizes or with a partial one), up to 100 filters and
20 x 20 inputs (rows of more than 16 output pixels and more than 64 output
channels take several tiles and blocks, with partial ones), and matrix
products whose k is a multiple of four. Compiled for the host, they run on AMX only where it has
AMX-INT8 (the test that uses it requires it).

The output scale aims the spread of the outputs at U(20, 120) quantization
steps around a random zero point, so that most outputs are in range and
some saturate. In one configuration of five all scales are powers of two:
the multiplier x_scale * w_scale / y_scale is then a power of two 2^-k, and
one output in 2^k falls exactly halfway between two integers, which tests
the rounding of ties to even.

Prints every configuration that is not bit-exact with what shows it: the
lines of tessel-run, or the failure of a tool (a model whose tools fail is
tested again one configuration at a time, to find those that make it fail).
Then one summary line "N configurations: P bit-exact, F differ"; exits 1 if
a configuration differs or a tool fails.
"""

import argparse
import dataclasses
import math
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OPSET = 13
IR_VERSION = 7  # the IR version that came with opset 13

SHORT_NAMES = {np.dtype(np.uint8): "u8", np.dtype(np.int8): "i8"}

# tessel-run's line for one output, e.g.
# output 3 'y3' [1, 4, 5, 5]: max abs error 0, max rel error 0, 0 of 100 outside rtol 0 atol 0
RESULT_LINE = re.compile(r"^output \d+ '(?P<name>[^']*)' .* (?P<bad>\d+) of \d+ outside ")


@dataclasses.dataclass
class Config:
    """One node under test: what describes it, and the tensors that make it."""

    index: int
    op_type: str
    params: dict  # the parameters a report shows, in order
    attributes: dict
    x: np.ndarray  # the graph input
    constants: list  # (role, array): the node's inputs after x, as initializers
    y_dtype: np.dtype
    y_shape: tuple

    def describe(self):
        """One line with every parameter of the configuration."""
        fields = " ".join(f"{key}={value}" for key, value in self.params.items())
        return f"#{self.index} {self.op_type} {fields}"


def log_uniform(rng, low, high, size=None):
    """Float32 values drawn uniformly in log scale from [low, high]."""
    return np.exp(rng.uniform(math.log(low), math.log(high), size)).astype(np.float32)


def random_integers(rng, dtype, shape):
    """Integers uniform over the whole range of `dtype`."""
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def random_int8_type(rng):
    """uint8 or int8, evenly."""
    return np.dtype(np.uint8) if rng.random() < 0.5 else np.dtype(np.int8)


def random_zero_point(rng, dtype, count=None):
    """A zero point anywhere in the range of `dtype`, or `count` of them."""
    return random_integers(rng, dtype, () if count is None else (count,))


def short_type(array):
    """u8[2, 3] style name of an array's type and shape."""
    return f"{SHORT_NAMES[array.dtype]}{list(array.shape)}"


def show_scale(scale):
    """A scale for a report: its value, or the count of a per-axis one."""
    return f"{float(scale):.6g}" if scale.ndim == 0 else f"per-axis[{scale.size}]"


def show_zero_point(zero_point):
    """A zero point for a report: its value, or its values."""
    return str(int(zero_point)) if zero_point.ndim == 0 else str(zero_point.tolist())


def accumulator_rms(x_dtype, x_zero_point, rows):
    """Root mean square over uniform random x of sum_j (x_j - x_zero_point) * r_j
    for each row r of `rows` (weights less their zero point)."""
    info = np.iinfo(x_dtype)
    mean = (int(info.min) + int(info.max)) / 2 - int(x_zero_point)
    variance = ((int(info.max) - int(info.min) + 1) ** 2 - 1) / 12
    rows = rows.astype(np.float64)
    return np.sqrt((mean * rows.sum(axis=1)) ** 2 + variance * (rows**2).sum(axis=1))


def power_of_two(scale):
    """The power of two nearest `scale` in log scale."""
    return (2.0 ** np.round(np.log2(scale))).astype(np.float32)


def output_quantization(rng, x_scale, row_scales, row_rms, powers_of_two):
    """Output type, zero point and scale that spread the outputs over
    U(20, 120) steps: the typical real output is the median over rows of
    x_scale * row scale * accumulator rms. A power of two if `powers_of_two`."""
    y_dtype = random_int8_type(rng)
    typical = float(x_scale) * float(np.median(row_scales * np.maximum(row_rms, 1.0)))
    y_scale = np.array(typical / rng.uniform(20, 120), dtype=np.float32)
    if powers_of_two:
        y_scale = power_of_two(y_scale)
    return y_dtype, random_zero_point(rng, y_dtype), y_scale


def weight_zero_point(rng, count):
    """A convolution weight's zero point, whose type is the weight's: int8 0
    (most), int8 random, or uint8 128 or random; `count` of them (one per
    output channel) unless `count` is None."""
    draw = rng.random()
    if draw < 0.6:
        return np.zeros(() if count is None else (count,), np.int8)
    if draw < 0.8:
        return random_zero_point(rng, np.int8, count)
    if rng.random() < 0.5:
        return np.full(() if count is None else (count,), 128, np.uint8)
    return random_zero_point(rng, np.uint8, count)


def weight_scale(rng, count):
    """A scale log-uniform in [1e-3, 1e-1], or for `count` channels scales
    within a factor 2 of such a base."""
    if count is None:
        return log_uniform(rng, 1e-3, 1e-1)
    return log_uniform(rng, 1e-3, 1e-1) * log_uniform(rng, 0.5, 2.0, count)


def conv_grouping(rng, channels):
    """Group and filter counts: plain, depthwise (multiplier 1 or 2), or
    another divisor of the channels (plain when there is none)."""
    kind = rng.choice(["plain", "depthwise", "grouped"], p=[0.5, 0.25, 0.25])
    divisors = [d for d in range(2, channels) if channels % d == 0]
    if kind == "depthwise":
        return channels, channels * int(rng.integers(1, 3))
    if kind == "grouped" and divisors:
        group = int(rng.choice(divisors))
        return group, group * int(rng.integers(1, 16 // group + 1))
    return 1, int(rng.integers(1, 17))


def conv_axis(rng, size, shorter_pads=False):
    """Kernel, stride, dilation, begin and end pads, and output size of one
    spatial axis of `size`: the dilated kernel fits the padded input, and no
    pad is wider than the dilated kernel (onnx.reference fails on those),
    nor as wide with `shorter_pads`."""
    while True:
        kernel = int(rng.integers(1, 5))
        dilation = 2 if rng.random() < 0.3 else 1
        begin, end = (int(p) for p in rng.integers(0, 3, size=2))
        extent = (kernel - 1) * dilation + 1
        widest = extent - 1 if shorter_pads else extent
        if extent <= size + begin + end and max(begin, end) <= widest:
            stride = int(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2]))
            output = (size + begin + end - extent) // stride + 1
            return kernel, stride, dilation, begin, end, output


def conv_config(rng, index, space="all"):
    """A random QLinearConv: 2-D mostly, some 1-D and a few small 3-D; with
    space `npu`, one the NPU runs, with `amx` one for AMX tiles."""
    npu = space == "npu"
    if space == "amx":
        rank, batch, channels = 2, int(rng.integers(1, 3)), 4 * int(rng.integers(1, 33))
        group, filters = 1, int(rng.integers(1, 101))
        sizes = [int(s) for s in rng.integers(1, 21, size=2)]
    elif npu:
        rank, batch, channels = 2, int(rng.integers(1, 3)), int(rng.integers(1, 49))
        group, filters = 1, int(rng.integers(1, 71))
        if channels > 1 and rng.random() < 0.25:  # depthwise
            group = filters = channels
        sizes = [int(s) for s in rng.integers(1, 17, size=2)]
    else:
        rank = int(rng.choice([1, 2, 3], p=[0.17, 0.75, 0.08]))
        batch = int(rng.integers(1, 3))
        channels = int(rng.integers(1, 17 if rank < 3 else 9))
        group, filters = conv_grouping(rng, channels)
        sizes = [int(s) for s in rng.integers(1, {1: 17, 2: 11, 3: 6}[rank] + 1, size=rank)]
    kernels, strides, dilations, begins, ends, outputs = (
        list(values) for values in zip(*(conv_axis(rng, size, npu and axis == 0)
                                         for axis, size in enumerate(sizes))))

    x_dtype = random_int8_type(rng)
    x = random_integers(rng, x_dtype, [batch, channels] + sizes)
    x_zero_point = random_zero_point(rng, x_dtype)
    x_scale = log_uniform(rng, 1e-3, 1e-1)

    per_channel = rank == 2 and rng.random() < 0.5
    w_shape = [filters, channels // group] + kernels
    w_zero_point = weight_zero_point(
        rng, filters if per_channel and rng.random() < 0.5 else None)
    w = random_integers(rng, w_zero_point.dtype, w_shape)
    w_scale = weight_scale(rng, filters if per_channel else None)
    powers_of_two = rng.random() < 0.2
    if powers_of_two:
        x_scale, w_scale = power_of_two(x_scale), power_of_two(w_scale)

    rows = w.reshape(filters, -1).astype(np.int64) - w_zero_point.reshape(-1, 1)
    row_scales = np.broadcast_to(w_scale, (filters,))
    y_dtype, y_zero_point, y_scale = output_quantization(
        rng, x_scale, row_scales, accumulator_rms(x_dtype, x_zero_point, rows),
        powers_of_two)

    constants = [("x_scale", x_scale), ("x_zero_point", x_zero_point), ("w", w),
                 ("w_scale", w_scale), ("w_zero_point", w_zero_point),
                 ("y_scale", y_scale), ("y_zero_point", y_zero_point)]
    bias = rng.random() < 0.5
    if bias:
        constants.append(("B", rng.integers(-4000, 4001, size=filters, dtype=np.int32)))
    y_shape = (batch, filters, *outputs)
    params = {
        "x": short_type(x), "x_zp": show_zero_point(x_zero_point),
        "x_scale": show_scale(x_scale),
        "w": short_type(w), "w_zp": show_zero_point(w_zero_point),
        "w_scale": show_scale(w_scale),
        "group": group, "kernel": kernels, "strides": strides,
        "dilations": dilations, "pads": begins + ends, "bias": "yes" if bias else "no",
        "y": f"{SHORT_NAMES[y_dtype]}{list(y_shape)}",
        "y_zp": show_zero_point(y_zero_point), "y_scale": show_scale(y_scale),
        "scales": "powers-of-two" if powers_of_two else "any",
    }
    attributes = {"group": group, "kernel_shape": kernels, "strides": strides,
                  "dilations": dilations, "pads": begins + ends}
    return Config(index, "QLinearConv", params, attributes, x, constants, y_dtype, y_shape)


def matmul_shapes(rng, space="all"):
    """Shapes of a and b: 2-D (most), or 3-D a with b 2-D, of a's batch, or
    of batch 1; with space `npu`, larger, and b 2-D or of a's batch; with
    `amx`, k a multiple of four."""
    if space == "amx":
        m, k, n = (int(v) for v in (rng.integers(1, 41), 4 * rng.integers(1, 51),
                                    rng.integers(1, 101)))
        return [m, k], [k, n], (m, n)
    if space == "npu":
        m, k, n = (int(v) for v in (rng.integers(1, 41), rng.integers(1, 101),
                                    rng.integers(1, 71)))
        layout = rng.choice(["2-D", "b 2-D", "b batched"], p=[0.7, 0.1, 0.2])
        if layout == "2-D":
            return [m, k], [k, n], (m, n)
        batch = int(rng.integers(2, 4))
        b_batch = [batch] if layout == "b batched" else []
        return [batch, m, k], b_batch + [k, n], (batch, m, n)
    m, k, n = (int(v) for v in (rng.integers(1, 13), rng.integers(1, 49), rng.integers(1, 25)))
    layout = rng.choice(["2-D", "b 2-D", "b batched", "b batch 1"], p=[0.7, 0.1, 0.1, 0.1])
    if layout == "2-D":
        return [m, k], [k, n], (m, n)
    batch = int(rng.integers(1, 4))
    b_batch = {"b 2-D": [], "b batched": [batch], "b batch 1": [1]}[layout]
    return [batch, m, k], b_batch + [k, n], (batch, m, n)


def matmul_config(rng, index, space="all"):
    """A random QLinearMatMul: 2-D or batched, b per tensor or per column;
    with space `npu` or `amx`, one of that space (matmul_shapes)."""
    a_shape, b_shape, y_shape = matmul_shapes(rng, space)
    a_dtype = random_int8_type(rng)
    a = random_integers(rng, a_dtype, a_shape)
    a_zero_point = random_zero_point(rng, a_dtype)
    a_scale = log_uniform(rng, 1e-3, 1e-1)

    columns = b_shape[-1]
    per_column = rng.random() < 0.5
    b_dtype = random_int8_type(rng)
    b_zero_point = random_zero_point(
        rng, b_dtype, columns if per_column and rng.random() < 0.5 else None)
    b = random_integers(rng, b_dtype, b_shape)
    b_scale = weight_scale(rng, columns if per_column else None)
    powers_of_two = rng.random() < 0.2
    if powers_of_two:
        a_scale, b_scale = power_of_two(a_scale), power_of_two(b_scale)

    rows = (b.astype(np.int64) - b_zero_point).swapaxes(-1, -2).reshape(-1, b_shape[-2])
    row_scales = np.resize(np.broadcast_to(b_scale, (columns,)), rows.shape[0])
    y_dtype, y_zero_point, y_scale = output_quantization(
        rng, a_scale, row_scales, accumulator_rms(a_dtype, a_zero_point, rows),
        powers_of_two)

    constants = [("a_scale", a_scale), ("a_zero_point", a_zero_point), ("b", b),
                 ("b_scale", b_scale), ("b_zero_point", b_zero_point),
                 ("y_scale", y_scale), ("y_zero_point", y_zero_point)]
    params = {
        "a": short_type(a), "a_zp": show_zero_point(a_zero_point),
        "a_scale": show_scale(a_scale),
        "b": short_type(b), "b_zp": show_zero_point(b_zero_point),
        "b_scale": show_scale(b_scale),
        "y": f"{SHORT_NAMES[y_dtype]}{list(y_shape)}",
        "y_zp": show_zero_point(y_zero_point), "y_scale": show_scale(y_scale),
        "scales": "powers-of-two" if powers_of_two else "any",
    }
    return Config(index, "QLinearMatMul", params, {}, a, constants, y_dtype, y_shape)


def random_configs(seed, count, space="all"):
    """`count` configurations of `space` from `seed`: about 60% QLinearConv,
    40% QLinearMatMul."""
    rng = np.random.default_rng(seed)
    return [conv_config(rng, i, space) if rng.random() < 0.6 else matmul_config(rng, i, space)
            for i in range(count)]


def build_model(configs):
    """One model with a node per configuration, checked by onnx.checker."""
    nodes, inputs, outputs, initializers = [], [], [], []
    for config in configs:
        names = [f"x{config.index}"]
        for role, array in config.constants:
            names.append(f"{role}{config.index}")
            initializers.append(numpy_helper.from_array(array, names[-1]))
        nodes.append(helper.make_node(config.op_type, names, [f"y{config.index}"],
                                      name=f"node{config.index}", **config.attributes))
        inputs.append(helper.make_tensor_value_info(
            names[0], helper.np_dtype_to_tensor_dtype(config.x.dtype), config.x.shape))
        outputs.append(helper.make_tensor_value_info(
            f"y{config.index}", helper.np_dtype_to_tensor_dtype(config.y_dtype),
            config.y_shape))
    graph = helper.make_graph(nodes, "random_qlinear", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              ir_version=IR_VERSION)
    onnx.checker.check_model(model, full_check=True)
    return model


def write_group(configs, directory):
    """Writes model.onnx and test_data_set_0/ with onnx.reference's outputs."""
    model = build_model(configs)
    data = os.path.join(directory, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(directory, "model.onnx"))
    feeds = {f"x{config.index}": config.x for config in configs}
    results = ReferenceEvaluator(model).run(None, feeds)
    for i, config in enumerate(configs):
        result = results[i]
        assert result.dtype == config.y_dtype and result.shape == config.y_shape, (
            config.describe(), result.dtype, result.shape)
        onnx.save_tensor(numpy_helper.from_array(config.x, f"x{config.index}"),
                         os.path.join(data, f"input_{i}.pb"))
        onnx.save_tensor(numpy_helper.from_array(result, f"y{config.index}"),
                         os.path.join(data, f"output_{i}.pb"))


def tool(tools, name):
    """The path of a Tessel tool: in `tools`, else found on PATH."""
    return os.path.join(tools, name) if tools else name


PLACED_LINE = re.compile(r"^  \S+\s+(?P<device>\S+)\s+(?P<nodes>[^(]*)")


def run_group(directory, tools, compile_args):
    """Compiles and runs a group's model; returns the completed process of
    the tool that failed, or of tessel-run, and the nodes the compile placed
    on each device (from the placement it prints)."""
    model = os.path.join(directory, "model.onnx")
    artifact = os.path.join(directory, "model.tsl")
    commands = [
        [tool(tools, "tessel-compile"), model, "-o", artifact, "-q", *compile_args],
        [tool(tools, "tessel-run"), artifact, "--test-data",
         os.path.join(directory, "test_data_set_0"), "--rtol", "0", "--atol", "0"],
    ]
    devices = {}
    for command in commands:
        process = subprocess.run(command, capture_output=True, text=True)
        if command is commands[0]:
            for line in process.stdout.splitlines():
                match = PLACED_LINE.match(line)
                if match:
                    for node in match["nodes"].split(","):
                        if node.strip():
                            devices.setdefault(node.strip(), set()).add(match["device"])
        if process.returncode != 0:
            break
    return process, devices


def differing(configs, process):
    """(configuration, report) for each configuration that tessel-run does
    not show bit-exact: its result line and the detail lines after it."""
    reports, current = {}, None
    for line in process.stdout.splitlines():
        match = RESULT_LINE.match(line)
        if match:
            current = reports[match["name"]] = [int(match["bad"]), line]
        elif current and line.startswith(" "):
            current.append(line.strip())
        else:
            current = None
    found = []
    for config in configs:
        report = reports.get(f"y{config.index}")
        if not report:
            found.append((config, "no result line from tessel-run"))
        elif report[0]:
            found.append((config, "\n  ".join(report[1:])))
    return found


def tool_failed(process):
    """Whether a tool failed, as opposed to tessel-run reporting outputs
    that differ (exit 1 with FAIL)."""
    return process.returncode != 0 and not (
        os.path.basename(process.args[0]) == "tessel-run" and process.returncode == 1
        and process.stdout.rstrip().endswith("FAIL"))


def failure_text(process):
    """What a failed tool said, for a report."""
    text = f"{os.path.basename(process.args[0])} exited with {process.returncode}"
    return "\n  ".join([text] + process.stderr.strip().splitlines())


def check(configs, directory, tools, compile_args, placements):
    """Tests `configs` in one model in `directory`; when a tool fails, tests
    each configuration alone so that the failure falls on those that cause
    it. Returns the (configuration, report) pairs that are not bit-exact,
    and whether a tool failed. The devices each node ran on join
    `placements`."""
    write_group(configs, directory)
    process, devices = run_group(directory, tools, compile_args)
    for node, on in devices.items():
        placements.setdefault(node, set()).update(on)
    if not tool_failed(process):
        return differing(configs, process), False
    if len(configs) == 1:
        return [(configs[0], failure_text(process))], True
    print(f"{directory}: {failure_text(process)}\n  testing its configurations one by one")
    found = []
    for config in configs:
        found += check([config], os.path.join(directory, f"c{config.index}"), tools,
                       compile_args, placements)[0]
    return found, True


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True, help="configurations to test")
    parser.add_argument("--batch", type=int, default=50, help="configurations per model")
    parser.add_argument("--work", required=True, help="folder for the models and data")
    parser.add_argument("--compile-arg", action="append", default=[],
                        help="argument for tessel-compile, e.g. --compile-arg=-O3 (repeatable)")
    parser.add_argument("--tools", help="folder of tessel-compile and tessel-run (default: PATH)")
    parser.add_argument("--space", choices=["all", "npu", "amx"], default="all",
                        help="npu: only configurations the NPU runs, compiled for it; "
                             "amx: only configurations x86 computes on AMX tiles")
    args = parser.parse_args()

    npu = args.space == "npu"
    compile_args = args.compile_arg + (["--target=npu"] if npu else [])
    configs = random_configs(args.seed, args.count, args.space)
    differ, failed, placements = 0, False, {}
    for start in range(0, len(configs), args.batch):
        directory = os.path.join(args.work, f"g{start // args.batch}")
        found, group_failed = check(configs[start:start + args.batch], directory, args.tools,
                                    compile_args, placements)
        failed |= group_failed
        for config, report in found:
            print(f"not bit-exact: {config.describe()}\n  {report}")
        differ += len(found)
    print(f"{len(configs)} configurations: {len(configs) - differ} bit-exact, {differ} differ")
    if npu:
        # The node's product runs on the NPU; the CPU may move its layout
        # (the transposes to channels-last and back carry its name too).
        on_npu = [c for c in configs if "npu" in placements.get(f"node{c.index}", set())]
        print(f"{len(on_npu)} of {len(configs)} ran on the npu")
        for config in configs:
            if config not in on_npu:
                print(f"not on the npu: {config.describe()}")
        failed |= len(on_npu) != len(configs)
    return 1 if differ or failed else 0


if __name__ == "__main__":
    sys.exit(main())
