"""Tessel: compile ONNX models ahead of time, and run them on numpy arrays.

    import tessel
    artifact = tessel.compile("resnet18.onnx")           # bytes of a .tsl artifact
    module = tessel.load(artifact)                        # or a path to a .tsl file
    session = module.session(threads=2)
    outputs = session.run({"input": image})               # {name: numpy array}
    (logits,) = session.run(None, {"input": image})       # onnxruntime's form

Inputs that are C-contiguous arrays of the signature's dtype reach the model
without a copy; outputs are numpy arrays over the runtime's own memory. The
GIL is released while a model compiles or runs. Errors of the compiler and
the runtime raise TesselError, whose `code` names their kind.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from typing import Callable, Mapping, Sequence, Union

from ._tessel import Module, Session, TensorInfo, TesselError, __version__
from . import _tessel

__all__ = ["compile", "load", "read_public_key", "available_targets", "Module", "Session",
           "TensorInfo", "TesselError", "__version__"]

ModelSource = Union[str, os.PathLike, bytes, bytearray, memoryview, object]
Shape = Union[str, Sequence[int]]


def available_targets() -> list[str]:
    """The targets compile() accepts ("x86", ...)."""
    return _tessel.available_targets()


def read_public_key(path: str | os.PathLike) -> bytes:
    """The 32-byte Ed25519 public key of a PEM file (`openssl pkey -pubout`)."""
    return _tessel.read_public_key(os.fspath(path))


def compile(model: ModelSource, target: str = "x86", *, output: str | os.PathLike | None = None,
            shapes: Mapping[str, Shape] | None = None,
            freeze_inputs: Mapping[str, str | os.PathLike] | None = None,
            dynamic_batch: bool = False, max_shapes: Mapping[str, Shape] | None = None,
            quantize: str | None = None, calibration: str | os.PathLike | None = None,
            calibration_method: str = "percentile", activations: str = "u8",
            min_sqnr: float = 15.0, calibration_samples: int = 0,
            quantize_report: str | os.PathLike | None = None, opt_level: int = 3,
            cpu: str | None = None, precision: str | None = None,
            cuda_arch: str | Sequence[str] | None = None, cuda_cubins: bool = False,
            npu_config: str | os.PathLike | None = None, sign: str | os.PathLike | None = None,
            emit: str = "artifact", progress: bool | Callable[[str], None] | None = None) -> bytes | str | None:
    """Compiles an ONNX model as `tessel-compile` does.

    model        a path, the bytes of an .onnx file, or an onnx.ModelProto
    target       one of available_targets()
    output       write the result there (atomically) and return None;
                 otherwise return it: bytes for emit="artifact" or
                 "qdq-onnx", text for the IR forms ("tessel", "linalg",
                 "llvm", "asm")
    shapes       input name -> shape ("1x3x224x224" or a sequence) for
                 symbolic dimensions
    freeze_inputs  input name -> TensorProto file: a constant from now on
    dynamic_batch  one artifact for any batch size: a symbolic dimension 0
                 of the inputs is the batch (the model must keep samples
                 apart); the signature gives it as None
    max_shapes   input name -> shape with a bound for its symbolic
                 dimension (tessel-compile --max-shape): one artifact for
                 every length up to the bound (a sequence; LSTM, GRU and RNN
                 read it as their sequence_lens, a Softmax, reduction or
                 attention over it reads the padding filled, and no other
                 node may let positions along it meet); the signature gives
                 it as None and Module.max_length the bound; with
                 dynamic_batch too, dimension 0 is the batch
    quantize     "int8": post-training quantization calibrated on the
                 inputs in `calibration` (test_data_set_* folders or .npy
                 files), with `calibration_method` (minmax, percentile,
                 entropy, mse), `activations` ("u8" or "s8") and layers below
                 `min_sqnr` dB kept in float; `quantize_report` receives
                 what it did per layer (JSON)
    opt_level    0 to 3;  cpu: the CPU to generate code for (default: this one)
    precision    what matrix products and convolutions read their operands
                 as, summing in f32 (tessel-compile --precision): "bf16" on
                 the CPU for those with constant weights, or with quantize
                 for the layers kept out of INT8; the CUDA target's "fp16"
                 (default), "bf16" or "fp32"
    cuda_arch    the CUDA target's GPU architectures ("sm_80,sm_90" or a
                 sequence; default: sm_80 and sm_90)
    cuda_cubins  also assemble each architecture's PTX into a cubin with the
                 CUDA toolkit's ptxas (tessel-compile --cuda-cubins)
    npu_config   the NPU's configuration, a JSON file (tessel-compile
                 --npu-config; default: the ISA's defaults)
    sign         sign the artifact with this Ed25519 private key (PEM)
    progress     True: each stage on stderr; False: quiet; a callable
                 receives each stage; None: stderr when it is a terminal
    """
    request = _tessel.CompileRequest()
    request.target = target
    request.opt_level = opt_level
    request.cpu = cpu or ""
    request.precision = precision or ""
    if cuda_arch is not None:
        architectures = cuda_arch.split(",") if isinstance(cuda_arch, str) else list(cuda_arch)
        request.cuda_architectures = [a.strip() for a in architectures if a.strip()]
        if not request.cuda_architectures:
            raise ValueError("cuda_arch names no architecture")
    request.cuda_cubins = cuda_cubins
    request.npu_config = os.fspath(npu_config) if npu_config is not None else ""
    request.signing_key = os.fspath(sign) if sign is not None else ""
    request.emit = emit
    request.shapes = {name: _parse_shape(name, shape) for name, shape in (shapes or {}).items()}
    request.frozen_inputs = {name: os.fspath(path) for name, path in (freeze_inputs or {}).items()}
    request.dynamic_batch = dynamic_batch
    request.max_shapes = {name: _parse_shape(name, shape)
                          for name, shape in (max_shapes or {}).items()}
    request.quantize = quantize or ""
    request.calibration = os.fspath(calibration) if calibration is not None else ""
    request.calibration_method = calibration_method
    request.activations = activations
    request.min_sqnr = min_sqnr
    request.calibration_samples = calibration_samples
    if quantize_report is not None and not quantize:
        raise ValueError("quantize_report needs quantize=\"int8\"")

    with tempfile.TemporaryDirectory(prefix="tessel-") as scratch:
        request.model_path = _model_path(model, scratch)
        result, report = _tessel.compile(request, _progress_callback(progress))
    if quantize_report is not None:
        _write_atomically(quantize_report, report.encode())
    if emit not in ("artifact", "qdq-onnx"):
        result = result.decode()
    if output is None:
        return result
    _write_atomically(output, result if isinstance(result, bytes) else result.encode())
    return None


def load(source: str | os.PathLike | bytes | bytearray | memoryview, *,
         trusted_keys: Sequence[bytes] | None = None) -> Module:
    """Verifies and loads an artifact from a path or from its bytes.

    trusted_keys: load only artifacts signed by one of these Ed25519 public
    keys (32 bytes each; read_public_key reads a PEM file).
    """
    keys = list(trusted_keys or [])
    if isinstance(source, (str, os.PathLike)):
        return Module.load_file(os.fspath(source), keys)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Module.load_memory(bytes(source), keys)
    raise TypeError(f"load() takes a path or bytes, not {type(source).__name__}")


def _parse_shape(name: str, shape: Shape) -> list[int]:
    dims = shape.split("x") if isinstance(shape, str) else list(shape)
    try:
        parsed = [int(dim) for dim in dims]
    except (TypeError, ValueError):
        parsed = []
    if not parsed or any(dim < 0 for dim in parsed):
        raise ValueError(f"shape of '{name}' must be like \"1x3x224x224\" or (1, 3, 224, 224), "
                         f"not {shape!r}")
    return parsed


def _model_path(model: ModelSource, scratch: str) -> str:
    """A path for the compiler: the model's own, or a file in `scratch`."""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no ONNX model at {path}")
        return path
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif hasattr(model, "SerializeToString"):  # onnx.ModelProto
        data = model.SerializeToString()
    else:
        raise TypeError("compile() takes a path, bytes or an onnx.ModelProto, "
                        f"not {type(model).__name__}")
    path = os.path.join(scratch, "model.onnx")
    with open(path, "wb") as file:
        file.write(data)
    return path


def _progress_callback(progress: bool | Callable[[str], None] | None):
    if callable(progress):
        return progress
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    return lambda stage: print(f"tessel: {stage}", file=sys.stderr, flush=True)


def _write_atomically(path: str | os.PathLike, data: bytes) -> None:
    """Writes through a temporary file beside `path`: never a partial file."""
    path = os.fspath(path)
    temporary = f"{path}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with open(temporary, "xb") as file:  # the umask's permissions, unlike mkstemp's
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
