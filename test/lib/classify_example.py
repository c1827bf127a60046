#!/usr/bin/env python3
"""Inputs for, and checks of, the classify example (examples/classify).

  inputs TEST_DATA_DIR OUT_DIR
      writes input.npy (the test set's input as it is), digit.pgm (the same
      picture in 8-bit gray, 28x28) and digit-2x.pgm (each pixel doubled to
      56x56, which the example's bilinear resize must undo exactly), and
      expected-npy.txt / expected-pgm.txt: onnxruntime's top-5 on each.
  top5 EXPECTED
      compares the example's output (stdin) with an expected top-5: the
      same classes in the same order, scores within rtol 1e-3, atol 1e-5.
  ldd BINARY [--runtime shared|static]
      checks that BINARY needs only the C/C++ system libraries and, when
      linked against the shared runtime, libtessel_runtime.
"""

import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper

SYSTEM_LIBRARIES = {"linux-vdso", "libc", "libm", "libstdc++", "libgcc_s", "ld-linux-x86-64",
                    "libpthread", "libdl"}


def top5(scores):
    scores = scores.reshape(scores.shape[0], -1)[0]
    order = np.argsort(-scores, kind="stable")[:5]
    return [(int(k), float(scores[k])) for k in order]


def write_pgm(path, pixels):
    height, width = pixels.shape
    with open(path, "wb") as file:
        file.write(b"P5\n# a digit\n%d %d\n255\n" % (width, height) + pixels.tobytes())


def inputs(test_data, out_dir):
    model = os.path.join(test_data, "..", "model.onnx")
    tensor = numpy_helper.to_array(onnx.load_tensor(os.path.join(test_data, "input_0.pb")))
    np.save(os.path.join(out_dir, "input.npy"), tensor)
    low, high = tensor.min(), tensor.max()
    pixels = np.round((tensor[0, 0] - low) / (high - low) * 255).astype(np.uint8)
    write_pgm(os.path.join(out_dir, "digit.pgm"), pixels)
    write_pgm(os.path.join(out_dir, "digit-2x.pgm"), pixels.repeat(2, 0).repeat(2, 1))
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    image = (pixels.astype(np.float32) / 255)[None, None]
    for kind, feed in (("npy", tensor), ("pgm", image)):
        (scores,) = session.run(None, {name: feed})
        with open(os.path.join(out_dir, f"expected-{kind}.txt"), "w") as file:
            for k, score in top5(scores):
                file.write(f"{k} {score!r}\n")


def check_top5(expected_path):
    expected = [line.split() for line in open(expected_path)]
    got = re.findall(r"^\s+\d+\. class (\d+)\s+score (\S+)$", sys.stdin.read(), re.M)
    if [int(k) for k, _ in got] != [int(k) for k, _ in expected]:
        sys.exit(f"top-5 classes {[k for k, _ in got]}, onnxruntime's "
                 f"{[k for k, _ in expected]}")
    for (_, score), (_, reference) in zip(got, expected):
        if abs(float(score) - float(reference)) > 1e-5 + 1e-3 * abs(float(reference)):
            sys.exit(f"score {score}, onnxruntime's {reference}")
    print(f"top-5 matches onnxruntime: {' '.join(k for k, _ in got)}")


def check_ldd(binary, runtime):
    listing = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    names = {re.split(r"\.so", line.split()[0])[0].split("/")[-1]
             for line in listing.splitlines() if line.strip()}
    extra = names - SYSTEM_LIBRARIES - {"libtessel_runtime"}
    if extra:
        sys.exit(f"{binary} needs {sorted(extra)} beyond the runtime:\n{listing}")
    if ("libtessel_runtime" in names) != (runtime == "shared"):
        sys.exit(f"{binary} is linked against the {runtime} runtime, ldd says:\n{listing}")
    if runtime == "shared" and "not found" in listing:
        sys.exit(f"{binary}: a library is not found:\n{listing}")
    print(f"ldd {os.path.basename(binary)}: {' '.join(sorted(names))}")


def main():
    command = sys.argv[1]
    if command == "inputs":
        inputs(sys.argv[2], sys.argv[3])
    elif command == "top5":
        check_top5(sys.argv[2])
    elif command == "ldd":
        check_ldd(sys.argv[2], sys.argv[4] if len(sys.argv) > 4 else "shared")
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
