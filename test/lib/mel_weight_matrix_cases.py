#!/usr/bin/env python3
"""ONNX MelWeightMatrix against ONNX's reference.

One model takes every input at run time and states its result's shape,
which implies num_mel_bins and dft_length (either length of the same bin
count); a second gives them as constants and returns f64. Each case is run
by tessel-run and compared with onnx.reference (atol 1e-6: the weights are
ratios of small integers). A dft_length that gives another bin count than
the stated shape must stop the run, naming the node.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from tessel_model_run import compile_model, differences, run_tessel

NAMES = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]


def runtime_model(bins, bands):
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, []) for n in NAMES[:3]]
    inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in NAMES[3:]]
    node = helper.make_node("MelWeightMatrix", NAMES, ["weights"], name="mel")
    output = helper.make_tensor_value_info("weights", TensorProto.FLOAT, [bins, bands])
    graph = helper.make_graph([node], "mel", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def constant_model(bands, dft_length, sample_rate, lower, upper):
    values = {"num_mel_bins": np.int64(bands), "dft_length": np.int64(dft_length),
              "sample_rate": np.int64(sample_rate), "lower_edge_hertz": np.float32(lower),
              "upper_edge_hertz": np.float32(upper)}
    nodes = [helper.make_node("Constant", [], [n], value=onnx.numpy_helper.from_array(
        np.array(v), n)) for n, v in values.items()]
    nodes.append(helper.make_node("MelWeightMatrix", NAMES, ["weights"], name="mel",
                                  output_datatype=TensorProto.DOUBLE))
    output = helper.make_tensor_value_info("weights", TensorProto.DOUBLE, None)
    graph = helper.make_graph(nodes, "mel_constant", [], [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feeds_of(bands, dft_length, sample_rate, lower, upper):
    return {"num_mel_bins": np.array(bands, np.int64), "dft_length": np.array(dft_length, np.int64),
            "sample_rate": np.array(sample_rate, np.int64),
            "lower_edge_hertz": np.array(lower, np.float32),
            "upper_edge_hertz": np.array(upper, np.float32)}


# (name, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
RUNTIME_CASES = [
    ("speech_16k", 10, 64, 16000, 20.0, 8000.0),
    ("odd_length", 10, 65, 16000, 20.0, 8000.0),
    ("narrow_band", 6, 64, 8000, 300.0, 3400.0),
    ("bands_sharing_a_bin", 10, 64, 16000, 0.0, 1000.0),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0

    def check(name, model_path, model, feeds, artifact):
        nonlocal passed, failed
        (want,) = ReferenceEvaluator(model).run(None, feeds)
        case_dir = os.path.join(args.work, name)
        os.makedirs(case_dir, exist_ok=True)
        outputs, status, message = run_tessel(artifact, feeds, case_dir, 1)
        errors = [f"tessel-run failed ({status}): {message}"] if outputs is None else \
            differences(["weights"], [want], outputs, rtol=0, atol=1e-6)
        print(f"{name}: " + ("; ".join(errors) if errors else "weights match onnx.reference"))
        passed, failed = (passed, failed + 1) if errors else (passed + 1, failed)

    models = {}
    for name, bands, dft_length, *rest in RUNTIME_CASES:
        bins = dft_length // 2 + 1
        if (bins, bands) not in models:
            path = os.path.join(args.work, f"mel_{bins}x{bands}.onnx")
            onnx.save(runtime_model(bins, bands), path)
            compile_model(path, path[:-5] + ".tsl")
            models[(bins, bands)] = path
        path = models[(bins, bands)]
        check(name, path, onnx.load(path), feeds_of(bands, dft_length, *rest), path[:-5] + ".tsl")

    constant = constant_model(8, 32, 22050, 0.0, 11025.0)
    path = os.path.join(args.work, "mel_constant.onnx")
    onnx.save(constant, path)
    compile_model(path, path[:-5] + ".tsl")
    check("constant_inputs_f64", path, constant, {}, path[:-5] + ".tsl")
    print(f"{passed} passed, {failed} failed")

    # 66 gives 34 bins where the model states 33.
    path = models[(33, 10)]
    case_dir = os.path.join(args.work, "wrong_length")
    os.makedirs(case_dir, exist_ok=True)
    _, status, message = run_tessel(path[:-5] + ".tsl", feeds_of(10, 66, 16000, 20.0, 8000.0),
                                    case_dir, 1)
    print(f"wrong_dft_length: exit status {status}: {message}")


if __name__ == "__main__":
    main()
