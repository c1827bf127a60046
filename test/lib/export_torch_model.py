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


class Encoder(torch.nn.Module):
    """A BERT-style encoder: token and position embeddings, LayerNorm, then
    post-norm transformer layers (multi-head attention, GELU feed-forward)."""

    def __init__(self, vocabulary=1000, sequence=128, width=256, heads=4, layers=2):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocabulary, width)
        self.positions = torch.nn.Parameter(torch.randn(1, sequence, width) * 0.02)
        self.norm = torch.nn.LayerNorm(width)
        layer = torch.nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=4 * width, activation="gelu",
            batch_first=True, dropout=0.0)
        self.layers = torch.nn.TransformerEncoder(layer, layers)

    def forward(self, ids):
        # The first positions only, so that a model exported with a symbolic
        # sequence length runs at any length up to `sequence`.
        positions = self.positions[:, :ids.shape[1]]
        return self.layers(self.norm(self.tokens(ids) + positions))


class Decoder(torch.nn.Module):
    """A GPT-style block: token embeddings and learned positions looked up
    by torch.arange, causal multi-head attention (a mask buffer sliced to
    the length in both dimensions), a residual, LayerNorm and a vocabulary
    head."""

    def __init__(self, vocabulary=1000, sequence=128, width=64, heads=4):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocabulary, width)
        self.positions = torch.nn.Embedding(sequence, width)
        self.register_buffer(
            "causal", torch.triu(torch.full((sequence, sequence), float("-inf")), 1))
        self.attention = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocabulary)

    def forward(self, ids):
        length = ids.shape[1]
        x = self.tokens(ids) + self.positions(torch.arange(length))
        y, _ = self.attention(x, x, x, attn_mask=self.causal[:length, :length],
                              need_weights=False)
        return self.head(self.norm(x + y))


class TwoLayerRecurrence(torch.nn.Module):
    """Two stacked LSTM (or GRU) layers, input 64, hidden 128, and a linear
    read-out of the last step."""

    def __init__(self, cell=torch.nn.LSTM):
        super().__init__()
        self.recurrence = cell(64, 128, num_layers=2)
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        y, _ = self.recurrence(x)
        return self.head(y[-1])


class ScriptedLists(torch.nn.Module):
    """Python lists in scripted code, which the exporter writes as ONNX
    sequences: a recurrence whose steps a loop appends to a list, then
    stacked; the input split into chunks of 2 steps, their count, and each
    chunk's sum over its steps concatenated."""

    def __init__(self):
        super().__init__()
        self.step = torch.nn.Linear(8, 8)

    def forward(self, x):
        states = []
        h = torch.zeros(x.shape[0], 8)
        for t in range(x.shape[1]):
            h = torch.tanh(self.step(x[:, t]) + h)
            states.append(h)
        chunks = torch.split(x, 2, dim=1)
        sums = torch.cat([chunk.sum(dim=1, keepdim=True) for chunk in chunks], dim=1)
        return torch.stack(states, dim=1), len(chunks), sums


def calibrated(model):
    """Sets every BatchNorm's statistics from one random batch. With the
    default statistics EfficientNet's activations shrink layer by layer to
    ~1e-14 at the output, where any comparison passes; calibrated, they stay
    of order 1."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None  # a cumulative average: one batch's statistics
    model.train()
    with torch.no_grad():
        model(torch.randn(2, 3, 224, 224))
    return model


def vit(layers):
    """A ViT-S-style model (width 384, 6 heads); class-token features."""
    model = torchvision.models.VisionTransformer(
        image_size=224, patch_size=16, num_layers=layers, num_heads=6,
        hidden_dim=384, mlp_dim=1536)
    # torchvision zero-initializes the classifier, which would make every
    # output 0: compare the class-token features instead.
    model.heads = torch.nn.Identity()
    return model


MODELS = {
    # name: (constructor, input shape)
    "mlp": (MLP, (1, 1, 28, 28)),
    "resnet18": (lambda: torchvision.models.resnet18(), (1, 3, 224, 224)),
    "resnet50": (lambda: torchvision.models.resnet50(), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
    "efficientnet_b0": (lambda: calibrated(torchvision.models.efficientnet_b0()),
                        (1, 3, 224, 224)),
    "squeezenet": (lambda: torchvision.models.squeezenet1_1(), (1, 3, 224, 224)),
    # Tests: 4 layers, 2-layer encoder; benchmarks: ViT-S and BERT-base sizes.
    "vit_small": (lambda: vit(4), (1, 3, 224, 224)),
    "vit_s": (lambda: vit(12), (1, 3, 224, 224)),
    "encoder": (Encoder, (1, 128)),
    "decoder": (Decoder, (1, 128)),
    "bert_base": (lambda: Encoder(vocabulary=30522, width=768, heads=12, layers=12),
                  (1, 128)),
    # Tests: 16 steps; benchmarks: 32 steps. [sequence, batch, features].
    "lstm": (TwoLayerRecurrence, (16, 1, 64)),
    "lstm_seq32": (TwoLayerRecurrence, (32, 1, 64)),
    "gru_seq32": (lambda: TwoLayerRecurrence(torch.nn.GRU), (32, 1, 64)),
    # [batch, steps, features], exported from TorchScript.
    "scripted_lists": (ScriptedLists, (1, 5, 8)),
}

# Models exported from TorchScript (torch.jit.script) rather than traced:
# their Python control flow and lists become ONNX Loops and sequences.
SCRIPTED_MODELS = {"scripted_lists"}

RECURRENT_MODELS = {"lstm", "lstm_seq32", "gru_seq32"}

# Models whose input is token ids rather than floats.
INTEGER_INPUTS = {"encoder", "decoder", "bert_base"}
ATTENTION_MODELS = {"encoder", "decoder", "bert_base", "vit_small", "vit_s"}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dynamic-batch", action="store_true",
                        help="leave the batch dimension symbolic ('batch')")
    parser.add_argument("--dynamic-sequence", action="store_true",
                        help="leave the sequence dimension symbolic ('seq')")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    constructor, shape = MODELS[args.model]
    model = constructor().eval()
    if args.model in SCRIPTED_MODELS:
        model = torch.jit.script(model)
    if args.model in INTEGER_INPUTS:
        example = torch.randint(0, 4, (args.batch,) + tuple(shape[1:]))
    elif args.model in RECURRENT_MODELS:  # [sequence, batch, features]
        example = torch.randn((shape[0], args.batch) + tuple(shape[2:]))
    else:
        example = torch.randn((args.batch,) + tuple(shape[1:]))
    # Under no_grad, torch runs attention through fused kernels that the
    # exporter cannot express; with gradients on it traces the plain ops.
    context = torch.enable_grad() if args.model in ATTENTION_MODELS else torch.no_grad()
    with context:
        batch_axis = 1 if args.model in RECURRENT_MODELS else 0
        dynamic_axes = {"input": {}, "output": {}}
        if args.dynamic_batch:
            dynamic_axes["input"][batch_axis] = "batch"
            dynamic_axes["output"][0] = "batch"
        if args.dynamic_sequence:
            sequence_axis = 0 if args.model in RECURRENT_MODELS else 1
            dynamic_axes["input"][sequence_axis] = "seq"
        torch.onnx.export(model, example, args.output, opset_version=args.opset,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes=dynamic_axes if dynamic_axes["input"] else None)


if __name__ == "__main__":
    main()
