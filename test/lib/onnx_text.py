#!/usr/bin/env python3
"""Writes an ONNX model from ONNX's textual syntax (onnx.parser).

Importer tests are written in that syntax, which allows '#' comments, so a
test file holds its RUN and CHECK lines next to the model they check.
"""

import argparse

import onnx
from onnx import parser


def main():
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("source")
    arguments.add_argument("-o", "--output", required=True)
    args = arguments.parse_args()
    with open(args.source) as source:
        model = parser.parse_model(source.read())
    onnx.save(model, args.output)


if __name__ == "__main__":
    main()
