#!/usr/bin/env python3
"""The x86 INT8 benchmark: Tessel's quantization next to onnxruntime's,
written to docs/performance-int8.md.

    .venv/bin/python scripts/bench-int8.py             # make bench runs this too
    .venv/bin/python scripts/bench-int8.py --models resnet50 --rounds 3

1. Measures the machine's single-thread INT8 dot-product peak for each u8 x s8
   instruction sequence it has (scripts/bench/dot_peak.c: AMX tiles, VNNI, or AVX2's
   pmaddubsw and exact pmaddwd pairs) beside the FP32 FMA peak.
2. For each model (exported from torch/torchvision with random weights, as
   scripts/bench.py does): draws 32 calibration inputs and 8 held-out inputs
   (fixed seeds); quantizes it with Tessel (tessel-compile --quantize int8
   --calibration, timed) and with onnxruntime.quantization.quantize_static
   (QDQ, per-channel s8 weights, u8 activations, the same 32 inputs).
3. Accuracy: the output SQNR (dB) of each INT8 model against onnxruntime's FP32
   run of the float model, on the held-out inputs.
4. Speed: Tessel INT8 against onnxruntime INT8 in alternating rounds at 1 and
   2 threads; Tessel INT8 against Tessel FP32 at 1 thread; Tessel's INT8
   GOP/s (2 x the multiply-adds of its convolutions and matrix products) as a
   fraction of the dot-product peak.

Only ratios measured in the same run are meaningful on a shared machine.
"""

import argparse
import datetime
import gc
import math
import pathlib
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402  (scripts/bench.py: models, latency and CPU helpers)

MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "bert_base"]
CALIBRATION_SAMPLES, HELD_OUT_SAMPLES = 32, 8
VOCABULARY = 30522  # bert_base's token ids


def dot_peaks(work):
    """{sequence: GOP/s} and the best, from scripts/bench/dot_peak.c."""
    binary = work / "dot_peak"
    subprocess.run(["clang-22", "-O3", "-march=native",
                    str(ROOT / "scripts" / "bench" / "dot_peak.c"), "-o", str(binary)],
                   check=True)
    output = subprocess.run([str(binary)], check=True, capture_output=True,
                            text=True).stdout
    peaks = {m.group(1).strip(): float(m.group(2))
             for m in re.finditer(r"^(\S.*?)\s+([0-9.]+) GOP/s$", output, re.M)}
    return peaks, float(re.search(r"int8 peak ([0-9.]+) GOP/s", output).group(1))


def draw_inputs(model, count, seed):
    """`count` inputs of the model's one input, stacked on a new leading axis."""
    graph_input = model.graph.input[0]
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    if graph_input.type.tensor_type.elem_type == onnx.TensorProto.INT64:
        return graph_input.name, rng.integers(0, VOCABULARY, [count] + shape, dtype=np.int64)
    return graph_input.name, rng.standard_normal([count] + shape).astype(np.float32)


class StackedReader(CalibrationDataReader):
    def __init__(self, name, samples):
        self.feeds = iter([{name: sample} for sample in samples])

    def get_next(self):
        return next(self.feeds, None)


