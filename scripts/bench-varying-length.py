#!/usr/bin/env python3
"""One varying-length artifact (--max-shape) of the benchmark's LSTM and GRU
and of the test encoder against onnxruntime at several lengths, written to
docs/performance-varying-length.md.

    .venv/bin/python scripts/bench-varying-length.py            # part of make bench
    .venv/bin/python scripts/bench-varying-length.py --rounds 3

Each model (the recurrences: two layers, input 64, hidden 128, a linear
read-out of y[-1]; the encoder: two transformer layers of width 256 over
token ids) is exported from PyTorch twice: with a symbolic sequence length,
compiled once with `--max-shape` at its bound, and at the bound, compiled as
it is.
At each length the varying artifact runs on the same random inputs as
onnxruntime runs the symbolic model, their outputs are compared, and their
latencies are measured in alternating samples (scripts/compare-latency.py)
at 1 and 2 threads. At the bound, the fixed artifact is measured against
onnxruntime in the same way, so that the two artifacts compare through
onnxruntime's time.
"""

import argparse
import datetime
import pathlib
import subprocess
import sys

import numpy as np
import onnxruntime as ort

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402  (scripts/bench.py: latency and CPU helpers)

THREADS = (1, 2)


class Spec:
    """A model's bound, the lengths it runs at, and its input at a length."""

    def __init__(self, bound, lengths, shape, token_ids=False):
        self.bound, self.lengths, self.shape, self.token_ids = bound, lengths, shape, token_ids

    def max_shape(self):
        return "input=" + "x".join(str(d) for d in self.shape(self.bound))

    def feeds(self, rng, length):
        if self.token_ids:
            return {"input": rng.integers(0, 1000, self.shape(length), dtype=np.int64)}
        return {"input": rng.standard_normal(self.shape(length)).astype(np.float32)}


MODELS = {
    "lstm_seq32": Spec(32, (32, 16, 8, 1), lambda length: (length, 1, 64)),
    "gru_seq32": Spec(32, (32, 16, 8, 1), lambda length: (length, 1, 64)),
    "encoder": Spec(128, (128, 64, 16), lambda length: (1, length), token_ids=True),
}


def export(name, path, dynamic):
    command = [bench.TORCH_PYTHON, str(ROOT / "test" / "lib" / "export_torch_model.py"), name,
               "-o", str(path)]
    subprocess.run(command + (["--dynamic-sequence"] if dynamic else []), check=True,
                   stderr=subprocess.DEVNULL)


def session_for(model, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10,
                        help="samples of each per round (rounds * runs in all)")
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--output",
                        default=str(ROOT / "docs" / "performance-varying-length.md"))
    args = parser.parse_args()
    tools = pathlib.Path(args.build) / "bin"
    tessel_run = str(tools / "tessel-run")
    work = pathlib.Path(args.build) / "bench"
    work.mkdir(parents=True, exist_ok=True)
    latency = bench.load_compare_latency()
    tessel = latency.load_tessel(tessel_run)
    rng = np.random.default_rng(0)

    rows = []
    for name, spec in MODELS.items():
        varying_model, fixed_model = work / f"{name}_varying.onnx", work / f"{name}.onnx"
        export(name, varying_model, dynamic=True)
        export(name, fixed_model, dynamic=False)
        varying, fixed = work / f"{name}_varying.tsl", work / f"{name}.tsl"
        subprocess.run([str(tools / "tessel-compile"), str(varying_model), "--max-shape",
                        spec.max_shape(), "-q", "-o", str(varying)], check=True)
        subprocess.run([str(tools / "tessel-compile"), str(fixed_model), "-q", "-o",
                        str(fixed)], check=True)
        tessel_session = tessel.load(str(varying)).session(threads=1)
        # onnxruntime's sessions of the symbolic model, one per thread count.
        sessions = {threads: session_for(varying_model, threads) for threads in THREADS}
        for length in spec.lengths:
            feeds = spec.feeds(rng, length)
            expected = sessions[1].run(None, feeds)[0]
            actual = tessel_session.run(None, feeds)[0]
            row = {"model": name, "length": length, "bound": spec.bound,
                   "difference": float(np.abs(actual - expected).max() /
                                       np.abs(expected).max())}
            for threads in THREADS:
                row[threads] = latency.alternate(tessel_run, str(varying), sessions[threads],
                                                 feeds, threads, args.rounds, args.runs)
            if length == spec.bound:
                row["fixed"] = latency.alternate(tessel_run, str(fixed),
                                                 session_for(fixed_model, 1), feeds, 1,
                                                 args.rounds, args.runs)
            rows.append(row)
            print(f"{name} at length {length}: difference {row['difference']:.1e}; " + "; ".join(
                f"{threads}t tessel {row[threads][0]:.3f} ms onnxruntime "
                f"{row[threads][1]:.3f} ms ratio {row[threads][0] / row[threads][1]:.2f}"
                for threads in THREADS), flush=True)
            if "fixed" in row:
                print(f"{name} fixed at {spec.bound}: 1t tessel {row['fixed'][0]:.3f} ms "
                      f"onnxruntime {row['fixed'][1]:.3f} ms", flush=True)
    write_report(args, rows)


def write_report(args, rows):
    lines = [
        "# One artifact for every sequence length",
        "",
        f"Measured {datetime.date.today()} on {bench.cpu_description()}, by "
        "`scripts/bench-varying-length.py` (part of `make bench`). The benchmark's LSTM and "
        "GRU (two layers, input 64, hidden 128, a linear read-out of y[-1]) and the test "
        "encoder (token and position embeddings, two post-norm transformer layers of width "
        "256 and 4 heads) exported from PyTorch with a symbolic sequence length and compiled "
        "once with `--max-shape` at the bound; onnxruntime runs the same ONNX file. The "
        "recurrences run their steps in chunks of 8, each chunk's input projection one "
        "matrix product, and stop at the length. The encoder's attention fills the padded "
        "keys (-inf before the Softmax, zeros in the values), so that its results within "
        "the length are those of the length; every other position past the length is never "
        "read, and the kernels that compute them run in rows of workgroups along the length "
        "(16 positions each at the bound 128), of which a run computes only those that "
        "reach below its length. Only the key axis of attention, and the values filled "
        "past the length, are computed at the bound. Differences are the largest absolute "
        "difference over the largest output magnitude. Latencies are medians of "
        f"{args.rounds * args.runs} alternating samples (scripts/compare-latency.py); ratio = "
        "Tessel / onnxruntime.",
        "",
        "| model | length | difference | 1 thread ms | onnxruntime | ratio | 2 threads ms "
        "| onnxruntime | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = [row["model"], str(row["length"]), f"{row['difference']:.1e}"]
        for threads in THREADS:
            t, r = row[threads]
            cells += [f"{t:.3f}", f"{r:.3f}", f"{t / r:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "At the bound, against the artifact compiled for the bound (1 thread, "
              "each against onnxruntime in its own alternating samples):", "",
              "| model | bound | varying ratio | fixed ratio | varying / fixed |",
              "|---|---:|---:|---:|---:|"]
    for row in rows:
        if "fixed" in row:
            varying = row[1][0] / row[1][1]
            fixed = row["fixed"][0] / row["fixed"][1]
            lines.append(f"| {row['model']} | {row['bound']} | {varying:.2f} | {fixed:.2f} | "
                         f"{varying / fixed:.2f} |")
    pathlib.Path(args.output).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
