#!/usr/bin/env python3
"""QuantizeLinear of values at and around every tie, against onnx.reference.

x86 kernels on CPUs with FMA divide by a constant scale through its
reciprocal and two FMAs (tessel-x86-rounded-quotients) wherever the
quotient is only rounded to an integer. This checks that the integer is the
division's, bit for bit: for each scale, inputs at (k + 1/2) * scale for
every k in the output's range and a few ulps either side (where the
quotient falls a hair either side of a tie), random values, values whose
quotient is subnormal, and NaN. (Not infinite quotients: onnx.reference
casts them to int32 as NumPy does, to INT_MIN, where Tessel saturates to
the nearer end.) Expected outputs come from onnx.reference.ReferenceEvaluator;
tessel-run compares at rtol 0, atol 0. Prints one line per scale and exits
1 if any differs.
"""

import argparse
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bit_exact import check_bit_exact  # noqa: E402


def inputs(rng, scale, zero_point):
    """The float inputs for one u8 scale and zero point."""
    ties = (np.arange(-zero_point - 2, 258 - zero_point, dtype=np.float64) + 0.5) * scale
    ties = ties.astype(np.float32)
    around = [ties]
    for ulps in range(1, 4):
        around += [np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))]
        ties = around[-2]
    special = np.array([0.0, -0.0, np.nan, 1e-40, -1e-40, np.finfo(np.float32).tiny,
                        scale * 1e-30], np.float32)
    spread = rng.uniform(-300 * scale, 300 * scale, 4096).astype(np.float32)
    return np.concatenate(around + [special, spread])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(20261127)
    failures = 0
    scales = [0.02, 0.5, 1.0 / 3.0, 7.0] + [float(s) for s in np.exp(rng.uniform(-9, 2, 8))]
    for index, scale in enumerate(scales):
        scale = np.float32(scale)
        zero_point = int(rng.integers(0, 256))
        x = inputs(rng, scale, zero_point)
        inits = [numpy_helper.from_array(np.array(scale, np.float32), "ys"),
                 numpy_helper.from_array(np.array(zero_point, np.uint8), "yz")]
        graph = helper.make_graph(
            [helper.make_node("QuantizeLinear", ["x", "ys", "yz"], ["y"])], "quantize_ties",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
            [helper.make_tensor_value_info("y", TensorProto.UINT8, [x.size])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        passed, output = check_bit_exact(model, x, os.path.join(args.work, f"scale{index}"))
        failures += not passed
        print(f"scale {scale:.6g} zero point {zero_point}, {x.size} inputs: "
              f"{'bit-exact' if passed else 'differs'}")
        if not passed:
            print(output)
    print(f"{len(scales)} scales: {len(scales) - failures} bit-exact, {failures} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
