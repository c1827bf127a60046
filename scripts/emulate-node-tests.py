#!/usr/bin/env python3
"""Runs the CUDA target's kernels of ONNX backend node tests on the host.

    .venv/bin/python scripts/emulate-node-tests.py                      # every node test
    .venv/bin/python scripts/emulate-node-tests.py --filter 'reduce|softmax'
    .venv/bin/python scripts/emulate-node-tests.py --precision fp32,fp16,bf16

For each test's model.onnx, tessel-compile writes the kernels (--emit
linalg) and tessel-cuda-emulate runs them as the CUDA target launches them,
block by block and thread by thread, against upstream linalg's loops on the
same inputs, at each precision asked for. The inputs are the test's own
(test_data_set_0), the model run whole (tessel-cuda-emulate --input), and
at fp32 its outputs are compared with the test's expected ones at ONNX's
tolerances (rtol 1e-3, atol 1e-7). Where the model cannot run whole (an
input that is a sequence, an op between the kernels that the emulator does
not run), each kernel runs alone on pseudo-random inputs instead. A model
is classified as:

    match         every kernel's outputs within the emulator's tolerance,
                  and at fp32 the model's outputs those the test expects
    kernels match every kernel's within tolerance, each run alone
    differ        a kernel's outputs differ (a wrong kernel)
    wrong output  the kernels match upstream's loops, but the model's
                  outputs are not those the test expects
    stopped       the run stopped at one of the model's run-time checks, as
                  the runtime stops it (a Dropout in training mode)
    failed        the CUDA lowering or the emulator failed, or timed out
    not compiled  tessel-compile refused the model as it stands (a model
                  that needs --freeze-input and the like: the conformance
                  runner, scripts/conformance.py, reports those)
    no kernels    the model computes nothing at run time (a Constant)

Prints each model that differs or fails and a summary line
`N models: N match, N differ, N wrong output, N failed (N of the matches
kernel by kernel only; N stopped, N not compiled, N without kernels)`;
exits non-zero when any differs, has a wrong output or fails.
"""

import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent


def wheel_node_tests():
    import onnx

    return pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"


def data_files(test, prefix):
    """The test's first data set's PREFIX_N.pb files, in the order of N."""
    return sorted((test / "test_data_set_0").glob(prefix + "_*.pb"),
                  key=lambda path: int(path.stem.split("_")[1]))


def whole_model_inputs(test):
    """The input_N.pb of the test's first data set, or None where an input
    or output of the model is not a tensor (the emulator reads and writes
    tensors only)."""
    model = onnx.load(str(test / "model.onnx"), load_external_data=False)
    initializers = {tensor.name for tensor in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in initializers]
    if any(not value.type.HasField("tensor_type")
           for value in inputs + list(model.graph.output)):
        return None
    paths = data_files(test, "input")
    return paths if len(paths) == len(inputs) else None


def wrong_outputs(test, outputs):
    """A description of the first output that is not the test's expected
    one at ONNX's tolerances (rtol 1e-3, atol 1e-7), or None."""
    for index, path in enumerate(data_files(test, "output")):
        expected = numpy_helper.to_array(onnx.load_tensor(str(path)))
        got_path = outputs / ("output_%d.npy" % index)
        if not got_path.exists():
            return "output %d was not written" % index
        got = np.load(got_path)
        # (The kernels' integers are signless, and NumPy has no bf16, 8-bit
        # floats or 4-bit integers, whose bits the emulator writes as
        # unsigned integers: the expected type says how to read them.)
        if got.dtype != expected.dtype and got.dtype.itemsize == expected.dtype.itemsize:
            got = got.view(expected.dtype)
        if got.shape != expected.shape:
            return "output %d has shape %s, expected %s" % (index, got.shape, expected.shape)
        if expected.dtype.kind in "iub":
            close = got == expected
        else:  # (floats, NumPy's own or ml_dtypes')
            close = np.isclose(got.astype(np.float64), expected.astype(np.float64),
                               rtol=1e-3, atol=1e-7, equal_nan=True)
        if not np.all(close):
            return "output %d: %d of %d elements outside rtol 1e-3, atol 1e-7" % (
                index, int(np.sum(~close)), close.size)
    return None


def run_emulator(tools, kernels, precision, arguments, timeout):
    return subprocess.run(
        [str(tools / "tessel-cuda-emulate"), str(kernels), "--precision", precision] + arguments,
        capture_output=True, text=True, timeout=timeout)


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
    inputs = whole_model_inputs(test)
    whole = inputs is not None
    for precision in precisions:
        outputs = work / (name + "." + precision)
        arguments = []
        if whole:
            arguments = ["--output-dir", str(outputs)]
            for path in inputs:
                arguments += ["--input", str(path)]
        try:
            run = run_emulator(tools, kernels, precision, arguments, timeout)
            if whole and run.returncode != 0 and "error: @main:" in run.stderr:
                # An op between the kernels that the emulator does not run.
                whole = False
                run = run_emulator(tools, kernels, precision, [], timeout)
        except subprocess.TimeoutExpired:
            return name, "failed", "%s: timed out after %d s" % (precision, timeout)
        if run.returncode == 0:
            if whole and precision == "fp32":
                wrong = wrong_outputs(test, outputs)
                if wrong:
                    return name, "wrong output", "fp32: " + wrong
            continue
        if "error: run stopped:" in run.stderr:
            return name, "stopped", ""
        if run.stdout.startswith("0 kernels:") or run.stdout.startswith("0 calls of"):
            return name, "no kernels", ""
        differing = [line for line in run.stdout.splitlines() if "DIFFER" in line]
        if differing:
            return name, "differ", "%s: %s" % (precision, differing[0])
        lines = (run.stdout + run.stderr).strip().splitlines()
        return name, "failed", "%s: %s" % (precision, lines[-1] if lines else
                                            "exit status %d" % run.returncode)
    return name, "match" if whole else "kernels match", ""


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

    counts = {"match": 0, "kernels match": 0, "differ": 0, "wrong output": 0, "failed": 0,
              "stopped": 0, "not compiled": 0, "no kernels": 0}
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(emulate, args.tools, test, pathlib.Path(work), precisions,
                               args.timeout) for test in tests]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name, outcome, detail = future.result()
            counts[outcome] += 1
            if outcome in ("differ", "wrong output", "failed"):
                print("%s: %s: %s" % (outcome.upper(), name, detail), flush=True)
            if done % 100 == 0:
                print("... %d of %d models" % (done, len(tests)), file=sys.stderr, flush=True)
    matches = counts["match"] + counts["kernels match"]
    print("%d models: %d match, %d differ, %d wrong output, %d failed (%d of the matches kernel "
          "by kernel only; %d stopped, %d not compiled, %d without kernels)" % (
              matches + counts["differ"] + counts["wrong output"] + counts["failed"], matches,
              counts["differ"], counts["wrong output"], counts["failed"], counts["kernels match"],
              counts["stopped"], counts["not compiled"], counts["no kernels"]))
    sys.exit(1 if counts["differ"] or counts["wrong output"] or counts["failed"] else 0)


if __name__ == "__main__":
    main()
