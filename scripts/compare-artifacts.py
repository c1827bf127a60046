#!/usr/bin/env python3
"""Latency of two or more Tessel artifacts of one model, against the first.

    scripts/compare-artifacts.py before.tsl after.tsl --threads 1 2 --rounds 8

What a compiler change does to a model's speed, on a machine whose speed
drifts by a factor of two over minutes: the artifacts are run by
`tessel-run --bench` in alternating rounds (the order reversed every other
round), and each ratio is the median over rounds of that round's latency
over the first artifact's, so that drift between rounds cancels.
"""

import argparse
import pathlib
import re
import statistics
import subprocess
import sys

BENCH_LINE = re.compile(r"latency median ([0-9.]+) ms")
ROOT = pathlib.Path(__file__).resolve().parent.parent


def median_latency(tessel_run, artifact, threads, runs):
    output = subprocess.run(
        [str(tessel_run), str(artifact), "--threads", str(threads), "--bench", str(runs),
         "--warmup", "3"],
        check=True, capture_output=True, text=True).stdout
    match = BENCH_LINE.search(output)
    if not match:
        sys.exit(f"tessel-run printed no latency for {artifact}:\n{output}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifacts", nargs="+", type=pathlib.Path)
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--runs", type=int, default=20, help="runs per artifact per round")
    parser.add_argument("--tessel-run", type=pathlib.Path,
                        default=ROOT / "build" / "bin" / "tessel-run")
    args = parser.parse_args()
    if len(args.artifacts) < 2:
        parser.error("give at least two artifacts")
    for artifact in args.artifacts:
        if not artifact.is_file():
            parser.error(f"no artifact at {artifact}")

    print(f"{'threads':>7}  " + "  ".join(f"{a.name:>14}" for a in args.artifacts) +
          "  ratios to the first (median of rounds)")
    for threads in args.threads:
        rounds = []
        for number in range(args.rounds):
            order = args.artifacts if number % 2 == 0 else args.artifacts[::-1]
            latency = {a: median_latency(args.tessel_run, a, threads, args.runs) for a in order}
            rounds.append([latency[a] for a in args.artifacts])
        medians = [statistics.median(column) for column in zip(*rounds)]
        ratios = [statistics.median(row[i] / row[0] for row in rounds)
                  for i in range(1, len(args.artifacts))]
        print(f"{threads:>7}  " + "  ".join(f"{m:>11.3f} ms" for m in medians) + "  " +
              "  ".join(f"{r:.3f}" for r in ratios))


if __name__ == "__main__":
    main()
