#!/usr/bin/env python3
"""ONNX sequences and optionals inside models, against onnxruntime.

Each case builds a model (opset 17) whose tensors pass through sequences
or optionals: SplitToSequence and ConcatFromSequence, SequenceMap,
SequenceInsert/Erase/At/Length from SequenceEmpty, a Loop that appends to
a sequence each iteration (what exporters of scripted code write for a
list built in a loop), SequenceAt at a position given when the model runs,
an If of a run-time condition whose branches give sequences, optionals,
a graph input that is a sequence (compiled for the shapes of its tensors,
--sequence, each an input of the artifact) or an optional (compiled
holding its tensor, or with --absent holding nothing), and a graph output
that is a sequence (which the artifact gives as one
tensor per element, output_0, output_1, ...; its onnxruntime result, and
one a tensor short, are also written as ONNX test data, SequenceProto
files, for tessel-run --test-data; so is a sequence input a tensor
short). Each is compiled by
tessel-compile, run by tessel-run and compared with onnxruntime (rtol 1e-6,
atol 1e-6). The last cases are models the compiler must refuse, saved for
the lit test to compile.
"""

import argparse
import os

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from tessel_model_run import compile_model, differences, run_tessel

OPSET = 17
FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def value(name, shape, kind=FLOAT):
    return helper.make_tensor_value_info(name, kind, shape)


def sequence_value(name, kind=FLOAT):
    return helper.make_tensor_sequence_value_info(name, kind, None)


