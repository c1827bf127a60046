#!/usr/bin/env python3
"""Writes a damaged copy of a file: truncated, or with one bit flipped."""

import argparse


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source")
    parser.add_argument("-o", "--output", required=True)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--truncate", type=int, help="keep this many bytes")
    group.add_argument("--flip-bit", type=int,
                       help="flip this bit (byte * 8 + bit); negative counts from the end")
    args = parser.parse_args()
    data = bytearray(open(args.source, "rb").read())
    if args.truncate is not None:
        data = data[:args.truncate]
    else:
        bit = args.flip_bit % (len(data) * 8)
        data[bit // 8] ^= 1 << (bit % 8)
    open(args.output, "wb").write(data)


if __name__ == "__main__":
    main()
