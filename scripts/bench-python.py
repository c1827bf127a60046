#!/usr/bin/env python3
"""The Python package's call overhead, written to docs/performance-python.md.

    PYTHONPATH=build/python .venv/bin/python scripts/bench-python.py

Times one run of the MLP benchmark model (batch 1, one thread) three ways in
alternating rounds: through the C API (tessel-run --bench, which reuses its
output tensors), through tessel's Python Session.run (a dict of numpy arrays
in, new numpy arrays out) and through onnxruntime's InferenceSession.run. The
figure is Python's median per-run time less the C API's, in microseconds.
"""

import argparse
import datetime
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

import bench

ROOT = bench.ROOT


def python_run_microseconds(session, feeds, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        session.run(feeds)
        times.append((time.perf_counter_ns() - start) / 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=2000, help="runs per round")
    parser.add_argument("--output", default=str(ROOT / "docs" / "performance-python.md"))
    args = parser.parse_args()
    sys.path.insert(0, str(pathlib.Path(args.build) / "python"))
    import onnxruntime as ort
    import tessel

    tools = pathlib.Path(args.build) / "bin"
    work = pathlib.Path(args.build) / "bench"
    work.mkdir(parents=True, exist_ok=True)
    model, artifact = work / "mlp.onnx", work / "mlp.tsl"
    subprocess.run([bench.TORCH_PYTHON, str(ROOT / "test" / "lib" / "export_torch_model.py"),
                    "mlp", "--opset", "17", "-o", str(model)],
                   check=True, stderr=subprocess.DEVNULL)
    tessel.compile(model, output=artifact, progress=False)
    latency = bench.load_compare_latency()

    module = tessel.load(artifact)
    session = module.session(threads=1)
    (info,) = module.inputs
    feeds = {info.name: np.random.default_rng(0).standard_normal(info.shape).astype(np.float32)}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    reference = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    python_run_microseconds(session, feeds, 200)

    c_api, python, onnxruntime = [], [], []
    for _ in range(args.rounds):
        c_api.append(1e3 * latency.time_tessel(str(tools / "tessel-run"), str(artifact), 1,
                                               args.runs))
        python.append(python_run_microseconds(session, feeds, args.runs))
        onnxruntime.append(1e3 * latency.time_onnxruntime(reference, feeds, args.runs))
    c_api, python, onnxruntime = (statistics.median(x) for x in (c_api, python, onnxruntime))
    overhead = python - c_api
    cpu = bench.cpu_description()
    print(f"{cpu}: MLP per run, 1 thread: C API {c_api:.2f} us, Python {python:.2f} us "
          f"(overhead {overhead:+.2f} us), onnxruntime {onnxruntime:.2f} us")
    pathlib.Path(args.output).write_text(f"""# The Python package's call overhead

Measured by `scripts/bench-python.py` (part of `make bench`) on {datetime.date.today()},
{cpu}, one thread, batch 1, medians of {args.rounds} alternating rounds of
{args.runs} runs each. The model is the MLP benchmark (1×1×28×28 input, 10 outputs).

| path | µs per run |
|---|---|
| C API (`tessel-run --bench`, outputs reused) | {c_api:.2f} |
| Python `Session.run({{name: array}})` (new output arrays) | {python:.2f} |
| onnxruntime `InferenceSession.run` | {onnxruntime:.2f} |

Python's overhead over the C API: **{overhead:+.2f} µs** per run. Only differences
measured in the same run mean anything on a shared machine.
""")


if __name__ == "__main__":
    main()
