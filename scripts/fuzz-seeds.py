#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (test/Fuzz/corpus/TARGET/).

Seeds are small valid and malformed inputs that reach deep into each reader,
from which libFuzzer mutates: the importer tests' models (test/Onnx/*.onnxtxt)
and the malformed-model suite's cases for tessel-fuzz-onnx-import; artifacts
compiled from a few of those models for tessel-fuzz-artifact; .npy files of
each format version and dtype and TensorProto files for
tessel-fuzz-tensor-files (first byte: 1 for .npy, 0 for .pb); the NPU programs
tessel-npu-stream-seeds writes for tessel-fuzz-npu-stream. Each seed is
named by its SHA-1, as libFuzzer names corpus files. Also writes the
regression inputs (test/Fuzz/regressions/TARGET/) of crashes fixed before
the fuzzers existed; findings of the fuzzers are added there by hand.

The checked-in corpora also hold what `make fuzz` found, minimized with
libFuzzer's -merge=1 into the seeds:

    build-sanitize/bin/tessel-fuzz-T -merge=1 NEW test/Fuzz/corpus/T build-sanitize/fuzz/T/corpus

    .venv/bin/python scripts/fuzz-seeds.py --tools build/bin
"""

import argparse
import hashlib
import io
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper, parser

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY / "test" / "lib"))
import malformed_models  # noqa: E402

# Seeds above this size slow every mutation down more than they add.
MAX_SEED_BYTES = 64 * 1024
# Models compiled into the artifact seeds: a convolution network, shapes
# and indexing, a quantized model, gathers with run-time index checks.
ARTIFACT_MODELS = ["nn.onnxtxt", "slicing.onnxtxt", "quantization.onnxtxt",
                   "index-checks.onnxtxt"]


def write_seed(folder, data):
    if len(data) > MAX_SEED_BYTES:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return True


def onnx_models():
    for source in sorted((REPOSITORY / "test" / "Onnx").glob("*.onnxtxt")):
        try:
            yield source.name, parser.parse_model(source.read_text())
        except Exception:  # a test of the parser's own refusals
            continue


def onnx_seeds(corpus):
    count = 0
    for _, model in onnx_models():
        count += write_seed(corpus, model.SerializeToString())
    for case in malformed_models.all_cases():
        if case.model is not None:
            count += write_seed(corpus, case.model.SerializeToString())
    return count


def artifact_seeds(corpus, tools):
    count = 0
    models = dict(onnx_models())
    with tempfile.TemporaryDirectory() as work:
        for name in ARTIFACT_MODELS:
            model_path = Path(work) / "model.onnx"
            onnx.save(models[name], model_path)
            artifact = Path(work) / "model.tsl"
            subprocess.run([str(tools / "tessel-compile"), str(model_path), "-O1", "-q",
                            "-o", str(artifact)], check=True)
            count += write_seed(corpus, artifact.read_bytes())
    return count


def npy_bytes(array, version):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version)
    return buffer.getvalue()


def tensor_file_seeds(corpus):
    count = 0
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3)).astype(np.float32),
              rng.integers(-128, 127, (4,), dtype=np.int8),
              rng.integers(0, 255, (1, 2, 2), dtype=np.uint8),
              np.array(3.5, dtype=np.float64),
              np.array([True, False]),
              np.zeros((0, 3), dtype=np.int64),
              rng.standard_normal((3,)).astype(np.float16)]
    for array in arrays:
        for version in [(1, 0), (2, 0), (3, 0)]:
            count += write_seed(corpus, b"\x01" + npy_bytes(array, version))
        tensor = numpy_helper.from_array(array, "x")
        count += write_seed(corpus, b"\x00" + tensor.SerializeToString())
    # A tensor in raw_data and one in a typed field.
    typed = onnx.helper.make_tensor("y", onnx.TensorProto.INT32, [3], [1, 2, 3])
    count += write_seed(corpus, b"\x00" + typed.SerializeToString())
    return count


# Malformed models that crashed tessel-compile before model validation
# (issue 16); kept as the import target's regression inputs.
CRASHED_IMPORT = ["Relu-too-few-inputs", "Gemm-too-few-inputs", "Relu-no-outputs",
                  "Conv-strides-zero", "conv-image-rank-3", "stft-bool-signal",
                  "input-dim-2^63-1", "split-num-outputs-zero", "depth-to-space-block-2^32",
                  "prelu-slope-wider", "layer-norm-scale-apart"]
# .npy headers that read before the reader's buffer or escaped as raw C++
# exceptions.
CRASHED_NPY = ["{'descr': '<f4', 'fortran_order': False, 'shape':",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (1, x2, 3), }",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"]


def npy_with_header(header):
    text = header.encode("latin1")
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text


def write_regressions(folder):
    cases = {case.name: case for case in malformed_models.all_cases()}
    for name in CRASHED_IMPORT:
        path = folder / "onnx-import" / name.replace("^", "")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(cases[name].model.SerializeToString())
    for index, header in enumerate(CRASHED_NPY):
        path = folder / "tensor-files" / f"npy-header-{index}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x01" + npy_with_header(header))


def npu_stream_seeds(corpus, tools):
    """Valid NPU programs, encoded by the ISA's own encoder (the tool)."""
    count = 0
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([str(tools / "tessel-npu-stream-seeds"), work], check=True)
        for seed in sorted(Path(work).iterdir()):
            count += write_seed(corpus, seed.read_bytes())
    return count


def main():
    arguments = argparse.ArgumentParser(description=__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_argument("--tools", type=Path, default=REPOSITORY / "build" / "bin")
    arguments.add_argument("--corpus", type=Path, default=REPOSITORY / "test" / "Fuzz" / "corpus")
    arguments.add_argument("--regressions", type=Path,
                           default=REPOSITORY / "test" / "Fuzz" / "regressions")
    args = arguments.parse_args()
    write_regressions(args.regressions)
    counts = {
        "onnx-import": onnx_seeds(args.corpus / "onnx-import"),
        "artifact": artifact_seeds(args.corpus / "artifact", args.tools),
        "tensor-files": tensor_file_seeds(args.corpus / "tensor-files"),
        "npu-stream": npu_stream_seeds(args.corpus / "npu-stream", args.tools),
    }
    for target, count in counts.items():
        print(f"{target}: {count} seeds")


if __name__ == "__main__":
    main()
