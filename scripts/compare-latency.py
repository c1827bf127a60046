#!/usr/bin/env python3
"""Latency of a compiled Tessel artifact next to onnxruntime, in one run.

    scripts/compare-latency.py model.onnx model.tsl --threads 1 2 --rounds 5

For each thread count the two are measured in alternating rounds (Tessel
through `tessel-run --bench`, onnxruntime in process on the same random
inputs), so that both see the same machine noise. Prints the median of the
round medians of each and their ratio Tessel / onnxruntime.
"""

import argparse
import math
import pathlib
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

BENCH_LINE = re.compile(r"latency median ([0-9.]+) ms")


def onnx_dtype(type_name):
    return {
        "tensor(float)": np.float32,
        "tensor(double)": np.float64,
        "tensor(int64)": np.int64,
        "tensor(int32)": np.int32,
    }[type_name]


def time_onnxruntime(session, feeds, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def time_tessel(tessel_run, artifact, threads, runs):
    result = subprocess.run(
        [tessel_run, artifact, "--bench", str(runs), "--warmup", "3",
         "--threads", str(threads)],
        check=True, capture_output=True, text=True)
    match = BENCH_LINE.search(result.stdout)
    if not match:
        sys.exit(f"compare-latency: no latency in tessel-run's output:\n{result.stdout}")
    return float(match.group(1))


def runs_per_round(session, feeds, runs, round_ms=100.0):
    """At least `runs`, and enough that a round lasts about `round_ms`
    (judged by onnxruntime's latency): rounds of a few sub-millisecond runs
    would time the machine's noise more than the model."""
    return max(runs, math.ceil(round_ms / max(time_onnxruntime(session, feeds, 3), 1e-3)))


def alternate(tessel_run, artifact, session, feeds, threads, rounds, runs):
    """Medians of the round medians (ms) of Tessel and onnxruntime, measured
    in alternating rounds."""
    runs = runs_per_round(session, feeds, runs)
    tessel, reference = [], []
    for _ in range(rounds):
        # onnxruntime's workers spin for a while after a run; Tessel
        # started at once would share the cores with them.
        time.sleep(0.1)
        tessel.append(time_tessel(tessel_run, artifact, threads, runs))
        reference.append(time_onnxruntime(session, feeds, runs))
    return statistics.median(tessel), statistics.median(reference)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="the ONNX model")
    parser.add_argument("artifact", help="the model compiled by tessel-compile")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10,
                        help="runs per round, at least (more for fast models)")
    parser.add_argument("--tessel-run", default=str(
        pathlib.Path(__file__).resolve().parent.parent / "build/bin/tessel-run"))
    args = parser.parse_args()

    print(f"{'threads':>7}  {'tessel ms':>10}  {'onnxruntime ms':>14}  {'ratio':>6}")
    for threads in args.threads:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(args.model, options,
                                       providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {
            i.name: rng.standard_normal(i.shape).astype(onnx_dtype(i.type))
            for i in session.get_inputs()
        }
        t, r = alternate(args.tessel_run, args.artifact, session, feeds, threads,
                         args.rounds, args.runs)
        print(f"{threads:>7}  {t:>10.3f}  {r:>14.3f}  {t / r:>6.2f}")


if __name__ == "__main__":
    main()
