#!/usr/bin/env python3
"""ONNX Scan and Loop nodes against onnxruntime, and how Tessel runs their
steps.

Each case is a Scan (opset 16) whose body accumulates: the state becomes
state * decay + step (decay a constant of the main graph, which a node
after the Scan may read too, or a graph input the body reads from the
outer scope), and each scan output is the new
state or a function of it. The cases vary the scan input's axis and
direction and the scan output's axis and direction, and include one whose
states differ in type. Each is compiled by tessel-compile, run by tessel-run
and compared with onnxruntime (rtol 1e-5, atol 1e-6). The compiled graph
is read back (--emit tessel): a Scan whose states share one type and whose
inputs one direction is one tessel.scan (its steps a loop), any other is
unrolled. The Loop cases (opset 16) add the iteration number to a
loop-carried value and give it as a scan output: with a constant trip count
and a condition that stays true, the Loop is one tessel.scan too; one whose
carries values of two types is unrolled. A Loop whose trip count or
condition is known only at run time is one tessel.loop, its carried values
packed into one state when they differ in type.
"""

import argparse
import os
import re

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from tessel_model_run import compile_model, differences, run_tessel

OPSET = 16
STEPS, WIDTH = 6, 4


def case(name, input_axis=0, input_direction=0, output_axis=0, output_direction=0,
         decay_input=False, second_state=False, decay_read_after=False):
    return dict(name=name, input_axis=input_axis, input_direction=input_direction,
                output_axis=output_axis, output_direction=output_direction,
                decay_input=decay_input, second_state=second_state,
                decay_read_after=decay_read_after)


CASES = [
    case("forward"),
    case("reverse_input", input_direction=1),
    case("reverse_output", output_direction=1),
    case("reverse_both", input_direction=1, output_direction=1),
    case("input_axis_1", input_axis=1),
    case("output_axis_1", output_axis=1),
    case("outer_scope_input", decay_input=True),
    case("initializer_read_after", decay_read_after=True),
    case("states_of_two_types", second_state=True),
]


