#!/usr/bin/env python3
"""Checks that an ONNX model exported by `tessel-compile --emit qdq-onnx`
(without quantization: the graph Tessel compiles, batch norms folded, each
op as imported) computes what the original model computes.

Both models pass onnx.checker's full check, then onnxruntime runs both on
the same seeded standard-normal inputs; every output must have the
original's name, type and shape, float outputs must agree within rtol 1e-5,
atol 1e-5 (the export may fold constants, which rounds differently), and
other outputs exactly.

Prints the export's op types and one line per output, then
"N of N outputs match". Exits 1 otherwise.
"""

import argparse
import sys

import numpy as np
import onnx
import onnxruntime

RTOL = 1e-5
ATOL = 1e-5


def run(path, feeds):
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("original")
    parser.add_argument("exported")
    parser.add_argument("--seed", type=int, default=20261124)
    args = parser.parse_args()
    exported = onnx.load(args.exported)
    for path in (args.original, args.exported):
        onnx.checker.check_model(onnx.load(path), full_check=True)
    print("ops:", " ".join(sorted({node.op_type for node in exported.graph.node})))

    rng = np.random.default_rng(args.seed)
    session = onnxruntime.InferenceSession(args.original, providers=["CPUExecutionProvider"])
    feeds = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in session.get_inputs()}
    expected, actual = run(args.original, feeds), run(args.exported, feeds)
    matched = 0
    for name, want in expected.items():
        got = actual.get(name)
        if got is None or got.dtype != want.dtype or got.shape != want.shape:
            described = "missing" if got is None else f"{got.dtype}{list(got.shape)}"
            print(f"{name}: FAILED: {described} against {want.dtype}{list(want.shape)}")
            continue
        if np.issubdtype(want.dtype, np.floating):
            good = np.allclose(got, want, rtol=RTOL, atol=ATOL)
        else:
            good = np.array_equal(got, want)
        print(f"{name}: {want.dtype}{list(want.shape)} {'matches' if good else 'FAILED: differs'}")
        matched += good
    print(f"{matched} of {len(expected)} outputs match")
    return 0 if matched == len(expected) else 1


if __name__ == "__main__":
    sys.exit(main())
