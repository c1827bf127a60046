"""Runs one ONNX model with one input through Tessel and onnx.reference.

check_bit_exact(model, x, directory) writes the model and an ONNX test-data
folder (the input and onnx.reference.ReferenceEvaluator's output) into
`directory`, compiles the model with tessel-compile (from PATH) for this
machine and runs tessel-run on the folder at rtol 0, atol 0. Returns whether
every output element is equal, and tessel-run's output to show otherwise.
"""

import os
import subprocess

import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator


def check_bit_exact(model, x, directory):
    data = os.path.join(directory, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    model_path = os.path.join(directory, "model.onnx")
    onnx.save(model, model_path)
    input_name = model.graph.input[0].name
    (y,) = ReferenceEvaluator(model).run(None, {input_name: x})
    onnx.save_tensor(numpy_helper.from_array(x, input_name), os.path.join(data, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(y, model.graph.output[0].name),
                     os.path.join(data, "output_0.pb"))
    artifact = os.path.join(directory, "model.tsl")
    subprocess.run(["tessel-compile", model_path, "-q", "-o", artifact], check=True)
    run = subprocess.run(["tessel-run", artifact, "--test-data", data, "--rtol", "0",
                          "--atol", "0"], capture_output=True, text=True)
    return run.returncode == 0 and "PASS" in run.stdout, run.stdout + run.stderr
