#!/usr/bin/env python3
"""Summarises chorus_trainer --step-trace files (one per rank: PATH.<rank>).

    examples/trainer/step_trace.py PATH [--from N]

Per rank: the step's computation (forward + backward) and its exchange
(Update: the AllReduce and the optimizer; for Pipe-SGD the wait for the
previous step's sum); across ranks, per step: how far apart the ranks finish
computing (skew) and how long after the last rank's gradient the first rank's
update returns. Steps before N (default 10, Pipe-SGD's warm-up) are left out.
Timestamps are CLOCK_MONOTONIC, so ranks must run on one machine (the
emulated cluster's hosts do).
"""
import argparse
import csv
import glob
import statistics
import sys


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def spread(values):
    return (f"{statistics.median(values):7.1f} {percentile(values, 0.1):7.1f} "
            f"{percentile(values, 0.9):7.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--from", dest="first", type=int, default=10)
    args = parser.parse_args()
    files = sorted(glob.glob(glob.escape(args.path) + ".*"))
    steps = {}  # step -> rank -> (begin, computed, updated)
    for name in files:
        with open(name, newline="") as f:
            for row in csv.DictReader(f):
                steps.setdefault(int(row["step"]), {})[int(row["rank"])] = (
                    float(row["begin_s"]), float(row["computed_s"]), float(row["updated_s"]))
    if not steps:
        sys.exit(f"step_trace: no {args.path}.<rank> files with steps")
    ranks = sorted({r for by_rank in steps.values() for r in by_rank})
    chosen = [s for s in sorted(steps) if s >= args.first and len(steps[s]) == len(ranks)]
    if len(chosen) < 2:
        sys.exit(f"step_trace: fewer than 2 steps from step {args.first} on with every rank")
    ms = 1e3
    print(f"{len(files)} rank files, steps {chosen[0]}-{chosen[-1]} ({len(chosen)}); ms: median p10 p90")
    print("rank   compute (median p10 p90)   exchange (median p10 p90)")
    for r in ranks:
        compute = [ms * (steps[s][r][1] - steps[s][r][0]) for s in chosen]
        exchange = [ms * (steps[s][r][2] - steps[s][r][1]) for s in chosen]
        print(f"{r:4d}   {spread(compute)}    {spread(exchange)}")
    last_update = [max(t[2] for t in steps[s].values()) for s in chosen]
    period = [ms * (b - a) for a, b in zip(last_update, last_update[1:])]
    skew = [ms * (max(t[1] for t in steps[s].values()) - min(t[1] for t in steps[s].values())) for s in chosen]
    tail = [ms * (min(t[2] for t in steps[s].values()) - max(t[1] for t in steps[s].values())) for s in chosen]
    print(f"step period (last rank's update to the next): {spread(period)}")
    print(f"skew (first to last rank done computing):      {spread(skew)}")
    print(f"last rank's gradient to first rank's update:   {spread(tail)}")


if __name__ == "__main__":
    main()
