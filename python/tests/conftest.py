"""Fixtures of the `tessel` package's tests: the bundled LeNet example."""

import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENET = os.path.join(REPO, "examples", "lenet")


@pytest.fixture(scope="session")
def lenet_path():
    return os.path.join(LENET, "model.onnx")


@pytest.fixture(scope="session")
def lenet_data():
    """(input, onnxruntime's output) of the example's test set."""
    data = os.path.join(LENET, "test_data_set_0")
    load = lambda name: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, name)))
    return load("input_0.pb"), load("output_0.pb")


@pytest.fixture(scope="session")
def lenet_artifact(lenet_path):
    import tessel
    return tessel.compile(lenet_path, progress=False)
