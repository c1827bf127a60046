#!/usr/bin/env python3
"""Latency of a compiled Tessel artifact next to onnxruntime, in one run.

    scripts/compare-latency.py model.onnx model.tsl --threads 1 2 --rounds 5
    scripts/compare-latency.py lstm.onnx lstm.tsl --dim seq=8   # a symbolic dimension

For each thread count the two run in this process on the same random inputs
(Tessel through its Python bindings, build/python), timed in alternating
samples of a few milliseconds each, so that both see the same machine noise:
on a shared machine whose speed drifts by tens of percent within minutes,
rounds of many runs each (one process per Tessel round) gave ratios that
moved by 0.3 from one try to the next. Prints the median sample of each and
their ratio Tessel / onnxruntime.
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


def load_tessel(tessel_run):
    """The tessel Python package of the build that holds `tessel_run`."""
    sys.path.insert(0, str(pathlib.Path(tessel_run).resolve().parent.parent / "python"))
    import tessel
    return tessel


def mean_ms(run, repeats):
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - start) * 1e3 / max(repeats, 1)


def alternate(tessel_run, artifact, session, feeds, threads, rounds, runs, sample_ms=2.0):
    """Median latencies (ms) of Tessel and onnxruntime over rounds * runs
    samples each, taken in alternation (which goes first swaps each time).
    A sample is the mean of enough runs to last about `sample_ms`, judged by
    onnxruntime's latency. With several threads, each sample waits 0.1 s
    first: onnxruntime's workers spin for tens of milliseconds after a run,
    and a Tessel sample started at once ran 6x slower beside them (an MLP
    at 2 threads on 2 cores). Runs that short are preceded by half as many
    untimed ones: the first runs after a pause wait for worker threads to
    wake, which a sample of back-to-back latency should not count; a
    sample of one run gets one."""
    module = load_tessel(tessel_run).load(artifact)
    engines = [lambda s=module.session(threads=threads): s.run(feeds),
               lambda: session.run(None, feeds)]
    for run in engines:
        mean_ms(run, 3)
    repeats = max(1, math.ceil(sample_ms / max(mean_ms(engines[1], 3), 1e-3)))
    samples = ([], [])
    for pair in range(rounds * runs):
        for engine in (0, 1) if pair % 2 == 0 else (1, 0):
            time.sleep(0.1 if threads > 1 else 0.0)
            mean_ms(engines[engine], max(1, repeats // 2))
            samples[engine].append(mean_ms(engines[engine], repeats))
    return statistics.median(samples[0]), statistics.median(samples[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="the ONNX model")
    parser.add_argument("artifact", help="the model compiled by tessel-compile")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10,
                        help="samples of each per round (rounds * runs in all)")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                        help="the size of a symbolic input dimension (a varying length "
                             "of a --max-shape artifact); repeatable")
    parser.add_argument("--tessel-run", default=str(
        pathlib.Path(__file__).resolve().parent.parent / "build/bin/tessel-run"))
    args = parser.parse_args()
    dims = {}
    for given in args.dim:
        name, _, size = given.partition("=")
        if not size.isdigit():
            parser.error(f"--dim {given}: expected NAME=N")
        dims[name] = int(size)

    def concrete(shape):
        unknown = [d for d in shape if not isinstance(d, int) and d not in dims]
        if unknown:
            sys.exit(f"compare-latency: give the size of symbolic dimension(s) "
                     f"{', '.join(map(str, unknown))} with --dim NAME=N")
        return [d if isinstance(d, int) else dims[d] for d in shape]

    print(f"{'threads':>7}  {'tessel ms':>10}  {'onnxruntime ms':>14}  {'ratio':>6}")
    for threads in args.threads:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(args.model, options,
                                       providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {
            i.name: rng.standard_normal(concrete(i.shape)).astype(onnx_dtype(i.type))
            for i in session.get_inputs()
        }
        t, r = alternate(args.tessel_run, args.artifact, session, feeds, threads,
                         args.rounds, args.runs)
        print(f"{threads:>7}  {t:>10.3f}  {r:>14.3f}  {t / r:>6.2f}")


if __name__ == "__main__":
    main()
