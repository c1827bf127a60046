#!/usr/bin/env python3
"""PyTorch eager on the GPU, the reference the CUDA target's latencies are
reported next to: the test models of test/lib/export_torch_model.py (same
constructors and input shapes, random weights), and torch.matmul at 4096³
in fp32, fp16 and bf16 (cuBLAS). Prints one median per line, in milliseconds, over
--runs runs after --warmup, each timed to its completion (synchronize).

  python3 scripts/bench-gpu-eager.py squeezenet mobilenet_v2 --batch 1
"""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "lib"))
from export_torch_model import INTEGER_INPUTS, MODELS, RECURRENT_MODELS  # noqa: E402


def median_ms(function, runs, warmup):
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda")
    print("torch %s on %s" % (torch.__version__, torch.cuda.get_device_name(0)))
    torch.manual_seed(0)
    for name in args.models:
        constructor, shape = MODELS[name]
        model = constructor().eval().to(device)
        if name in INTEGER_INPUTS:
            example = torch.randint(0, 4, (args.batch,) + tuple(shape[1:]), device=device)
        elif name in RECURRENT_MODELS:
            example = torch.randn((shape[0], args.batch) + tuple(shape[2:]), device=device)
        else:
            example = torch.randn((args.batch,) + tuple(shape[1:]), device=device)
        with torch.no_grad():
            ms = median_ms(lambda: model(example), args.runs, args.warmup)
        print("eager %s batch %d: median %.3f ms" % (name, args.batch, ms))
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        a = torch.randn(4096, 4096, device=device, dtype=dtype)
        b = torch.randn(4096, 4096, device=device, dtype=dtype)
        ms = median_ms(lambda: torch.matmul(a, b), 20, 5)
        print("torch.matmul 4096^3 %s: median %.3f ms, %.1f TFLOP/s"
              % (str(dtype).split(".")[1], ms, 2 * 4096**3 / ms / 1e9))


if __name__ == "__main__":
    main()