def quantize_with_onnxruntime(model_path, name, samples, output):
    prepared = output.with_suffix(".prepared.onnx")
    quant_pre_process(str(model_path), str(prepared))
    quantize_static(str(prepared), str(output), StackedReader(name, samples),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def quiet_session(model):
    """An onnxruntime session whose idle threads do not spin: sessions left
    spinning beside a timed tessel-run would take its cores."""
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def run_onnxruntime(model, input_name, samples):
    session = quiet_session(model)
    outputs = np.concatenate([session.run(None, {input_name: x})[0] for x in samples])
    del session
    return outputs


def compile_tessel(tools, model, artifact, extra):
    start = time.perf_counter()
    # -q keeps progress quiet; the quantization table goes to stdout.
    subprocess.run([str(tools / "tessel-compile"), str(model), "-o", str(artifact), "-q",
                    *extra], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def run_tessel(tools, artifact, sample, work):
    np.save(work / "sample.npy", sample)
    subprocess.run([str(tools / "tessel-run"), str(artifact), "--input",
                    str(work / "sample.npy"), "--output-dir", str(work / "outputs")],
                   check=True, capture_output=True)
    return np.load(work / "outputs" / "output_0.npy")


def sqnr_db(reference, actual):
    noise = np.sum((reference.astype(np.float64) - actual) ** 2)
    return math.inf if noise == 0 else 10 * math.log10(np.sum(reference.astype(np.float64) ** 2) / noise)


def multiply_adds(model_path):
    """Multiply-adds of the model's Conv, MatMul and Gemm nodes."""
    model = onnx.shape_inference.infer_shapes(onnx.load(str(model_path)))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.output)
              + list(model.graph.input)}
    shapes.update({i.name: list(i.dims) for i in model.graph.initializer})
    total = 0
    for node in model.graph.node:
        if node.op_type not in ("Conv", "MatMul", "Gemm") or node.output[0] not in shapes:
            continue
        out, weight = shapes[node.output[0]], shapes.get(node.input[1])
        if not weight:
            continue
        if node.op_type == "Conv":
            # Each output element sums C / group channels over the window.
            total += math.prod(out) * weight[1] * math.prod(weight[2:])
        elif node.op_type == "MatMul":
            total += math.prod(out) * weight[-2]
        else:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            total += math.prod(out) * weight[1 if trans_b else 0]
    return total


def benchmark(name, args, tools, work, bench, latency):
    model_path = work / f"{name}.onnx"
    if not model_path.exists():
        subprocess.run([bench.TORCH_PYTHON, str(ROOT / "test" / "lib" / "export_torch_model.py"),
                        name, "--opset", "17", "-o", str(model_path)],
                       check=True, stderr=subprocess.DEVNULL)
    model = onnx.load(str(model_path))
    input_name, calibration = draw_inputs(model, CALIBRATION_SAMPLES, 1)
    _, held_out = draw_inputs(model, HELD_OUT_SAMPLES, 2)
    calibration_dir = work / f"{name}-calibration"
    calibration_dir.mkdir(exist_ok=True)
    np.save(calibration_dir / f"{input_name}.npy", calibration)

    row = {"model": name}
    ort_int8 = work / f"{name}.ort-int8.onnx"
    start = time.perf_counter()
    quantize_with_onnxruntime(model_path, input_name, calibration, ort_int8)
    gc.collect()  # quantize_static's calibration sessions, before anything is timed
    row["ort_quantize"] = time.perf_counter() - start
    tessel_int8, tessel_fp32 = work / f"{name}.int8.tsl", work / f"{name}.tsl"
    row["compile"] = compile_tessel(tools, model_path, tessel_int8,
                                    ["--quantize", "int8", "--calibration", str(calibration_dir),
                                     "--weight-pairs", args.weight_pairs])
    compile_tessel(tools, model_path, tessel_fp32, [])

    reference = run_onnxruntime(model_path, input_name, held_out)
    ort_out = run_onnxruntime(ort_int8, input_name, held_out)
    tessel_out = np.concatenate([run_tessel(tools, tessel_int8, x, work) for x in held_out])
    row["sqnr_tessel"], row["sqnr_ort"] = sqnr_db(reference, tessel_out), sqnr_db(reference, ort_out)

    for threads in (1, 2):
        row[threads] = bench.measure(latency, tools, ort_int8, tessel_int8, threads,
                                     args.rounds, args.runs)
    int8_times, fp32_times = [], []
    for _ in range(args.rounds):
        int8_times.append(latency.time_tessel(str(tools / "tessel-run"), str(tessel_int8), 1, args.runs))
        fp32_times.append(latency.time_tessel(str(tools / "tessel-run"), str(tessel_fp32), 1, args.runs))
    row["int8_over_fp32"] = statistics.median(int8_times) / statistics.median(fp32_times)
    row["gops"] = 2 * multiply_adds(model_path) / (row[1][0] * 1e6)
    return row


