#!/usr/bin/env python3
"""Runs the CUDA target's kernels of ONNX backend node tests on the host.

    .venv/bin/python scripts/emulate-node-tests.py                      # every node test
    .venv/bin/python scripts/emulate-node-tests.py --filter 'reduce|softmax'
    .venv/bin/python scripts/emulate-node-tests.py --precision fp32,fp16,bf16

For each test's model.onnx, tessel-compile writes the kernels (--emit
linalg) and tessel-cuda-emulate runs them as the CUDA target launches them,
block by block and thread by thread, against upstream linalg's loops on the
same inputs, at each precision asked for. A model is classified as:

    match         every kernel's outputs within the emulator's tolerance
    differ        a kernel's outputs differ (a wrong kernel)
    failed        the CUDA lowering or the emulator failed, or timed out
    not compiled  tessel-compile refused the model as it stands (a model
                  that needs --freeze-input and the like: the conformance
                  runner, scripts/conformance.py, reports those)
    no kernels    the model computes nothing at run time (a Constant)

Prints each model that differs or fails and a summary line
`N models: N match, N differ, N failed (N not compiled, N without
kernels)`; exits non-zero when any differs or fails.
"""

import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def wheel_node_tests():
    import onnx

    return pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"


def emulate(tools, test, work, precisions, timeout):
    """(test name, outcome, detail) for one node test."""
    name = test.name
    kernels = work / (name + ".mlir")
    try:
        compiled = subprocess.run(
            [str(tools / "tessel-compile"), str(test / "model.onnx"), "--emit", "linalg",
             "--emit-all-constants", "-q", "-o", str(kernels)],
            capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return name, "failed", "tessel-compile timed out after %d s" % timeout
    if compiled.returncode < 0:  # a crash, never a refusal
        return name, "failed", "tessel-compile died of signal %d" % -compiled.returncode
    if compiled.returncode != 0:
        return name, "not compiled", ""
    for precision in precisions:
        try:
            run = subprocess.run(
                [str(tools / "tessel-cuda-emulate"), str(kernels), "--precision", precision],
                capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return name, "failed", "%s: timed out after %d s" % (precision, timeout)
        if run.returncode == 0:
            continue
        if run.stdout.startswith("0 kernels:"):
            return name, "no kernels", ""
        differing = [line for line in run.stdout.splitlines() if "DIFFER" in line]
        if differing:
            return name, "differ", "%s: %s" % (precision, differing[0])
        lines = (run.stdout + run.stderr).strip().splitlines()
        return name, "failed", "%s: %s" % (precision, lines[-1] if lines else
                                            "exit status %d" % run.returncode)
    return name, "match", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=pathlib.Path,
                        help="a folder of node tests (default: the onnx wheel's)")
    parser.add_argument("--filter", default="", help="a regular expression on test names")
    parser.add_argument("--precision", default="fp32,fp16",
                        help="comma-separated precisions to emulate at (default fp32,fp16)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per emulator run")
    parser.add_argument("--tools", type=pathlib.Path, default=ROOT / "build" / "bin")
    args = parser.parse_args()

    suite = args.suite or wheel_node_tests()
    if not suite.is_dir():
        sys.exit("emulate-node-tests: no node tests at %s" % suite)
    for tool in ("tessel-compile", "tessel-cuda-emulate"):
        if not os.access(args.tools / tool, os.X_OK):
            sys.exit("emulate-node-tests: %s not found in %s (build first)" % (tool, args.tools))
    pattern = re.compile(args.filter)
    tests = sorted(test for test in suite.iterdir()
                   if (test / "model.onnx").is_file() and pattern.search(test.name))
    if not tests:
        sys.exit("emulate-node-tests: no test in %s matches '%s'" % (suite, args.filter))
    precisions = [p for p in args.precision.split(",") if p]

    counts = {"match": 0, "differ": 0, "failed": 0, "not compiled": 0, "no kernels": 0}
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(emulate, args.tools, test, pathlib.Path(work), precisions,
                               args.timeout) for test in tests]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name, outcome, detail = future.result()
            counts[outcome] += 1
            if outcome in ("differ", "failed"):
                print("%s: %s: %s" % (outcome.upper(), name, detail), flush=True)
            if done % 100 == 0:
                print("... %d of %d models" % (done, len(tests)), file=sys.stderr, flush=True)
    print("%d models: %d match, %d differ, %d failed (%d not compiled, %d without kernels)" % (
        counts["match"] + counts["differ"] + counts["failed"], counts["match"], counts["differ"],
        counts["failed"], counts["not compiled"], counts["no kernels"]))
    sys.exit(1 if counts["differ"] or counts["failed"] else 0)


if __name__ == "__main__":
    main()
