"""The `tessel` package: compile, load, run, errors; against onnxruntime."""

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import onnx
import onnxruntime
import pytest

import tessel

RTOL, ATOL = 1e-3, 1e-5


def assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


def test_compile_from_path_bytes_and_model_proto(lenet_path, lenet_data):
    image, expected = lenet_data
    with open(lenet_path, "rb") as file:
        sources = [lenet_path, file.read(), onnx.load(lenet_path)]
    for source in sources:
        artifact = tessel.compile(source, progress=False)
        assert isinstance(artifact, bytes) and artifact[4:8] == b"TSL1"
        (scores,) = tessel.load(artifact).session(threads=1).run(None, {"image": image})
        assert_close(scores, expected)


def test_signature(lenet_artifact, lenet_path):
    module = tessel.load(lenet_artifact)
    model = onnx.load(lenet_path)
    assert [info.name for info in module.inputs] == [i.name for i in model.graph.input]
    assert [info.name for info in module.outputs] == [o.name for o in model.graph.output]
    (image,) = module.inputs
    assert image.dtype == np.float32 and image.element_type == "f32"
    assert image.shape == (1, 1, 28, 28)
    assert image.scales == [] and image.quantization_axis is None
    assert module.provenance["compiler_version"] == tessel.__version__
    assert module.memory["weight_bytes"] > 0


def test_run_forms_match_onnxruntime(lenet_artifact, lenet_path, lenet_data):
    image, expected = lenet_data
    reference = onnxruntime.InferenceSession(lenet_path, providers=["CPUExecutionProvider"])
    assert_close(reference.run(None, {"image": image})[0], expected)
    session = tessel.load(lenet_artifact).session(threads=2)
    named = session.run({"image": image})
    assert list(named) == ["probabilities"]
    assert_close(named["probabilities"], expected)
    (listed,) = session.run(["probabilities"], {"image": image})
    assert_close(listed, expected)
    assert listed.dtype == np.float32 and listed.shape == expected.shape


def test_load_from_file_and_write_output(lenet_path, lenet_data, tmp_path):
    image, expected = lenet_data
    path = tmp_path / "lenet.tsl"
    assert tessel.compile(lenet_path, output=path, progress=False) is None
    assert os.listdir(tmp_path) == ["lenet.tsl"]  # no temporary left behind
    assert_close(tessel.load(path).session().run({"image": image})["probabilities"], expected)


def test_outputs_are_views_of_runtime_memory(lenet_artifact, lenet_data):
    image, _ = lenet_data
    session = tessel.load(lenet_artifact).session(threads=1)
    first = session.run({"image": image})["probabilities"]
    second = session.run({"image": image})["probabilities"]
    # Each output owns no memory of its own: it views a runtime tensor that
    # lives as long as the array, and every run returns a new one.
    assert not first.flags.owndata and not second.flags.owndata
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, second)
    del session
    assert np.isfinite(first).all()


def test_non_contiguous_input_is_copied(lenet_artifact, lenet_data):
    image, expected = lenet_data
    wide = np.zeros((1, 1, 28, 56), np.float32)
    wide[..., ::2] = image
    strided = wide[..., ::2]
    assert not strided.flags.c_contiguous
    session = tessel.load(lenet_artifact).session(threads=1)
    assert_close(session.run({"image": strided})["probabilities"], expected)


def test_bad_feeds_raise_with_the_runtime_message(lenet_artifact, lenet_data):
    image, _ = lenet_data
    session = tessel.load(lenet_artifact).session(threads=1)
    with pytest.raises(tessel.TesselError, match="input 'image' must be float32, not float64") \
            as error:
        session.run({"image": image.astype(np.float64)})
    assert error.value.code == "INVALID_ARGUMENT"
    with pytest.raises(tessel.TesselError, match=r"input 0 \('image'\): expected shape \[1, 1, 28, 28\] but got \[1, 1, 28, 27\]") as error:
        session.run({"image": np.zeros((1, 1, 28, 27), np.float32)})
    assert error.value.code == "INVALID_ARGUMENT"
    with pytest.raises(tessel.TesselError, match="input 'image' is missing"):
        session.run({})
    with pytest.raises(tessel.TesselError, match="no input 'picture' \\(inputs: 'image'\\)"):
        session.run({"image": image, "picture": image})
    with pytest.raises(tessel.TesselError, match="no output 'logits'"):
        session.run(["logits"], {"image": image})
    with pytest.raises(TypeError, match="must be a numpy array"):
        session.run({"image": "an image"})
    with pytest.raises(TypeError, match="feeds must be a dict"):
        session.run([image])


