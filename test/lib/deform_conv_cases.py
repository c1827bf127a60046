#!/usr/bin/env python3
"""ONNX DeformConv against ONNX's reference.

Each case is one DeformConv (opset 19) on random X, W and offsets large
enough to move taps past X's borders (where samples count 0), varying
strides, dilations, asymmetric pads, convolution groups, offset groups, a
mask and a bias, and a batch of 2. Each is compiled by tessel-compile, run by
tessel-run and compared with onnx.reference (rtol 1e-4, atol 1e-5: the
reference samples in float64). Then a 1-D DeformConv must be refused,
naming the node.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from tessel_model_run import compile_model, differences, refused_compile, run_tessel

OPSET = 19


def case(name, batch=1, channels=4, size=(6, 7), out_channels=4, kernel=(3, 3), strides=(1, 1),
         dilations=(1, 1), pads=(0, 0, 0, 0), group=1, offset_group=1, mask=False, bias=False):
    return dict(name=name, batch=batch, channels=channels, size=size, out_channels=out_channels,
                kernel=kernel, strides=strides, dilations=dilations, pads=pads, group=group,
                offset_group=offset_group, mask=mask, bias=bias)


CASES = [
    case("plain"),
    case("padded_strided", pads=(1, 2, 0, 1), strides=(2, 1)),
    case("dilated", size=(8, 8), dilations=(2, 2), pads=(2, 2, 2, 2)),
    case("groups_and_offset_groups", channels=6, out_channels=4, group=2, offset_group=3,
         pads=(1, 1, 1, 1)),
    case("mask_bias_batch", batch=2, kernel=(2, 3), mask=True, bias=True, pads=(1, 0, 1, 0)),
]


def output_size(spec):
    return [(spec["size"][i] + spec["pads"][i] + spec["pads"][i + 2]
             - (spec["kernel"][i] - 1) * spec["dilations"][i] - 1) // spec["strides"][i] + 1
            for i in range(2)]


def build(spec):
    value = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    n, c, oc, (kh, kw) = spec["batch"], spec["channels"], spec["out_channels"], spec["kernel"]
    oh, ow = output_size(spec)
    taps = spec["offset_group"] * kh * kw
    inputs = [value("X", [n, c, *spec["size"]]), value("W", [oc, c // spec["group"], kh, kw]),
              value("offset", [n, 2 * taps, oh, ow])]
    names = ["X", "W", "offset"]
    if spec["bias"]:
        inputs.append(value("B", [oc]))
    names.append("B" if spec["bias"] else "")
    if spec["mask"]:
        inputs.append(value("mask", [n, taps, oh, ow]))
        names.append("mask")
    node = helper.make_node("DeformConv", names, ["Y"], name="deform", kernel_shape=[kh, kw],
                            strides=list(spec["strides"]), dilations=list(spec["dilations"]),
                            pads=list(spec["pads"]), group=spec["group"],
                            offset_group=spec["offset_group"])
    graph = helper.make_graph([node], spec["name"], inputs, [value("Y", [n, oc, oh, ow])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    return model, [i.name for i in inputs]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    rng = np.random.default_rng(19)
    failed = 0
    for spec in CASES:
        model, names = build(spec)
        feeds = {}
        for value in model.graph.input:
            shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
            scale = 1.5 if value.name == "offset" else 1.0
            feeds[value.name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        if spec["mask"]:
            feeds["mask"] = rng.random(feeds["mask"].shape).astype(np.float32)
        expected = ReferenceEvaluator(model).run(None, feeds)
        work = os.path.join(args.work, spec["name"])
        os.makedirs(work, exist_ok=True)
        model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
        onnx.save(model, model_path)
        compile_model(model_path, artifact)
        actual, _, message = run_tessel(artifact, {name: feeds[name] for name in names}, work, 1)
        if actual is None:
            raise RuntimeError(message)
        errors = differences(["Y"], expected, actual, rtol=1e-4, atol=1e-5)
        failed += bool(errors)
        print(f"{spec['name']}: Y {'; '.join(errors) if errors else 'matches onnx.reference'}")
    print(f"{len(CASES) - failed} passed, {failed} failed")

    # A 1-D DeformConv: X [N, C, L].
    value = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    node = helper.make_node("DeformConv", ["X", "W", "offset"], ["Y"], name="deform_1d")
    graph = helper.make_graph([node], "one_d", [value("X", [1, 2, 8]), value("W", [2, 2, 3]),
                                                value("offset", [1, 3, 6])],
                              [value("Y", [1, 2, 6])])
    model_path = os.path.join(args.work, "one_d.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]),
              model_path)
    print(f"one_d: {refused_compile(model_path, model_path + '.tsl')}")


if __name__ == "__main__":
    main()
