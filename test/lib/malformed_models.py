#!/usr/bin/env python3
"""Compiles malformed ONNX models and checks that each is refused cleanly.

Every case is a model (or a file that is not one) that is wrong in one way:
a node with the wrong number of inputs or outputs, a missing or mistyped
attribute, a stride of zero, a value produced twice, a dimension too large
for any tensor, a constant index out of range, external data that is a FIFO,
... For each, `tessel-compile` must exit with status 1 (not a signal, not a
hang), print the expected message, which names the node or value at fault,
and write no output file.

Arity cases are derived from ONNX's own operator schemas (onnx.defs), so
they follow each operator's signature at the opset used. A few valid models
that validation must not refuse, though they stretch ONNX's schemas as
exporters do, are checked with --check to compile (status 0).

Prints one line per case that does not behave as expected and a summary
"N cases: N refused cleanly, N valid accepted, N failed"; exits 1 if any
failed.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, defs, helper

OPSET = 17
VARIADIC = 2147483647
TIMEOUT_S = 60

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)


def model(nodes, inputs=(X,), outputs=(Y,), initializers=(), opset=OPSET, ir_version=8):
    graph = helper.make_graph(list(nodes), "malformed", list(inputs), list(outputs),
                              list(initializers))
    result = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    result.ir_version = ir_version
    return result


def node(op_type, inputs, outputs=("y",), name="n", **attributes):
    return helper.make_node(op_type, list(inputs), list(outputs), name=name, **attributes)


def weight(name, shape, data_type=TensorProto.FLOAT):
    count = 1
    for dim in shape:
        count *= dim
    if data_type == TensorProto.INT64:
        return helper.make_tensor(name, data_type, shape, [0] * count)
    return helper.make_tensor(name, data_type, shape, [0.5] * count)


class Case:
    """A model to compile and the message its refusal must contain (None:
    a valid model, which must be accepted)."""

    def __init__(self, name, expected, model=None, write=None, arguments=()):
        self.name = name
        self.expected = expected
        self.model = model
        self.write = write  # writes the input file itself: write(directory) -> path
        self.arguments = list(arguments)


def count_range(least, most):
    if least == most:
        return str(least)
    if most == VARIADIC:
        return f"at least {least}"
    return f"{least} to {most}"


def counted(count, noun):
    return f"{count} {noun}" + ("" if count == 1 else "s")


# Operators whose nodes get the arity cases, with attributes a well-formed
# node needs (so that only the count is wrong).
ARITY_OPS = {
    "Relu": {}, "Sigmoid": {}, "Tanh": {}, "Abs": {}, "Exp": {}, "Sqrt": {},
    "Flatten": {}, "Softmax": {}, "Transpose": {}, "Identity": {},
    "MaxPool": {"kernel_shape": [2, 2]}, "AveragePool": {"kernel_shape": [2, 2]},
    "GlobalAveragePool": {}, "Conv": {}, "ConvTranspose": {}, "Gemm": {}, "MatMul": {},
    "Add": {}, "Sub": {}, "Mul": {}, "Div": {}, "Pow": {}, "Where": {},
    "Gather": {}, "GatherElements": {}, "Reshape": {}, "Expand": {}, "Tile": {},
    "Concat": {"axis": 1}, "Split": {}, "Slice": {}, "Pad": {}, "Resize": {},
    "BatchNormalization": {}, "InstanceNormalization": {},
    "LayerNormalization": {}, "Clip": {}, "ReduceMean": {}, "ReduceSum": {},
    "Cast": {"to": TensorProto.FLOAT}, "Shape": {}, "Unsqueeze": {}, "Squeeze": {},
    "TopK": {}, "ArgMax": {}, "Einsum": {"equation": "ij->ij"},
    "LRN": {"size": 3}, "Range": {}, "NonZero": {}, "CumSum": {}, "Dropout": {},
}


def arity_cases():
    cases = []
    for op_type, attributes in ARITY_OPS.items():
        schema = defs.get_schema(op_type, OPSET)
        inputs = count_range(schema.min_input, schema.max_input)
        outputs = count_range(schema.min_output, schema.max_output)
        prefix = f"node 'n' ({op_type}, opset {OPSET}): "
        if schema.min_input > 0:
            count = schema.min_input - 1
            cases.append(Case(
                f"{op_type}-too-few-inputs",
                f"{prefix}has {counted(count, 'input')}; {op_type} takes {inputs}",
                model([node(op_type, ["x"] * count, **attributes)])))
        if schema.max_input != VARIADIC:
            count = schema.max_input + 1
            cases.append(Case(
                f"{op_type}-too-many-inputs",
                f"{prefix}has {counted(count, 'input')}; {op_type} takes {inputs}",
                model([node(op_type, ["x"] * count, **attributes)])))
        cases.append(Case(
            f"{op_type}-no-outputs", f"{prefix}has 0 outputs; {op_type} has {outputs}",
            model([node(op_type, ["x"] * max(schema.min_input, 1), [], **attributes)])))
        if schema.max_output != VARIADIC:
            count = schema.max_output + 1
            names = ["y"] + [f"extra{i}" for i in range(1, count)]
            cases.append(Case(
                f"{op_type}-too-many-outputs",
                f"{prefix}has {counted(count, 'output')}; {op_type} has {outputs}",
                model([node(op_type, ["x"] * max(schema.min_input, 1), names,
                            **attributes)])))
    return cases


def conv(name="n", weights="w", **attributes):
    return node("Conv", ["x", weights], name=name, **attributes)


W = weight("w", [4, 3, 3, 3])
CONV = "node 'n' (Conv, opset 17): "
POOL = "node 'n' (MaxPool, opset 17): "


def attribute_cases():
    def typed(name, attribute_type, value):
        attribute = helper.make_attribute(name, value)
        attribute.type = attribute_type
        return attribute

    wrong_type = node("Conv", ["x", "w"])
    wrong_type.attribute.append(helper.make_attribute("strides", 2))
    duplicate = node("Conv", ["x", "w"], strides=[1, 1])
    duplicate.attribute.append(helper.make_attribute("strides", [2, 2]))
    concat_float = node("Concat", ["x", "x"])
    concat_float.attribute.append(helper.make_attribute("axis", 1.0))
    cast_string = node("Cast", ["x"])
    cast_string.attribute.append(helper.make_attribute("to", "FLOAT"))
    mislabelled = node("Relu", ["x"])
    mislabelled.attribute.append(typed("alpha", onnx.AttributeProto.FLOAT, 1.0))

    return [
        Case("required-input-empty", f"{CONV}input 0 is required but has no name",
             model([node("Conv", ["", "w"])], initializers=[W])),
        Case("required-output-empty", "node 'n' (Relu, opset 17): output 0 is required but "
             "has no name", model([node("Relu", ["x"], [""])])),
        Case("unknown-attribute", "node 'n' (Relu, opset 17): attribute 'alpha' is not "
             "supported", model([mislabelled])),
        Case("removed-attribute", "node 'n' (Add, opset 17): attribute 'broadcast' is not "
             "supported",
             model([node("Add", ["x", "x"], broadcast=1)])),
        Case("attribute-twice", f"{CONV}attribute 'strides' is given twice",
             model([duplicate], initializers=[W])),
        Case("attribute-wrong-type-int", f"{CONV}attribute 'strides' is INT but must be INTS",
             model([wrong_type], initializers=[W])),
        Case("attribute-wrong-type-float", "node 'n' (Concat, opset 17): attribute 'axis' is "
             "FLOAT but must be INT", model([concat_float])),
        Case("attribute-wrong-type-string", "node 'n' (Cast, opset 17): attribute 'to' is "
             "STRING but must be INT", model([cast_string])),
        Case("missing-concat-axis", "node 'n' (Concat, opset 17): required attribute 'axis' "
             "is missing", model([node("Concat", ["x", "x"])])),
        Case("missing-cast-to", "node 'n' (Cast, opset 17): required attribute 'to' is "
             "missing", model([node("Cast", ["x"])])),
        Case("missing-lrn-size", "node 'n' (LRN, opset 17): required attribute 'size' is "
             "missing", model([node("LRN", ["x"])])),
        Case("missing-pool-kernel", f"{POOL}required attribute 'kernel_shape' is missing",
             model([node("MaxPool", ["x"])])),
        Case("missing-einsum-equation", "node 'n' (Einsum, opset 17): required attribute "
             "'equation' is missing", model([node("Einsum", ["x"])])),
        Case("missing-depth-to-space-blocksize", "node 'n' (DepthToSpace, opset 17): "
             "required attribute 'blocksize' is missing", model([node("DepthToSpace", ["x"])])),
        Case("missing-unsqueeze-axes-opset-11", "node 'n' (Unsqueeze, opset 11): required "
             "attribute 'axes' is missing", model([node("Unsqueeze", ["x"])], opset=11)),
    ]


def type_cases():
    def typed(name, data_type, shape=(2, 2)):
        return helper.make_tensor_value_info(name, data_type, list(shape))

    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    one_type = "needs them to be of one type"
    return [
        Case("matmul-integer-float", "node 'n' (MatMulInteger, opset 17): input 0 ('a') is "
             "FLOAT, which MatMulInteger does not take there (it takes UINT8, INT8)",
             model([node("MatMulInteger", ["a", "b"])],
                   inputs=[typed("a", f32), typed("b", TensorProto.INT8)])),
        Case("gather-float-indices", "node 'n' (Gather, opset 17): input 1 ('i') is FLOAT, "
             "which Gather does not take there (it takes INT32, INT64)",
             model([node("Gather", ["x", "i"])], inputs=[typed("x", f32), typed("i", f32)])),
        Case("relu-bool", "node 'n' (Relu, opset 17): input 0 ('x') is BOOL, which Relu does "
             "not take there", model([node("Relu", ["x"])],
                                     inputs=[typed("x", TensorProto.BOOL)])),
        Case("where-float-condition", "node 'n' (Where, opset 17): input 0 ('c') is FLOAT, "
             "which Where does not take there (it takes BOOL)",
             model([node("Where", ["c", "x", "x"])], inputs=[typed("c", f32), typed("x", f32)])),
        Case("reshape-float-shape", "node 'n' (Reshape, opset 17): input 1 ('s') is FLOAT, "
             "which Reshape does not take there (it takes INT64)",
             model([node("Reshape", ["x", "s"])],
                   inputs=[typed("x", f32), typed("s", f32, [2])])),
        Case("prelu-mixed", f"node 'n' (PRelu, opset 17): input 1 ('s') is INT64 but input 0 "
             f"('x') is FLOAT; PRelu {one_type}",
             model([node("PRelu", ["x", "s"])], inputs=[typed("x", f32), typed("s", i64)])),
        Case("add-mixed", f"node 'n' (Add, opset 17): input 1 ('b') is INT64 but input 0 ('a') "
             f"is FLOAT; Add {one_type}",
             model([node("Add", ["a", "b"])], inputs=[typed("a", f32), typed("b", i64)])),
        Case("conv-int64-weights", f"node 'n' (Conv, opset 17): input 1 ('w') is INT64, which "
             "Conv does not take there",
             model([node("Conv", ["x", "w"])], initializers=[weight("w", [4, 3, 3, 3], i64)])),
        Case("stft-bool-signal", "node 'n' (STFT, opset 17): input 0 ('s') is BOOL, which STFT "
             "does not take there",
             model([node("STFT", ["s", "step"])],
                   inputs=[typed("s", TensorProto.BOOL, [1, 16, 1])],
                   initializers=[helper.make_tensor("step", i64, [], [4])])),
        Case("prelu-slope-wider", "node 'n' (PRelu, opset 17): operand shapes [2] and [2, 3] do "
             "not broadcast", model([node("PRelu", ["x", "s"])],
                                    inputs=[typed("x", f32, [2]), typed("s", f32, [2, 3])])),
        Case("layer-norm-scale-apart", "node 'n' (LayerNormalization, opset 17): operand shapes "
             "[1, 1, 2] and [5, 2, 1, 3] do not broadcast",
             model([node("LayerNormalization", ["x", "s", "b"], axis=1)],
                   inputs=[typed("x", f32, [1, 1, 2]), typed("s", f32, [5, 2, 1, 3]),
                           typed("b", f32, [5, 1])])),
        Case("concat-mixed", f"node 'n' (Concat, opset 17): input 2 ('c') is INT64 but input 0 "
             f"('a') is FLOAT; Concat {one_type}",
             model([node("Concat", ["a", "b", "c"], axis=0)],
                   inputs=[typed("a", f32), typed("b", f32), typed("c", i64)])),
    ]


def split_cases():
    split = lambda name, **attributes: node("Split", ["x"] + (["s"] if "sizes" in name else []),
                                             ["y", "z"], **attributes)
    outputs = [Y, helper.make_tensor_value_info("z", TensorProto.FLOAT, None)]
    sizes = helper.make_tensor("s", TensorProto.INT64, [2], [4, -1])
    return [
        Case("split-num-outputs-zero", "node 'n' (Split, opset 18): num_outputs is 0; it must "
             "be at least 1", model([split("parts", axis=1, num_outputs=0)], outputs=outputs,
                                    opset=18)),
        Case("split-negative-size", "node 'n' (Split, opset 17): a split size is negative",
             model([split("sizes", axis=1)], outputs=outputs, initializers=[sizes])),
    ]


def window_cases():
    cases = []
    bad = {
        "strides-zero": ({"strides": [0, 0]}, "attribute 'strides' [0, 0] must be at least 1 "
                         "on every axis"),
        "strides-negative": ({"strides": [1, -2]}, "attribute 'strides' [1, -2] must be at "
                             "least 1 on every axis"),
        "dilations-zero": ({"dilations": [0, 1]}, "attribute 'dilations' [0, 1] must be at "
                           "least 1 on every axis"),
        "kernel-zero": ({"kernel_shape": [0, 3]}, "attribute 'kernel_shape' [0, 3] must be at "
                        "least 1 on every axis"),
        "pads-negative": ({"pads": [0, -1, 0, 0]}, "attribute 'pads' [0, -1, 0, 0] must not be "
                          "negative"),
        "pads-odd": ({"pads": [1, 1, 1]}, "attribute 'pads' [1, 1, 1] must hold a begin and an "
                     "end per spatial axis"),
        "strides-rank": ({"strides": [1, 1, 1], "kernel_shape": [3, 3]},
                         "attribute 'strides' [1, 1, 1] is for 3 spatial axes but "
                         "'kernel_shape' is for 2"),
        "pads-rank": ({"kernel_shape": [3, 3], "pads": [1, 1]},
                      "attribute 'pads' [1, 1] is for 1 spatial axes but 'kernel_shape' is "
                      "for 2"),
    }
    for op_type in ("Conv", "MaxPool", "AveragePool", "LpPool", "ConvTranspose"):
        for what, (attributes, message) in bad.items():
            attributes = dict(attributes)
            if op_type in ("MaxPool", "AveragePool", "LpPool"):
                attributes.setdefault("kernel_shape", [2, 2])
                inputs = ["x"]
            else:
                inputs = ["x", "w"]
            # Opset 19: every pool has dilations.
            cases.append(Case(f"{op_type}-{what}", f"node 'n' ({op_type}, opset 19): {message}",
                              model([node(op_type, inputs, **attributes)], initializers=[W],
                                    opset=19)))
    cases.append(Case("conv-group-zero", f"{CONV}attribute 'group' is 0; it must be at least 1",
                      model([conv(group=0)], initializers=[W])))
    cases.append(Case("conv-group-negative", f"{CONV}attribute 'group' is -3; it must be at "
                      "least 1", model([conv(group=-3)], initializers=[W])))
    return cases


def graph_cases():
    relu = lambda name, source, target: node("Relu", [source], [target], name=name)
    x = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 2])
    return [
        Case("two-producers", "node 'b' (Sigmoid, opset 17): output 'y' is already produced "
             "by node 'a'", model([relu("a", "x", "y"), node("Sigmoid", ["x"], name="b")])),
        Case("node-redefines-input", "node 'a' (Relu, opset 17): output 'x' is already "
             "produced by graph input 'x'", model([relu("a", "x", "x")], outputs=[x("x")])),
        Case("node-redefines-initializer", "node 'a' (Relu, opset 17): output 'w' is already "
             "produced by initializer 'w'",
             model([relu("a", "x", "w"), node("Conv", ["x", "w"], name="c")],
                   initializers=[W])),
        Case("node-lists-output-twice", "node 'a' (Split, opset 17): output 'y' is already "
             "produced by node 'a'", model([node("Split", ["x"], ["y", "y"], name="a")])),
        Case("input-listed-twice", "graph input 'x' is listed twice",
             model([node("Add", ["x", "x"])], inputs=[X, X])),
        Case("output-listed-twice", "graph output 'y' is listed twice",
             model([node("Relu", ["x"])], outputs=[Y, Y])),
        Case("input-without-name", "graph input 1 has no name",
             model([node("Relu", ["x"])], inputs=[X, x("")])),
        Case("output-without-name", "graph output 1 has no name",
             model([node("Relu", ["x"])], outputs=[Y, x("")])),
        Case("input-name-with-nul", "graph input 0's name contains a NUL byte",
             model([node("Relu", ["x\0y"])], inputs=[x("x\0y")])),
        Case("output-name-with-nul", "graph output 0's name contains a NUL byte",
             model([node("Relu", ["x"], ["y\0z"])], outputs=[x("y\0z")])),
        Case("initializer-twice", "initializer 'w' is defined twice",
             model([conv()], initializers=[W, W])),
        Case("output-not-produced", "graph output 'z' is not produced by any node, input or "
             "initializer", model([node("Relu", ["x"])], outputs=[Y, x("z")])),
        Case("input-not-produced", "node 'n' (Relu, opset 17): input 'nowhere' is not produced "
             "by any earlier node, input or initializer", model([node("Relu", ["nowhere"])])),
        Case("cycle", "node 'a' (Relu, opset 17): input 'b_out' is not produced by any earlier "
             "node, input or initializer",
             model([relu("a", "b_out", "a_out"), relu("b", "a_out", "b_out"),
                    relu("c", "x", "y")])),
        # Found by flipping a bit of LeNet's file: libonnx's shape inference,
        # typing the refused Conv's output for the Relu after it, crashed.
        Case("conv-image-rank-3", "node 'conv' (Conv, opset 17): input and weight must have the "
             "same rank, at least 3",
             model([node("Conv", ["x", "w"], ["c"], name="conv"), relu("relu", "c", "y")],
                   inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 28])],
                   initializers=[weight("w", [6, 1, 5, 5])])),
        Case("out-of-order", "node 'late' (Relu, opset 17): input 't' is not produced by any "
             "earlier node, input or initializer",
             model([relu("late", "t", "y"), relu("early", "x", "t")])),
        Case("opset-too-new", "the model imports ONNX opset 99; the newest this compiler knows "
             "is", model([node("Relu", ["x"])], opset=99)),
        Case("no-default-opset", "the model imports no version of the default ONNX operator "
             "set", no_default_opset()),
        Case("unknown-domain", "node 'n' (Gelu, com.example opset 1): operator domain 'com.example' is "
             "not supported", with_domain(model([node("Relu", ["x"])]))),
        Case("unknown-operator", "node 'n' (NoSuchOp, opset 17): operator NoSuchOp is not",
             model([node("NoSuchOp", ["x"])])),
    ]


def no_default_opset():
    result = model([node("Relu", ["x"])])
    del result.opset_import[:]
    result.opset_import.append(helper.make_opsetid("com.example", 1))
    return result


def with_domain(result):
    result.graph.node[0].op_type = "Gelu"
    result.graph.node[0].domain = "com.example"
    result.opset_import.append(helper.make_opsetid("com.example", 1))
    return result


def size_cases():
    def tensor_input(shape, data_type=TensorProto.FLOAT):
        return helper.make_tensor_value_info("x", data_type, shape)

    int64 = lambda name, values, shape=(): helper.make_tensor(name, TensorProto.INT64,
                                                              list(shape), values)
    too_big = "would take more than the 1 TiB one tensor may"
    return [
        Case("input-dim-2^63-1", f"graph input 'x' of shape [9223372036854775807] {too_big}",
             model([node("Relu", ["x"])], inputs=[tensor_input([2**63 - 1])])),
        Case("input-elements-overflow", "graph input 'x' of shape [4294967296, 4294967296, "
             f"4294967296] {too_big}",
             model([node("Relu", ["x"])], inputs=[tensor_input([2**32, 2**32, 2**32])])),
        Case("input-2-TiB", f"graph input 'x' of shape [536870912, 1024] {too_big}",
             model([node("Relu", ["x"])], inputs=[tensor_input([2**29, 2**10])])),
        Case("input-negative-dim", "graph input 'x' has a negative dimension (-4)",
             model([node("Relu", ["x"])], inputs=[tensor_input([2, -4])])),
        Case("range-2^40", "node 'n' (Range, opset 17): it would compute 1099511627776 range "
             "elements at compile time; the limit is 16777216",
             model([node("Range", ["s", "l", "d"])],
                   initializers=[int64("s", [0]), int64("l", [2**40]), int64("d", [1])])),
        Case("range-tiny-step", "node 'n' (Range, opset 17): it would compute over 10^18 range "
             "elements",
             model([node("Range", ["s", "l", "d"])],
                   initializers=[helper.make_tensor("s", TensorProto.FLOAT, [], [0.0]),
                                 helper.make_tensor("l", TensorProto.FLOAT, [], [1.0]),
                                 helper.make_tensor("d", TensorProto.FLOAT, [], [1e-30])])),
        Case("constant-of-shape-huge", f"node 'n' (ConstantOfShape, opset 17): a result of "
             "shape [1048576, 1048576, 1048576] would take more than the 1 TiB",
             model([node("ConstantOfShape", ["s"])],
                   initializers=[int64("s", [2**20] * 3, [3])])),
        Case("expand-huge", "node 'n' (Expand, opset 17): a result of shape "
             "[1099511627776, 1, 3, 8, 8] would take more than the 1 TiB",
             model([node("Expand", ["x", "s"])],
                   initializers=[int64("s", [2**40, 1, 3, 8, 8], [5])])),
        # The shape named is Tile's broadcast form: [4294967296, 1, 1, 3, ...].
        Case("tile-huge", "node 'n' (Tile, opset 17): a result of shape [4294967296, ",
             model([node("Tile", ["x", "r"])],
                   initializers=[int64("r", [2**32, 1, 1, 1], [4])])),
    ]


def index_cases():
    int64 = lambda name, values, shape: helper.make_tensor(name, TensorProto.INT64, shape, values)
    out_of_range = "is out of range for an axis of size"
    data = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])
    return [
        Case("gather-index-high", f"node 'n' (Gather, opset 17): index 4 (entry 1 of the "
             f"constant indices) {out_of_range} 4",
             model([node("Gather", ["x", "i"])], inputs=[data],
                   initializers=[int64("i", [0, 4], [2])])),
        Case("gather-index-low", f"node 'n' (Gather, opset 17): index -5 (entry 0 of the "
             f"constant indices) {out_of_range} 4",
             model([node("Gather", ["x", "i"])], inputs=[data],
                   initializers=[int64("i", [-5], [1])])),
        Case("gather-axis-1-index", f"node 'n' (Gather, opset 17): index 3 (entry 2 of the "
             f"constant indices) {out_of_range} 3",
             model([node("Gather", ["x", "i"], axis=1)], inputs=[data],
                   initializers=[int64("i", [0, 2, 3], [3])])),
        Case("gather-elements-index", f"node 'n' (GatherElements, opset 17): index 9 (entry 3 "
             f"of the constant indices) {out_of_range} 4",
             model([node("GatherElements", ["x", "i"])], inputs=[data],
                   initializers=[int64("i", [0, 1, 2, 9, 0, 0], [2, 3])])),
        Case("gather-nd-index", f"node 'n' (GatherND, opset 17): index 3 (entry 1 of the "
             f"constant indices) {out_of_range} 3",
             model([node("GatherND", ["x", "i"])], inputs=[data],
                   initializers=[int64("i", [1, 3], [1, 2])])),
        Case("scatter-elements-index", f"node 'n' (ScatterElements, opset 17): index 7 (entry 0 "
             f"of the constant indices) {out_of_range} 4",
             model([node("ScatterElements", ["x", "i", "u"])], inputs=[data],
                   initializers=[int64("i", [7, 0, 0], [1, 3]),
                                 helper.make_tensor("u", TensorProto.FLOAT, [1, 3], [1] * 3)])),
        Case("scatter-nd-index", f"node 'n' (ScatterND, opset 17): index -5 (entry 0 of the "
             f"constant indices) {out_of_range} 4",
             model([node("ScatterND", ["x", "i", "u"])], inputs=[data],
                   initializers=[int64("i", [-5], [1, 1]),
                                 helper.make_tensor("u", TensorProto.FLOAT, [1, 3], [1] * 3)])),
    ]


def raw_tensor(name, dims, values=()):
    """A float tensor as written, whether or not its data fits its dims."""
    return TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims, float_data=values)


def external(location, offset=None, length=None):
    tensor = raw_tensor("w", [4, 3, 3, 3])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = tensor.external_data.add()
            entry.key, entry.value = key, str(value)
    return model([conv()], initializers=[tensor])


def file_cases():
    def writer(content, name="model.onnx"):
        def write(directory):
            path = directory / name
            path.write_bytes(content(directory) if callable(content) else content)
            return path
        return write

    def fifo(directory):
        os.mkfifo(directory / "weights.bin")
        return external("weights.bin").SerializeToString()

    def short_file(directory):
        (directory / "weights.bin").write_bytes(b"\0" * 16)
        return external("weights.bin", length=432).SerializeToString()

    def directory_location(directory):
        (directory / "weights").mkdir()
        return external("weights").SerializeToString()

    lenet = Path(__file__).resolve().parents[2] / "examples/lenet/model.onnx"
    wrong_size = raw_tensor("w", [4, 3, 3, 3], [0.5] * 7)
    negative = raw_tensor("w", [4, -3, 3, 3])
    return [
        Case("not-protobuf", "not an ONNX model (the protobuf does not parse)",
             write=writer(b"\xff\xff\xff not a model")),
        Case("empty-file", "not an ONNX model (the protobuf does not parse)", write=writer(b"")),
        Case("truncated-lenet", "not an ONNX model (the protobuf does not parse)",
             write=writer(lenet.read_bytes()[:1000])),
        Case("no-graph", "the model has no graph",
             write=writer(onnx.ModelProto(ir_version=8).SerializeToString())),
        Case("external-fifo", "tensor 'w': external data location 'weights.bin' is not a "
             "regular file", write=writer(fifo)),
        Case("external-directory", "tensor 'w': external data location 'weights' is not a "
             "regular file", write=writer(directory_location)),
        Case("external-outside", "tensor 'w': external data location '../outside.bin' leaves "
             "the model's directory",
             write=writer(lambda d: ((d.parent / "outside.bin").write_bytes(b"\0" * 432),
                                     external("../outside.bin").SerializeToString())[1])),
        Case("external-absolute", "tensor 'w': external data location '/etc/passwd' is "
             "absolute", model=external("/etc/passwd")),
        Case("external-missing", "tensor 'w': external data file 'absent.bin' cannot be opened",
             model=external("absent.bin")),
        Case("external-range", "tensor 'w': external data range [0, 432) exceeds file "
             "'weights.bin' of 16 bytes", write=writer(short_file)),
        Case("external-offset-text", "tensor 'w': external data offset 'ten' is not a number",
             model=external("weights.bin", offset="ten")),
        Case("initializer-wrong-size", "tensor 'w': holds 28 bytes of data but its shape needs "
             "432", model([conv()], initializers=[wrong_size])),
        Case("initializer-negative-dim", "tensor 'w': negative dimension -3",
             model([conv()], initializers=[negative])),
    ]


def budget_cases():
    int64 = lambda name, values, shape: helper.make_tensor(name, TensorProto.INT64, shape, values)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    limit = "at compile time; the limit is"
    return [
        Case("depth-to-space-block-2^32", "node 'n' (DepthToSpace, opset 17): channels are not a "
             "multiple of blocksize^2",
             model([node("DepthToSpace", ["x"], blocksize=2**32)], inputs=[x])),
        Case("hann-window-2^30", f"node 'n' (HannWindow, opset 17): it would compute 1073741824 "
             f"window elements {limit} 16777216",
             model([node("HannWindow", ["s"])], inputs=[],
                   initializers=[int64("s", [2**30], [])])),
        Case("resize-sizes-2^28", "node 'n' (Resize, opset 17): it would compute 268435456 "
             f"resized positions on axis 2 {limit} 16777216",
             model([node("Resize", ["x", "", "", "s"])], inputs=[x],
                   initializers=[int64("s", [1, 4, 2**28, 8], [4])])),
        Case("eye-like-65536^2", "node 'n' (EyeLike, opset 17): it would compute 4294967296 "
             f"matrix elements {limit} 16777216",
             model([node("EyeLike", ["e"])],
                   inputs=[helper.make_tensor_value_info("e", TensorProto.FLOAT,
                                                         [65536, 65536])])),
        Case("one-hot-depth-2^30", "node 'n' (OneHot, opset 17): it would compute 1073741824 "
             f"one-hot positions {limit} 16777216",
             model([node("OneHot", ["i", "d", "v"])],
                   inputs=[helper.make_tensor_value_info("i", TensorProto.INT64, [4])],
                   initializers=[int64("d", [2**30], []),
                                 helper.make_tensor("v", TensorProto.FLOAT, [2], [0, 1])])),
        # States of two types keep a Scan from being one loop: it unrolls.
        Case("scan-2^26-steps", "node 'n' (Scan, opset 17): a Scan of 67108864 steps is longer "
             "than the 16384 it unrolls",
             model([node("Scan", ["s", "c", "q"], ["y", "z"], num_scan_inputs=1,
                         body=helper.make_graph(
                             [node("Add", ["s_in", "x"], ["s_out"], name="add"),
                              node("Identity", ["c_in"], ["c_out"], name="keep")], "body",
                             [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [1]),
                              helper.make_tensor_value_info("c_in", TensorProto.FLOAT, [2]),
                              helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1]),
                              helper.make_tensor_value_info("c_out", TensorProto.FLOAT, [2])]))],
                   inputs=[helper.make_tensor_value_info("s", TensorProto.FLOAT, [1]),
                           helper.make_tensor_value_info("c", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("q", TensorProto.FLOAT, [2**26, 1])],
                   outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [1]),
                            helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])),
    ]


def untyped_attributes(result):
    """`result` with its attributes' type fields cleared, as old producers
    wrote them: the value's field says the type."""
    for each in result.graph.node:
        for attribute in each.attribute:
            attribute.type = onnx.AttributeProto.UNDEFINED
    return result