def test_corrupt_and_missing_artifacts(lenet_artifact, tmp_path):
    corrupt = bytearray(lenet_artifact)
    corrupt[len(corrupt) // 2] ^= 0xFF
    with pytest.raises(tessel.TesselError) as error:
        tessel.load(bytes(corrupt))
    assert error.value.code == "INVALID_ARTIFACT"
    with pytest.raises(tessel.TesselError) as error:
        tessel.load(tmp_path / "missing.tsl")
    assert error.value.code == "NOT_FOUND"
    with pytest.raises(TypeError):
        tessel.load(42)


def test_compile_errors(tmp_path):
    with pytest.raises(tessel.TesselError) as error:
        tessel.compile(b"not an onnx model", progress=False)
    assert error.value.code == "COMPILE_FAILED"
    with pytest.raises(FileNotFoundError):
        tessel.compile(tmp_path / "missing.onnx")
    with pytest.raises(TypeError):
        tessel.compile(3.5)
    with pytest.raises(ValueError, match="shape of 'image'"):
        tessel.compile(b"", shapes={"image": "1xAx28"})


def test_dynamic_batch_runs_any_number_of_samples():
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((4, 3)).astype(np.float32)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["product"]),
         onnx.helper.make_node("Relu", ["product"], ["y"])],
        "dense",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 3])],
        initializer=[onnx.numpy_helper.from_array(weights, "w")])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    module = tessel.load(tessel.compile(model, dynamic_batch=True, progress=False))
    assert module.inputs[0].shape == (None, 4) and module.outputs[0].shape == (None, 3)
    session = module.session(threads=1)
    for batch in (1, 5):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        assert_close(session.run({"x": x})["y"], np.maximum(x @ weights, 0))
    with pytest.raises(tessel.TesselError, match="symbolic"):
        tessel.compile(model, progress=False)


def test_max_shapes_runs_any_sequence_length_up_to_the_bound():
    rng = np.random.default_rng(1)
    hidden, features = 5, 3

    def weight(name, shape):
        return onnx.numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("GRU", ["x", "W", "R"], ["y", "y_h"], hidden_size=hidden)],
        "gru",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["seq", 2, features])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["seq", 1, 2, hidden]),
         onnx.helper.make_tensor_value_info("y_h", onnx.TensorProto.FLOAT, [1, 2, hidden])],
        initializer=[weight("W", (1, 3 * hidden, features)), weight("R", (1, 3 * hidden, hidden))])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    module = tessel.load(tessel.compile(model, max_shapes={"x": "10x2x3"}, progress=False))
    assert module.max_length == 10
    assert module.inputs[0].shape == (None, 2, 3) and module.outputs[0].shape == (None, 1, 2, 5)
    assert module.inputs[0].varying_axis == 0 and module.outputs[0].varying_axis == 0
    assert module.outputs[1].varying_axis is None
    reference = onnxruntime.InferenceSession(model.SerializeToString(),
                                             providers=["CPUExecutionProvider"])
    session = module.session(threads=1)
    for length in (10, 4):
        x = rng.standard_normal((length, 2, features)).astype(np.float32)
        got, want = session.run({"x": x}), reference.run(None, {"x": x})
        assert_close(got["y"], want[0])
        assert_close(got["y_h"], want[1])
    with pytest.raises(tessel.TesselError, match="beyond the bound 10"):
        session.run({"x": np.zeros((11, 2, features), np.float32)})


def test_bf16_products(lenet_path, lenet_data):
    image, expected = lenet_data
    text = tessel.compile(lenet_path, precision="bf16", emit="tessel", progress=False)
    assert 'tessel.precision = "bf16"' in text and "bf16>" in text
    artifact = tessel.compile(lenet_path, precision="bf16", progress=False)
    (scores,) = tessel.load(artifact).session(threads=1).run(None, {"image": image})
    # Operands rounded to bf16 (2^-9 relative) through five layers: LeNet's
    # probabilities move by about 1e-4 (SQNR 54 dB).
    np.testing.assert_allclose(scores, expected, rtol=1e-2, atol=1e-3)
    assert np.argmax(scores) == np.argmax(expected)
    with pytest.raises(tessel.TesselError, match="unknown precision 'fp8'"):
        tessel.compile(lenet_path, precision="fp8", progress=False)


def test_unknown_target_is_named(lenet_path):
    with pytest.raises(tessel.TesselError, match="unknown target 'gpu9'"):
        tessel.compile(lenet_path, target="gpu9", progress=False)
    assert "x86" in tessel.available_targets()


