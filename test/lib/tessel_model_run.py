"""Compiling a model with tessel-compile, running the artifact with
tessel-run on numpy inputs, and comparing its outputs: the steps that the
scripts checking generated models against onnxruntime share."""

import os
import subprocess

import numpy as np
import onnx


def compile_model(model_path, artifact, args=()):
    """Compiles `model_path` into `artifact` with tessel-compile's `args`
    added; returns the compiled graph in the tessel dialect (--emit
    tessel)."""
    subprocess.run(["tessel-compile", model_path, "-o", artifact, "-q", *args], check=True)
    return subprocess.run(["tessel-compile", model_path, "--emit", "tessel", "-q", *args],
                          check=True, capture_output=True, text=True).stdout


def refused_compile(model_path, artifact):
    """Compiles `model_path` expecting a refusal: "exit status N: <stderr>;
    artifact written|not written"."""
    completed = subprocess.run(["tessel-compile", model_path, "-o", artifact, "-q"],
                               capture_output=True, text=True)
    written = "written" if os.path.exists(artifact) else "not written"
    return f"exit status {completed.returncode}: {completed.stderr.strip()}; artifact {written}"


def run_tessel(artifact, feeds, work, count):
    """Runs `artifact` on `feeds` (name -> array), with files under `work`:
    (its first `count` outputs, 0, "") or (None, exit status, stderr)."""
    paths = []
    for name, value in feeds.items():
        paths.append(os.path.join(work, name + ".npy"))
        np.save(paths[-1], value)
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    inputs = ["--input", *paths] if paths else []
    completed = subprocess.run(["tessel-run", artifact, *inputs, "--output-dir", out],
                               capture_output=True, text=True)
    if completed.returncode != 0:
        return None, completed.returncode, completed.stderr.strip()
    return [np.load(os.path.join(out, f"output_{i}.npy")) for i in range(count)], 0, ""


def differences(names, expected, actual, rtol, atol):
    """What differs between the `expected` and `actual` outputs named `names`
    (empty when every one matches at rtol/atol)."""
    errors = []
    for name, want, got in zip(names, expected, actual):
        if want.shape != got.shape:
            errors.append(f"{name} has shape {got.shape}, expected {want.shape}")
        elif not np.allclose(got, want, rtol=rtol, atol=atol):
            errors.append(f"{name} differs by {np.abs(got - want).max():.3g}")
    return errors


def check_model(model, feeds, work, names, expected, rtol, atol):
    """Saves `model` in `work`, compiles it, runs it on `feeds` and compares
    its outputs named `names` with `expected`: what differs (empty when
    every output matches), or why the run failed."""
    os.makedirs(work, exist_ok=True)
    model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
    onnx.save(model, model_path)
    compile_model(model_path, artifact)
    actual, status, message = run_tessel(artifact, feeds, work, len(names))
    if actual is None:
        return [f"tessel-run failed ({status}): {message}"]
    return differences(names, expected, actual, rtol, atol)
