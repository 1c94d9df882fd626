#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The open-loop echo row at several rates, with every repetition's tail shown.

bench_io.py runs the open loop at one rate (half the slowest server's closed-loop peak) and
reports medians of 3 repetitions. This runs it at each rate in RATES, REPS times, the servers
interleaved within each repetition, and prints a Markdown table with each repetition's p99, so
that the spread of one server's tail between runs is seen beside the gap between servers.

usage: open_loop_tail.py RATES REPS [SERVER ...]
  RATES    requests a second in all, comma-separated (64 connections, 64-byte messages,
           2 s of requests at each rate after 0.2 s of warm-up)
  REPS     repetitions
  SERVER   bench_io.py's server names (default: blitz-epoll blitz-io_uring tokio)
Needs the release build's blitz_echo_server and echo_client, and `make peers` for Tokio.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import bench_io  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rates = [int(x) for x in sys.argv[1].split(",")]
    reps = int(sys.argv[2])
    wanted = sys.argv[3:] or ["blitz-epoll", "blitz-io_uring", "tokio"]
    servers = [(n, c) for n, c, _ in bench_io.SERVERS if n in wanted]
    if len(servers) != len(wanted):
        sys.exit(f"open_loop_tail: unknown server among {wanted}")
    runs = {}
    for rep in range(reps):
        for rate in rates:
            for name, cmd in servers:
                r = bench_io.one_run(cmd, 64, 64, 2 * rate, rate // 5, ["--rate", str(rate)])
                runs.setdefault((rate, name), []).append(r)
                print(f"open_loop_tail: rep {rep + 1} {rate} {name}: p50 {r['p50_ns'] / 1e3:.1f} us"
                      f" p99 {r['p99_ns'] / 1e3:.1f} us", file=sys.stderr, flush=True)
    print("| rate req/s | server | p50 us (median) | p99 us (median) | p99 us, each repetition "
          "| server CPU us a request (median) |")
    print("|---|---|---|---|---|---|")
    for rate in rates:
        for name, _ in servers:
            rs = runs[(rate, name)]
            p99 = [r["p99_ns"] / 1e3 for r in rs]
            print(f"| {rate} | {name} | {statistics.median(r['p50_ns'] / 1e3 for r in rs):.1f} | "
                  f"{statistics.median(p99):.0f} | {', '.join(f'{x:.0f}' for x in p99)} | "
                  f"{statistics.median(r['server_cpu_us_per_req'] for r in rs):.2f} |")


if __name__ == "__main__":
    main()
