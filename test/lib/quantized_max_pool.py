#!/usr/bin/env python3
"""Quantized max pools against onnx.reference, bit for bit.

Each case is DequantizeLinear -> MaxPool -> QuantizeLinear on u8 or s8
activations (scales and zero points as initializers, so that Tessel pools
the bytes themselves), with padding, strides and channel counts that leave
partial vectors. The output scale equals the input's (onnxruntime's QDQ
form: the pool runs on the bytes) or differs (Tessel's own PTQ: the pool is
followed by a requantization). Expected outputs come from
onnx.reference.ReferenceEvaluator; tessel-run compares at rtol 0, atol 0.
Prints one line per case and exits 1 if any differs.
"""

import argparse
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bit_exact import check_bit_exact  # noqa: E402

# (name, storage type, channels, kernel, strides, pads, output scale / input scale)
CASES = [
    ("u8-3x3-s2-p1", np.uint8, 20, [3, 3], [2, 2], [1, 1, 1, 1], 1.0),
    ("u8-3x3-s2-p1-requantized", np.uint8, 64, [3, 3], [2, 2], [1, 1, 1, 1], 1.37),
    ("s8-3x3-s2-p1", np.int8, 20, [3, 3], [2, 2], [1, 1, 1, 1], 1.0),
    ("s8-2x2-s1-p0-requantized", np.int8, 33, [2, 2], [1, 1], [0, 0, 0, 0], 0.61),
    ("u8-5x5-s1-p2", np.uint8, 7, [5, 5], [1, 1], [2, 2, 2, 2], 1.0),
]


def model(storage, channels, kernel, strides, pads, ratio):
    element = TensorProto.UINT8 if storage == np.uint8 else TensorProto.INT8
    zero = 17 if storage == np.uint8 else -9
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(zero, storage), "xz"),
             numpy_helper.from_array(np.array(0.05 * ratio, np.float32), "ys"),
             numpy_helper.from_array(np.array(zero + 3, storage), "yz")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
             helper.make_node("MaxPool", ["xf"], ["pooled"], kernel_shape=kernel,
                              strides=strides, pads=pads),
             helper.make_node("QuantizeLinear", ["pooled", "ys", "yz"], ["y"])]
    graph = helper.make_graph(
        nodes, "quantized_max_pool",
        [helper.make_tensor_value_info("x", element, [1, channels, 15, 14])],
        [helper.make_tensor_value_info("y", element, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(20261126)
    failures = 0
    for name, storage, channels, kernel, strides, pads, ratio in CASES:
        info = np.iinfo(storage)
        x = rng.integers(info.min, info.max + 1, [1, channels, 15, 14]).astype(storage)
        passed, output = check_bit_exact(model(storage, channels, kernel, strides, pads, ratio),
                                         x, os.path.join(args.work, name))
        failures += not passed
        print(f"{name}: {'bit-exact' if passed else 'differs'}")
        if not passed:
            print(output)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
