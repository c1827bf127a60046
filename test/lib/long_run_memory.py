#!/usr/bin/env python3
"""Checks that running one module many times does not grow memory.

Runs `tessel-run ARTIFACT --bench N --threads T` twice, with N = RUNS / 10
and N = RUNS, and compares the peak resident memory of the two processes
(getrusage of each child). Everything a run allocates and keeps would show
as a difference growing with N: 9 * RUNS / 10 runs apart, a leak of 32
bytes per run exceeds the allowance at 10,000 runs.

Prints both peaks and "memory growth: N KiB over M runs (allowed K KiB)";
exits 1 if the growth exceeds the allowance.
"""

import argparse
import os
import subprocess
import sys


def peak_kib(command):
    """Runs `command` and returns the peak resident memory of its process."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed: {stderr.strip()}")
    return usage.ru_maxrss  # KiB on Linux


def main():
    arguments = argparse.ArgumentParser(description=__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments.add_argument("artifact")
    arguments.add_argument("--tessel-run", default="tessel-run")
    arguments.add_argument("--runs", type=int, default=10000)
    arguments.add_argument("--threads", type=int, default=2)
    arguments.add_argument("--allowed-kib", type=int, default=256)
    args = arguments.parse_args()

    def command(runs):
        return [args.tessel_run, args.artifact, "--bench", str(runs), "--threads",
                str(args.threads)]

    short, long = args.runs // 10, args.runs
    short_peak, long_peak = peak_kib(command(short)), peak_kib(command(long))
    growth = long_peak - short_peak
    print(f"peak resident memory: {short_peak} KiB after {short} runs, "
          f"{long_peak} KiB after {long} runs")
    print(f"memory growth: {growth} KiB over {long - short} runs "
          f"(allowed {args.allowed_kib} KiB)")
    return 1 if growth > args.allowed_kib else 0


if __name__ == "__main__":
    sys.exit(main())