def model_of(name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def rng_array(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def split_map_stack():
    """x [6, 4] split into its 6 rows (keepdims 0), each row r mapped to
    tanh(2 r + b), the results stacked along a new axis 1: [4, 6]."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["row", "two"], ["doubled"]),
         helper.make_node("Add", ["doubled", "b_in"], ["shifted"]),
         helper.make_node("Tanh", ["shifted"], ["mapped"])],
        "map_body", [value("row", [4]), value("b_in", [4])], [value("mapped", [4])],
        [numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")])
    nodes = [helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
             helper.make_node("SequenceMap", ["rows", "b"], ["mapped_rows"], body=body),
             helper.make_node("ConcatFromSequence", ["mapped_rows"], ["y"], axis=1, new_axis=1)]
    model = model_of("split_map_stack", nodes, [value("x", [6, 4]), value("b", [4])],
                     [value("y", [4, 6])])
    return model, {"x": rng_array([6, 4], 1), "b": rng_array([4], 2)}, ["y"]


def insert_erase_at():
    """From an empty sequence: insert a, then b at the front, then c at the
    back, erase position 1 (a): [b, c]; give the tensor at -1 (c) plus 1,
    the length, and the tensors concatenated along axis 0."""
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=FLOAT),
             helper.make_node("SequenceInsert", ["empty", "a"], ["s1"]),
             helper.make_node("SequenceInsert", ["s1", "b", "zero"], ["s2"]),
             helper.make_node("SequenceInsert", ["s2", "c"], ["s3"]),
             helper.make_node("SequenceErase", ["s3", "one"], ["s4"]),
             helper.make_node("SequenceAt", ["s4", "minus_one"], ["last"]),
             helper.make_node("Add", ["last", "one_f"], ["last_plus_one"]),
             helper.make_node("SequenceLength", ["s4"], ["length"]),
             helper.make_node("ConcatFromSequence", ["s4"], ["joined"], axis=0)]
    inits = [ints("zero", 0), ints("one", 1), ints("minus_one", -1),
             numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one_f")]
    model = model_of("insert_erase_at", nodes,
                     [value("a", [2, 3]), value("b", [1, 3]), value("c", [4, 3])],
                     [value("last_plus_one", [4, 3]), value("length", [], INT64),
                      value("joined", [5, 3])], inits)
    feeds = {"a": rng_array([2, 3], 3), "b": rng_array([1, 3], 4), "c": rng_array([4, 3], 5)}
    return model, feeds, ["last_plus_one", "length", "joined"]


def loop_appends():
    """A Loop of 4 iterations carries a sequence, starting empty, and appends
    x * i + acc to it, acc being carried too: one tessel.scan, the sequence
    a scan output. After it the sequence is stacked along a new axis 1:
    [3, 4], and concatenated along axis 0: [12]."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["i_f"], to=FLOAT),
         helper.make_node("Mul", ["x", "i_f"], ["scaled"]),
         helper.make_node("Add", ["scaled", "acc_in"], ["acc_out"]),
         helper.make_node("SequenceInsert", ["seq_in", "acc_out"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "loop_body",
        [value("i", [], INT64), value("cond_in", [], BOOL), value("acc_in", [3]),
         sequence_value("seq_in")],
        [value("cond_out", [], BOOL), value("acc_out", [3]), sequence_value("seq_out")])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=FLOAT),
             helper.make_node("Loop", ["trips", "", "acc0", "empty"], ["acc", "seq"], body=body),
             helper.make_node("ConcatFromSequence", ["seq"], ["stacked"], axis=1, new_axis=1),
             helper.make_node("ConcatFromSequence", ["seq"], ["joined"], axis=0)]
    model = model_of("loop_appends", nodes, [value("x", [3]), value("acc0", [3])],
                     [value("acc", [3]), value("stacked", [3, 4]), value("joined", [12])],
                     [ints("trips", 4)])
    return model, {"x": rng_array([3], 6), "acc0": rng_array([3], 7)}, \
        ["acc", "stacked", "joined"]


def run_time_position():
    """SequenceAt at a position given as a graph input (-1 here), over the
    5 columns of x split apart."""
    nodes = [helper.make_node("SplitToSequence", ["x"], ["columns"], axis=1),
             helper.make_node("SequenceAt", ["columns", "position"], ["picked"])]
    model = model_of("run_time_position", nodes, [value("x", [3, 5]), value("position", [], INT64)],
                     [value("picked", [3, 1])])
    return model, {"x": rng_array([3, 5], 8), "position": np.array(-2, dtype=np.int64)}, ["picked"]


def if_of_sequences():
    """An If of a run-time condition whose branches give sequences of two
    tensors, concatenated after it."""
    def branch(name, first, second):
        return helper.make_graph(
            [helper.make_node(first, ["x"], [name + "_a"]),
             helper.make_node(second, ["x"], [name + "_b"]),
             helper.make_node("SequenceConstruct", [name + "_a", name + "_b"], [name + "_seq"])],
            name, [], [sequence_value(name + "_seq")])
    nodes = [helper.make_node("If", ["flag"], ["chosen"],
                              then_branch=branch("then", "Tanh", "Sigmoid"),
                              else_branch=branch("else", "Neg", "Abs")),
             helper.make_node("ConcatFromSequence", ["chosen"], ["y"], axis=1)]
    model = model_of("if_of_sequences", nodes, [value("flag", [], BOOL), value("x", [2, 3])],
                     [value("y", [2, 6])])
    return model, {"flag": np.array(False), "x": rng_array([2, 3], 9)}, ["y"]


def optionals():
    """Optional(x) holds x: OptionalHasElement is true, OptionalGetElement
    gives x, which is added to y only where the flag says so."""
    optional_type = helper.make_tensor_type_proto(FLOAT, [2, 2])
    nodes = [helper.make_node("Optional", ["x"], ["maybe_x"]),
             helper.make_node("Optional", [], ["nothing"], type=optional_type),
             helper.make_node("OptionalHasElement", ["maybe_x"], ["has_x"]),
             helper.make_node("OptionalHasElement", ["nothing"], ["has_nothing"]),
             helper.make_node("OptionalGetElement", ["maybe_x"], ["got_x"]),
             helper.make_node("Add", ["got_x", "y"], ["sum"])]
    model = model_of("optionals", nodes, [value("x", [2, 2]), value("y", [2, 2])],
                     [value("has_x", [], BOOL), value("has_nothing", [], BOOL),
                      value("sum", [2, 2])])
    return model, {"x": rng_array([2, 2], 10), "y": rng_array([2, 2], 11)}, \
        ["has_x", "has_nothing", "sum"]


def sequence_output():
    """The graph gives a sequence: x [5, 3] split into chunks of 2 rows
    (the last of 1), which the artifact gives as three tensors."""
    nodes = [helper.make_node("SplitToSequence", ["x", "two"], ["chunks"], axis=0)]
    model = model_of("sequence_output", nodes, [value("x", [5, 3])], [sequence_value("chunks")],
                     [ints("two", 2)])
    return model, {"x": rng_array([5, 3], 12)}, ["chunks"]


def sequence_input():
    """The graph takes a sequence of [N, 3] tensors, compiled for two of 2
    and 4 rows: x goes in front of them, and they are concatenated."""
    parts = helper.make_tensor_sequence_value_info("parts", FLOAT, ["N", 3])
    nodes = [helper.make_node("SequenceInsert", ["parts", "x", "zero"], ["all"]),
             helper.make_node("ConcatFromSequence", ["all"], ["joined"], axis=0),
             helper.make_node("SequenceLength", ["all"], ["length"])]
    model = model_of("sequence_input", nodes, [parts, value("x", [1, 3])],
                     [value("joined", [7, 3]), value("length", [], INT64)], [ints("zero", 0)])
    feeds = {"parts": [rng_array([2, 3], 13), rng_array([4, 3], 14)], "x": rng_array([1, 3], 15)}
    return model, feeds, ["joined", "length"], ["--sequence", "parts=2x3,4x3"]


def optional_model():
    """The graph takes an optional [2] tensor: y is it plus x where it holds
    one, else x."""
    maybe = helper.make_value_info("maybe", helper.make_optional_type_proto(
        helper.make_tensor_type_proto(FLOAT, [2])))
    then_branch = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["maybe"], ["got"]),
         helper.make_node("Add", ["got", "x"], ["sum"])],
        "then", [], [value("sum", [2])])
    else_branch = helper.make_graph([helper.make_node("Identity", ["x"], ["same"])], "else", [],
                                    [value("same", [2])])
    nodes = [helper.make_node("OptionalHasElement", ["maybe"], ["has"]),
             helper.make_node("If", ["has"], ["y"], then_branch=then_branch,
                              else_branch=else_branch)]
    return model_of("optional_input", nodes, [maybe, value("x", [2])],
                    [value("y", [2]), value("has", [], BOOL)])


