#!/usr/bin/env python3
"""Flips single bits of a model file and checks tessel-compile on each.

Flips land outside the weights' raw bytes (where a flip only changes a
value), in the model's structure: tags, lengths, names, attributes, dims.
For each of COUNT seeded flips, `tessel-compile --check` must either accept
the damaged model (status 0: the bit was in a weight, say) or refuse it with
status 1 and an error or a list of problems; never end by a signal or hang.
Prints one line per flip that did otherwise and a summary
"N flips: N accepted, N refused, N failed"; exits 1 if any failed.
"""

import argparse
import random

import onnx
import subprocess
import sys
from pathlib import Path

TIMEOUT_S = 60


def structure_positions(data):
    """Byte positions of `data` (a serialized model) outside large raw_data."""
    model = onnx.load_from_string(data)
    excluded = bytearray(len(data))
    for tensor in model.graph.initializer:
        if len(tensor.raw_data) > 64:
            start = data.find(tensor.raw_data)
            excluded[start:start + len(tensor.raw_data)] = b"\1" * len(tensor.raw_data)
    return [i for i, skip in enumerate(excluded) if not skip]


def main():
    arguments = argparse.ArgumentParser(description=__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_argument("model", type=Path)
    arguments.add_argument("--work", required=True, type=Path)
    arguments.add_argument("--count", type=int, default=300)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--tessel-compile", default="tessel-compile")
    args = arguments.parse_args()
    original = args.model.read_bytes()
    args.work.mkdir(parents=True, exist_ok=True)
    positions = structure_positions(original)
    rng = random.Random(args.seed)
    accepted = refused = failed = 0
    for flip in range(args.count):
        damaged = bytearray(original)
        position, bit = rng.choice(positions), rng.randrange(8)
        damaged[position] ^= 1 << bit
        path = args.work / "flipped.onnx"
        path.write_bytes(damaged)
        command = [args.tessel_compile, str(path), "--check", "-q"]
        what = f"flip {flip} (byte {position}, bit {bit})"
        try:
            result = subprocess.run(command, capture_output=True, text=True, errors="replace",
                                    timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"FAILED {what}: no exit within {TIMEOUT_S} s")
            failed += 1
            continue
        explained = "error:" in result.stderr or "cannot be compiled" in result.stdout
        if result.returncode == 0:
            accepted += 1
        elif result.returncode == 1 and explained:
            refused += 1
        else:
            kept = args.work / f"failed-{flip}.onnx"
            kept.write_bytes(damaged)
            print(f"FAILED {what}: status {result.returncode}, kept as {kept}: "
                  f"{result.stderr.strip()[-300:]}")
            failed += 1
    print(f"{args.count} flips: {accepted} accepted, {refused} refused, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
