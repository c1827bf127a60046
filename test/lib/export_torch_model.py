#!/usr/bin/env python3
"""Exports a test model from torch/torchvision to ONNX with random weights.

Runs under Debian's /usr/bin/python3, which has the CPU build of torch; the
seed fixes the weights, so the same command gives the same model.
"""

import argparse

import torch
import torchvision


class MLP(torch.nn.Module):
    """Three fully connected layers, the classic MNIST classifier shape."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Flatten(),
            torch.nn.Linear(784, 512), torch.nn.ReLU(),
            torch.nn.Linear(512, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 10))

    def forward(self, x):
        return self.layers(x)


MODELS = {
    # name: (constructor, input shape)
    "mlp": (MLP, (1, 1, 28, 28)),
    "resnet18": (lambda: torchvision.models.resnet18(), (1, 3, 224, 224)),
    "resnet50": (lambda: torchvision.models.resnet50(), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    constructor, shape = MODELS[args.model]
    model = constructor().eval()
    example = torch.randn((args.batch,) + tuple(shape[1:]))
    with torch.no_grad():
        torch.onnx.export(model, example, args.output, opset_version=args.opset,
                          input_names=["input"], output_names=["output"])


if __name__ == "__main__":
    main()
