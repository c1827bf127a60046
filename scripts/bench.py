#!/usr/bin/env python3
"""The x86 benchmark: Tessel next to onnxruntime, written to docs/performance.md.

    .venv/bin/python scripts/bench.py               # all models (make bench)
    .venv/bin/python scripts/bench.py --models mlp resnet18 --rounds 3

1. Measures the machine's single-thread FP32 FMA peak (scripts/bench/fma_peak.c).
2. Times a 1024x1024x1024 SGEMM and a ResNet-style 3x3 convolution compiled by
   Tessel and run by onnxruntime, as fractions of that peak.
3. Exports each benchmark model from torch/torchvision with random weights,
   compiles it (timing the compile), and measures Tessel and onnxruntime in
   alternating samples in one process at 1 and 2 threads, batch 1
   (scripts/compare-latency.py does the measuring), then prints medians,
   ratios and their geometric mean.
4. Reports each model's memory: Tessel's arena (the intermediate tensors of
   its static memory plan), and onnxruntime's peak RSS growth from creating a
   session and running it once (weights included, so Tessel's weights are
   given beside it).

Timings are medians of samples; only ratios measured in the same run are
meaningful on a shared machine.
"""

import argparse
import datetime
import importlib.util
import json
import math
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
TORCH_PYTHON = "/usr/bin/python3"

# Model name -> export_torch_model.py name: the suite of issue 4 and the
# SqueezeNet and recurrent models of issue 15.
MODELS = ["mlp", "resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0",
          "squeezenet", "bert_base", "vit_s", "lstm_seq32", "gru_seq32"]


