#!/usr/bin/env python3
"""Writes the CUDA target's tensor-core product checks: small ONNX models
of matrix products whose shapes reach every case of the kernel (edges that
cut a block tile, batches, a second M loop, each operand with k innermost
or not, packed weights) and of convolutions, which the kernel computes as
implicit GEMMs (strides, padding, dilation, input channels in whole vectors
or not, f32 or already half precision), and of INT8 models' integer
products (u8 or s8 operands summed in i32, requantized or not), each with a
test-data folder per precision.

The expected outputs are the products computed in float64 from the inputs
rounded to the precision the kernel reads (fp16 or bf16; fp32 unrounded).
What is left between them and the GPU's outputs is the order of the f32
sums, so a tight tolerance (rtol 1e-3, atol 1e-4 on outputs of magnitude
about 10) catches any fragment, tile or edge that is wrong: those give
errors of the outputs' own size. An integer product is exact at every
precision: its expected outputs are ONNX's reference implementation's
(onnx.reference), which the kernels must match exactly.

  scripts/tensor-core-products.py -o DIR   # DIR/NAME/model.onnx, DIR/NAME/PRECISION/
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

PRECISIONS = ("fp16", "bf16", "fp32")


def round_to(values, precision):
    values = values.astype(np.float32)
    if precision == "fp16":
        return values.astype(np.float16).astype(np.float64)
    if precision == "bf16":  # round to nearest even on the upper 16 bits
        bits = values.view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    return values.astype(np.float64)


def matmul_case(a_shape, b_shape, b_constant=False, dtype=np.float32):
    """MatMul of two inputs (or of an input and a weight), f32 or, for a
    half-precision model, f16: its operands need no rounding at fp16, and at
    bf16 and fp32 it computes on the FMA units, exactly."""
    element = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def build(random):
        a = random.uniform(-1, 1, a_shape).astype(dtype)
        b = random.uniform(-1, 1, b_shape).astype(dtype)
        out_shape = list(np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape)
        inputs = [helper.make_tensor_value_info("a", element, a_shape)]
        initializers = []
        if b_constant:
            initializers.append(numpy_helper.from_array(b, "b"))
        else:
            inputs.append(helper.make_tensor_value_info("b", element, b_shape))
        graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "product",
                                  inputs, [helper.make_tensor_value_info(
                                      "y", element, out_shape)], initializers)
        feeds = [a] if b_constant else [a, b]
        if dtype == np.float16:
            return graph, feeds, lambda p: np.matmul(a.astype(np.float64), b.astype(np.float64))
        return graph, feeds, lambda p: np.matmul(round_to(a, p), round_to(b, p))
    return build


def gemm_case(m, n, k, trans_a, trans_b):
    """Gemm of two inputs with a bias, either operand transposed."""
    def build(random):
        a = random.uniform(-1, 1, (k, m) if trans_a else (m, k)).astype(np.float32)
        b = random.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype(np.float32)
        c = random.uniform(-1, 1, (n,)).astype(np.float32)
        node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=trans_a, transB=trans_b)
        graph = helper.make_graph(
            [node], "product",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, a.shape),
             helper.make_tensor_value_info("b", TensorProto.FLOAT, b.shape),
             helper.make_tensor_value_info("c", TensorProto.FLOAT, c.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, (m, n))])
        def expected(p):
            a_p, b_p = round_to(a, p), round_to(b, p)
            return (a_p.T if trans_a else a_p) @ (b_p.T if trans_b else b_p) + c
        return graph, [a, b, c], expected
    return build


def convolution(x, w, b, stride, pad, dilation):
    """Conv of NCHW x and FCHW w in float64, one filter tap at a time."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, height, width = x.shape
    f, _, kh, kw = w.shape
    out_h = (height - dilation * (kh - 1) - 1) // stride + 1
    out_w = (width - dilation * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, f, out_h, out_w)) + b.reshape(1, f, 1, 1)
    for i in range(kh):
        for j in range(kw):
            window = x[:, :, i * dilation:i * dilation + stride * (out_h - 1) + 1:stride,
                       j * dilation:j * dilation + stride * (out_w - 1) + 1:stride]
            y += np.einsum("nchw,fc->nfhw", window, w[:, :, i, j])
    return y


