#!/usr/bin/env python3
"""Rewrites an ONNX model so that each float initializer holds only two
values, chosen per element with a fixed seed: +s and -s, where s is the
tensor's own standard deviation (its mean magnitude for constants of one
value); or, for a tensor without negative values (a variance, a scale),
half and one and a half times its mean, so that it stays positive.

The CUDA target's latency on large models (ResNet-50, BERT-base) is measured
on a GPU machine that only a compiled artifact can reach, through a 64 MiB
transfer. Artifacts of such a model compress to a few MiB with xz, where the
trained or randomly initialized weights do not compress at all. The kernels
do the same work whatever the values, so the latency is that of the model;
activations keep their scale, so the outputs stay finite and can be compared
with onnxruntime's run of the rewritten model.

  scripts/two-level-weights.py model.onnx -o model-two-level.onnx
"""

import argparse

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    model = onnx.load(args.model)
    random = np.random.default_rng(args.seed)
    for i, tensor in enumerate(model.graph.initializer):
        values = numpy_helper.to_array(tensor)
        if values.dtype not in (np.float32, np.float16) or values.size < 2:
            continue
        choice = random.integers(0, 2, size=values.shape)
        if values.min() >= 0:
            mean = float(values.mean()) or 1.0
            two_level = (mean * (0.5 + choice)).astype(values.dtype)
        else:
            scale = float(values.std()) or float(np.abs(values).mean()) or 1.0
            two_level = ((choice * 2 - 1) * scale).astype(values.dtype)
        model.graph.initializer[i].CopyFrom(numpy_helper.from_array(two_level, tensor.name))
    onnx.save(model, args.output)


if __name__ == "__main__":
    main()