def valid_cases():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    statistics = [helper.make_tensor(name, TensorProto.FLOAT, [4], [1.0] * 4) for name in "sbmv"]
    return [
        # Resize-11's text lets scales be omitted, though its schema says required.
        Case("resize-11-without-scales", None,
             model([node("Resize", ["x", "roi", "", "sizes"])], inputs=[x],
                   initializers=[helper.make_tensor("roi", TensorProto.FLOAT, [0], []),
                                 helper.make_tensor("sizes", TensorProto.INT64, [4],
                                                    [1, 4, 16, 16])], opset=11)),
        # Attributes older opsets had, which exporters still write.
        Case("dropout-13-with-ratio", None,
             model([node("Dropout", ["x"], ratio=0.5)], inputs=[x], opset=13)),
        Case("dropout-9-with-is-test", None,
             model([node("Dropout", ["x"], is_test=1)], inputs=[x], opset=9)),
        Case("untyped-attributes", None,
             untyped_attributes(model([node("MaxPool", ["x"], kernel_shape=[2, 2],
                                            strides=[2, 2], auto_pad="VALID")], inputs=[x]))),
        Case("batch-norm-9-with-is-test", None,
             model([node("BatchNormalization", ["x", "s", "b", "m", "v"], is_test=1)],
                   inputs=[x], initializers=statistics, opset=9)),
    ]


