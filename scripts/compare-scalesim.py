#!/usr/bin/env python3
"""The NPU simulator's SCALE-Sim timing mode against SCALE-Sim 3.0.0, layer by layer.

    scripts/compare-scalesim.py [--tools build/bin] [--scalesim-python PATH]
        [--work DIR] [--arrays 8x8,16x16,32x32,16x32] [--dataflows ws,os]

With `"timing": "scalesim"` in its configuration the simulator charges what
SCALE-Sim models (docs/npu/isa.md section 4.3): each GEMM instruction is one
fold of the array and costs 2R + C + T - 2 cycles weight stationary, or
ceil(T / R) folds of R + C + K - 2 output stationary (R, C the array's rows
and columns, T the output pixels the GEMM streams, K its reduction rows);
no DMA, nothing else. Weight stationary, a GEMM takes at most R reduction
rows (the weights fill the array's rows), as SCALE-Sim's folds do; output
stationary, it takes the whole reduction (it streams through the array in
time), as SCALE-Sim's folds do when the scratchpad holds the weights, which
it does here. This script checks that claim against SCALE-Sim itself.

One ONNX model holds a fixed grid of quantized layers (QLinearConv of
kernels 1x1 to 7x7, strides 1 and 2, channels and filters below, at and
above the array sizes; QLinearMatMul of varied M, K, N), without padding,
since SCALE-Sim's convolutions have none. For each array and dataflow it
is compiled for the NPU with the largest scratchpad and accumulator the ISA
allows, so that every layer is one tile whose GEMMs stream all its output
pixels, and run with --npu-stats; each layer's "array_cycles" is compared
with the "Total Cycles" of the same layer in SCALE-Sim's COMPUTE_REPORT.csv
(convolutions in its conv topology format, products in its M, N, K gemm
format, estimated ("CALC") bandwidth, so that it models no memory stall).

SCALE-Sim counts a layer's cycles as the index of the last cycle of its
demand matrices, which starts at 0: it prints one cycle less than the sum
of its folds. So a layer matches when ours == SCALE-Sim + 1, exactly.

The folds column shows our GEMM count (from --emit npu) next to the fold
count of SCALE-Sim's mapping: ceil(K / R) * ceil(F / C) weight stationary
(one GEMM per fold), ceil(T / R) * ceil(F / C) output stationary (F
filters; one GEMM per chunk of C filters, each of ceil(T / R) folds).

Prints a line per layer, a summary line per configuration and a final one.
Exits 1 if any layer differs, 2 if the comparison cannot be made (a tool
fails, a layer is not placed on the NPU or is split into several tiles,
SCALE-Sim reports stalls).
"""

import argparse
import csv
import dataclasses
import json
import math
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = pathlib.Path(__file__).resolve().parent.parent

# The ISA's limits (runtime/schema/NpuConfig.h): one tile per layer.
NPU_LIMITS = {"scratchpad_bytes": 16 << 20, "accumulator_bytes": 4 << 20,
              "parameter_bytes": 1 << 20}

DATAFLOWS = {"ws": "weight_stationary", "os": "output_stationary"}

# Runs SCALE-Sim on one topology through its Python API, writing no traces.
SCALESIM_DRIVER = """
import sys
from scalesim.scale_sim import scalesim
config, topology, layout, kind, out = sys.argv[1:]
scalesim(save_disk_space=True, verbose=False, config=config, topology=topology,
         layout=layout, input_type_gemm=kind == "gemm").run_scale(top_path=out)
"""

SCALESIM_RUN_NAME = "compare"

PLACEMENT_LINE = re.compile(
    r"^  (?P<kernel>\S+)\s+(?P<device>\S+)\s+(?P<nodes>.*?)(?:\s+\((?P<reason>.*)\))?$")
PROGRAM_LINE = re.compile(r"^npu\.program @(?P<kernel>\S+) .*\btiles = (?P<tiles>\d+)")


class ComparisonError(Exception):
    """What makes the comparison impossible (not a difference in cycles)."""


