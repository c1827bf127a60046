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

  scripts/compare-outputs.py DATA_DIR OUTPUT_DIR --normwise 1e-3
"""

import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("expected", help="folder with output_N.pb")
    parser.add_argument("outputs", help="folder with output_N.npy")
    parser.add_argument("--normwise", type=float, required=True,
                        help="bound on max |error| / max |expected| per output")
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.expected, "output_*.pb")))
    if not paths:
        sys.exit("error: no output_N.pb in %s" % args.expected)
    passed = True
    for path in paths:
        name = os.path.basename(path)[:-len(".pb")]
        expected = numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64)
        got_path = os.path.join(args.outputs, name + ".npy")
        if not os.path.exists(got_path):
            sys.exit("error: %s is missing" % got_path)
        got = np.load(got_path).astype(np.float64)
        if got.shape != expected.shape:
            sys.exit("error: %s has shape %s, expected %s" % (name, got.shape, expected.shape))
        error = float(np.max(np.abs(got - expected))) if got.size else 0.0
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        relative = error / scale if scale else error
        ok = bool(np.all(np.isfinite(got))) and relative <= args.normwise
        passed &= ok
        print("%s %s: max abs error %.3g, max |expected| %.3g, normwise error %.3g (bound %g)"
              % ("PASS" if ok else "FAIL", name, error, scale, relative, args.normwise))
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
