#!/usr/bin/env python3
"""The cost of run-time index checks, written to docs/performance-index-checks.md.

    .venv/bin/python scripts/bench-index-checks.py            # part of make bench
    .venv/bin/python scripts/bench-index-checks.py --runs 50

Every Gather, GatherElements, GatherND, ScatterElements and ScatterND whose
indices are known only at run time gets a kernel that counts the indices
outside their axis and a host step that stops the run when the count is not
zero. This measures what that costs on the models where it matters most:
BERT's token-embedding lookup, and a GatherElements whose index tensor is as
large as its output, so that counting reads as many indices as the gather
does (the worst case), and the whole of BERT-base when scripts/bench.py has
exported it (make bench runs that first). For each model `tessel-run --profile` times every
step (single thread, valid random indices); the cost is the time of the
count kernels and check steps as a share of the run. Tessel's latency is
also given next to onnxruntime's (which checks indices too), measured in
alternating rounds in the same run.
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
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402  (scripts/bench.py: latency and CPU helpers)

PROFILE_TOTAL = re.compile(r"profile: ([0-9.]+) ms per run")
PROFILE_ROW = re.compile(r"^\s*([0-9.]+)\s+[0-9.]+%\s+\d+\s+(\S+)$", re.MULTILINE)


def embedding_model(rng):
    """BERT-base's token embedding: 128 ids into a 30522 x 768 table."""
    table = numpy_helper.from_array(rng.standard_normal((30522, 768)).astype(np.float32),
                                    "table")
    node = helper.make_node("Gather", ["table", "ids"], ["embedded"], name="tokens", axis=0)
    graph = helper.make_graph(
        [node], "embedding", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 128])],
        [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [1, 128, 768])],
        initializer=[table])
    feeds = {"ids": rng.integers(0, 30522, (1, 128)).astype(np.int64)}
    return graph, feeds


def gather_elements_model(rng):
    """One index per output element: 1024 x 1024 of each."""
    node = helper.make_node("GatherElements", ["data", "indices"], ["picked"], name="pick",
                            axis=1)
    graph = helper.make_graph(
        [node], "gather_elements",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1024, 1024]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [1024, 1024])],
        [helper.make_tensor_value_info("picked", TensorProto.FLOAT, [1024, 1024])])
    feeds = {"data": rng.standard_normal((1024, 1024)).astype(np.float32),
             "indices": rng.integers(-1024, 1024, (1024, 1024)).astype(np.int64)}
    return graph, feeds


MODELS = {"embedding": embedding_model, "gather_elements": gather_elements_model}


def bert_base(bench_dir, rng):
    """The whole of BERT-base as scripts/bench.py exported it, if it has."""
    path = bench_dir / "bert_base.onnx"
    if not path.exists():
        return None
    model = onnx.load(str(path))
    ids = model.graph.input[0]
    shape = [d.dim_value for d in ids.type.tensor_type.shape.dim]
    return model, {ids.name: rng.integers(0, 30522, shape).astype(np.int64)}


def check_share(tessel_run, artifact, inputs, runs):
    """(ms per run, ms per run in count kernels and check steps) of a profile."""
    result = subprocess.run(
        [tessel_run, artifact, "--input", *inputs, "--bench", str(runs), "--warmup", "3",
         "--threads", "1", "--profile", "1000"], check=True, capture_output=True, text=True)
    total = float(PROFILE_TOTAL.search(result.stdout).group(1))
    checks = sum(float(ms) for ms, name in PROFILE_ROW.findall(result.stdout)
                 if "count_out_of_range" in name or name == "check")
    return total, checks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="runs per round")
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "performance-index-checks.md"))
    args = parser.parse_args()
    latency = bench.load_compare_latency()
    tools = pathlib.Path(args.build) / "bin"
    tessel_run, tessel_compile = str(tools / "tessel-run"), str(tools / "tessel-compile")
    rng = np.random.default_rng(0)
    rows = []
    models = []
    for name, build in MODELS.items():
        graph, feeds = build(rng)
        models.append((name, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                       feeds))
    exported = bert_base(pathlib.Path(args.build) / "bench", rng)
    if exported:
        models.append(("bert_base (whole model)", *exported))
    with tempfile.TemporaryDirectory() as work:
        for name, model, feeds in models:
            stem = name.split()[0]
            model_path, artifact = f"{work}/{stem}.onnx", f"{work}/{stem}.tsl"
            onnx.save(model, model_path)
            subprocess.run([tessel_compile, model_path, "-o", artifact, "-q"], check=True)
            inputs = []
            for input_name, value in feeds.items():
                inputs.append(f"{work}/{stem}-{input_name}.npy")
                np.save(inputs[-1], value)
            profiles = [check_share(tessel_run, artifact, inputs, args.runs)
                        for _ in range(args.rounds)]
            total = statistics.median(total for total, _ in profiles)
            check = statistics.median(check for _, check in profiles)
            t, r = bench.measure(latency, tools, model_path, artifact, 1, args.rounds, args.runs)
            rows.append((name, total, check, 100 * check / total, t / r))
            print(f"{name}: profile {total:.3f} ms/run, checks {check:.3f} ms "
                  f"({100 * check / total:.2f}%), tessel/onnxruntime {t / r:.2f}", flush=True)

    lines = [
        "# The cost of run-time index checks",
        "",
        f"Measured {datetime.date.today()} on {bench.cpu_description()}, 1 thread, by "
        "`scripts/bench-index-checks.py` (part of `make bench`); medians of "
        f"{args.rounds} rounds of {args.runs} runs. The share is the time of the count "
        "kernels and check steps in `tessel-run --profile` (which synchronizes after each "
        "step); the ratio is Tessel's latency over onnxruntime's, medians of "
        f"{args.rounds * args.runs} samples of each taken alternately in one process.",
        "",
        "| model | ms per run (profiled) | ms in checks | share | Tessel / onnxruntime |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, total, check, share, ratio in rows:
        lines.append(f"| {name} | {total:.3f} | {check:.3f} | {share:.2f}% | {ratio:.2f} |")
    pathlib.Path(args.output).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
