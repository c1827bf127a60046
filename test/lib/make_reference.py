#!/usr/bin/env python3
"""Writes an ONNX test-data folder (input_N.pb, output_N.pb) for a model.

Inputs are random with a fixed seed (integers in [0, 4), or over their
type's whole range with --full-range) unless --input gives them; outputs come from onnxruntime's CPU
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
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

def graph_inputs(model, batch, sizes):
    """(name, numpy type, shape) of each graph input that is not an
    initializer; a symbolic dimension named in `sizes` has that size, else
    dimension 0 is `batch` and others are 1."""
    initializers = {tensor.name for tensor in model.graph.initializer}

    def size(i, dim):
        if dim.HasField("dim_value"):
            return dim.dim_value
        return sizes.get(dim.dim_param, batch if i == 0 else 1)

    return [(value.name,
             helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type),
             [size(i, dim) for i, dim in enumerate(value.type.tensor_type.shape.dim)])
            for value in model.graph.input if value.name not in initializers]


def random_feeds(model, rng, full_range, batch, sizes):
    feeds = {}
    for name, dtype, shape in graph_inputs(model, batch, sizes):
        if np.issubdtype(dtype, np.floating):
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        elif full_range and dtype != np.bool_:
            info = np.iinfo(dtype)
            feeds[name] = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        else:
            feeds[name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model")
    parser.add_argument("-o", "--output", required=True, help="folder to create")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--evaluator", choices=["onnxruntime", "onnx"], default="onnxruntime")
    parser.add_argument("--full-range", action="store_true",
                        help="integer inputs over their type's whole range")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=V1,V2,...",
                        help="give input NAME these values instead of random ones "
                             "(a shape or axes input, say)")
    parser.add_argument("--batch", type=int, default=1,
                        help="samples in inputs whose dimension 0 is symbolic")
    parser.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                        help="size of the symbolic dimensions named SYMBOL (a sequence length)")
    args = parser.parse_args()

    sizes = {symbol: int(size) for symbol, _, size in
             (given.partition("=") for given in args.dim)}
    model = onnx.load(args.model)
    feeds = random_feeds(model, np.random.default_rng(args.seed), args.full_range, args.batch,
                         sizes)
    for given in args.input:
        name, _, values = given.partition("=")
        if name not in feeds:
            parser.error(f"--input names '{name}', which is not a graph input")
        feed = feeds[name]
        feeds[name] = np.array([float(v) for v in values.split(",")]).astype(
            feed.dtype).reshape(feed.shape)
    if args.evaluator == "onnx":
        results = ReferenceEvaluator(model).run(None, feeds)
        # onnx.reference computes some outputs in float64 that the operator
        # gives in its inputs' float type (Adam's new X): they are stored in
        # the type the model states, as ONNX's own test data are.
        for i, value in enumerate(model.graph.output[:len(results)]):
            stated = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
            if (np.issubdtype(stated, np.floating) and np.issubdtype(results[i].dtype, np.floating)
                    and results[i].dtype != stated):
                results[i] = np.asarray(results[i]).astype(stated)
    else:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(args.model, options,
                                               providers=["CPUExecutionProvider"])
        results = session.run(None, feeds)

    os.makedirs(args.output, exist_ok=True)
    for i, name in enumerate(feeds):
        tensor = numpy_helper.from_array(feeds[name], name)
        onnx.save_tensor(tensor, os.path.join(args.output, f"input_{i}.pb"))
    for i, (value, result) in enumerate(zip(model.graph.output, results)):
        tensor = numpy_helper.from_array(result, value.name)
        onnx.save_tensor(tensor, os.path.join(args.output, f"output_{i}.pb"))


if __name__ == "__main__":
    main()
