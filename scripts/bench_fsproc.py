#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The file and process benchmark rows (issue 17).

file_read_4k: random 4 KiB reads from a page-cached 256 MiB file, 64 in flight (64 tasks, each
with its own handle), at 1 and 2 workers: blitz on io_uring (READ operations), blitz on its
blocking pool (config fs_io_uring = false: a pread job per read), Tokio 1.24 (a spawn_blocking
job around pread per read, which is what tokio::fs does) and Go (ReadAt in 64 goroutines).
spawn_true: spawn /bin/true and wait for it, one at a time and 16 at a time: blitz
(process::command, pidfd wait), Tokio (tokio::process) and Go (os/exec), beside the floor of
posix_spawn + waitpid in a plain loop with no runtime.

Method: every configuration --reps times, implementations interleaved within a repetition,
medians reported; ops/s from wall time, CPU per operation from the process's user + system
time (every thread, the blocking pool's included). Ratios are against Tokio in the same run.

Usage: scripts/bench_fsproc.py [--reps N] [--quick] [--out DIR]
(BLITZ_MACHINE names the results/ folder; default epyc-2c.) Writes DIR/fsproc.md and .json.
Needs the release build and `make peers`; a missing peer is reported as not run.
"""

import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_io  # noqa: E402  (the options the benchmark scripts share)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REL = os.path.join(ROOT, "build", "release")
PEERS = os.path.join(ROOT, "build", "peers")
BLITZ = os.path.join(REL, "blitz_fsproc")
TOKIO = os.path.join(PEERS, "tokio", "release", "fsproc")
GO = os.path.join(PEERS, "go-fsproc")
DATA = "/tmp/blitz-fsproc-256MiB"


def make_file():
    size = 256 << 20
    if not os.path.exists(DATA) or os.path.getsize(DATA) != size:
        with open(DATA, "wb") as f:
            for _ in range(256):
                f.write(os.urandom(1 << 20))
    with open(DATA, "rb") as f:  # into the page cache
        while f.read(1 << 22):
            pass


def file_cmd(impl, ops, workers):
    base = ["file_read", "--path", DATA, "--ops", str(ops), "--inflight", "64"]
    if impl == "blitz-file-ring":  # the default: automatic selection's file ring
        return [BLITZ] + base + ["--workers", str(workers), "--fs", "uring"]
    if impl == "blitz-io_uring":  # the io_uring backend's own ring
        return [BLITZ] + base + ["--workers", str(workers), "--fs", "backend"]
    if impl == "blitz-pool":
        return [BLITZ] + base + ["--workers", str(workers), "--fs", "pool"]
    if impl == "tokio":
        return [TOKIO] + base + ["--workers", str(workers)]
    return [GO, "file_read", "-path", DATA, "-ops", str(ops), "-inflight", "64",
            "-procs", str(workers)]


def spawn_cmd(impl, ops, inflight):
    if impl == "floor":
        return [BLITZ, "spawn_floor", "--ops", str(ops)]
    if impl == "blitz":
        return [BLITZ, "spawn_true", "--ops", str(ops), "--inflight", str(inflight)]
    if impl == "tokio":
        return [TOKIO, "spawn_true", "--ops", str(ops), "--inflight", str(inflight)]
    return [GO, "spawn_true", "-ops", str(ops), "-inflight", str(inflight)]


def run(cmd):
    if not os.path.exists(cmd[0]):
        return {"not_run": f"{os.path.relpath(cmd[0], ROOT)} missing (make peers)"}
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    if p.returncode != 0:
        return {"not_run": f"exit {p.returncode}: {p.stderr.strip()[:200]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    args, machine, out_dir, scale = bench_io.common_args(3)
    make_file()
    configs = []  # (row, impl, command)
    for workers in (1, 2):
        for impl in ("blitz-file-ring", "blitz-io_uring", "blitz-pool", "tokio", "go"):
            configs.append((f"file_read_4k_64inflight_{workers}w", impl,
                            file_cmd(impl, 100000 // scale, workers)))
    for inflight in (1, 16):
        for impl in ("blitz", "tokio", "go", "floor"):
            if impl == "floor" and inflight != 1:
                continue
            configs.append((f"spawn_true_{inflight}inflight", impl,
                            spawn_cmd(impl, 1000 // scale, inflight)))
    samples = {(r, i): [] for r, i, _ in configs}
    failed = {}
    for rep in range(args.reps):
        for row, impl, cmd in configs:
            r = run(cmd)
            if "not_run" in r:
                failed[(row, impl)] = r["not_run"]
                continue
            samples[(row, impl)].append(r)
            print(f"rep {rep + 1} {row} {impl}: {r['ops'] / r['secs']:.0f} ops/s", flush=True)
    table = []
    for row, impl, _ in configs:
        s = samples[(row, impl)]
        if not s:
            table.append({"row": row, "impl": impl, "not_run": failed.get((row, impl), "no run")})
            continue
        rates = [x["ops"] / x["secs"] for x in s]
        cpu = [x["cpu_secs"] / x["ops"] * 1e6 for x in s]
        table.append({"row": row, "impl": impl, "ops_s": statistics.median(rates),
                      "cpu_us_per_op": statistics.median(cpu), "spread": [min(rates), max(rates)],
                      "path": s[0]["path"], "reps": len(s)})
    for t in table:
        base = next((b for b in table if b["row"] == t["row"] and b["impl"] == "tokio"
                     and "ops_s" in b), None)
        if base and "ops_s" in t:
            t["vs_tokio"] = t["ops_s"] / base["ops_s"]
            t["cpu_vs_tokio"] = t["cpu_us_per_op"] / base["cpu_us_per_op"]
    record = subprocess.run(["bash", os.path.join(ROOT, "scripts", "machine_record.sh")],
                            stdout=subprocess.PIPE, text=True).stdout
    with open(os.path.join(out_dir, "fsproc.json"), "w") as f:
        json.dump({"machine": record, "reps": args.reps, "quick": args.quick, "rows": table}, f,
                  indent=1)
    with open(os.path.join(out_dir, "fsproc.md"), "w") as f:
        f.write(f"# File and process rows ({machine})\n\n")
        f.write("`scripts/bench_fsproc.py` (see its header for the method): "
                f"{args.reps} interleaved repetitions, medians; ratios against Tokio 1.24.2 in "
                "the same run (ops/s above 1 is faster; CPU per operation below 1 is cheaper). "
                "CPU is the whole process's user + system time, blocking-pool threads "
                "included.\n\n")
        f.write("| row | implementation | path | ops/s | vs Tokio | CPU us/op | CPU vs Tokio | "
                "ops/s min-max |\n|---|---|---|---|---|---|---|---|\n")
        for t in table:
            if "not_run" in t:
                f.write(f"| {t['row']} | {t['impl']} | not run: {t['not_run']} | | | | | |\n")
                continue
            f.write(f"| {t['row']} | {t['impl']} | {t['path']} | {t['ops_s']:.0f} | "
                    f"{t.get('vs_tokio', 0):.2f}x | {t['cpu_us_per_op']:.2f} | "
                    f"{t.get('cpu_vs_tokio', 0):.2f}x | "
                    f"{t['spread'][0]:.0f}-{t['spread'][1]:.0f} |\n")
        f.write("\n## Machine\n\n" + record)
    print(f"bench_fsproc: wrote {out_dir}/fsproc.md")


if __name__ == "__main__":
    main()