def ceil_div(a, b):
    return -(-a // b)


@dataclasses.dataclass(frozen=True)
class Conv:
    """A convolution without padding, given by its output size."""

    name: str
    channels: int
    filters: int
    kernel: tuple  # (height, width)
    stride: int
    output: tuple  # (height, width)

    @property
    def input(self):
        return tuple((o - 1) * self.stride + k for o, k in zip(self.output, self.kernel))

    @property
    def pixels(self):
        return self.output[0] * self.output[1]

    @property
    def reduction(self):
        return self.kernel[0] * self.kernel[1] * self.channels

    def describe(self):
        (kh, kw), (h, w), (ho, wo) = self.kernel, self.input, self.output
        return (f"conv {kh}x{kw}/{self.stride} {self.channels}x{h}x{w}"
                f" -> {self.filters}x{ho}x{wo}")

    def operands(self):
        """The graph input's shape and the weights (OIHW)."""
        weights = int8_weights((self.filters, self.channels, *self.kernel))
        return [1, self.channels, *self.input], weights

    def onnx_node(self, inputs):
        return helper.make_node("QLinearConv", inputs, [f"y_{self.name}"], name=self.name,
                                kernel_shape=list(self.kernel), strides=[self.stride] * 2)

    def output_shape(self):
        return [1, self.filters, *self.output]

    def scalesim_row(self):
        """Name, IFMAP height and width, filter height and width, channels,
        filters, stride (SCALE-Sim takes one for both axes)."""
        return [self.name, *self.input, *self.kernel, self.channels, self.filters, self.stride]


@dataclasses.dataclass(frozen=True)
class Gemm:
    """A matrix product of an M x K input by a constant K x N matrix."""

    name: str
    m: int
    k: int
    n: int

    @property
    def pixels(self):
        return self.m

    @property
    def reduction(self):
        return self.k

    @property
    def filters(self):
        return self.n

    def describe(self):
        return f"gemm {self.m}x{self.k} * {self.k}x{self.n}"

    def operands(self):
        return [self.m, self.k], int8_weights((self.k, self.n))

    def onnx_node(self, inputs):
        return helper.make_node("QLinearMatMul", inputs, [f"y_{self.name}"], name=self.name)

    def output_shape(self):
        return [self.m, self.n]

    def scalesim_row(self):
        """SCALE-Sim's gemm format: name, M, N, K."""
        return [self.name, self.m, self.n, self.k]


def int8_weights(shape):
    """Deterministic int8 values (the cycles do not depend on them)."""
    values = np.arange(math.prod(shape)) % 255 - 127
    return values.astype(np.int8).reshape(shape)


def layer_grid():
    """The layers compared: 48 convolutions (kernels 1x1 to 7x7, strides 1
    and 2, six channel/filter pairs, output sizes cycling through five) and
    16 matrix products."""
    channel_filter_pairs = [(3, 5), (8, 13), (16, 16), (11, 40), (40, 17), (5, 33)]
    outputs = [(6, 6), (3, 7), (9, 2), (5, 5), (1, 9)]
    convs = []
    for size in (1, 3, 5, 7):
        for stride in (1, 2):
            for channels, filters in channel_filter_pairs:
                index = len(convs)
                convs.append(Conv(f"conv{index:02}", channels, filters, (size, size), stride,
                                  outputs[index % len(outputs)]))
    products = [(1, 64, 10), (7, 8, 8), (16, 16, 16), (33, 20, 5), (64, 32, 32),
                (100, 50, 48), (12, 150, 70), (40, 60, 70), (5, 128, 33), (32, 7, 100),
                (17, 65, 17), (8, 200, 24), (50, 33, 9), (128, 12, 40), (3, 3, 3),
                (24, 256, 16)]
    gemms = [Gemm(f"gemm{index:02}", *shape) for index, shape in enumerate(products)]
    return convs + gemms


def build_model(layers):
    """One model of independent quantized layers: input x_NAME, output y_NAME,
    every other operand an initializer (int8 weights with zero point 0)."""
    nodes, inputs, outputs, initializers = [], [], [], []
    for layer in layers:
        input_shape, weights = layer.operands()
        constants = [("x_scale", np.float32(0.02)), ("x_zero_point", np.uint8(128)),
                     ("w", weights), ("w_scale", np.float32(0.01)),
                     ("w_zero_point", np.int8(0)), ("y_scale", np.float32(0.5)),
                     ("y_zero_point", np.uint8(128))]
        names = [f"x_{layer.name}"]
        for role, value in constants:
            names.append(f"{role}_{layer.name}")
            initializers.append(numpy_helper.from_array(np.asarray(value), names[-1]))
        nodes.append(layer.onnx_node(names))
        inputs.append(helper.make_tensor_value_info(names[0], TensorProto.UINT8, input_shape))
        outputs.append(helper.make_tensor_value_info(f"y_{layer.name}", TensorProto.UINT8,
                                                     layer.output_shape()))
    graph = helper.make_graph(nodes, "scalesim_grid", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=7)
    onnx.checker.check_model(model, full_check=True)
    return model


def run(command, what):
    """Runs a tool; its stdout, or a ComparisonError with what it said."""
    try:
        process = subprocess.run([str(part) for part in command], capture_output=True,
                                 text=True)
    except OSError as error:
        raise ComparisonError(f"{what} cannot start: {error}") from error
    if process.returncode != 0:
        raise ComparisonError(f"{what} failed (exit {process.returncode}):\n"
                              f"{process.stdout}{process.stderr}")
    return process.stdout


def npu_kernels(placement_text, stream_text, layers):
    """Each layer's NPU kernel with its tile count and GEMM count, from the
    placement tessel-compile prints and its --emit npu stream; a
    ComparisonError when a layer is not on the NPU or not one tile."""
    kernels = {}  # layer name -> [(kernel, device, reason)]
    for line in placement_text.splitlines():
        match = PLACEMENT_LINE.match(line)
        if match:
            for node in match["nodes"].split(", "):
                kernels.setdefault(node, []).append(
                    (match["kernel"], match["device"], match["reason"]))
    programs, current = {}, None
    for line in stream_text.splitlines():
        match = PROGRAM_LINE.match(line)
        if match:
            current = programs[match["kernel"]] = {"tiles": int(match["tiles"]), "gemms": 0}
        elif current and line.lstrip().startswith("npu.gemm "):
            current["gemms"] += 1
    found = {}
    for layer in layers:
        on_npu = [kernel for kernel, device, _ in kernels.get(layer.name, []) if device == "npu"]
        if len(on_npu) != 1:
            elsewhere = "; ".join(f"{kernel} on {device} ({reason})"
                                  for kernel, device, reason in kernels.get(layer.name, []))
            raise ComparisonError(f"layer {layer.name} ({layer.describe()}) is not one NPU "
                                  f"kernel: {elsewhere or 'not in the placement'}")
        program = programs.get(on_npu[0])
        if program is None:
            raise ComparisonError(f"layer {layer.name}: no npu.program @{on_npu[0]} in the stream")
        if program["tiles"] != 1:
            raise ComparisonError(f"layer {layer.name} ({layer.describe()}) is split into "
                                  f"{program['tiles']} tiles")
        found[layer.name] = program
    return found


def tessel_cycles(tools, model, work, rows, columns, dataflow, layers):
    """Compiles and runs the model on the NPU in SCALE-Sim mode; per layer,
    (array cycles, GEMM count)."""
    config = work / "npu.json"
    config.write_text(json.dumps({"array_rows": rows, "array_columns": columns,
                                  "dataflow": DATAFLOWS[dataflow], "timing": "scalesim",
                                  **NPU_LIMITS}))
    compile_command = [tools / "tessel-compile", model, "--target", "npu",
                       "--npu-config", config]
    stream = work / "stream.npu"
    placement = run(compile_command + ["--emit", "npu", "-o", stream], "tessel-compile --emit npu")
    programs = npu_kernels(placement, stream.read_text(), layers)
    artifact, stats = work / "model.tsl", work / "stats.json"
    run(compile_command + ["-q", "-o", artifact], "tessel-compile")
    run([tools / "tessel-run", artifact, "--npu-stats", stats], "tessel-run --npu-stats")
    cycles = {}
    for entry in json.loads(stats.read_text())["layers"]:
        for node in entry["nodes"]:
            cycles[node] = int(entry["array_cycles"])
    missing = [layer.name for layer in layers if layer.name not in cycles]
    if missing:
        raise ComparisonError(f"--npu-stats has no figures for {', '.join(missing)}")
    return {layer.name: (cycles[layer.name], programs[layer.name]["gemms"])
            for layer in layers}


def scalesim_config(rows, columns, dataflow):
    """A SCALE-Sim configuration: the array, the dataflow, estimated
    bandwidth (reads always hit), an output SRAM that never fills (no write
    stalls), no custom layout or sparsity. The input SRAMs' sizes change
    only how long SCALE-Sim takes (it pads each prefetch to their size)."""
    return f"""[general]
run_name = {SCALESIM_RUN_NAME}

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False

[architecture_presets]
ArrayHeight = {rows}
ArrayWidth = {columns}
IfmapSramSzkB = 1024
FilterSramSzkB = 1024
OfmapSramSzkB = 65536
IfmapOffset = 0
FilterOffset = 100000000
OfmapOffset = 200000000
Dataflow = {dataflow}
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
"""


def write_topology(path, header, layers):
    """A SCALE-Sim topology CSV (every line ends with a comma, as it expects)."""
    lines = [", ".join(header)] + [", ".join(str(v) for v in layer.scalesim_row())
                                   for layer in layers]
    path.write_text("".join(line + ",\n" for line in lines))


def scalesim_cycles(python, work, rows, columns, dataflow, layers):
    """Runs SCALE-Sim on the layers; per layer, the Total Cycles of its
    COMPUTE_REPORT.csv (a ComparisonError if it reports stalls)."""
    config, layout = work / "scalesim.cfg", work / "layout.csv"
    config.write_text(scalesim_config(rows, columns, dataflow))
    layout.write_text("Layer name,\n")  # SCALE-Sim reads one, unused without custom layouts
    topologies = [
        ("conv", ["Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width",
                  "Channels", "Num Filter", "Stride"], Conv),
        ("gemm", ["Layer", "M", "N", "K"], Gemm),
    ]
    cycles = {}
    for kind, header, layer_type in topologies:
        chosen = [layer for layer in layers if isinstance(layer, layer_type)]
        if not chosen:
            continue
        topology, out = work / f"{kind}.csv", work / f"scalesim-{kind}"
        write_topology(topology, header, chosen)
        said = run([python, "-c", SCALESIM_DRIVER, config, topology, layout, kind, out],
                   f"SCALE-Sim ({kind})")
        report_path = out / SCALESIM_RUN_NAME / "COMPUTE_REPORT.csv"
        if not report_path.exists():  # SCALE-Sim exits with 0 on its errors
            raise ComparisonError(f"SCALE-Sim ({kind}) wrote no {report_path}:\n{said}")
        with open(report_path, newline="") as report:
            records = [{key.strip(): value.strip() for key, value in record.items() if key}
                       for record in csv.DictReader(report, skipinitialspace=True)]
        if len(records) != len(chosen):
            raise ComparisonError(f"SCALE-Sim reports {len(records)} {kind} layers, "
                                  f"not {len(chosen)}")
        for layer, record in zip(chosen, records):
            if int(record["Stall Cycles"]):
                raise ComparisonError(f"SCALE-Sim reports {record['Stall Cycles']} stall "
                                      f"cycles for {layer.name}: its memory is not ideal")
            cycles[layer.name] = int(record["Total Cycles"])
    return cycles


def scalesim_folds(layer, rows, columns, dataflow):
    """The folds SCALE-Sim maps a layer onto (its S_r x S_c spatial matrix
    over the array)."""
    spatial_rows = layer.reduction if dataflow == "ws" else layer.pixels
    return ceil_div(spatial_rows, rows) * ceil_div(layer.filters, columns)


def compare(args, model, layers, rows, columns, dataflow):
    """One configuration: prints its lines; returns how many layers are
    equal to SCALE-Sim + 1 and how many differ."""
    work = args.work / f"{rows}x{columns}-{dataflow}"
    work.mkdir(parents=True, exist_ok=True)
    ours = tessel_cycles(args.tools, model, work, rows, columns, dataflow, layers)
    theirs = scalesim_cycles(args.scalesim_python, work, rows, columns, dataflow, layers)
    print(f"\n{rows}x{columns} {dataflow.upper()}")
    print(f"  {'layer':<7} {'shape':<30} {'T':>4} {'K':>5} {'F':>4} {'folds':>11} "
          f"{'ours':>8} {'SCALE-Sim':>9} {'ours-SS':>8}")
    equal = 0
    for layer in layers:
        cycles, gemms = ours[layer.name]
        difference = cycles - theirs[layer.name]
        equal += difference == 1
        folds = f"{gemms}/{scalesim_folds(layer, rows, columns, dataflow)}"
        print(f"  {layer.name:<7} {layer.describe():<30} {layer.pixels:>4} "
              f"{layer.reduction:>5} {layer.filters:>4} {folds:>11} {cycles:>8} "
              f"{theirs[layer.name]:>9} {difference:>+8}"
              f"{'' if difference == 1 else '  DIFFERS'}")
    differ = len(layers) - equal
    total_ours, total_theirs = sum(c for c, _ in ours.values()), sum(theirs.values())
    print(f"{rows}x{columns} {dataflow.upper()}: {len(layers)} layers, {equal} equal to "
          f"SCALE-Sim + 1, {differ} differ (cycles: ours {total_ours}, "
          f"SCALE-Sim {total_theirs})")
    return equal, differ


def array_list(text):
    """'8x8,16x32' -> [(8, 8), (16, 32)] (rows x columns)."""
    try:
        return [tuple(int(n) for n in item.split("x", 1)) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not arrays like 8x8,16x32: {text!r}")


def dataflow_list(text):
    flows = text.split(",")
    if not set(flows) <= set(DATAFLOWS):
        raise argparse.ArgumentTypeError(f"dataflows are ws and os: {text!r}")
    return flows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=pathlib.Path, default=REPO / "build/bin",
                        help="where tessel-compile and tessel-run are")
    parser.add_argument("--scalesim-python", type=pathlib.Path,
                        default=REPO / ".venv-scalesim/bin/python",
                        help="a Python with scalesim 3.0.0 (make scalesim-compare makes one)")
    parser.add_argument("--work", type=pathlib.Path,
                        help="keep the models, streams and reports here (default: a "
                             "temporary folder)")
    parser.add_argument("--arrays", type=array_list, default="8x8,16x16,32x32,16x32",
                        help="rows x columns, comma separated")
    parser.add_argument("--dataflows", type=dataflow_list, default="ws,os")
    args = parser.parse_args()
    if not args.scalesim_python.exists():
        print(f"compare-scalesim: no SCALE-Sim Python at {args.scalesim_python} "
              "(make scalesim-compare creates .venv-scalesim)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="compare-scalesim-") as temporary:
        args.work = (args.work or pathlib.Path(temporary)).resolve()
        args.work.mkdir(parents=True, exist_ok=True)
        layers = layer_grid()
        model = args.work / "grid.onnx"
        onnx.save(build_model(layers), model)
        print(f"{len(layers)} layers ({sum(isinstance(l, Conv) for l in layers)} convolutions, "
              f"{sum(isinstance(l, Gemm) for l in layers)} matrix products); a layer matches "
              f"when ours == SCALE-Sim + 1 (SCALE-Sim's count starts at 0); folds: our GEMMs "
              f"/ SCALE-Sim's")
        summaries = []
        try:
            for rows, columns in args.arrays:
                for dataflow in args.dataflows:
                    summaries.append(compare(args, model, layers, rows, columns, dataflow))
        except ComparisonError as error:
            print(f"compare-scalesim: {error}", file=sys.stderr)
            return 2
    equal, differ = (sum(column) for column in zip(*summaries))
    print(f"\nall: {len(summaries)} configurations, {equal + differ} layers, {equal} equal "
          f"to SCALE-Sim + 1, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
