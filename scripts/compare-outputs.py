#!/usr/bin/env python3
"""Compares the outputs a run wrote (tessel-run --output-dir: output_N.npy)
with the expected ones of an ONNX test-data folder (output_N.pb), relative
to the scale of each output: max |got - expected| / max |expected| must be
at most --normwise.

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
    """(name, values) of each output_N.pb of folder, in float64."""
    paths = sorted(glob.glob(os.path.join(folder, "output_*.pb")))
    if not paths:
        sys.exit("error: no output_N.pb in %s" % folder)
    for path in paths:
        name = os.path.basename(path)[:-len(".pb")]
        yield name, numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64)


def largest(values):
    return float(np.max(np.abs(values))) if values.size else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("expected", help="folder with output_N.pb")
    parser.add_argument("outputs", nargs="?", help="folder with output_N.npy")
    parser.add_argument("--normwise", type=float,
                        help="bound on max |error| / max |expected| per output")
    parser.add_argument("--larger-than", type=float, metavar="LIMIT",
                        help="exit 0 when some max |expected| is above LIMIT, 1 when none is")
    args = parser.parse_args()
    if args.larger_than is not None:
        sys.exit(0 if any(largest(expected) > args.larger_than
                          for _, expected in expected_outputs(args.expected)) else 1)
    if args.outputs is None or args.normwise is None:
        parser.error("OUTPUT_DIR and --normwise are needed without --larger-than")
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
        relative = error / scale if scale else error
        ok = bool(np.all(np.isfinite(got))) and relative <= args.normwise
        passed &= ok
        print("%s %s: max abs error %.3g, max |expected| %.3g, normwise error %.3g (bound %g)"
              % ("PASS" if ok else "FAIL", name, error, scale, relative, args.normwise))
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
