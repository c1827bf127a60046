#!/usr/bin/env python3
"""Writes a .npy file of random float32 values with the given shape."""

import argparse

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("shape", help="e.g. 1x1x28x28")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    shape = [int(d) for d in args.shape.split("x")]
    values = np.random.default_rng(0).standard_normal(shape).astype(args.dtype)
    np.save(args.output, values)


if __name__ == "__main__":
    main()
