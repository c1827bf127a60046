"""Checks a `tessel-run --npu-trace` file against the `--npu-stats` of the same run.

The trace must be Chrome's trace-event JSON: a process and four named
tracks (layers, load, execute and store queues), one layer slice per layer
of the statistics in their order and with their cycles, back to back, and
each instruction a slice inside its layer on the track of its queue,
starting in stream order (each engine issues its queue in order; a GEMM's
slice lasts until its results drain, which may overlap the next GEMM). Exits non-zero naming the first thing that is wrong.
"""

import argparse
import json
import sys

QUEUES = {"LOAD": 1, "STORE": 3, "GEMM": 2, "POST": 2, "ADD": 2, "POOL": 2, "DWCONV": 2}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("stats")
    arguments = parser.parse_args()
    events = json.load(open(arguments.trace))["traceEvents"]
    stats = json.load(open(arguments.stats))

    def fail(message):
        sys.exit(f"check_npu_trace: {message}")

    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    if names != {0: "layers", 1: "load queue", 2: "execute queue", 3: "store queue"}:
        fail(f"tracks {names}")
    layers = [e for e in events if e["ph"] == "X" and e["tid"] == 0]
    if [e["name"] for e in layers] != [l["node"] for l in stats["layers"]]:
        fail("the layer slices are not the statistics' layers in order")
    microseconds_per_cycle = 1.0 / stats["clock_mhz"]
    end = 0.0
    for slice_, layer in zip(layers, stats["layers"]):
        if abs(slice_["ts"] - end) > 1e-3:
            fail(f"layer {slice_['name']!r} starts at {slice_['ts']}, not where the last ended")
        if slice_["args"]["cycles"] != layer["total_cycles"]:
            fail(f"layer {slice_['name']!r}: {slice_['args']['cycles']} cycles in the trace, "
                 f"{layer['total_cycles']} in the statistics")
        end = slice_["ts"] + slice_["dur"]
    if abs(end - stats["total_cycles"] * microseconds_per_cycle) > 1e-3:
        fail("the layers do not add up to the total cycles")
    instructions = [e for e in events if e["ph"] == "X" and e["tid"] != 0]
    # Instructions come layer by layer, in stream order within each layer.
    layer_index, previous, last_start = -1, None, {}
    for event in instructions:
        index = event["args"]["instruction"]
        if previous is None or index <= previous:
            layer_index += 1
            last_start = {}
            if layer_index >= len(layers):
                fail("more streams of instructions than layers")
        previous = index
        layer = layers[layer_index]
        if QUEUES.get(event["name"]) != event["tid"]:
            fail(f"{event['name']} on track {event['tid']}")
        if event["ts"] < layer["ts"] - 1e-3 or \
                event["ts"] + event["dur"] > layer["ts"] + layer["dur"] + 1e-3:
            fail(f"instruction {index} ({event['name']}) lies outside its layer {layer['name']!r}")
        if event["ts"] < last_start.get(event["tid"], 0.0) - 1e-6:
            fail(f"instruction {index} starts before the one before it on {names[event['tid']]}")
        last_start[event["tid"]] = event["ts"]
    if layer_index != len(layers) - 1:
        fail(f"{layer_index + 1} streams of instructions for {len(layers)} layers")
    print(f"check_npu_trace: {len(layers)} layers, {len(instructions)} instructions, "
          f"consistent with the statistics")


if __name__ == "__main__":
    main()
