#!/usr/bin/env python3
"""f16 Gemm, Conv, MatMul and Einsum with long reductions, against their sums in f32.

ONNX's reference and onnxruntime's CPU kernels widen f16 operands and round
the sum once; a sum kept in f16 loses about log2(K) of f16's 11 bits (with
K = 4096 terms of magnitude up to 1, errors of several percent). Each case
is compiled by tessel-compile and run by tessel-run on random inputs; the
expected output is the same model in float32, run by onnx.reference on the
inputs widened exactly, and rounded to f16 (rtol and atol 2e-3: two f16 steps
at magnitude 1, where a rounded f32 sum differs from the exact one by at
most one).
"""

import argparse
import os

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from tessel_model_run import check_model

OPSET = 17


def gemm(name, m, k, n, alpha=1.0, beta=1.0, trans_b=0, bias=True):
    b_shape = [n, k] if trans_b else [k, n]
    inputs = [("A", [m, k]), ("B", b_shape)] + ([("C", [n])] if bias else [])
    node = helper.make_node("Gemm", [name for name, _ in inputs], ["Y"], alpha=alpha, beta=beta,
                            transB=trans_b)
    return name, inputs, node, [m, n]


def conv(name, channels, out_channels, size, kernel, group=1, pads=1, bias=True):
    inputs = [("X", [1, channels, size, size]),
              ("W", [out_channels, channels // group, kernel, kernel])]
    inputs += [("Bias", [out_channels])] if bias else []
    node = helper.make_node("Conv", [name for name, _ in inputs], ["Y"], group=group,
                            pads=[pads] * 4, kernel_shape=[kernel, kernel])
    out = size + 2 * pads - kernel + 1
    return name, inputs, node, [1, out_channels, out, out]


def matmul(name, m, k, n):
    node = helper.make_node("MatMul", ["A", "B"], ["Y"])
    return name, [("A", [m, k]), ("B", [k, n])], node, [m, n]


def einsum(name, batch, m, k, n):
    node = helper.make_node("Einsum", ["A", "B"], ["Y"], equation="bmk,bkn->bmn")
    return name, [("A", [batch, m, k]), ("B", [batch, k, n])], node, [batch, m, n]


CASES = [
    gemm("gemm_bias", 8, 4096, 64),
    gemm("gemm_alpha_beta_transposed", 8, 4096, 48, alpha=0.5, beta=2.0, trans_b=1),
    gemm("gemm_no_bias", 3, 2048, 32, bias=False),
    conv("conv_3x3", 512, 32, 6, 3),
    conv("conv_1x1", 2048, 16, 4, 1, pads=0, bias=False),
    conv("conv_grouped", 1024, 32, 5, 3, group=2),
    conv("conv_depthwise", 32, 32, 6, 3, group=32),
    matmul("matmul", 4, 4096, 32),
    einsum("einsum", 2, 3, 4096, 16),
]


def model(spec, element_type):
    name, inputs, node, output_shape = spec
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(n, element_type, s) for n, s in inputs],
        [helper.make_tensor_value_info("Y", element_type, output_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(16)
    passed = failed = 0
    for spec in CASES:
        name, inputs = spec[0], spec[1]
        feeds = {n: rng.uniform(-1, 1, s).astype(np.float16) for n, s in inputs}
        widened = {n: value.astype(np.float32) for n, value in feeds.items()}
        (want,) = ReferenceEvaluator(model(spec, TensorProto.FLOAT)).run(None, widened)
        want = want.astype(np.float16)
        # f16 outputs compare with the f32 expectation as f32.
        errors = check_model(model(spec, TensorProto.FLOAT16), feeds,
                             os.path.join(args.work, name), ["Y"], [want.astype(np.float32)],
                             rtol=2e-3, atol=2e-3)
        if errors:
            print(f"{name}: " + "; ".join(errors))
            failed += 1
        else:
            print(f"{name}: Y matches the f32 sum rounded to f16")
            passed += 1
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
