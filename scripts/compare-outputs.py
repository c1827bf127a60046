#!/usr/bin/env python3
"""Compares the outputs a run wrote (tessel-run --output-dir: output_N.npy)
with the expected ones: those of an ONNX test-data folder (output_N.pb), or
those another run wrote (output_N.npy: the x86 executable's, against which
tessel-cuda-emulate's are held). Either relative to the scale of each
output, max |got - expected| / max |expected| at most --normwise, or
elementwise, |got - expected| <= atol + rtol * |expected| (--rtol, --atol).

Reduced-precision products (fp16, bf16) round every operand relative to
its own magnitude, so their errors scale with the activations, not with
each output element: an output near zero among outputs in the thousands
(ResNet-50 with scripts/two-level-weights.py) carries errors of the
thousands' rounding unit. An elementwise tolerance sized for outputs near
1 fails such a model for that reason alone; the error relative to the
output's largest magnitude measures the rounding directly.

With --larger-than LIMIT and no OUTPUT_DIR it compares nothing: it exits
0 when some expected output is larger than LIMIT in magnitude, 1 when none
is (scripts/gpu-checks.sh picks by it how to compare a model at fp32).

  scripts/compare-outputs.py DATA_DIR OUTPUT_DIR --normwise 1e-3
  scripts/compare-outputs.py X86_OUTPUT_DIR OUTPUT_DIR --rtol 1e-3 --atol 1e-4
  scripts/compare-outputs.py DATA_DIR --larger-than 100
"""

import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def expected_outputs(folder):
    """(name, values) of each output_N.pb of folder (or, where it has none,
    each output_N.npy), in float64."""
    paths = sorted(glob.glob(os.path.join(folder, "output_*.pb")))
    if paths:
        for path in paths:
            name = os.path.basename(path)[:-len(".pb")]
            yield name, numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64)
        return
    paths = sorted(glob.glob(os.path.join(folder, "output_*.npy")))
    if not paths:
        sys.exit("error: no output_N.pb or output_N.npy in %s" % folder)
    for path in paths:
        yield os.path.basename(path)[:-len(".npy")], np.load(path).astype(np.float64)


def largest(values):
    return float(np.max(np.abs(values))) if values.size else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("expected", help="folder with output_N.pb")
    parser.add_argument("outputs", nargs="?", help="folder with output_N.npy")
    parser.add_argument("--normwise", type=float,
                        help="bound on max |error| / max |expected| per output")
    parser.add_argument("--rtol", type=float, help="elementwise: relative tolerance")
    parser.add_argument("--atol", type=float, help="elementwise: absolute tolerance")
    parser.add_argument("--larger-than", type=float, metavar="LIMIT",
                        help="exit 0 when some max |expected| is above LIMIT, 1 when none is")
    args = parser.parse_args()
    if args.larger_than is not None:
        sys.exit(0 if any(largest(expected) > args.larger_than
                          for _, expected in expected_outputs(args.expected)) else 1)
    elementwise = args.rtol is not None and args.atol is not None
    if args.outputs is None or (args.normwise is None) == (not elementwise):
        parser.error("OUTPUT_DIR and either --normwise or --rtol and --atol are needed "
                     "without --larger-than")
    passed = True
    for name, expected in expected_outputs(args.expected):
        got_path = os.path.join(args.outputs, name + ".npy")
        if not os.path.exists(got_path):
            sys.exit("error: %s is missing" % got_path)
        got = np.load(got_path).astype(np.float64)
        if got.shape != expected.shape:
            sys.exit("error: %s has shape %s, expected %s" % (name, got.shape, expected.shape))
        error = largest(got - expected)
        scale = largest(expected)
        finite = bool(np.all(np.isfinite(got)))
        if elementwise:
            outside = int(np.sum(~(np.abs(got - expected) <= args.atol + args.rtol * np.abs(expected))))
            ok = finite and outside == 0
            summary = "%d of %d outside rtol %g atol %g" % (outside, got.size, args.rtol, args.atol)
        else:
            relative = error / scale if scale else error
            ok = finite and relative <= args.normwise
            summary = "normwise error %.3g (bound %g)" % (relative, args.normwise)
        passed &= ok
        print("%s %s: max abs error %.3g, max |expected| %.3g, %s"
              % ("PASS" if ok else "FAIL", name, error, scale, summary))
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