def conv_case(x_shape, w_shape, stride=1, pad=0, dilation=1):
    """Conv of an input by a weight with a bias (an implicit GEMM)."""
    def build(random):
        x = random.uniform(-1, 1, x_shape).astype(np.float32)
        w = random.uniform(-1, 1, w_shape).astype(np.float32)
        b = random.uniform(-1, 1, w_shape[:1]).astype(np.float32)
        out_shape = list(convolution(np.zeros(x_shape), np.zeros(w_shape), np.zeros(w_shape[0]),
                                     stride, pad, dilation).shape)
        node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[stride, stride],
                                pads=[pad] * 4, dilations=[dilation, dilation])
        graph = helper.make_graph(
            [node], "product", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
            [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
        return graph, [x], lambda p: convolution(round_to(x, p), round_to(w, p), b, stride, pad,
                                                 dilation)
    return build


def reference_outputs(graph, feeds):
    """The outputs of onnx.reference for `graph` on `feeds`."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    names = [value.name for value in graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, feeds)))[0]


def integer_matmul_case(a_shape, b_shape, a_dtype, b_dtype, b_constant):
    """MatMulInteger of 8-bit operands (no zero points) into i32."""
    def build(random):
        def draw(shape, dtype):
            info = np.iinfo(dtype)
            return random.integers(info.min, info.max + 1, shape).astype(dtype)
        a, b = draw(a_shape, a_dtype), draw(b_shape, b_dtype)
        out_shape = list(np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape)
        inputs = [helper.make_tensor_value_info(
            "a", helper.np_dtype_to_tensor_dtype(a.dtype), a_shape)]
        initializers = []
        if b_constant:
            initializers.append(numpy_helper.from_array(b, "b"))
        else:
            inputs.append(helper.make_tensor_value_info(
                "b", helper.np_dtype_to_tensor_dtype(b.dtype), b_shape))
        graph = helper.make_graph(
            [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "product", inputs,
            [helper.make_tensor_value_info("y", TensorProto.INT32, out_shape)], initializers)
        feeds = [a] if b_constant else [a, b]
        expected = reference_outputs(graph, feeds)
        return graph, feeds, lambda p: expected
    return build


def quantized_conv_case(x_shape, w_shape, pad):
    """QLinearConv of a u8 image (zero point 120, so that padding holds
    120) by an s8 weight with an i32 bias, requantized to u8."""
    def build(random):
        x = random.integers(0, 256, x_shape).astype(np.uint8)
        w = random.integers(-127, 128, w_shape).astype(np.int8)
        bias = random.integers(-2000, 2000, w_shape[:1]).astype(np.int32)
        constants = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias"),
                     numpy_helper.from_array(np.array(0.02, np.float32), "x_scale"),
                     numpy_helper.from_array(np.array(120, np.uint8), "x_zero"),
                     numpy_helper.from_array(np.array(0.01, np.float32), "w_scale"),
                     numpy_helper.from_array(np.array(0, np.int8), "w_zero"),
                     numpy_helper.from_array(np.array(0.9, np.float32), "y_scale"),
                     numpy_helper.from_array(np.array(100, np.uint8), "y_zero")]
        node = helper.make_node(
            "QLinearConv",
            ["x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias"],
            ["y"], pads=[pad] * 4)
        out_shape = [x_shape[0], w_shape[0], x_shape[2] + 2 * pad - w_shape[2] + 1,
                     x_shape[3] + 2 * pad - w_shape[3] + 1]
        graph = helper.make_graph(
            [node], "product", [helper.make_tensor_value_info("x", TensorProto.UINT8, x_shape)],
            [helper.make_tensor_value_info("y", TensorProto.UINT8, out_shape)], constants)
        expected = reference_outputs(graph, [x])
        return graph, [x], lambda p: expected
    return build


CASES = {
    # M and N cut the 128 x 128 block tiles; K a whole number of steps.
    "ragged_200x136x96": matmul_case([200, 96], [96, 136]),
    # A batch, and every extent ragged (K = 50 cuts the 32-deep steps).
    "batched_3x70x90x50": matmul_case([3, 70, 50], [3, 50, 90]),
    # Whole tiles, several reduction steps.
    "tiles_256x256x256": matmul_case([256, 256], [256, 256]),
    # A [1, 96, 256] activation by a weight (packed for the CPU, unpacked
    # for the GPU): two M loops.
    "weight_1x96x384x256": matmul_case([1, 96, 256], [256, 384], b_constant=True),
    # B with k innermost (transB), then A with m innermost (transA).
    "gemm_transb_128x384x256": gemm_case(128, 384, 256, 0, 1),
    "gemm_transa_128x192x256": gemm_case(128, 192, 256, 1, 0),
    # An fp16 model: operands staged as they are, 8 halves per load; M and
    # N cut the tiles, and a batch with K = 56 cuts the steps.
    "f16_ragged_200x136x96": matmul_case([200, 96], [96, 136], dtype=np.float16),
    "f16_batched_2x64x72x56": matmul_case([2, 64, 56], [2, 56, 72], dtype=np.float16),
    # Convolutions: 3 x 3 with padding over a batch (800 rows: ragged),
    # input channels in whole vectors.
    "conv3x3_2x64x20x20_96": conv_case([2, 64, 20, 20], [96, 64, 3, 3], pad=1),
    # 7 x 7 stride 2 over 3 channels (loaded one by one; K = 147 cuts the
    # steps), as the stem of a ResNet.
    "conv7x7s2_1x3x40x40_64": conv_case([1, 3, 40, 40], [64, 3, 7, 7], stride=2, pad=3),
    # 1 x 1 stride 2, N = 48 cuts the block tile.
    "conv1x1s2_2x32x15x15_48": conv_case([2, 32, 15, 15], [48, 32, 1, 1], stride=2),
    # Dilated 3 x 3.
    "conv3x3d2_1x40x24x24_40": conv_case([1, 40, 24, 24], [40, 40, 3, 3], pad=2, dilation=2),
    # Integer products (mma m16n8k32): u8 by an s8 weight, M and N cutting
    # the tiles and K = 96 cutting the 64-deep steps; s8 by s8 in a batch,
    # B with n innermost (staged element by element); a requantized 3 x 3
    # convolution whose padding holds the input's zero point.
    "int8_u8s8_200x136x96": integer_matmul_case([200, 96], [96, 136], np.uint8, np.int8, True),
    "int8_s8s8_2x64x72x160": integer_matmul_case([2, 64, 160], [2, 160, 72], np.int8, np.int8,
                                                 False),
    "int8_qconv3x3_1x32x20x20_64": quantized_conv_case([1, 32, 20, 20], [64, 32, 3, 3], pad=1),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    for i, (name, build) in enumerate(sorted(CASES.items())):
        graph, feeds, expected = build(np.random.default_rng(i))
        folder = os.path.join(args.output, name)
        os.makedirs(folder, exist_ok=True)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 9
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(folder, "model.onnx"))
        for precision in PRECISIONS:
            data = os.path.join(folder, precision)
            os.makedirs(data, exist_ok=True)
            for j, value in enumerate(feeds):
                with open(os.path.join(data, "input_%d.pb" % j), "wb") as stream:
                    stream.write(numpy_helper.from_array(value).SerializeToString())
            output_type = helper.tensor_dtype_to_np_dtype(
                graph.output[0].type.tensor_type.elem_type)
            with open(os.path.join(data, "output_0.pb"), "wb") as stream:
                stream.write(numpy_helper.from_array(
                    expected(precision).astype(output_type)).SerializeToString())


if __name__ == "__main__":
    main()