def write_report(path, cpu, fma_peak, peaks, peak, rows, means, args):
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    sequences = ", ".join(f"{name} {rate:.1f}" for name, rate in peaks.items())
    lines = [
        "# x86 INT8 performance and accuracy",
        "",
        f"Generated by `scripts/bench-int8.py` (`make bench`) at Tessel {revision} on "
        f"{datetime.date.today()}; do not edit by hand.",
        "",
        f"Machine: {cpu}. Single-thread peaks measured here: FP32 FMA {fma_peak:.1f} GFLOP/s; "
        f"INT8 dot products (GOP/s) {sequences}; **INT8 peak {peak:.1f} GOP/s**.",
        f"Both sides quantize with the same {CALIBRATION_SAMPLES} random calibration inputs: "
        f"Tessel with `--quantize int8 --calibration --weight-pairs {args.weight_pairs}` "
        "(per-channel s8 weights, u8 activations), "
        "onnxruntime with `quantize_static` (QDQ, per-channel s8 weights, u8 activations). "
        f"SQNR is each INT8 model's output against onnxruntime FP32 on {HELD_OUT_SAMPLES} "
        "held-out inputs. Latencies are medians of "
        f"{args.rounds * args.runs} samples of each, alternating in one process, batch 1; "
        "ratio = Tessel INT8 / "
        "onnxruntime INT8 (below 1: Tessel is faster). GOP/s counts 2 x the multiply-adds of "
        "the convolutions and matrix products at Tessel's 1-thread latency.",
        "",
        "| model | Tessel PTQ compile s | SQNR Tessel dB | SQNR onnxruntime dB | Tessel 1t ms "
        "| onnxruntime 1t ms | ratio 1t | Tessel 2t ms | onnxruntime 2t ms | ratio 2t "
        "| Tessel INT8 / FP32 1t | GOP/s 1t | of INT8 peak |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        (t1, r1), (t2, r2) = row[1], row[2]
        lines.append(
            f"| {row['model']} | {row['compile']:.1f} | {row['sqnr_tessel']:.1f} | "
            f"{row['sqnr_ort']:.1f} | {t1:.2f} | {r1:.2f} | {t1 / r1:.2f} | {t2:.2f} | {r2:.2f} | "
            f"{t2 / r2:.2f} | {row['int8_over_fp32']:.2f} | {row['gops']:.1f} | "
            f"{row['gops'] / peak:.0%} |")
    lines.append(f"| **geometric mean** | | | | | | **{means[1]:.2f}** | | | **{means[2]:.2f}** "
                 "| | | |")
    lines.append("")
    pathlib.Path(path).write_text("\n".join(lines))
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10, help="runs per round")
    parser.add_argument("--weight-pairs", default="auto", choices=["auto", "any", "fit-i16"],
                        help="tessel-compile's --weight-pairs (fit-i16: exact VPMADDUBSW "
                        "on CPUs without VNNI; auto: fit-i16 there for the layers doing most "
                        "of the work)")
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "performance-int8.md"))
    args = parser.parse_args()
    tools = pathlib.Path(args.build) / "bin"
    work = pathlib.Path(args.build) / "bench"
    work.mkdir(parents=True, exist_ok=True)
    latency = bench.load_compare_latency()

    fma_peak, _ = bench.fma_peak(work)
    peaks, peak = dot_peaks(work)
    print(f"fma peak {fma_peak:.1f} GFLOP/s; int8 peak {peak:.1f} GOP/s {peaks}", flush=True)
    rows = []
    for name in args.models:
        row = benchmark(name, args, tools, work, bench, latency)
        rows.append(row)
        print(f"{name}: PTQ compile {row['compile']:.1f} s (onnxruntime quantize_static "
              f"{row['ort_quantize']:.1f} s); SQNR Tessel {row['sqnr_tessel']:.1f} dB, "
              f"onnxruntime {row['sqnr_ort']:.1f} dB; " + "; ".join(
                  f"{t}t Tessel {row[t][0]:.2f} ms onnxruntime {row[t][1]:.2f} ms ratio "
                  f"{row[t][0] / row[t][1]:.2f}" for t in (1, 2))
              + f"; Tessel INT8/FP32 {row['int8_over_fp32']:.2f}; {row['gops']:.1f} GOP/s "
              f"({row['gops'] / peak:.0%} of peak)", flush=True)
    means = {t: math.exp(statistics.mean(math.log(row[t][0] / row[t][1]) for row in rows))
             for t in (1, 2)}
    print(f"geometric mean ratio: 1 thread {means[1]:.2f}, 2 threads {means[2]:.2f}")
    write_report(args.output, bench.cpu_description(), fma_peak, peaks, peak, rows, means, args)


if __name__ == "__main__":
    sys.exit(main())
