#!/usr/bin/env python3
"""Trains a small CNN on scikit-learn's handwritten digits and measures how
Tessel's post-training quantization changes its test accuracy.

Three steps, for the two Pythons the test suite has:
  data DIR      (the project's venv, which has scikit-learn) splits the
                1,797 8x8 digits with a fixed seed into 1,437 for training
                and 360 for testing, and writes the calibration inputs:
                32 batches of training images, stacked in calibration/input.npy
  train DIR     (Debian's Python, which has torch) trains the CNN on the
                training split with fixed seeds and exports DIR/model.onnx
  accuracy DIR  (the venv) runs DIR/float.tsl and DIR/int8.tsl on the test
                split with tessel-run, prints both accuracies and their
                difference in points, and fails if INT8 loses more than
                --max-drop points or the float model is not trained

Every batch holds BATCH images, the batch the models are compiled for.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

BATCH = 40
CALIBRATION_BATCHES = 32


def write_data(directory):
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(images))
    test, train = order[:360], order[360:]
    np.save(os.path.join(directory, "train_images.npy"), images[train])
    np.save(os.path.join(directory, "train_labels.npy"), labels[train])
    np.save(os.path.join(directory, "test_images.npy"), images[test])
    np.save(os.path.join(directory, "test_labels.npy"), labels[test])
    calibration = os.path.join(directory, "calibration")
    os.makedirs(calibration, exist_ok=True)
    count = BATCH * CALIBRATION_BATCHES
    np.save(os.path.join(calibration, "input.npy"), images[train][:count])
    print(f"digits: {len(train)} training and {len(test)} test images")


def train(directory):
    import torch

    torch.manual_seed(0)
    images = torch.from_numpy(np.load(os.path.join(directory, "train_images.npy")))
    labels = torch.from_numpy(np.load(os.path.join(directory, "train_labels.npy")))
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(32 * 4 * 4, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for _ in range(30):
        order = torch.randperm(len(images))
        for start in range(0, len(images), 64):
            batch = order[start:start + 64]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(images[batch]), labels[batch])
            loss.backward()
            optimizer.step()
    model.eval()
    torch.onnx.export(model, torch.zeros(BATCH, 1, 8, 8),
                      os.path.join(directory, "model.onnx"), opset_version=17,
                      input_names=["input"], output_names=["logits"])
    print("digits: trained and exported model.onnx")


def predictions(artifact, images, directory, tools):
    """The class each test image is given by `artifact`, batch by batch."""
    work = os.path.join(directory, "batches")
    os.makedirs(work, exist_ok=True)
    classes = []
    for start in range(0, len(images), BATCH):
        batch = images[start:start + BATCH]
        filled = len(batch)
        batch = np.concatenate([batch, np.zeros((BATCH - filled,) + batch.shape[1:], batch.dtype)])
        path = os.path.join(work, "input.npy")
        np.save(path, batch)
        subprocess.run([os.path.join(tools, "tessel-run"), artifact, "--input", path,
                        "--output-dir", work], check=True, stdout=subprocess.DEVNULL)
        logits = np.load(os.path.join(work, "output_0.npy"))
        classes.append(logits.argmax(axis=1)[:filled])
    return np.concatenate(classes)


def accuracy(directory, tools, max_drop, min_float):
    images = np.load(os.path.join(directory, "test_images.npy"))
    labels = np.load(os.path.join(directory, "test_labels.npy"))
    result = {}
    for name in ("float", "int8"):
        predicted = predictions(os.path.join(directory, f"{name}.tsl"), images, directory, tools)
        result[name] = 100.0 * np.mean(predicted == labels)
        print(f"{name} accuracy: {result[name]:.2f}% of {len(labels)} test digits")
    drop = result["float"] - result["int8"]
    print(f"int8 - float: {-drop:+.2f} points")
    if result["float"] < min_float:
        print(f"FAIL: the float model is not trained (below {min_float}%)")
        return 1
    if drop > max_drop:
        print(f"FAIL: quantization costs more than {max_drop} points")
        return 1
    print(f"PASS: within {max_drop} points of float")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["data", "train", "accuracy"])
    parser.add_argument("directory")
    parser.add_argument("--tools", default="", help="folder of tessel-run (default: PATH)")
    parser.add_argument("--max-drop", type=float, default=0.5,
                        help="accuracy points INT8 may lose against float")
    parser.add_argument("--min-float", type=float, default=95.0,
                        help="float accuracy (%%) below which training failed")
    args = parser.parse_args()
    if args.step == "data":
        write_data(args.directory)
    elif args.step == "train":
        train(args.directory)
    else:
        tools = args.tools or os.path.dirname(shutil.which("tessel-run") or "")
        return accuracy(args.directory, tools, args.max_drop, args.min_float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
