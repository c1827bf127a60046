#!/usr/bin/env python3
"""Writes an ONNX test-data folder (input_N.pb, output_N.pb) for a model.

Inputs are random with a fixed seed (integers in [0, 4), or over their
type's whole range with --full-range); outputs come from onnxruntime's CPU
provider, the correctness reference for whole models, or from
onnx.reference (--evaluator onnx), ONNX's own semantics, for operators
whose onnxruntime kernels take fewer cases (per-channel weight zero points
of QLinearConv). The folder layout is that of ONNX's backend tests, which
tessel-run reads with --test-data.
"""

import argparse
import os

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

NUMPY_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32,
    "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model")
    parser.add_argument("-o", "--output", required=True, help="folder to create")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--evaluator", choices=["onnxruntime", "onnx"], default="onnxruntime")
    parser.add_argument("--full-range", action="store_true",
                        help="integer inputs over their type's whole range")
    args = parser.parse_args()

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(args.model, options,
                                           providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(args.seed)
    feeds = {}
    for value in session.get_inputs():
        dtype = NUMPY_TYPES[value.type]
        if np.issubdtype(dtype, np.floating):
            feeds[value.name] = rng.standard_normal(value.shape).astype(dtype)
        elif args.full_range and dtype != np.bool_:
            info = np.iinfo(dtype)
            feeds[value.name] = rng.integers(info.min, info.max, value.shape,
                                             endpoint=True).astype(dtype)
        else:
            feeds[value.name] = rng.integers(0, 4, value.shape).astype(dtype)
    if args.evaluator == "onnx":
        results = ReferenceEvaluator(args.model).run(None, feeds)
    else:
        results = session.run(None, feeds)

    os.makedirs(args.output, exist_ok=True)
    for i, value in enumerate(session.get_inputs()):
        tensor = numpy_helper.from_array(feeds[value.name], value.name)
        onnx.save_tensor(tensor, os.path.join(args.output, f"input_{i}.pb"))
    for i, (value, result) in enumerate(zip(session.get_outputs(), results)):
        tensor = numpy_helper.from_array(result, value.name)
        onnx.save_tensor(tensor, os.path.join(args.output, f"output_{i}.pb"))


if __name__ == "__main__":
    main()
