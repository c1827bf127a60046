#!/usr/bin/env python3
"""Writes a model whose layers repeat: `--layers` fully connected layers of
`--width` features (MatMul, Add, Relu), each with its own random weight and
bias, then a last one of other widths. The repeated layers differ only in
their weights, as a transformer's or a ResNet stage's do, so their kernels
are the same function but for the constants they are passed.
"""

import argparse

import numpy as np
import onnx
from onnx import helper, numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    nodes, initializers = [], []
    value = "x"

    def layer(name, columns, rows, activation):
        nonlocal value
        weight = rng.normal(0, rows ** -0.5, (rows, columns)).astype(np.float32)
        bias = rng.normal(0, 0.1, columns).astype(np.float32)
        initializers.extend([numpy_helper.from_array(weight, f"{name}_weight"),
                             numpy_helper.from_array(bias, f"{name}_bias")])
        nodes.append(helper.make_node("MatMul", [value, f"{name}_weight"], [f"{name}_product"],
                                      name=f"{name}_matmul"))
        output = f"{name}_sum" if activation else "y"
        nodes.append(helper.make_node("Add", [f"{name}_product", f"{name}_bias"], [output],
                                      name=f"{name}_add"))
        value = output
        if activation:
            nodes.append(helper.make_node("Relu", [output], [f"{name}_relu"], name=f"{name}_relu"))
            value = f"{name}_relu"

    for i in range(args.layers):
        layer(f"layer{i}", args.width, args.width, True)
    layer("head", 10, args.width, False)
    graph = helper.make_graph(
        nodes, "repeated_layers",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [args.batch, args.width])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [args.batch, 10])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, args.output)


if __name__ == "__main__":
    main()