def load_compare_latency():
    spec = importlib.util.spec_from_file_location(
        "compare_latency", ROOT / "scripts" / "compare-latency.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fma_peak(work):
    binary = work / "fma_peak"
    subprocess.run(["clang-22", "-O3", "-march=native", "-ffp-contract=fast",
                    # Without it clang splits the 512-bit accumulators into ymm halves on
                    # CPUs that prefer 256-bit vectors (Sapphire Rapids) and spills them.
                    "-mprefer-vector-width=512",
                    str(ROOT / "scripts" / "bench" / "fma_peak.c"), "-o", str(binary)],
                   check=True)
    output = subprocess.run([str(binary)], check=True, capture_output=True,
                            text=True).stdout
    return float(re.search(r"fma peak ([0-9.]+) GFLOP/s", output).group(1)), output.strip()


def compile_model(tools, model, artifact):
    start = time.perf_counter()
    subprocess.run([str(tools / "tessel-compile"), str(model), "-o", str(artifact), "-q"],
                   check=True)
    return time.perf_counter() - start


def kernel_model(path, kind):
    """A one-node model: SGEMM 1024^3 or a 3x3 64->64 convolution at 56x56,
    with the weight as an initializer (as in real models)."""
    rng = np.random.default_rng(0)
    if kind == "sgemm":
        weight = rng.standard_normal((1024, 1024)).astype(np.float32)
        node = helper.make_node("MatMul", ["a", "w"], ["y"])
        inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1024, 1024])]
        outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1024, 1024])]
        flops = 2 * 1024 ** 3
    else:
        weight = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])]
        outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 56, 56])]
        flops = 2 * 64 * 64 * 9 * 56 * 56
    graph = helper.make_graph([node], kind, inputs, outputs,
                              [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)  # what the pinned onnxruntime reads
    onnx.save(model, path)
    return flops


MEMORY_LINE = re.compile(
    r"memory: arena (\d+) bytes, weights (\d+) bytes, scratch (\d+) bytes per thread")

# Peak RSS growth of creating an onnxruntime session and running it once,
# measured in a fresh interpreter: the kernel's RSS high-water mark (VmHWM)
# is reset once the imports and inputs are in place, so it then records the
# session's peak alone.
ORT_RSS_PROBE = """
import json, sys
import numpy as np, onnxruntime as ort

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024

model, shapes = sys.argv[1], json.loads(sys.argv[2])
feeds = {name: np.ones(shape, dtype) for name, (shape, dtype) in shapes.items()}
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
session.run(None, feeds)
print(status("VmHWM") - before)
"""


PROFILE_LINE = re.compile(r"^\s+([0-9.]+)\s+[0-9.]+%\s+\d+\s+\S+$", re.MULTILINE)


def largest_step_ms(tools, artifact):
    """The ms per run of the artifact's longest schedule step, 1 thread, from
    tessel-run --profile: the product itself, without the layout
    transposes of a one-node NCHW model around it."""
    output = subprocess.run([str(tools / "tessel-run"), str(artifact), "--bench", "200",
                             "--threads", "1", "--profile"], check=True, capture_output=True,
                            text=True).stdout
    return max(float(ms) for ms in PROFILE_LINE.findall(output))


def tessel_memory(tools, artifact):
    """(arena, weight, per-thread scratch) bytes of a compiled model."""
    output = subprocess.run([str(tools / "tessel-run"), str(artifact), "--bench", "1",
                             "--warmup", "0"], check=True, capture_output=True,
                            text=True).stdout
    match = MEMORY_LINE.search(output)
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def onnxruntime_rss_growth(latency, model):
    """Bytes of peak RSS growth from an onnxruntime session and one run."""
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    shapes = {i.name: (i.shape, np.dtype(latency.onnx_dtype(i.type)).name)
              for i in session.get_inputs()}
    del session
    output = subprocess.run([sys.executable, "-c", ORT_RSS_PROBE, str(model),
                             json.dumps(shapes)],
                            check=True, capture_output=True, text=True).stdout
    return int(output.split()[-1])


def measure(latency, tools, model, artifact, threads, rounds, runs):
    """Median latencies (ms) of Tessel and onnxruntime, alternating samples."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for value in session.get_inputs():
        dtype = latency.onnx_dtype(value.type)
        if np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, 100, value.shape).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(value.shape).astype(dtype)
    return latency.alternate(str(tools / "tessel-run"), str(artifact), session, feeds,
                             threads, rounds, runs)


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10,
                        help="samples of each per round (rounds * runs in all)")
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "performance.md"))
    args = parser.parse_args()
    tools = pathlib.Path(args.build) / "bin"
    work = pathlib.Path(args.build) / "bench"
    work.mkdir(parents=True, exist_ok=True)
    latency = load_compare_latency()

    peak, peak_line = fma_peak(work)
    print(peak_line, flush=True)

    kernels = []
    for kind in ["sgemm", "conv3x3"]:
        model, artifact = work / f"{kind}.onnx", work / f"{kind}.tsl"
        flops = kernel_model(model, kind)
        compile_model(tools, model, artifact)
        t, r = measure(latency, tools, model, artifact, 1, args.rounds, args.runs)
        step = largest_step_ms(tools, artifact)
        kernels.append((kind, t, r, flops / t / 1e6, flops / r / 1e6, flops / step / 1e6))
        print(f"{kind}: tessel {t:.2f} ms ({flops / t / 1e6:.1f} GFLOP/s, "
              f"{flops / t / 1e6 / peak:.0%} of peak; its product step "
              f"{flops / step / 1e6 / peak:.0%}), onnxruntime {r:.2f} ms "
              f"({flops / r / 1e6 / peak:.0%})", flush=True)

    rows = []
    for name in args.models:
        model, artifact = work / f"{name}.onnx", work / f"{name}.tsl"
        subprocess.run([TORCH_PYTHON, str(ROOT / "test" / "lib" / "export_torch_model.py"),
                        name, "--opset", "17", "-o", str(model)],
                       check=True, stderr=subprocess.DEVNULL)
        seconds = compile_model(tools, model, artifact)
        row = {"model": name, "compile": seconds}
        row["arena"], row["weights"], row["scratch"] = tessel_memory(tools, artifact)
        row["ort_rss"] = onnxruntime_rss_growth(latency, model)
        for threads in (1, 2):
            row[threads] = measure(latency, tools, model, artifact, threads, args.rounds,
                                   args.runs)
        rows.append(row)
        print(f"{name}: arena {row['arena'] / 2**20:.1f} MiB, onnxruntime RSS growth "
              f"{row['ort_rss'] / 2**20:.1f} MiB", flush=True)
        print(f"{name}: compile {seconds:.1f} s; " + "; ".join(
            f"{threads}t tessel {row[threads][0]:.2f} ms onnxruntime {row[threads][1]:.2f} ms "
            f"ratio {row[threads][0] / row[threads][1]:.2f}" for threads in (1, 2)),
            flush=True)

    means = {threads: geometric_mean([row[threads][0] / row[threads][1] for row in rows])
             for threads in (1, 2)}
    print(f"geometric mean ratio: 1 thread {means[1]:.2f}, 2 threads {means[2]:.2f}")
    write_report(args.output, peak_line, peak, kernels, rows, means, args)


def cpu_description():
    """The CPU's model name and widest vector extension, from /proc/cpuinfo:
    machines differ between runs, and so does what the compiler targets."""
    model, flags, family, number, vendor = "unknown CPU", set(), None, None, ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name":
                model = value.strip()
            elif key == "flags":
                flags = set(value.split())
            elif key == "cpu family" and family is None:
                family = int(value)
            elif key == "model" and number is None:
                number = int(value)
            elif key == "vendor_id":
                vendor = value.strip()
    except (OSError, ValueError):
        pass
    vectors = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    # AMD's model names ("AMD EPYC") do not say the generation; family and
    # model do.
    generation = ""
    if vendor == "AuthenticAMD" and family is not None and number is not None:
        generation = {23: "Zen 2", 26: "Zen 5"}.get(
            family, ("Zen 3" if number < 0x10 else "Zen 4") if family == 25 else "")
    details = f"family {family}, model {number}" if family is not None else ""
    if generation:
        details = f"{generation}: {details}"
    return f"{model} ({details}), {vectors}" if details else f"{model}, {vectors}"


def write_report(path, peak_line, peak, kernels, rows, means, args):
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    lines = [
        "# x86 performance",
        "",
        f"Generated by `scripts/bench.py` (`make bench`) at Tessel {revision} on "
        f"{datetime.date.today()}; do not edit by hand.",
        "",
        f"Machine: {os.cpu_count()} cores ({cpu_description()}); single-thread FP32 FMA "
        "peak measured by "
        f"scripts/bench/fma_peak.c: **{peak:.1f} GFLOP/s** ({peak_line}).",
        f"Latencies are medians of {args.rounds * args.runs} samples of each, Tessel and "
        "onnxruntime alternating in one process (a sample: the mean of as many runs as last "
        "about 2 ms, at least one), batch 1; ratio = Tessel / onnxruntime (below 1: Tessel "
        "is faster).",
        "",
        "## Kernels (1 thread)",
        "",
        "| kernel | Tessel ms | GFLOP/s | of peak | product step of peak | onnxruntime ms | "
        "GFLOP/s | of peak |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, t, r, tg, rg, sg in kernels:
        lines.append(f"| {kind} | {t:.2f} | {tg:.1f} | {tg / peak:.0%} | {sg / peak:.0%} | "
                     f"{r:.2f} | {rg:.1f} | {rg / peak:.0%} |")
    lines += [
        "",
        "sgemm is 1024x1024x1024 with a constant right operand; conv3x3 is 64 -> 64 "
        "channels at 56x56, pad 1. Both are one-node ONNX models timed whole, as the models "
        "below; \"product step\" is the matrix product or convolution kernel alone (the "
        "longest step of `tessel-run --profile`, its mean over 200 runs): conv3x3's whole "
        "time also holds the NCHW -> NHWC transposes of its input and output.",
        "",
        "## Models",
        "",
        "| model | compile s | Tessel 1t ms | onnxruntime 1t ms | ratio 1t | "
        "Tessel 2t ms | onnxruntime 2t ms | ratio 2t |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        (t1, r1), (t2, r2) = row[1], row[2]
        lines.append(f"| {row['model']} | {row['compile']:.1f} | {t1:.2f} | {r1:.2f} | "
                     f"{t1 / r1:.2f} | {t2:.2f} | {r2:.2f} | {t2 / r2:.2f} |")
    lines.append(f"| **geometric mean** | | | | **{means[1]:.2f}** | | | **{means[2]:.2f}** |")
    mib = 1 << 20
    lines += [
        "",
        "## Memory",
        "",
        "Tessel's arena holds every intermediate tensor of a run, placed by the "
        "compiler's static memory plan (buffers reuse each other's space once dead); "
        "weights are shared by all sessions of a model; each thread has its own scratch "
        "for the temporaries of a workgroup (an attention kernel's tile of scores, say). "
        "onnxruntime's figure is the "
        "peak RSS growth of creating a session (1 thread) and running it once, "
        "weights included.",
        "",
        "| model | Tessel arena MiB | Tessel weights MiB | Tessel scratch KiB per thread "
        "| onnxruntime RSS growth MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(f"| {row['model']} | {row['arena'] / mib:.1f} | {row['weights'] / mib:.1f} | "
                     f"{row['scratch'] / 1024:.0f} | {row['ort_rss'] / mib:.1f} |")
    lines.append("")
    pathlib.Path(path).write_text("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