def test_emit_text_and_progress(lenet_path):
    stages = []
    text = tessel.compile(lenet_path, emit="tessel", progress=stages.append)
    assert isinstance(text, str) and "func.func" in text
    assert stages and stages[0].startswith("importing ")


def test_quantize_with_report(lenet_path, lenet_data, tmp_path):
    image, expected = lenet_data
    calibration = os.path.dirname(lenet_path)  # holds test_data_set_0
    report = tmp_path / "report.json"
    artifact = tessel.compile(lenet_path, quantize="int8", calibration=calibration,
                              quantize_report=report, progress=False)
    layers = json.loads(report.read_text())["layers"]
    assert layers and all("sqnr_db" in layer for layer in layers)
    scores = tessel.load(artifact).session(threads=1).run({"image": image})["probabilities"]
    assert np.argmax(scores) == np.argmax(expected)
    with pytest.raises(tessel.TesselError, match="needs calibration"):
        tessel.compile(lenet_path, quantize="int8", progress=False)


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86 rounding-mode constants")
def test_quantized_results_ignore_the_callers_rounding_mode(lenet_path, lenet_data):
    # The INT8 kernels' conversions round by the thread's mode (MXCSR) and
    # mean round half to even; the runtime sets that mode while they run.
    image, _ = lenet_data
    calibration = os.path.dirname(lenet_path)
    artifact = tessel.compile(lenet_path, quantize="int8", calibration=calibration,
                              progress=False)
    libc = ctypes.CDLL(None)
    to_nearest, downward, upward = 0x0, 0x400, 0x800  # <fenv.h> on x86-64
    for threads in (1, 2):
        session = tessel.load(artifact).session(threads=threads)
        expected = session.run({"image": image})["probabilities"].copy()
        for mode in (downward, upward):
            assert libc.fesetround(mode) == 0
            try:
                got = session.run({"image": image})["probabilities"].copy()
            finally:
                libc.fesetround(to_nearest)
            np.testing.assert_array_equal(got, expected)


def test_gil_is_released_while_compiling(lenet_path):
    done = threading.Event()
    worker = threading.Thread(
        target=lambda: (tessel.compile(lenet_path, progress=False), done.set()))
    worker.start()
    iterations = 0
    while not done.is_set():  # runs only while the compile has let go of the GIL
        iterations += 1
        time.sleep(0)
    worker.join()
    assert iterations > 100


