#!/usr/bin/env python3
"""One dynamic-batch ResNet-50 artifact against fixed-batch ones, written to
docs/performance-dynamic-batch.md.

    .venv/bin/python scripts/bench-dynamic-batch.py            # part of make bench
    .venv/bin/python scripts/bench-dynamic-batch.py --rounds 9

ResNet-50 (torchvision, random weights) is exported once with a symbolic
batch dimension. From that one ONNX file Tessel compiles one artifact with
`--dynamic-batch` and one per batch size with `--shape input=Bx3x224x224`.
For each batch size (1, 3, 8) both run on the same random images
(`tessel-run --input`), and their outputs are compared with each other and
with onnxruntime's. Then, single-threaded, the dynamic artifact's latency is
measured against the fixed one's in alternating rounds (medians of round
medians), at every batch size.
"""

import argparse
import datetime
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402  (scripts/bench.py: latency and CPU helpers)

BATCHES = (1, 3, 8)
LATENCY = re.compile(r"latency median ([0-9.]+) ms")


def run_outputs(tessel_run, artifact, image, work):
    """The model's output for `image` (a .npy path), as tessel-run writes it."""
    out = pathlib.Path(work) / f"out-{pathlib.Path(artifact).stem}"
    out.mkdir(exist_ok=True)
    subprocess.run([tessel_run, artifact, "--input", image, "--output-dir", str(out)],
                   check=True, capture_output=True)
    return np.load(out / "output_0.npy")


def median_latency(tessel_run, artifact, image, runs):
    """Single-threaded median latency (ms) of `runs` runs on `image`."""
    result = subprocess.run(
        [tessel_run, artifact, "--input", image, "--bench", str(runs), "--warmup", "3",
         "--threads", "1"], check=True, capture_output=True, text=True)
    return float(LATENCY.search(result.stdout).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--runs", type=int, default=10,
                        help="runs per round at batch 1 (fewer at larger batches)")
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--output",
                        default=str(ROOT / "docs" / "performance-dynamic-batch.md"))
    args = parser.parse_args()
    tools = pathlib.Path(args.build) / "bin"
    tessel_run, tessel_compile = str(tools / "tessel-run"), str(tools / "tessel-compile")
    work_dir = pathlib.Path(args.build) / "bench"
    work_dir.mkdir(parents=True, exist_ok=True)
    model = work_dir / "resnet50_dynamic_batch.onnx"
    subprocess.run([bench.TORCH_PYTHON, str(ROOT / "test" / "lib" / "export_torch_model.py"),
                    "resnet50", "--opset", "17", "--dynamic-batch", "-o", str(model)],
                   check=True, stderr=subprocess.DEVNULL)
    dynamic = str(work_dir / "resnet50_dynamic_batch.tsl")
    subprocess.run([tessel_compile, str(model), "--dynamic-batch", "-q", "-o", dynamic],
                   check=True)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for batch in BATCHES:
            fixed = str(work_dir / f"resnet50_batch{batch}.tsl")
            subprocess.run([tessel_compile, str(model), "--shape",
                            f"input={batch}x3x224x224", "-q", "-o", fixed],
                           check=True)
            images = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
            image = f"{work}/images{batch}.npy"
            np.save(image, images)
            from_dynamic = run_outputs(tessel_run, dynamic, image, work)
            from_fixed = run_outputs(tessel_run, fixed, image, work)
            reference = session.run(None, {"input": images})[0]
            scale = float(np.abs(reference).max())
            row = {
                "batch": batch,
                "shape": from_dynamic.shape,
                "vs_fixed": float(np.abs(from_dynamic - from_fixed).max()) / scale,
                "vs_ort": float(np.abs(from_dynamic - reference).max()) / scale,
                "fixed_vs_ort": float(np.abs(from_fixed - reference).max()) / scale,
            }
            if from_dynamic.shape != reference.shape:
                sys.exit(f"batch {batch}: the dynamic artifact gave shape {from_dynamic.shape}, "
                         f"onnxruntime {reference.shape}")
            # The two artifacts hold the same kernels: what separates them is
            # the run's loop over samples, smaller than the machine's noise.
            # Alternating which goes first keeps an order effect out of the
            # ratio; larger batches take fewer runs per round.
            timings = {"dynamic": [], "fixed": []}
            runs = max(3, args.runs // batch)
            pair = [("dynamic", dynamic), ("fixed", fixed)]
            for round_index in range(args.rounds):
                for kind, artifact in pair if round_index % 2 == 0 else pair[::-1]:
                    timings[kind].append(median_latency(tessel_run, artifact, image, runs))
            row["dynamic_ms"] = statistics.median(timings["dynamic"])
            row["fixed_ms"] = statistics.median(timings["fixed"])
            rows.append(row)
            print(f"batch {batch}: output {row['shape']}, max |dynamic - fixed| "
                  f"{row['vs_fixed']:.2e}, |dynamic - onnxruntime| {row['vs_ort']:.2e} "
                  f"(of the largest output); 1 thread dynamic {row['dynamic_ms']:.2f} ms, "
                  f"fixed {row['fixed_ms']:.2f} ms, ratio "
                  f"{row['dynamic_ms'] / row['fixed_ms']:.3f}", flush=True)

    lines = [
        "# One artifact for every batch size",
        "",
        f"Measured {datetime.date.today()} on {bench.cpu_description()}, 1 thread, by "
        "`scripts/bench-dynamic-batch.py` (part of `make bench`). ResNet-50 (torchvision, "
        "random weights) exported with a symbolic batch; one artifact compiled with "
        "`--dynamic-batch`, one per batch size with `--shape input=Bx3x224x224`, all from "
        "the same ONNX file. Differences are the largest absolute difference over the "
        "largest output magnitude. Latencies are medians of "
        f"{args.rounds} alternating rounds (which artifact goes first alternates too) of "
        f"{args.runs} runs each at batch 1, fewer at larger batches.",
        "",
        "A dynamic-batch artifact computes one sample per run of its schedule, so its "
        "latency grows with the batch as the fixed artifact's does where the fixed one "
        "gains nothing from computing samples together.",
        "",
        "| batch | output | dynamic vs fixed | dynamic vs onnxruntime | fixed vs onnxruntime "
        "| dynamic ms | fixed ms | dynamic / fixed |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['batch']} | {'x'.join(map(str, row['shape']))} | {row['vs_fixed']:.1e} "
            f"| {row['vs_ort']:.1e} | {row['fixed_vs_ort']:.1e} | {row['dynamic_ms']:.2f} "
            f"| {row['fixed_ms']:.2f} | {row['dynamic_ms'] / row['fixed_ms']:.3f} |")
    pathlib.Path(args.output).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
