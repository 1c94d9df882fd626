#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Alternates two or more benchmark runners (blitz-runner builds, or wrappers around them) on one
workload and prints each one's median of process medians and its ratio to the first, pair by
pair. This VM's speed moves between batches minutes apart, so a before/after comparison of two
builds alternates them (A B, then B A, ...) instead of running each in a batch of its own.

  ab_runners.py ROUNDS REPS WORKERS FILTER RUNNER_A RUNNER_B [RUNNER_C ...]

Each round starts one process per runner (`--workers WORKERS --reps REPS --filter FILTER`),
in turn; a process's median is one sample. Ratios below 1 mean faster than RUNNER_A.
"""
import json
import statistics
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 7:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rounds, reps, workers, pattern = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    runners = sys.argv[5:]
    medians = {r: [] for r in runners}
    for i in range(rounds):
        for r in (runners if i % 2 == 0 else runners[::-1]):
            out = subprocess.run([r, "--workers", workers, "--reps", str(reps), "--filter", pattern],
                                 capture_output=True, text=True, check=True).stdout
            rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            if len(rows) != 1:
                print(f"{r}: expected one workload for {pattern!r}, got {len(rows)}", file=sys.stderr)
                return 1
            medians[r].append(statistics.median(rows[0]["reps_ns"]))
    first = medians[runners[0]]
    for r in runners:
        ratios = [a / b for a, b in zip(medians[r], first)]
        print(f"{pattern} workers={workers} {r}: median {statistics.median(medians[r]) / 1e6:.3f} ms "
              f"(processes: {', '.join(f'{m / 1e6:.3f}' for m in medians[r])}); "
              f"ratio to the first {statistics.median(ratios):.3f} "
              f"({min(ratios):.2f}-{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
