#!/usr/bin/env python3
"""Writes an ONNX model of one QLinearConv with random weights.

    qlinearconv_model.py --input i8:1x41x4x16 --weights i8:40x41x4x4
        [--strides 3,1] [--pads 2,1,0,1] [--group 1] [--seed 0] -o model.onnx

For shapes too large to write out in an .onnxtxt test: the weights are
uniform over their 8-bit type with one random zero point per filter (so
that weights minus their zero points overflow 8 bits), the scales fixed.
The input is the graph input, the result's shape is left to inference.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TYPES = {"i8": (np.int8, TensorProto.INT8), "u8": (np.uint8, TensorProto.UINT8)}


def typed_shape(text):
    kind, _, dims = text.partition(":")
    if kind not in TYPES or not dims:
        raise argparse.ArgumentTypeError(f"'{text}' is not TYPE:DIMS (i8:1x8x4x4, u8:...)")
    return kind, [int(d) for d in dims.split("x")]


def integers(text):
    return [int(v) for v in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input", type=typed_shape, required=True)
    parser.add_argument("--weights", type=typed_shape, required=True)
    parser.add_argument("--strides", type=integers)
    parser.add_argument("--pads", type=integers)
    parser.add_argument("--group", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    (x_kind, x_shape), (w_kind, w_shape) = args.input, args.weights
    x_type, w_type = TYPES[x_kind][0], TYPES[w_kind][0]
    w_info, filters = np.iinfo(w_type), w_shape[0]
    weights = rng.integers(w_info.min, w_info.max, w_shape, endpoint=True).astype(w_type)
    zero_points = rng.integers(w_info.min, w_info.max, filters, endpoint=True).astype(w_type)
    x_zero_point = np.array(np.iinfo(x_type).min + 131, x_type)
    initializers = [
        numpy_helper.from_array(np.array(0.02, np.float32), "x_scale"),
        numpy_helper.from_array(x_zero_point, "x_zero_point"),
        numpy_helper.from_array(weights, "w"),
        numpy_helper.from_array(rng.uniform(1e-3, 1e-2, filters).astype(np.float32), "w_scale"),
        numpy_helper.from_array(zero_points, "w_zero_point"),
        numpy_helper.from_array(np.array(0.5, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(x_zero_point, x_type), "y_zero_point"),
    ]
    attributes = {"kernel_shape": w_shape[2:], "group": args.group}
    if args.strides:
        attributes["strides"] = args.strides
    if args.pads:
        attributes["pads"] = args.pads
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zero_point", "w", "w_scale",
                                            "w_zero_point", "y_scale", "y_zero_point"],
                            ["y"], **attributes)
    graph = helper.make_graph(
        [node], "qlinearconv",
        [helper.make_tensor_value_info("x", TYPES[x_kind][1], x_shape)],
        [helper.make_tensor_value_info("y", TYPES[x_kind][1], None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model)
    onnx.save(model, args.output)


if __name__ == "__main__":
    main()
