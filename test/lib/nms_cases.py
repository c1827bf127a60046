#!/usr/bin/env python3
"""ONNX NonMaxSuppression against ONNX's reference and onnxruntime.

Each case draws boxes in a few overlapping clusters (so that suppression
happens) and scores, and varies what the node takes: corner boxes given in
either order, or centre and size; a score threshold or none; a constant or
run-time max_output_boxes_per_class, below or above the number of boxes;
scores with ties; degenerate boxes of zero width; no box scoring above
the threshold. The model states the
output's shape [K, 3], K from onnx.reference on the same inputs. Each is
compiled by tessel-compile (checking that the suppression is one
tessel.scan, whose steps a target runs as a loop), run by tessel-run and
compared exactly with both references. Then the run-time check: a model
stating one box more than are selected must stop with an error; and a
model stating no count must be refused by the compiler.
"""

import argparse
import os
import re

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from tessel_model_run import compile_model, refused_compile, run_tessel

OPSET = 11


def case(name, batches=1, classes=1, boxes=32, center=False, iou=0.5, score_threshold=None,
         max_output=8, max_output_at_run_time=False, tied_scores=False, degenerate=False):
    return dict(name=name, batches=batches, classes=classes, boxes=boxes, center=center,
                iou=iou, score_threshold=score_threshold, max_output=max_output,
                max_output_at_run_time=max_output_at_run_time, tied_scores=tied_scores,
                degenerate=degenerate)


CASES = [
    case("corners_two_batches_three_classes", batches=2, classes=3, boxes=40,
         score_threshold=0.3, max_output=6),
    case("centre_and_size", classes=2, boxes=30, center=True, max_output=10),
    case("max_output_at_run_time", batches=2, classes=2, boxes=24, iou=0.4, max_output=4,
         max_output_at_run_time=True),
    case("max_output_above_boxes", boxes=20, iou=0.3, max_output=100),
    case("tied_scores", classes=2, boxes=24, iou=0.45, tied_scores=True, max_output=50),
    case("zero_width_boxes", boxes=16, degenerate=True, iou=0.2, max_output=16),
    case("none_above_score_threshold", boxes=12, score_threshold=1.0),
]


def draw_inputs(spec, rng):
    """Boxes [B, N, 4] around 4 cluster centres, and scores [B, C, N]."""
    b, c, n = spec["batches"], spec["classes"], spec["boxes"]
    centres = rng.uniform(0.2, 0.8, (b, 4, 2))
    cluster = rng.integers(0, 4, (b, n))
    middle = np.take_along_axis(centres, cluster[..., None].repeat(2, -1), 1)
    middle = middle + rng.normal(0, 0.03, (b, n, 2))
    size = rng.uniform(0.05, 0.25, (b, n, 2))
    if spec["degenerate"]:
        size[:, ::3, 0] = 0
    if spec["center"]:  # [x_center, y_center, width, height]
        boxes = np.concatenate([middle[..., ::-1], size[..., ::-1]], -1)
    else:  # [y1, x1, y2, x2], the corners of some boxes swapped
        low, high = middle - size / 2, middle + size / 2
        boxes = np.concatenate([low, high], -1)
        swap = rng.random((b, n)) < 0.3
        boxes[swap] = boxes[swap][:, [2, 3, 0, 1]]
    scores = rng.random((b, c, n))
    if spec["tied_scores"]:
        scores = np.round(scores * 4) / 4
    return boxes.astype(np.float32), scores.astype(np.float32)


def build(spec, selected):
    """The model, stating `selected` rows of output (None: a symbolic count)."""
    b, c, n = spec["batches"], spec["classes"], spec["boxes"]
    value = lambda name, kind, shape: helper.make_tensor_value_info(name, kind, shape)
    inputs = [value("boxes", TensorProto.FLOAT, [b, n, 4]),
              value("scores", TensorProto.FLOAT, [b, c, n])]
    initializers = [numpy_helper.from_array(np.array([spec["iou"]], np.float32), "iou")]
    if spec["max_output_at_run_time"]:
        inputs.append(value("max_output", TensorProto.INT64, [1]))
    else:
        initializers.append(numpy_helper.from_array(np.array([spec["max_output"]], np.int64),
                                                    "max_output"))
    node_inputs = ["boxes", "scores", "max_output", "iou"]
    if spec["score_threshold"] is not None:
        initializers.append(numpy_helper.from_array(
            np.array([spec["score_threshold"]], np.float32), "score_threshold"))
        node_inputs.append("score_threshold")
    node = helper.make_node("NonMaxSuppression", node_inputs, ["selected"], name="nms",
                            center_point_box=int(spec["center"]))
    output = value("selected", TensorProto.INT64, [selected if selected is not None else "K", 3])
    graph = helper.make_graph([node], spec["name"], inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    return model


def feeds_for(spec, boxes, scores):
    feeds = {"boxes": boxes, "scores": scores}
    if spec["max_output_at_run_time"]:
        feeds["max_output"] = np.array([spec["max_output"]], np.int64)
    return feeds


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True, help="folder for models and tensors")
    args = parser.parse_args()
    onnxruntime.set_default_logger_severity(3)
    rng = np.random.default_rng(11)
    failed = 0
    for spec in CASES:
        feeds = feeds_for(spec, *draw_inputs(spec, rng))
        expected = ReferenceEvaluator(build(spec, None)).run(None, feeds)[0]
        model = build(spec, len(expected))
        work = os.path.join(args.work, spec["name"])
        os.makedirs(work, exist_ok=True)
        model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
        onnx.save(model, model_path)
        graph = compile_model(model_path, artifact)
        form = "one tessel.scan" if len(re.findall(r"= tessel\.scan ", graph)) == 1 else \
            "no single tessel.scan"
        runtime = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        from_ort = runtime.run(None, feeds)[0]
        actual, _, message = run_tessel(artifact, feeds, work, 1)
        if actual is None:
            raise RuntimeError(message)
        agree = [name for name, want in (("onnx.reference", expected), ("onnxruntime", from_ort))
                 if want.shape == actual[0].shape and np.array_equal(want, actual[0])]
        failed += len(agree) != 2 or form != "one tessel.scan"
        verdict = "match " + " and ".join(agree) if len(agree) == 2 else \
            f"differ: {actual[0].tolist()} for {expected.tolist()}"
        print(f"{spec['name']}: {len(expected)} boxes selected, {form}; {verdict}")
    print(f"{len(CASES) - failed} passed, {failed} failed")

    # The first case, stating one selected box more than there are.
    spec = CASES[0]
    feeds = feeds_for(spec, *draw_inputs(spec, np.random.default_rng(11)))
    selected = len(ReferenceEvaluator(build(spec, None)).run(None, feeds)[0])
    work = os.path.join(args.work, "wrong_count")
    os.makedirs(work, exist_ok=True)
    model_path, artifact = os.path.join(work, "model.onnx"), os.path.join(work, "model.tsl")
    onnx.save(build(spec, selected + 1), model_path)
    compile_model(model_path, artifact)
    _, status, message = run_tessel(artifact, feeds, work, 1)
    print(f"stating {selected + 1} of {selected}: exit status {status}: {message}")
    onnx.save(build(spec, None), model_path)
    print(f"stating no count: {refused_compile(model_path, artifact + '.unstated')}")


if __name__ == "__main__":
    main()
