#!/usr/bin/env python3
"""Generates the bundled example: a LeNet-5-style digit classifier.

The weights are random (fixed seed), so the model's answers mean nothing;
it exists to show the whole path: ONNX -> tessel-compile -> .tsl ->
tessel-run. It also writes test_data_set_0 (input_0.pb, output_0.pb) with
onnxruntime's outputs, which the demo compares against.

    .venv/bin/python examples/lenet/make_model.py
"""

import os

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rng = np.random.default_rng(2024)

    def weight(name, *shape):
        fan_in = int(np.prod(shape[1:]))
        values = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        return numpy_helper.from_array(values, name)

    def bias(name, size):
        return numpy_helper.from_array(
            (0.1 * rng.standard_normal(size)).astype(np.float32), name)

    initializers = [
        weight("conv1.w", 6, 1, 5, 5), bias("conv1.b", 6),
        weight("conv2.w", 16, 6, 5, 5), bias("conv2.b", 16),
        weight("fc1.w", 120, 256), bias("fc1.b", 120),
        weight("fc2.w", 84, 120), bias("fc2.b", 84),
        weight("fc3.w", 10, 84), bias("fc3.b", 10),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc1.w", "fc1.b"], ["g1"], name="fc1", transB=1),
        helper.make_node("Relu", ["g1"], ["h1"], name="relu3"),
        helper.make_node("Gemm", ["h1", "fc2.w", "fc2.b"], ["g2"], name="fc2", transB=1),
        helper.make_node("Relu", ["g2"], ["h2"], name="relu4"),
        helper.make_node("Gemm", ["h2", "fc3.w", "fc3.b"], ["logits"], name="fc3", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "lenet",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="tessel-example")
    model.ir_version = 8  # opset 17; readable by every onnxruntime since 1.12
    onnx.checker.check_model(model)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(model, path)

    image = rng.random((1, 1, 28, 28), dtype=np.float32)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    (probabilities,) = session.run(None, {"image": image})
    data = os.path.join(HERE, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save_tensor(numpy_helper.from_array(image, "image"), os.path.join(data, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(probabilities, "probabilities"),
                     os.path.join(data, "output_0.pb"))


if __name__ == "__main__":
    main()
