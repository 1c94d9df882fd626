#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The I/O benchmark rows (issue 16; IO.md 4.3 and 7.8): echo servers of blitz (epoll and
io_uring), Tokio, Go, Asio (epoll and io_uring builds) and a blocking thread-per-connection
floor, all driven by the one load generator (bench/tools/echo_client.cpp).

Method: the server runs with one worker pinned to CPU 1 and the client pinned to CPU 0 (the
honest row on a 2-vCPU machine: neither can steal the other's CPU); peers interleaved, every
configuration repeated --reps times, medians reported. Server CPU per request comes from the
server process's utime + stime (/proc/<pid>/stat) over the measured run; blitz's syscalls per
request come from its I/O driver counters (waits + submits + wakes).

Usage: scripts/bench_io.py [--reps N] [--quick] [--out DIR] [--only NAME,...]
(BLITZ_MACHINE names the results/ folder; default epyc-2c, this development machine.)
Writes DIR/io.md and io.json (default results/<machine>/). Needs `make peers` for the peers and
the release build for blitz; a server that is missing is reported as not run.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REL = os.path.join(ROOT, "build", "release")
PEERS = os.path.join(ROOT, "build", "peers")
CLK_TCK = os.sysconf("SC_CLK_TCK")

SERVERS = [
    ("blitz-epoll", [os.path.join(REL, "blitz_echo_server"), "--workers", "1", "--backend", "epoll"]),
    ("blitz-io_uring", [os.path.join(REL, "blitz_echo_server"), "--workers", "1", "--backend", "io_uring"]),
    ("blitz-io_uring-owned", [os.path.join(REL, "blitz_echo_server"), "--workers", "1", "--backend", "io_uring",
                              "--mode", "owned"]),
    ("tokio", [os.path.join(PEERS, "tokio", "release", "echo"), "--workers", "1"]),
    ("go", [os.path.join(PEERS, "go-echo"), "-procs", "1"]),
    ("asio-epoll", [os.path.join(PEERS, "asio-echo"), "--threads", "1"]),
    ("asio-io_uring", [os.path.join(PEERS, "asio-echo-uring"), "--threads", "1"]),
    ("blocking", [os.path.join(REL, "blocking_echo_server")]),
]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


def start_server(cmd):
    p = subprocess.Popen(["taskset", "-c", "1"] + cmd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if not line.startswith("port "):
        p.kill()
        raise RuntimeError(f"{cmd[0]}: no port line (got {line!r})")
    return p, int(line.split()[1])


def stop_server(p):
    try:
        p.stdin.close()
        out = p.stdout.read()
        p.wait(timeout=10)
    except Exception:
        p.kill()
        return {}
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return {}


def run_client(port, conns, size, requests, warmup):
    cmd = ["taskset", "-c", "0", os.path.join(REL, "echo_client"), "--port", str(port), "--conns",
           str(conns), "--size", str(size), "--requests", str(requests), "--warmup", str(warmup)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"echo_client failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def one_run(cmd, conns, size, requests, warmup):
    p, port = start_server(cmd)
    try:
        before = cpu_ticks(p.pid)
        res = run_client(port, conns, size, requests, warmup)
        after = cpu_ticks(p.pid)
    finally:
        counters = stop_server(p)
    res["server_cpu_us_per_req"] = (after - before) / CLK_TCK * 1e6 / (requests + warmup)
    if counters.get("io_waits") is not None:
        calls = counters["io_waits"] + counters["io_submits"] + counters["io_wakes"]
        res["driver_syscalls_per_req"] = calls / (requests + warmup)
        res["backend"] = counters.get("backend")
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--only")
    args = ap.parse_args()
    machine = os.environ.get("BLITZ_MACHINE", "epyc-2c")  # as scripts/mutate.py names it
    out_dir = args.out or os.path.join(ROOT, "results", machine)
    os.makedirs(out_dir, exist_ok=True)
    scale = 10 if args.quick else 1
    rows = [("pingpong_1c_64B", 1, 64, 20000 // scale),
            ("closed_16c_64B", 16, 64, 100000 // scale),
            ("closed_64c_64B", 64, 64, 100000 // scale),
            ("closed_64c_1KiB", 64, 1024, 50000 // scale),
            ("closed_256c_64B", 256, 64, 100000 // scale)]
    servers = [s for s in SERVERS if not args.only or s[0] in args.only.split(",")]
    results = {}
    for rep in range(args.reps):
        for row, conns, size, requests in rows:
            for name, cmd in servers:
                if not os.path.exists(cmd[0]):
                    results.setdefault((row, name), {"not_run": f"{cmd[0]} not built"})
                    continue
                try:
                    r = one_run(cmd, conns, size, requests, requests // 10)
                except Exception as e:  # a failed server is reported, not fatal
                    results[(row, name)] = {"not_run": str(e)[:120]}
                    print(f"bench_io: {row} {name}: {e}", file=sys.stderr)
                    continue
                results.setdefault((row, name), {"runs": []}).setdefault("runs", []).append(r)
                print(f"bench_io: rep {rep + 1} {row:18} {name:15} {r['rps']:10.0f} req/s  p50 "
                      f"{r['p50_ns'] / 1000:7.1f} us  p99 {r['p99_ns'] / 1000:8.1f} us  cpu "
                      f"{r['server_cpu_us_per_req']:6.2f} us/req", flush=True)
    table = []
    for row, conns, size, requests in rows:
        base = None
        for name, _ in servers:
            e = results.get((row, name), {})
            if "runs" not in e or not e["runs"]:
                table.append({"row": row, "server": name, "not_run": e.get("not_run", "no run")})
                continue
            med = lambda k: statistics.median(r[k] for r in e["runs"] if k in r) if any(
                k in r for r in e["runs"]) else None
            t = {"row": row, "server": name, "reps": len(e["runs"]), "rps": med("rps"),
                 "p50_us": med("p50_ns") / 1000, "p99_us": med("p99_ns") / 1000,
                 "p999_us": med("p999_ns") / 1000,
                 "cpu_us_per_req": med("server_cpu_us_per_req"),
                 "rps_spread": [min(r["rps"] for r in e["runs"]), max(r["rps"] for r in e["runs"])]}
            if med("driver_syscalls_per_req") is not None:
                t["driver_syscalls_per_req"] = med("driver_syscalls_per_req")
            if name == "tokio":
                base = t["rps"]
            table.append(t)
        for t in table:
            if t["row"] == row and "rps" in t and base:
                t["vs_tokio"] = t["rps"] / base
    record = subprocess.run(["bash", os.path.join(ROOT, "scripts", "machine_record.sh")],
                            stdout=subprocess.PIPE, text=True).stdout
    with open(os.path.join(out_dir, "io.json"), "w") as f:
        json.dump({"machine": record, "reps": args.reps, "quick": args.quick, "rows": table}, f,
                  indent=1)
    with open(os.path.join(out_dir, "io.md"), "w") as f:
        f.write(f"# I/O benchmark rows ({machine})\n\n")
        f.write("`scripts/bench_io.py`: echo servers with 1 worker pinned to CPU 1, the one load "
                "generator (bench/tools/echo_client.cpp, closed loop, every byte checked) pinned to "
                f"CPU 0; {args.reps} interleaved repetitions, medians; ratios against Tokio 1.24.2 in "
                "the same run. CPU: the server's utime + stime per request. Syscalls: blitz's I/O "
                "driver calls (waits, submits, wakes) per request, socket reads and writes not "
                "counted.\n\n")
        f.write("| row | server | req/s | vs Tokio | p50 us | p99 us | p999 us | CPU us/req | "
                "driver syscalls/req | req/s min-max |\n|---|---|---|---|---|---|---|---|---|---|\n")
        for t in table:
            if "not_run" in t:
                f.write(f"| {t['row']} | {t['server']} | not run: {t['not_run']} | | | | | | | |\n")
                continue
            f.write(f"| {t['row']} | {t['server']} | {t['rps']:.0f} | "
                    f"{t.get('vs_tokio', 0):.2f}x | {t['p50_us']:.1f} | {t['p99_us']:.1f} | "
                    f"{t['p999_us']:.1f} | {t['cpu_us_per_req']:.2f} | "
                    + (f"{t['driver_syscalls_per_req']:.2f}" if "driver_syscalls_per_req" in t
                       else "-") + " | "
                    f"{t['rps_spread'][0]:.0f}-{t['rps_spread'][1]:.0f} |\n")
        f.write("\n## Machine\n\n" + record)
    print(f"bench_io: wrote {out_dir}/io.md")


if __name__ == "__main__":
    main()
