#!/usr/bin/env python3
"""A whole model through the installed `tessel` package, as a user runs it.

  reference MODEL DIR   (the project's Python) writes DIR/input.npy, random
                        with a fixed seed, and DIR/expected.npy, onnxruntime's
                        output for it
  run MODEL DIR         (any Python with the package and numpy) compiles
                        MODEL with tessel.compile, runs it on DIR/input.npy
                        and compares with DIR/expected.npy (rtol 1e-3,
                        atol 1e-4)
"""

import os
import sys

import numpy as np


def reference(model, directory):
    import onnxruntime
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    (value,) = session.get_inputs()
    image = np.random.default_rng(0).standard_normal(value.shape).astype(np.float32)
    np.save(os.path.join(directory, "input.npy"), image)
    np.save(os.path.join(directory, "expected.npy"), session.run(None, {value.name: image})[0])


def run(model, directory):
    import tessel
    module = tessel.load(tessel.compile(model, progress=False))
    (name,) = [info.name for info in module.inputs]
    image = np.load(os.path.join(directory, "input.npy"))
    (got,) = module.session().run(None, {name: image})
    expected = np.load(os.path.join(directory, "expected.npy"))
    error = np.abs(got - expected)
    outside = int(np.sum(error > 1e-4 + 1e-3 * np.abs(expected)))
    print(f"tessel {tessel.__version__} from {os.path.dirname(tessel.__file__)}")
    print(f"output {got.shape}: max abs error {error.max():.3g}, {outside} of {got.size} "
          f"outside rtol 0.001 atol 0.0001")
    return 1 if outside else 0


if __name__ == "__main__":
    command, model, directory = sys.argv[1:4]
    sys.exit(reference(model, directory) if command == "reference" else run(model, directory))
