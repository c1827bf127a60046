#!/usr/bin/env python3
"""Writes a .npy file of random float32 values with the given shape, or
(--raw-header) a version 1.0 .npy file whose header is the given text,
followed by no data: malformed files for the readers' tests."""

import argparse

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("shape", nargs="?", help="e.g. 1x1x28x28")
    parser.add_argument("--raw-header", help="the header text, written as it is")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    if args.raw_header is not None:
        header = args.raw_header.encode()
        with open(args.output, "wb") as output:
            output.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
        return
    shape = [int(d) for d in args.shape.split("x")]
    values = np.random.default_rng(0).standard_normal(shape).astype(args.dtype)
    np.save(args.output, values)


if __name__ == "__main__":
    main()
