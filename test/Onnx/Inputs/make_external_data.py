"""Writes models whose weights live in external data files.

    model.onnx     weights in weights.bin next to it (allowed)
    escaping.onnx  weights in ../outside.bin (leaves the folder: refused)
    absolute.onnx  weights at an absolute path (refused)
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model_with_external(folder, name, location, data):
    weight = numpy_helper.from_array(np.zeros(4, np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(len(data)))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(folder, name))


def main():
    folder = sys.argv[1]
    data = np.array([1.5, -2.0, 3.25, 0.5], np.float32).tobytes()
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        f.write(data)
    outside = os.path.join(os.path.dirname(os.path.abspath(folder)), "outside.bin")
    with open(outside, "wb") as f:
        f.write(data)
    model_with_external(folder, "model.onnx", "weights.bin", data)
    model_with_external(folder, "escaping.onnx", "../outside.bin", data)
    model_with_external(folder, "absolute.onnx", outside, data)


if __name__ == "__main__":
    main()
