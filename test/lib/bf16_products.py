#!/usr/bin/env python3
"""Products computed with --precision bf16, against numpy.

Each case is a small ONNX model of matrix products and convolutions (odd
reduction extents that leave partial bf16 pairs, a transposed Gemm weight,
strides and padding, a convolution feeding another). The reference rounds
the inputs and weights of every product computed in bf16 to bf16 (nearest,
ties to even) and computes in float64; Tessel's result must lie within the
error of f32 accumulation of it: 2 * K * 2^-24 * sum |x| |w| per output
element, K the reduction length. So that the check cannot pass by
computing in f32, the f32 result must lie outside that bound somewhere. A
depthwise convolution is not computed in bf16 (its operands stay f32) and
is held to the f32 reference. Prints one line per case; exits 1 if any
fails.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

UNIT = 2.0 ** -24


def to_bf16(values):
    """float32 values rounded to the nearest bf16, ties to even, as float64."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def conv2d(x, w, strides, pads, group=1):
    """NCHW convolution in float64; returns the sums and the sums of |terms|."""
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    out = np.zeros((n, f, oh, ow))
    magnitude = np.zeros_like(out)
    per_group = f // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * per_group:(g + 1) * per_group]
        for i in range(kh):
            for j in range(kw):
                window = xs[:, :, i:i + strides[0] * oh:strides[0], j:j + strides[1] * ow:strides[1]]
                out[:, g * per_group:(g + 1) * per_group] += np.einsum("nchw,fc->nfhw", window, ws[:, :, i, j])
                magnitude[:, g * per_group:(g + 1) * per_group] += np.einsum(
                    "nchw,fc->nfhw", np.abs(window), np.abs(ws[:, :, i, j]))
    return out, magnitude


class Case:
    """A model, its input, and how to compute its reference from rounded
    (`round_`) or exact operands: (expected, magnitude, reduction length)."""

    def __init__(self, name, nodes, x, output_shape, weights, reference):
        self.name, self.nodes, self.x = name, nodes, x
        self.output_shape, self.weights, self.reference = output_shape, weights, reference

    def model(self):
        inits = [numpy_helper.from_array(v, k) for k, v in self.weights.items()]
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(self.x.shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, self.output_shape)], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def cases(rng):
    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    result = []
    w = normal(33, 40)
    result.append(Case("matmul-odd-k", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                       normal(7, 33), [7, 40], {"w": w},
                       lambda x, r, w=w: (r(x) @ r(w), np.abs(r(x)) @ np.abs(r(w)), 33)))
    w, bias = normal(64, 48), normal(48)
    result.append(Case(
        "matmul-batched-bias-relu",
        [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["s"]),
         helper.make_node("Relu", ["s"], ["y"])],
        normal(2, 5, 64), [2, 5, 48], {"w": w, "b": bias},
        # Relu is 1-Lipschitz: the bound of the sums holds for it.
        lambda x, r, w=w, bias=bias: (np.maximum(r(x) @ r(w) + bias, 0),
                                      np.abs(r(x)) @ np.abs(r(w)), 64)))
    b, c = normal(24, 50), normal(24)
    result.append(Case(
        "gemm-transposed-b-bias", [helper.make_node("Gemm", ["x", "b", "c"], ["y"], transB=1)],
        normal(6, 50), [6, 24], {"b": b, "c": c},
        lambda x, r: (r(x) @ r(b).T + c, np.abs(r(x)) @ np.abs(r(b)).T, 50)))
    w, bias = normal(16, 5, 3, 3), normal(16)

    def strided(x, r, w=w, bias=bias):
        out, magnitude = conv2d(r(x), r(w), [2, 2], [1, 1, 1, 1])
        return out + bias.reshape(1, -1, 1, 1), magnitude, 45
    result.append(Case(
        "conv3x3-stride2-pad1-5-channels",
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])],
        normal(1, 5, 11, 9), [1, 16, 6, 5], {"w": w, "b": bias}, strided))
    w1, w2 = normal(24, 9, 3, 3), normal(8, 24, 1, 1)

    def chained(x, r):
        first, _ = conv2d(r(x), r(w1), [1, 1], [1, 1, 1, 1])
        # The second convolution reads the first's f32 result, rounded to
        # bf16: its reference starts from the first's reference.
        hidden = np.maximum(first, 0).astype(np.float32)
        out, magnitude = conv2d(r(hidden), r(w2), [1, 1], [0, 0, 0, 0])
        return out, magnitude, 24
    result.append(Case(
        "conv3x3-relu-conv1x1",
        [helper.make_node("Conv", ["x", "w1"], ["h"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Conv", ["r", "w2"], ["y"])],
        normal(1, 9, 7, 6), [1, 8, 7, 6], {"w1": w1, "w2": w2}, chained))
    w = normal(16, 1, 3, 3)

    def depthwise(x, r, w=w):
        # Not a bf16 product: its operands stay exact whatever `r` is.
        out, magnitude = conv2d(x.astype(np.float64), w.astype(np.float64), [1, 1],
                                [1, 1, 1, 1], group=16)
        return out, magnitude, 9
    result.append(Case(
        "depthwise-stays-f32",
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], group=16)],
        normal(1, 16, 8, 8), [1, 16, 8, 8], {"w": w}, depthwise))
    return result


def run(case, directory, cpu):
    model_path = os.path.join(directory, "model.onnx")
    onnx.save(case.model(), model_path)
    np.save(os.path.join(directory, "x.npy"), case.x)
    artifact = os.path.join(directory, "model.tsl")
    command = ["tessel-compile", model_path, "-q", "-o", artifact, "--precision", "bf16"]
    if cpu:
        command += ["--target-cpu", cpu]
    subprocess.run(command, check=True)
    outputs = os.path.join(directory, "out")
    subprocess.run(["tessel-run", artifact, "--input", os.path.join(directory, "x.npy"),
                    "--output-dir", outputs], check=True, stdout=subprocess.DEVNULL)
    return np.load(os.path.join(outputs, "output_0.npy")).astype(np.float64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--target-cpu", default="", help="LLVM CPU name; default: this machine")
    args = parser.parse_args()
    rng = np.random.default_rng(20261126)
    failures = 0
    for case in cases(rng):
        directory = os.path.join(args.work, case.name)
        os.makedirs(directory, exist_ok=True)
        got = run(case, directory, args.target_cpu)
        rounded = case.name != "depthwise-stays-f32"
        expected, magnitude, depth = case.reference(case.x, to_bf16 if rounded else np.float64)
        bound = 2 * depth * UNIT * magnitude + 1e-30
        within = np.all(np.abs(got - expected) <= bound)
        exact, _, _ = case.reference(case.x, lambda v: np.asarray(v, np.float64))
        distinct = not rounded or np.any(np.abs(exact - expected) > bound)
        ratio = np.max(np.abs(got - expected) / bound)
        passed = within and distinct
        failures += not passed
        what = "bf16 products" if rounded else "f32 products"
        if passed:
            print(f"{case.name}: within f32 accumulation error of the {what}")
        else:
            print(f"{case.name}: FAILED (error / bound up to {ratio:.3g}, "
                  f"the f32 result {'differs' if distinct else 'does not differ'} from bf16's)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