def build(spec):
    value = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    body_nodes = [helper.make_node("Mul", ["s_in", "decay"], ["scaled"]),
                  helper.make_node("Add", ["scaled", "x"], ["s_out"]),
                  helper.make_node("Tanh", ["s_out"], ["y"])]
    body_inputs, body_outputs = [value("s_in", [2, WIDTH])], [value("s_out", [2, WIDTH])]
    node_inputs, node_outputs = ["s0"], ["s_final"]
    graph_inputs, graph_outputs = [value("s0", [2, WIDTH])], [value("s_final", [2, WIDTH])]
    if spec["second_state"]:
        body_nodes.append(helper.make_node("Add", ["count_in", "one"], ["count_out"]))
        body_inputs.append(value("count_in", [1]))
        body_outputs.append(value("count_out", [1]))
        node_inputs.append("count0")
        node_outputs.append("count_final")
        graph_inputs.append(value("count0", [1]))
        graph_outputs.append(value("count_final", [1]))
    body_inputs.append(value("x", [2, WIDTH]))
    body_outputs.append(value("y", [2, WIDTH]))
    scanned_shape = [STEPS, 2, WIDTH] if spec["input_axis"] == 0 else [2, STEPS, WIDTH]
    output_shape = [STEPS, 2, WIDTH] if spec["output_axis"] == 0 else [2, STEPS, WIDTH]
    node_inputs.append("xs")
    node_outputs.append("ys")
    graph_inputs.append(value("xs", scanned_shape))
    graph_outputs.append(value("ys", output_shape))
    initializers = []
    if spec["second_state"]:
        initializers.append(numpy_helper.from_array(np.array([1.0], np.float32), "one"))
    if spec["decay_input"]:
        graph_inputs.append(value("decay", [WIDTH]))
    else:
        initializers.append(numpy_helper.from_array(
            np.array([0.9, 0.5, -0.5, 1.0], np.float32), "decay"))
    body = helper.make_graph(body_nodes, "body", body_inputs, body_outputs)
    scan = helper.make_node("Scan", node_inputs, node_outputs, name=spec["name"], body=body,
                            num_scan_inputs=1, scan_input_axes=[spec["input_axis"]],
                            scan_input_directions=[spec["input_direction"]],
                            scan_output_axes=[spec["output_axis"]],
                            scan_output_directions=[spec["output_direction"]])
    nodes = [scan]
    if spec["decay_read_after"]:
        # The body reads the initializer first; a node after the Scan too.
        nodes.append(helper.make_node("Mul", ["s_final", "decay"], ["s_scaled"]))
        graph_outputs.append(value("s_scaled", [2, WIDTH]))
    graph = helper.make_graph(nodes, spec["name"], graph_inputs, graph_outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(3)
    feeds = {value.name: rng.standard_normal(
        [d.dim_value for d in value.type.tensor_type.shape.dim]).astype(np.float32)
        for value in graph_inputs}
    return model, feeds, [output.name for output in graph_outputs]


def build_states_passed_on():
    """A Scan whose body passes states on as they are: a and b swap (b's
    next value reads a), c stays the same, and the scan output is the
    previous a. A state's buffer must not be stored over before the states
    it moves into have read it."""
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [WIDTH])
    body = helper.make_graph(
        [helper.make_node("Identity", ["b"], ["a_next"]),
         helper.make_node("Add", ["a", "x"], ["a_plus_x"]),
         helper.make_node("Mul", ["a_plus_x", "c"], ["b_next"]),
         helper.make_node("Identity", ["c"], ["c_next"]),
         helper.make_node("Identity", ["a"], ["y"])],
        "body", [value(name) for name in ["a", "b", "c", "x"]],
        [value(name) for name in ["a_next", "b_next", "c_next", "y"]])
    scan = helper.make_node("Scan", ["a0", "b0", "c0", "xs"], ["a", "b", "c", "ys"],
                            name="states_passed_on", body=body, num_scan_inputs=1)
    steps = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [STEPS, WIDTH])
    graph = helper.make_graph([scan], "states_passed_on",
                              [value("a0"), value("b0"), value("c0"), steps("xs")],
                              [value("a"), value("b"), value("c"), steps("ys")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(4)
    feeds = {name: rng.standard_normal([WIDTH]).astype(np.float32) for name in ["a0", "b0", "c0"]}
    feeds["xs"] = rng.standard_normal([STEPS, WIDTH]).astype(np.float32)
    return model, feeds, ["a", "b", "c", "ys"]


LOOP_CASES = ["loop_constant_trip_count", "loop_carried_values_of_two_types"]


def build_run_time_loop(name, trip_count, condition):
    """A Loop whose trip count (and in the second case its initial
    condition) is a graph input, without scan outputs: acc += float(i) *
    step and scaled = scaled * 0.5 + acc, from initial values given as
    inputs. It runs as one tessel.loop whose trip count is read at run
    time."""
    value = lambda name, shape, kind=TensorProto.FLOAT: helper.make_tensor_value_info(
        name, kind, shape)
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["i_float", "step"], ["increment"]),
         helper.make_node("Add", ["acc_in", "increment"], ["acc_out"]),
         helper.make_node("Mul", ["scaled_in", "half"], ["halved"]),
         helper.make_node("Add", ["halved", "acc_out"], ["scaled_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [value("i", [], TensorProto.INT64), value("cond_in", [], TensorProto.BOOL),
         value("acc_in", [3]), value("scaled_in", [3])],
        [value("cond_out", [], TensorProto.BOOL), value("acc_out", [3]),
         value("scaled_out", [3])])
    loop = helper.make_node("Loop", ["trip_count", "keep_going", "acc0", "scaled0"],
                            ["acc", "scaled"], name=name, body=body)
    initializers = [helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])]
    graph_inputs = [value("trip_count", [], TensorProto.INT64), value("acc0", [3]),
                    value("scaled0", [3]), value("step", [3])]
    if condition is None:
        initializers.append(helper.make_tensor("keep_going", TensorProto.BOOL, [], [True]))
    else:
        graph_inputs.append(value("keep_going", [], TensorProto.BOOL))
    graph = helper.make_graph([loop], name, graph_inputs, [value("acc", [3]), value("scaled", [3])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(6)
    feeds = {"trip_count": np.array(trip_count, np.int64)}
    feeds.update({name: rng.standard_normal(3).astype(np.float32)
                  for name in ["acc0", "scaled0", "step"]})
    if condition is not None:
        feeds["keep_going"] = np.array(condition)
    return model, feeds, ["acc", "scaled"]


def build_gathering_loop(run_time_trips=False):
    """A Loop of 4 iterations that reads row positions[i] of a table, a
    position the model's input gives, and sums the rows: positions[i] lies
    in range (i is the iteration number), but the row's index is only known
    when the model runs, and its check stops a run from the entry function,
    so the Loop unrolls. With `run_time_trips` the trip count is a graph
    input, and the Loop cannot unroll: the compiler must refuse it."""
    value = lambda name, shape, kind=TensorProto.FLOAT: helper.make_tensor_value_info(
        name, kind, shape)
    body = helper.make_graph(
        [helper.make_node("Gather", ["positions", "i"], ["position"]),
         helper.make_node("Gather", ["table", "position"], ["row"]),
         helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [value("i", [], TensorProto.INT64), value("cond_in", [], TensorProto.BOOL),
         value("acc_in", [3])],
        [value("cond_out", [], TensorProto.BOOL), value("acc_out", [3])])
    loop = helper.make_node("Loop", ["trips", "", "acc0"], ["acc"], body=body)
    inputs = [value("positions", [4], TensorProto.INT64), value("table", [5, 3]),
              value("acc0", [3])]
    trips = [helper.make_tensor("trips", TensorProto.INT64, [], [4])]
    if run_time_trips:
        inputs, trips = inputs + [value("trips", [], TensorProto.INT64)], []
    graph = helper.make_graph([loop], "gathering_loop", inputs, [value("acc", [3])], trips)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(8)
    feeds = {"positions": np.array([4, 0, -1, 2], np.int64),
             "table": rng.standard_normal([5, 3]).astype(np.float32),
             "acc0": rng.standard_normal(3).astype(np.float32)}
    return model, feeds, ["acc"]


def build_mixed_loop():
    """A while loop as scripted code exports one: a run-time trip count and
    a body condition (count < limit, both int64) over carried values of
    four types: the int64 count, acc (f32 [2, 3]) = acc * 0.5 + count *
    step, h (f16 [4]) += count, and seen (bool) = seen or count > 2. They
    run as one tessel.loop, packed into one state."""
    value = lambda name, shape, kind=TensorProto.FLOAT: helper.make_tensor_value_info(
        name, kind, shape)
    body = helper.make_graph(
        [helper.make_node("Add", ["count_in", "one"], ["count_out"]),
         helper.make_node("Less", ["count_out", "limit"], ["cond_out"]),
         helper.make_node("Cast", ["count_out"], ["count_float"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["count_float", "step"], ["increment"]),
         helper.make_node("Mul", ["acc_in", "half"], ["halved"]),
         helper.make_node("Add", ["halved", "increment"], ["acc_out"]),
         helper.make_node("Cast", ["count_out"], ["count_half"], to=TensorProto.FLOAT16),
         helper.make_node("Add", ["h_in", "count_half"], ["h_out"]),
         helper.make_node("Greater", ["count_out", "two"], ["past_two"]),
         helper.make_node("Or", ["seen_in", "past_two"], ["seen_out"])],
        "body",
        [value("i", [], TensorProto.INT64), value("cond_in", [], TensorProto.BOOL),
         value("count_in", [], TensorProto.INT64), value("acc_in", [2, 3]),
         value("h_in", [4], TensorProto.FLOAT16), value("seen_in", [], TensorProto.BOOL)],
        [value("cond_out", [], TensorProto.BOOL), value("count_out", [], TensorProto.INT64),
         value("acc_out", [2, 3]), value("h_out", [4], TensorProto.FLOAT16),
         value("seen_out", [], TensorProto.BOOL)])
    loop = helper.make_node("Loop", ["trip_count", "", "count0", "acc0", "h0", "seen0"],
                            ["count", "acc", "h", "seen"], body=body)
    initializers = [helper.make_tensor("half", TensorProto.FLOAT, [], [0.5]),
                    helper.make_tensor("one", TensorProto.INT64, [], [1]),
                    helper.make_tensor("two", TensorProto.INT64, [], [2]),
                    helper.make_tensor("count0", TensorProto.INT64, [], [0]),
                    helper.make_tensor("seen0", TensorProto.BOOL, [], [False])]
    graph_inputs = [value("trip_count", [], TensorProto.INT64),
                    value("limit", [], TensorProto.INT64), value("acc0", [2, 3]),
                    value("h0", [4], TensorProto.FLOAT16), value("step", [2, 3])]
    outputs = [value("count", [], TensorProto.INT64), value("acc", [2, 3]),
               value("h", [4], TensorProto.FLOAT16), value("seen", [], TensorProto.BOOL)]
    graph = helper.make_graph([loop], "mixed_loop", graph_inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(7)
    feeds = {"trip_count": np.array(10, np.int64), "limit": np.array(6, np.int64),
             "acc0": rng.standard_normal([2, 3]).astype(np.float32),
             "h0": rng.standard_normal(4).astype(np.float16),
             "step": rng.standard_normal([2, 3]).astype(np.float32)}
    return model, feeds, ["count", "acc", "h", "seen"]


def build_conditional_loop(name, with_trip_count):
    """A Loop whose body computes its condition from the carried values:
    acc = acc * 1.5 + step while sum(acc) < limit (a graph input), up to a
    trip count given as a graph input, or without one. It runs as one
    tessel.loop that tests the condition after each iteration."""
    value = lambda name, shape, kind=TensorProto.FLOAT: helper.make_tensor_value_info(
        name, kind, shape)
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "growth"], ["grown"]),
         helper.make_node("Add", ["grown", "step"], ["acc_out"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        "body",
        [value("i", [], TensorProto.INT64), value("cond_in", [], TensorProto.BOOL),
         value("acc_in", [3])],
        [value("cond_out", [], TensorProto.BOOL), value("acc_out", [3])])
    loop = helper.make_node("Loop", ["trip_count" if with_trip_count else "", "", "acc0"],
                            ["acc"], name=name, body=body)
    graph_inputs = [value("acc0", [3]), value("step", [3]), value("limit", [])]
    if with_trip_count:
        graph_inputs.insert(0, value("trip_count", [], TensorProto.INT64))
    graph = helper.make_graph(
        [loop], name, graph_inputs, [value("acc", [3])],
        [helper.make_tensor("growth", TensorProto.FLOAT, [], [1.5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    feeds = {}
    if with_trip_count:
        feeds["trip_count"] = np.array(20, np.int64)
    feeds["acc0"] = np.array([0.5, 1.0, 0.25], np.float32)
    feeds["step"] = np.array([0.1, 0.2, 0.3], np.float32)
    feeds["limit"] = np.array(40.0, np.float32)
    return model, feeds, ["acc"]


def build_never_ending():
    """A Loop without a trip count whose body passes its condition on: it
    would never end, and the compiler must say so."""
    value = lambda name, shape, kind=TensorProto.FLOAT: helper.make_tensor_value_info(
        name, kind, shape)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Neg", ["acc_in"], ["acc_out"])],
        "body",
        [value("i", [], TensorProto.INT64), value("cond_in", [], TensorProto.BOOL),
         value("acc_in", [3])],
        [value("cond_out", [], TensorProto.BOOL), value("acc_out", [3])])
    loop = helper.make_node("Loop", ["", "", "acc0"], ["acc"], name="loop_never_ending",
                            body=body)
    graph = helper.make_graph([loop], "loop_never_ending", [value("acc0", [3])],
                              [value("acc", [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


RUN_TIME_LOOP_CASES = [("loop_run_time_trip_count_7", 7, None),
                       ("loop_run_time_trip_count_0", 0, None),
                       ("loop_run_time_condition_true", 4, True),
                       ("loop_run_time_condition_false", 4, False)]


def build_loop(name):
    """A Loop of 5 iterations: acc += float(i) * step; the scan output is the
    new acc. In the second case a count of type int64 is carried too."""
    value = lambda name, shape, kind=TensorProto.FLOAT: helper.make_tensor_value_info(
        name, kind, shape)
    body_nodes = [helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["i_float", "step"], ["increment"]),
                  helper.make_node("Add", ["acc_in", "increment"], ["acc_out"]),
                  helper.make_node("Identity", ["acc_out"], ["acc_scan"])]
    body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    carried_in, carried_out, inputs, outputs = [value("acc_in", [3])], [value("acc_out", [3])], \
        ["trip_count", "keep_going", "acc0"], ["acc"]
    if name == "loop_carried_values_of_two_types":
        body_nodes.append(helper.make_node("Add", ["count_in", "one"], ["count_out"]))
        carried_in.append(value("count_in", [], TensorProto.INT64))
        carried_out.append(value("count_out", [], TensorProto.INT64))
        inputs.append("count0")
        outputs.append("count")
    body = helper.make_graph(
        body_nodes, "body",
        [value("i", [], TensorProto.INT64), value("cond_in", [], TensorProto.BOOL)] + carried_in,
        [value("cond_out", [], TensorProto.BOOL)] + carried_out + [value("acc_scan", [3])])
    loop = helper.make_node("Loop", inputs, outputs + ["accs"], name=name, body=body)
    initializers = [helper.make_tensor("trip_count", TensorProto.INT64, [], [5]),
                    helper.make_tensor("keep_going", TensorProto.BOOL, [], [True]),
                    helper.make_tensor("one", TensorProto.INT64, [], [1])]
    graph_inputs = [value("acc0", [3]), value("step", [3])]
    graph_outputs = [value("acc", [3])]
    if name == "loop_carried_values_of_two_types":
        graph_inputs.append(value("count0", [], TensorProto.INT64))
        graph_outputs.append(value("count", [], TensorProto.INT64))
    graph = helper.make_graph([loop], name, graph_inputs, graph_outputs + [value("accs", [5, 3])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(5)
    feeds = {"acc0": rng.standard_normal(3).astype(np.float32),
             "step": rng.standard_normal(3).astype(np.float32)}
    if name == "loop_carried_values_of_two_types":
        feeds["count0"] = np.array(7, np.int64)
    return model, feeds, [output.name for output in graph.output]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    onnxruntime.set_default_logger_severity(3)
    failed = 0
    cases = [(spec["name"], lambda spec=spec: build(spec)) for spec in CASES] + \
        [("states_passed_on", build_states_passed_on)] + \
        [(name, lambda name=name: build_loop(name)) for name in LOOP_CASES] + \
        [(name, lambda case=case: build_run_time_loop(*case))
         for case in RUN_TIME_LOOP_CASES for name in [case[0]]] + \
        [("loop_body_condition_and_trip_count", lambda: build_conditional_loop(
            "loop_body_condition_and_trip_count", True)),
         ("loop_body_condition_only", lambda: build_conditional_loop(
             "loop_body_condition_only", False)),
         ("loop_carried_values_of_four_types", build_mixed_loop),
         ("loop_gathering_rows_by_data", build_gathering_loop)]
    for name, make in cases:
        model, feeds, outputs = make()
        work = os.path.join(args.work, name)
        os.makedirs(work, exist_ok=True)
        model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
        onnx.save(model, model_path)
        graph = compile_model(model_path, artifact)
        form = "one tessel.scan" if len(re.findall(r"= tessel\.scan ", graph)) == 1 else \
            "one tessel.loop" if len(re.findall(r"= tessel\.loop ", graph)) == 1 else \
            "unrolled" if "tessel.scan" not in graph else "several tessel.scan"
        session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        expected = session.run(outputs, feeds)
        actual, _, message = run_tessel(artifact, feeds, work, len(outputs))
        if actual is None:
            raise RuntimeError(message)
        errors = differences(outputs, expected, actual, rtol=1e-5, atol=1e-6)
        failed += bool(errors)
        verdict = "; ".join(errors) if errors else "match onnxruntime"
        print(f"{name}: {form}; {', '.join(outputs)} {verdict}")
    print(f"{len(cases) - failed} passed, {failed} failed")
    # Compiled by the lit test, which expects a refusal.
    os.makedirs(os.path.join(args.work, "loop_never_ending"), exist_ok=True)
    onnx.save(build_never_ending(), os.path.join(args.work, "loop_never_ending", "model.onnx"))
    os.makedirs(os.path.join(args.work, "loop_gathering_run_time"), exist_ok=True)
    onnx.save(build_gathering_loop(run_time_trips=True)[0],
              os.path.join(args.work, "loop_gathering_run_time", "model.onnx"))


if __name__ == "__main__":
    main()