def sequence_cases():
    vector = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])
    sequence = lambda name: helper.make_tensor_sequence_value_info(name, TensorProto.FLOAT, None)
    pair = node("SequenceConstruct", ["x", "z"], ["s"], name="pair")
    tensor_branch = helper.make_graph([node("Identity", ["x"], ["b"], name="b")], "tensor", [],
                                      [vector("b")])
    sequence_branch = helper.make_graph([node("SequenceConstruct", ["x"], ["a"], name="a")],
                                        "sequence", [], [sequence("a")])
    flag = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    return [
        Case("sequence-into-sequence", "node 'n' (SequenceInsert, opset 17): input 1 ('s') must "
             "be a tensor, but it is a sequence of 2 tensors",
             model([pair, node("SequenceInsert", ["s", "s"], ["t"])],
                   inputs=[vector("x"), vector("z")], outputs=[sequence("t")])),
        Case("stack-of-two-shapes", "node 'n' (ConcatFromSequence, opset 17): with new_axis the "
             "sequence's tensors must have one shape",
             model([pair, node("ConcatFromSequence", ["s"], axis=0, new_axis=1)],
                   inputs=[vector("x"), helper.make_tensor_value_info("z", TensorProto.FLOAT,
                                                                      [3])])),
        Case("erase-from-empty", "node 'n' (SequenceErase, opset 17): the sequence is empty: "
             "there is nothing to erase",
             model([node("SequenceEmpty", [], ["e"], name="e"), node("SequenceErase", ["e"])],
                   inputs=[vector("x")], outputs=[sequence("y")])),
        Case("empty-optional-element", "node 'n' (OptionalGetElement, opset 17): the optional "
             "holds no element",
             model([node("Optional", [], ["o"], name="o",
                         type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2])),
                    node("OptionalGetElement", ["o"])], inputs=[vector("x")])),
        Case("if-of-sequence-or-tensor", "node 'n' (If, opset 17): the condition is known only "
             "at run time and the branches give output 'y' different types (a sequence of 1 "
             "tensor and a tensor)",
             model([node("If", ["c"], then_branch=sequence_branch, else_branch=tensor_branch)],
                   inputs=[flag, vector("x")])),
        Case("sequence-declared-tensor", "graph output 'y' is a sequence of 1 tensor, but the "
             "model declares it a tensor",
             model([node("SequenceConstruct", ["x"])], inputs=[vector("x")],
                   outputs=[vector("y")])),
    ]