def optional_input_present():
    """The optional input compiled holding its tensor (the default)."""
    feeds = {"maybe": rng_array([2], 16), "x": rng_array([2], 17)}
    return optional_model(), feeds, ["y", "has"], []


def optional_input_absent():
    """The optional input compiled holding nothing (--absent): the artifact
    takes x alone."""
    return optional_model(), {"maybe": None, "x": rng_array([2], 18)}, ["y", "has"], \
        ["--absent", "maybe"]


def sequence_into_add():
    """A sequence given to Add: refused, naming the input."""
    nodes = [helper.make_node("SequenceConstruct", ["x"], ["seq"]),
             helper.make_node("Add", ["seq", "x"], ["y"])]
    graph = helper.make_graph(nodes, "sequence_into_add", [value("x", [2])], [value("y", [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def position_out_of_range():
    """SequenceAt at position 3 of a sequence of 2 tensors: refused."""
    nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["seq"]),
             helper.make_node("SequenceAt", ["seq", "three"], ["y"])]
    graph = helper.make_graph(nodes, "position_out_of_range", [value("x", [2])],
                              [value("y", [2])], [ints("three", 3)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


CASES = [split_map_stack, insert_erase_at, loop_appends, run_time_position, if_of_sequences,
         optionals, sequence_output, sequence_input, optional_input_present,
         optional_input_absent]
REFUSED = [sequence_into_add, position_out_of_range]


def flatten(names, values):
    """Names and arrays with each sequence given as its tensors, in order."""
    flat_names, flat_values = [], []
    for name, got in zip(names, values):
        if isinstance(got, list):
            flat_names += [f"{name}[{i}]" for i in range(len(got))]
            flat_values += got
        else:
            flat_names.append(name)
            flat_values.append(got)
    return flat_names, flat_values


def write_test_data(folder, feeds, outputs):
    """An ONNX test-data folder: input_N.pb and output_N.pb, a
    SequenceProto for each list."""
    os.makedirs(folder, exist_ok=True)
    for prefix, values in (("input", feeds.items()), ("output", outputs)):
        for i, (name, given) in enumerate(values):
            proto = numpy_helper.from_list(given, name) if isinstance(given, list) else \
                numpy_helper.from_array(given, name)
            with open(os.path.join(folder, f"{prefix}_{i}.pb"), "wb") as stream:
                stream.write(proto.SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    onnxruntime.set_default_logger_severity(3)
    failed = 0
    for make in CASES:
        name = make.__name__
        model, feeds, outputs, *compile_args = make()
        work = os.path.join(args.work, name)
        os.makedirs(work, exist_ok=True)
        model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
        onnx.save(model, model_path)
        graph = compile_model(model_path, artifact, *compile_args)
        session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        names, expected = flatten(outputs, session.run(outputs, feeds))
        # The artifact takes a sequence's tensors one by one, and an absent
        # optional not at all.
        tensor_feeds = dict(zip(*flatten([name for name, fed in feeds.items() if fed is not None],
                                         [fed for fed in feeds.values() if fed is not None])))
        actual, _, message = run_tessel(artifact, tensor_feeds, work, len(names))
        if actual is None:
            raise RuntimeError(f"{name}: {message}")
        errors = differences(names, expected, actual, rtol=1e-6, atol=1e-6)
        failed += bool(errors)
        if name == "sequence_output":
            # onnxruntime's sequence, and one a tensor short, as test data.
            chunks = session.run(outputs, feeds)[0]
            write_test_data(os.path.join(work, "data_onnxruntime"), feeds, [("chunks", chunks)])
            write_test_data(os.path.join(work, "data_short"), feeds, [("chunks", chunks[:2])])
        if name == "sequence_input":
            # A sequence a tensor short of what the artifact takes.
            short = dict(feeds, parts=feeds["parts"][:1])
            write_test_data(os.path.join(work, "data_short"), short, [])
        left = "no sequence left" if "tuple<" not in graph else "a sequence left in the graph"
        if name == "loop_appends":
            left += ", one tessel.scan" if graph.count("= tessel.scan ") == 1 else ", unrolled"
        verdict = "; ".join(errors) if errors else "match onnxruntime"
        print(f"{name}: {left}; {', '.join(names)} {verdict}")
    print(f"{len(CASES) - failed} passed, {failed} failed")
    for make in REFUSED:
        os.makedirs(os.path.join(args.work, make.__name__), exist_ok=True)
        onnx.save(make(), os.path.join(args.work, make.__name__, "model.onnx"))


if __name__ == "__main__":
    main()