def test_sessions_in_threads(lenet_artifact, lenet_data):
    image, expected = lenet_data
    module = tessel.load(lenet_artifact)
    results = [None] * 4

    def work(index):
        session = module.session(threads=1)
        for _ in range(20):
            results[index] = session.run({"image": image})["probabilities"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        assert_close(result, expected)


def test_cuda_artifact_runs_on_the_cpu_without_a_gpu(lenet_path, lenet_data):
    """--target cuda adds PTX beside the x86 code: with no driver (a library
    that does not exist stands in for libcuda, in a process of its own) the
    session runs on the CPU and says so; demanding the GPU fails naming why."""
    image, expected = lenet_data
    artifact = tessel.compile(lenet_path, target="cuda", progress=False)
    script = (
        "import sys, numpy as np, tessel\n"
        "module = tessel.load(sys.stdin.buffer.read())\n"
        "session = module.session(threads=1)\n"
        "(scores,) = session.run(None, {'image': np.load(sys.argv[1])})\n"
        "np.save(sys.argv[2], scores)\n"
        "print(session.device)\n"
        "try:\n"
        "    module.session(device='cuda')\n"
        "except tessel.TesselError as error:\n"
        "    print(error)\n")
    with tempfile.TemporaryDirectory() as work:
        np.save(os.path.join(work, "image.npy"), image)
        environment = dict(os.environ, TESSEL_CUDA_DRIVER=os.path.join(work, "libcuda.so.1"))
        result = subprocess.run(
            [sys.executable, "-c", script, os.path.join(work, "image.npy"),
             os.path.join(work, "scores.npy")],
            input=artifact, capture_output=True, env=environment, check=True)
        lines = result.stdout.decode().splitlines()
        assert lines[0] == "cpu"
        assert "the cuda device is not available: no CUDA driver found" in lines[1]
        assert_close(np.load(os.path.join(work, "scores.npy")), expected)


def test_cuda_architectures_and_their_errors(lenet_path):
    ptx = tessel.compile(lenet_path, target="cuda", cuda_arch=["sm_86"], emit="ptx",
                         progress=False)
    assert ".target sm_86" in ptx and ".target sm_90" not in ptx and ".target sm_80" not in ptx
    with pytest.raises(tessel.TesselError, match="unknown CUDA architecture 'sm_70'"):
        tessel.compile(lenet_path, target="cuda", cuda_arch="sm_80,sm_70", progress=False)
    with pytest.raises(ValueError, match="cuda_arch names no architecture"):
        tessel.compile(lenet_path, target="cuda", cuda_arch=" , ", progress=False)
    with pytest.raises(tessel.TesselError, match="needs a CUDA target"):
        tessel.compile(lenet_path, cuda_cubins=True, progress=False)


def _elf_machines(data):
    """The e_machine of every ELF header in `data`."""
    machines, at = [], data.find(b"\x7fELF")
    while at >= 0:
        machines.append(int.from_bytes(data[at + 18:at + 20], "little"))
        at = data.find(b"\x7fELF", at + 4)
    return machines


ELF_MACHINE_CUDA = 190


@pytest.mark.skipif(not (shutil.which("ptxas") or os.access(os.path.join(
    os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas"), os.X_OK)),
    reason="the CUDA toolkit's ptxas is not installed")
def test_cuda_cubins_beside_the_ptx(lenet_path, lenet_data):
    image, expected = lenet_data
    plain = tessel.compile(lenet_path, target="cuda", cuda_arch="sm_80", progress=False)
    with_cubins = tessel.compile(lenet_path, target="cuda", cuda_arch="sm_80", cuda_cubins=True,
                                 progress=False)
    assert ELF_MACHINE_CUDA not in _elf_machines(plain)
    assert _elf_machines(with_cubins).count(ELF_MACHINE_CUDA) == 1
    scores = tessel.load(with_cubins).session(threads=1).run({"image": image})["probabilities"]
    assert_close(scores, expected)


def test_npu_config(lenet_path, tmp_path):
    """An 8 x 16 output-stationary NPU with an 8 KiB scratchpad tiles the
    first convolution into four tiles of six rows; the default one takes it
    whole. A bad configuration names its key."""
    calibration = os.path.dirname(lenet_path)
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"array_rows": 8, "array_columns": 16,
                                 "dataflow": "output_stationary", "scratchpad_bytes": 8192,
                                 "accumulator_bytes": 4096}))
    first_tile = lambda program: program.split("npu.program @k1_conv_relu", 1)[1].split("\n")[0]
    default = tessel.compile(lenet_path, target="npu", quantize="int8", calibration=calibration,
                             emit="npu", progress=False)
    tiled = tessel.compile(lenet_path, target="npu", quantize="int8", calibration=calibration,
                           npu_config=small, emit="npu", progress=False)
    assert "rows = 24 : i64, tiles = 1 : i64" in first_tile(default)
    assert "rows = 6 : i64, tiles = 4 : i64" in first_tile(tiled)
    bad = tmp_path / "bad.json"
    bad.write_text('{"array_rows": 0}')
    with pytest.raises(tessel.TesselError, match=r"bad.json: array_rows 0 is outside \[1, 256\]"):
        tessel.compile(lenet_path, target="npu", npu_config=bad, progress=False)


def test_signed_artifacts(lenet_path, lenet_data, tmp_path):
    image, expected = lenet_data
    for name in ("key", "other"):
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out",
                        tmp_path / f"{name}.pem"], check=True)
        subprocess.run(["openssl", "pkey", "-in", tmp_path / f"{name}.pem", "-pubout", "-out",
                        tmp_path / f"{name}.pub"], check=True)
    key = tessel.read_public_key(tmp_path / "key.pub")
    other = tessel.read_public_key(tmp_path / "other.pub")
    signed = tessel.compile(lenet_path, sign=tmp_path / "key.pem", progress=False)
    session = tessel.load(signed, trusted_keys=[other, key]).session(threads=1)
    assert_close(session.run({"image": image})["probabilities"], expected)
    with pytest.raises(tessel.TesselError, match="which is not one of the 1 trusted keys"):
        tessel.load(signed, trusted_keys=[other])
    with pytest.raises(tessel.TesselError, match="the artifact is not signed"):
        tessel.load(tessel.compile(lenet_path, progress=False), trusted_keys=[key])
    with pytest.raises(tessel.TesselError, match="it does not apply to emit=\"tessel\""):
        tessel.compile(lenet_path, sign=tmp_path / "key.pem", emit="tessel", progress=False)
    with pytest.raises(tessel.TesselError, match="signing key .*missing.pem.: No such file"):
        tessel.compile(lenet_path, sign=tmp_path / "missing.pem", progress=False)