def all_cases():
    return (arity_cases() + attribute_cases() + type_cases() + split_cases() + window_cases()
            + graph_cases() + size_cases() + index_cases() + sequence_cases() + file_cases()
            + budget_cases() + valid_cases())


def run_case(case, tools, work):
    directory = work / case.name
    directory.mkdir(parents=True)
    if case.write:
        path = case.write(directory)
    else:
        path = directory / "model.onnx"
        path.write_bytes(case.model.SerializeToString())
    artifact = directory / "model.tsl"
    command = [str(tools / "tessel-compile"), str(path), "-q", *case.arguments]
    command += ["--check"] if case.expected is None else ["-o", str(artifact)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S,
                                errors="replace")
    except subprocess.TimeoutExpired:
        return f"hung (no exit within {TIMEOUT_S} s)"
    if case.expected is None:
        if result.returncode == 0:
            return None
        shown = (result.stderr + result.stdout).strip().replace("\n", " | ")[:400]
        return f"a valid model was not accepted (status {result.returncode}: {shown})"
    problems = []
    if result.returncode != 1:
        status = (f"signal {-result.returncode}" if result.returncode < 0
                  else f"status {result.returncode}")
        problems.append(f"ended with {status}, not 1")
    if case.expected not in result.stderr:
        problems.append(f"message lacks '{case.expected}'")
    if artifact.exists():
        problems.append("wrote an output file")
    if problems:
        shown = result.stderr.strip().replace("\n", " | ")[:400]
        return "; ".join(problems) + f" (stderr: {shown})"
    return None


def main():
    arguments = argparse.ArgumentParser(description=__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_argument("--work", required=True, type=Path,
                           help="an empty or absent folder for the cases' files")
    arguments.add_argument("--tools", type=Path,
                           help="folder holding tessel-compile (default: found on PATH)")
    arguments.add_argument("--jobs", type=int, default=2)
    args = arguments.parse_args()
    tools = args.tools
    if tools is None:
        found = subprocess.run(["which", "tessel-compile"], capture_output=True, text=True)
        tools = Path(found.stdout.strip()).parent
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    cases = all_cases()
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(lambda case: run_case(case, tools, work), cases))
    failed = 0
    for case, outcome in zip(cases, outcomes):
        if outcome:
            failed += 1
            print(f"FAILED {case.name}: {outcome}")
    accepted = sum(case.expected is None and not outcome
                   for case, outcome in zip(cases, outcomes))
    refused = len(cases) - accepted - failed
    print(f"{len(cases)} cases: {refused} refused cleanly, {accepted} valid accepted, "
          f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
