"""Checks `tessel-run --npu-stats` JSON against the ONNX model it ran.

Every layer names ONNX nodes of the model; a layer holding a Conv, Gemm or
MatMul did exactly the multiply-accumulates the model's shapes give (from
onnx's shape inference, not from Tessel); the totals are the sums of the
layers; cycles split into compute and stall; utilizations are fractions.
Exits non-zero naming the first figure that is wrong.
"""

import argparse
import json
import math
import sys

import onnx
from onnx import shape_inference


def shapes_of(model):
    inferred = shape_inference.infer_shapes(model)
    shapes = {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(
            inferred.graph.output):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = [d.dim_value for d in dims]
    for initializer in model.graph.initializer:
        shapes[initializer.name] = list(initializer.dims)
    return shapes


def macs_of(node, shapes):
    """The multiply-accumulates of a product node, or None for other nodes."""
    if node.op_type == "Conv":
        weight = shapes[node.input[1]]
        output = shapes[node.output[0]]
        # The weights' second extent is the channels of one group.
        return math.prod(output) * math.prod(weight[1:])
    if node.op_type in ("Gemm", "MatMul"):
        a, output = shapes[node.input[0]], shapes[node.output[0]]
        trans_a = next((attribute.i for attribute in node.attribute
                        if attribute.name == "transA"), 0)
        k = a[-2] if trans_a else a[-1]
        return math.prod(output) * k
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("stats")
    parser.add_argument("model")
    parser.add_argument("--layers", type=int, required=True,
                        help="the number of NPU layers the placement printed")
    arguments = parser.parse_args()
    stats = json.load(open(arguments.stats))
    model = onnx.load(arguments.model)
    nodes = {node.name: node for node in model.graph.node}
    shapes = shapes_of(model)

    def fail(message):
        sys.exit(f"check_npu_stats: {message}")

    layers = stats["layers"]
    if len(layers) != arguments.layers:
        fail(f"{len(layers)} layers, expected {arguments.layers}")
    products = 0
    for layer in layers:
        where = f"layer {layer['node']!r}"
        for name in layer["nodes"]:
            if name not in nodes:
                fail(f"{where} names {name!r}, which is no node of the model")
        expected = [macs_of(nodes[name], shapes) for name in layer["nodes"]]
        expected = [m for m in expected if m is not None]
        if expected:
            products += 1
            if layer["macs"] != sum(expected):
                fail(f"{where}: {layer['macs']} MACs, the model's shapes give {sum(expected)}")
        elif layer["macs"] != 0:
            fail(f"{where} multiplies nothing but counts {layer['macs']} MACs")
        if layer["compute_cycles"] + layer["stall_cycles"] != layer["total_cycles"]:
            fail(f"{where}: compute and stall cycles do not add up to the total")
        for key in ("utilization", "array_utilization"):
            if not 0 <= layer[key] <= 1:
                fail(f"{where}: {key} {layer[key]} is not a fraction")
        if layer["dram_bytes"] <= 0 or layer["energy_pj"] <= 0:
            fail(f"{where}: no DRAM traffic or no energy")
    for key in ("total_cycles", "dram_bytes", "macs"):
        if stats[key] != sum(layer[key] for layer in layers):
            fail(f"{key} {stats[key]} is not the sum over the layers")
    if not math.isclose(stats["energy_pj"], sum(l["energy_pj"] for l in layers), rel_tol=1e-6):
        fail("energy_pj is not the sum over the layers")
    if not math.isclose(stats["latency_ms"], stats["total_cycles"] / (stats["clock_mhz"] * 1e3),
                        rel_tol=1e-6):
        fail("latency_ms is not the cycles at the clock")
    print(f"check_npu_stats: {len(layers)} layers ({products} products) consistent with "
          f"the model")


if __name__ == "__main__":
    main()
