"""ONNX's quantization node tests with their scales and zero points frozen.

The node tests feed scales and zero points as graph inputs, so a plain run
(test/EndToEnd/OnnxNode) compiles them as the float formulas ONNX defines.
Here each such input is compiled in as a constant (--freeze-input, from the
test's own data), which puts the op onto quantized types and Tessel's
integer kernels; with --weights the weight too, as a quantized model holds
it (packed at compile time). Each test must then

  - compile onto quantized types (the tessel IR holds !quant.uniform and
    no tessel.cast of the float formula), and
  - reproduce ONNX's expected outputs bit for bit (tessel-run, rtol = atol = 0).

With --target npu each is compiled for the NPU target instead: the node
runs on the NPU where the NPU can run it, else on the CPU, and the line
says which (and the placement's reason). The results must still be ONNX's,
bit for bit.

Prints one line per test and a summary `N passed, N failed`; exits 1 if any
failed.
"""

import argparse
import os
import subprocess
import sys

import onnx

# Per op: the inputs that are scales or zero points, and the weight's.
PARAMETERS = {
    "QLinearConv": ({1, 2, 4, 5, 6, 7}, {3, 8}),
    "QLinearMatMul": ({1, 2, 4, 5, 6, 7}, {3}),
    "MatMulInteger": ({2, 3}, {1}),
    "ConvInteger": ({2, 3}, {1}),
    "QuantizeLinear": ({1, 2}, set()),
    "DequantizeLinear": ({1, 2}, set()),
}

TESTS = [
    "test_qlinearconv",
    "test_qlinearmatmul_2D_int8_float32",
    "test_qlinearmatmul_2D_uint8_float32",
    "test_qlinearmatmul_3D_int8_float32",
    "test_qlinearmatmul_3D_uint8_float32",
    "test_matmulinteger",
    "test_convinteger_with_padding",
    "test_convinteger_without_padding",
    "test_quantizelinear",
    "test_quantizelinear_axis",
    "test_dequantizelinear",
    "test_dequantizelinear_axis",
]


def node_tests_dir():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def tool(tools, name):
    return os.path.join(tools, name) if tools else name


def frozen_inputs(test_dir, with_weights):
    """(graph input name, input_N.pb path) of each input to compile in."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    (node,) = model.graph.node
    parameters, weights = PARAMETERS[node.op_type]
    positions = parameters | (weights if with_weights else set())
    graph_inputs = [value.name for value in model.graph.input]
    data_set = os.path.join(test_dir, "test_data_set_0")
    frozen = []
    for position in sorted(positions):
        if position >= len(node.input) or not node.input[position]:
            continue
        name = node.input[position]
        frozen.append((name, os.path.join(data_set, "input_%d.pb" % graph_inputs.index(name))))
    return frozen


def run(command):
    process = subprocess.run(command, capture_output=True, text=True, errors="replace")
    return process.returncode, process.stdout + process.stderr


def placement_of(output):
    """Where the node's kernel ran, from tessel-compile's placement lines."""
    products = [line.split(None, 2) for line in output.splitlines()
                if line.startswith("  k") and len(line.split()) >= 2]
    on_npu = [fields[0] for fields in products if fields[1] == "npu"]
    return "on the npu (%s)" % ", ".join(on_npu) if on_npu else "on the cpu"


def check_test(name, with_weights, tools, work, target):
    """(None, where it ran) when the test passes, else (why it does not, None)."""
    test_dir = os.path.join(node_tests_dir(), name)
    freeze = []
    for input_name, path in frozen_inputs(test_dir, with_weights):
        freeze += ["--freeze-input", "%s=%s" % (input_name, path)]
    model = os.path.join(test_dir, "model.onnx")
    stem = os.path.join(work, name + ("-weights" if with_weights else ""))
    targets = ["--target", target]
    code, output = run([tool(tools, "tessel-compile"), model, "-q", "--emit", "tessel",
                        "-o", stem + ".mlir"] + freeze + targets)
    if code != 0:
        return "does not compile: " + output.strip().splitlines()[0], None
    # The float formula casts the integers to float (tessel.cast); the
    # integer path reads them through quantized types.
    with open(stem + ".mlir") as stream:
        ir = stream.read()
    if "!quant.uniform" not in ir or "tessel.cast" in ir:
        return "compiled as the float formula (tessel.cast, no quantized type)", None
    code, output = run([tool(tools, "tessel-compile"), model, "-q", "-o", stem + ".tsl"] +
                       freeze + targets)
    if code != 0:
        return "does not compile: " + output.strip().splitlines()[0], None
    where = placement_of(output) if target == "npu" else None
    data_sets = sorted(d for d in os.listdir(test_dir) if d.startswith("test_data_set_"))
    for data_set in data_sets:
        code, output = run([tool(tools, "tessel-run"), stem + ".tsl", "--test-data",
                            os.path.join(test_dir, data_set), "--rtol", "0", "--atol", "0"])
        if code != 0:
            return "%s: not bit-exact: %s" % (data_set, " ".join(output.split())[:300]), None
    return None, where


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="folder for the IR and artifacts")
    parser.add_argument("--tools", help="folder of tessel-compile and tessel-run (default: PATH)")
    parser.add_argument("--target", choices=["x86", "npu"], default="x86")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0
    for name in TESTS:
        for with_weights in (False, True):
            if with_weights and not PARAMETERS[onnx.load(os.path.join(
                    node_tests_dir(), name, "model.onnx")).graph.node[0].op_type][1]:
                continue
            label = name + (" (weights frozen too)" if with_weights else "")
            problem, where = check_test(name, with_weights, args.tools, args.work, args.target)
            if problem:
                failed += 1
                print("FAIL %s: %s" % (label, problem))
            else:
                passed += 1
                print("PASS %s: integer path, bit-exact%s" % (label, ", " + where if where else ""))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
