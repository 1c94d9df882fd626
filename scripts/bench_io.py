#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The I/O benchmark rows (issue 16; IO.md 4.3 and 7.8): echo servers of blitz (epoll and
io_uring), Tokio, Go, Asio (epoll and io_uring builds) and a blocking thread-per-connection
floor, all driven by the one load generator (bench/tools/echo_client.cpp): ping-pong, closed
loop, open loop at a fixed rate (half the slowest server's closed-loop peak at 64 connections,
measured in the first repetition; latency from when each request was due, so free of
coordinated omission) and accept churn (a connection per request). Beside it, two rows driven
by tools nobody here wrote: a minimal HTTP/1.1 responder in each implementation loaded by wrk,
and iperf3 as the loopback's throughput ceiling (both from Debian; `make peers` installs them).

Method: the server runs with one worker pinned to CPU 1 and the client pinned to CPU 0 (the
honest row on a 2-vCPU machine: neither can steal the other's CPU); peers interleaved, every
configuration repeated --reps times, medians reported. Server CPU per request comes from the
server process's utime + stime (/proc/<pid>/stat) over the measured run; blitz's syscalls per
request come from its I/O driver counters (waits + submits + wakes).

Usage: scripts/bench_io.py [--reps N] [--quick] [--out DIR] [--only NAME,...]
                          [--compare LABEL=ECHO_SERVER]
--compare adds that blitz_echo_server build (another commit's, for a before/after study) as
LABEL-epoll and LABEL-io_uring, interleaved with the others like any peer.
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

BLITZ = os.path.join(REL, "blitz_echo_server")
# name, echo server command, the extra arguments of its HTTP responder (None: it has none)
SERVERS = [
    ("blitz-epoll", [BLITZ, "--workers", "1", "--backend", "epoll"], ["--mode", "http"]),
    ("blitz-io_uring", [BLITZ, "--workers", "1", "--backend", "io_uring"], ["--mode", "http"]),
    # What a user gets without choosing (issue 44: automatic selection, epoll for sockets in
    # shared mode).
    ("blitz-automatic", [BLITZ, "--workers", "1", "--backend", "automatic"], ["--mode", "http"]),
    # write_all as SEND operations staged on the worker's ring (config io_batched_sends).
    ("blitz-io_uring-batched", [BLITZ, "--workers", "1", "--backend", "io_uring", "--sends",
                                "batched"], ["--mode", "http"]),
    ("blitz-io_uring-owned", [BLITZ, "--workers", "1", "--backend", "io_uring", "--mode", "owned"],
     None),
    ("blitz-io_uring-pooled", [BLITZ, "--workers", "1", "--backend", "io_uring", "--mode", "pooled"],
     None),
    ("tokio", [os.path.join(PEERS, "tokio", "release", "echo"), "--workers", "1"], ["--http", "1"]),
    ("go", [os.path.join(PEERS, "go-echo"), "-procs", "1"], ["-http"]),
    ("asio-epoll", [os.path.join(PEERS, "asio-echo"), "--threads", "1"], ["--http", "1"]),
    ("asio-io_uring", [os.path.join(PEERS, "asio-echo-uring"), "--threads", "1"], ["--http", "1"]),
    ("blocking", [os.path.join(REL, "blocking_echo_server")], None),
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


def run_client(port, conns, size, requests, warmup, extra):
    cmd = ["taskset", "-c", "0", os.path.join(REL, "echo_client"), "--port", str(port), "--conns",
           str(conns), "--size", str(size), "--requests", str(requests), "--warmup", str(warmup)]
    cmd += extra
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"echo_client failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def run_wrk(port, conns, seconds):
    """wrk pinned to CPU 0, one thread: its own report, parsed."""
    cmd = ["taskset", "-c", "0", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency",
           f"http://127.0.0.1:{port}/"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=seconds + 60)
    if r.returncode != 0:
        raise RuntimeError(f"wrk failed: {r.stderr.strip()}")
    res = {"wrk": True}
    unit = {"us": 1e3, "ms": 1e6, "s": 1e9}
    for line in r.stdout.splitlines():
        f = line.split()
        if line.startswith("Requests/sec:"):
            res["rps"] = float(f[1])
        elif len(f) == 2 and f[0] in ("50%", "99%"):
            num = f[1].rstrip("usm")
            suffix = f[1][len(num):]
            res["p50_ns" if f[0] == "50%" else "p99_ns"] = float(num) * unit[suffix]
        elif "requests in" in line:
            res["requests"] = int(f[0])
        elif line.strip().startswith("Non-2xx") or line.strip().startswith("Socket errors"):
            res["errors"] = line.strip()
    if "rps" not in res or "requests" not in res:
        raise RuntimeError(f"wrk: no result in {r.stdout!r}")
    if "errors" in res:
        raise RuntimeError(f"wrk: {res['errors']}")
    res["p999_ns"] = float("nan")  # wrk --latency prints 50/75/90/99 only
    return res


def one_run(cmd, conns, size, requests, warmup, extra=(), wrk_seconds=0):
    p, port = start_server(cmd)
    try:
        before = cpu_ticks(p.pid)
        if wrk_seconds:
            res = run_wrk(port, conns, wrk_seconds)
            requests, warmup = res["requests"], 0
        else:
            res = run_client(port, conns, size, requests, warmup, list(extra))
        after = cpu_ticks(p.pid)
    finally:
        counters = stop_server(p)
    res["server_cpu_us_per_req"] = (after - before) / CLK_TCK * 1e6 / (requests + warmup)
    if counters.get("io_waits") is not None:
        # The worker rings' io_uring_enter calls (submits, waits) count too (issue 44).
        calls = (counters["io_waits"] + counters["io_submits"] + counters["io_wakes"] +
                 counters.get("ring_enters", 0))
        res["driver_syscalls_per_req"] = calls / (requests + warmup)
        res["backend"] = counters.get("backend")
    return res


def iperf3_run(seconds):
    """iperf3 over loopback, server on CPU 1 and client on CPU 0: the ceiling in Gbit/s."""
    if not shutil.which("iperf3"):
        return {"not_run": "iperf3 not installed (make peers)"}
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    srv = subprocess.Popen(["taskset", "-c", "1", "iperf3", "-s", "-1", "-B", "127.0.0.1", "-p",
                            str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):  # until it listens
            r = subprocess.run(["taskset", "-c", "0", "iperf3", "-c", "127.0.0.1", "-p", str(port),
                                "-t", str(seconds), "-J"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=seconds + 60)
            if r.returncode == 0:
                break
            time.sleep(0.1)
        else:
            return {"not_run": "iperf3 client failed: " + r.stdout[-200:]}
        end = json.loads(r.stdout).get("end", {})
        if "sum_received" not in end:  # iperf3 exits 0 with an error in its JSON at times
            return {"not_run": "iperf3 reported no totals: " + r.stdout[-200:]}
        return {"gbit_s": end["sum_received"]["bits_per_second"] / 1e9,
                "sender_cpu_pct": end["cpu_utilization_percent"]["host_total"],
                "receiver_cpu_pct": end["cpu_utilization_percent"]["remote_total"]}
    finally:
        srv.kill()
        srv.wait()


def ratio(t, key):
    """A ratio column: "-" when the peer it is against did not run (never a 0.00x)."""
    return f"{t[key]:.2f}x" if key in t else "-"


def check_targets(table, row_names):
    """The issue's targets, each as (target, met (None: not measured), what was measured)."""
    by = {(t["row"], t["server"]): t for t in table if "rps" in t}
    out = []
    # blitz on epoll at or above Tokio on every row (req/s; the open row: p99 at or below).
    worse = []
    compared = 0
    for row in row_names:
        b, k = by.get((row, "blitz-epoll")), by.get((row, "tokio"))
        if not b or not k:
            continue
        compared += 1
        if row.startswith("open"):
            if b["p99_us"] > k["p99_us"]:
                worse.append(f"{row} p99 {b['p99_us']:.0f} vs {k['p99_us']:.0f} us")
        elif b["rps"] < k["rps"]:
            worse.append(f"{row} {b['rps'] / k['rps']:.2f}x")
    # Not measured (None) unless both ran on some row: a missing peer is never a target met.
    out.append(("blitz-epoll at or above Tokio on every row", not worse if compared else None,
                "below on: " + ", ".join(worse) if worse
                else "every row" if compared else "not measured (no Tokio row)"))
    # io_uring: 1.5x Tokio's requests per server CPU-second at 64 and 256 connections.
    ratios = []
    for row in ("closed_64c_64B", "closed_256c_64B"):
        for srv in ("blitz-io_uring", "blitz-io_uring-owned", "blitz-io_uring-pooled"):
            b, k = by.get((row, srv)), by.get((row, "tokio"))
            if b and k and b["cpu_us_per_req"] > 0:
                ratios.append((k["cpu_us_per_req"] / b["cpu_us_per_req"], f"{row} {srv}"))
    best = max(ratios) if ratios else None
    out.append(("blitz io_uring >= 1.5x Tokio's requests per server CPU-second at 64 and 256 "
                "connections", best[0] >= 1.5 if best else None,
                f"best {best[0]:.2f}x ({best[1]})" if best else "not measured"))
    # io_uring at or above epoll from 16 connections, within 5% at 1.
    below = []
    for row in row_names:
        b, e = by.get((row, "blitz-io_uring")), by.get((row, "blitz-epoll"))
        if not b or not e or not row.startswith(("pingpong", "closed")):
            continue
        limit = 0.95 if row.startswith("pingpong") else 1.0
        if b["rps"] < limit * e["rps"]:
            below.append(f"{row} {b['rps'] / e['rps']:.2f}x")
    out.append(("blitz io_uring >= blitz epoll from 16 connections, within 5% at 1",
                not below if by else None, "below on: " + ", ".join(below) if below else "met"))
    # p99 on the open-loop row at or below every peer's.
    open_rows = [r for r in row_names if r.startswith("open")]
    for row in open_rows:
        peers = [t for (rw, srv), t in by.items() if rw == row and not srv.startswith("blitz")]
        for srv in ("blitz-epoll", "blitz-io_uring"):
            b = by.get((row, srv))
            if not b or not peers:
                continue
            best_peer = min(peers, key=lambda t: t["p99_us"])
            out.append((f"{srv}: open-loop p99 at or below every peer's",
                        b["p99_us"] <= best_peer["p99_us"],
                        f"{b['p99_us']:.0f} us vs best peer {best_peer['server']} "
                        f"{best_peer['p99_us']:.0f} us"))
    # At most 1 io_uring_enter per request at 64 connections.
    calls = [(t["driver_syscalls_per_req"], srv) for (rw, srv), t in by.items()
             if rw == "closed_64c_64B" and srv.startswith("blitz-io_uring")
             and "driver_syscalls_per_req" in t]
    worst = max(calls) if calls else None
    out.append(("at most 1 io_uring_enter per request at 64 connections",
                worst[0] <= 1.0 if worst else None,
                f"worst {worst[0]:.2f} ({worst[1]})" if worst else "not measured"))
    # Issue 44's targets, for the backend users get by default (blitz-automatic).
    def row_ratio(row, srv, key):
        b, k = by.get((row, srv)), by.get((row, "tokio"))
        return b[key] / k[key] if b and k and k[key] else None

    from16 = [r for r in row_names if r.startswith(("closed", "accept", "http"))]
    low = [(row, row_ratio(row, "blitz-automatic", "rps")) for row in from16]
    low = [(r, x) for r, x in low if x is not None]
    out.append(("issue 44: the default backend >= 1.1x Tokio's req/s on every row from 16 "
                "connections", all(x >= 1.1 for _, x in low) if low else None,
                ", ".join(f"{r} {x:.2f}x" for r, x in low if x < 1.1) or "met"))
    cpu = [(row, row_ratio(row, "blitz-automatic", "cpu_us_per_req"))
           for row in row_names if row.startswith(("closed_64c", "closed_256c"))]
    cpu = [(r, x) for r, x in cpu if x is not None]
    out.append(("issue 44: the default backend's server CPU a request <= 0.75x Tokio's at 64 "
                "and 256 connections", all(x <= 0.75 for _, x in cpu) if cpu else None,
                ", ".join(f"{r} {x:.2f}x" for r, x in cpu)))
    for row in open_rows:
        b, k = by.get((row, "blitz-automatic")), by.get((row, "tokio"))
        if b and k:
            out.append(("issue 44: the default backend's open-loop p99 at or below Tokio's",
                        b["p99_us"] <= k["p99_us"],
                        f"{b['p99_us']:.0f} us vs {k['p99_us']:.0f} us"))
    uring = by.get(("closed_64c_64B", "blitz-io_uring"))
    if uring and "driver_syscalls_per_req" in uring:
        out.append(("issue 44: at most 0.2 io_uring_enter calls a request at 64 connections",
                    uring["driver_syscalls_per_req"] <= 0.2,
                    f"{uring['driver_syscalls_per_req']:.2f} (blitz-io_uring)"))
    return out


def common_args(default_reps, extra=()):
    """The options the benchmark scripts share (--reps, --quick, --out, and `extra` string
    options): returns (args, machine, out_dir, scale). BLITZ_MACHINE names the results/ folder
    (default epyc-2c, as scripts/mutate.py names it); --quick divides the sizes by 10."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=default_reps)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    for name in extra:
        ap.add_argument(name)
    args = ap.parse_args()
    machine = os.environ.get("BLITZ_MACHINE", "epyc-2c")
    out_dir = args.out or os.path.join(ROOT, "results", machine)
    os.makedirs(out_dir, exist_ok=True)
    return args, machine, out_dir, 10 if args.quick else 1


def main():
    args, machine, out_dir, scale = common_args(3, ["--only", "--compare"])
    wrk_seconds = 1 if args.quick else 5
    # (row, kind, connections, message size, requests); the open row's rate is set in rep 1.
    rows = [("pingpong_1c_64B", "closed", 1, 64, 20000 // scale),
            ("closed_16c_64B", "closed", 16, 64, 100000 // scale),
            ("closed_16c_1KiB", "closed", 16, 1024, 50000 // scale),
            ("closed_64c_64B", "closed", 64, 64, 100000 // scale),
            ("closed_64c_1KiB", "closed", 64, 1024, 50000 // scale),
            ("closed_256c_64B", "closed", 256, 64, 100000 // scale),
            ("closed_256c_1KiB", "closed", 256, 1024, 50000 // scale),
            ("open_64c_64B", "open", 64, 64, 100000 // scale),
            ("accept_churn_64c", "churn", 64, 64, 20000 // scale),
            ("http_wrk_64c", "wrk", 64, 0, 0)]
    servers = list(SERVERS)
    if args.compare:
        label, _, other = args.compare.partition("=")
        if not label or not other:
            sys.exit("bench_io: --compare wants LABEL=PATH_TO_blitz_echo_server")
        for backend in ("epoll", "io_uring"):
            servers.append((f"{label}-{backend}",
                            [os.path.abspath(other), "--workers", "1", "--backend", backend],
                            ["--mode", "http"]))
    servers = [s for s in servers if not args.only or s[0] in args.only.split(",")]
    results = {}
    rate = None
    for rep in range(args.reps):
        for row, kind, conns, size, requests in rows:
            if kind == "open" and rate is None:
                # Half the slowest server's closed-loop peak at 64 connections (IO.md 7.8).
                peaks = [statistics.median(r["rps"] for r in e["runs"])
                         for (rw, _), e in results.items() if rw == "closed_64c_64B" and e.get("runs")]
                rate = 0.5 * min(peaks) if peaks else 10000.0
            for name, cmd, http_args in servers:
                if kind == "wrk":
                    if http_args is None:
                        results.setdefault((row, name), {"not_run": "no HTTP responder"})
                        continue
                    cmd = cmd + http_args
                if not os.path.exists(cmd[0]):
                    results.setdefault((row, name), {"not_run": f"{cmd[0]} not built"})
                    continue
                extra = []
                if kind == "open":
                    extra = ["--rate", f"{rate:.0f}"]
                elif kind == "churn":
                    extra = ["--churn"]
                try:
                    r = one_run(cmd, conns, size, requests, requests // 10, extra,
                                wrk_seconds if kind == "wrk" else 0)
                except Exception as e:  # a failed server is reported, not fatal
                    results[(row, name)] = {"not_run": str(e)[:120]}
                    print(f"bench_io: {row} {name}: {e}", file=sys.stderr)
                    continue
                results.setdefault((row, name), {"runs": []}).setdefault("runs", []).append(r)
                print(f"bench_io: rep {rep + 1} {row:18} {name:21} {r['rps']:10.0f} req/s  p50 "
                      f"{r['p50_ns'] / 1000:7.1f} us  p99 {r['p99_ns'] / 1000:8.1f} us  cpu "
                      f"{r['server_cpu_us_per_req']:6.2f} us/req", flush=True)
    ceiling = iperf3_run(1 if args.quick else 5)
    print(f"bench_io: iperf3 {ceiling}", flush=True)
    table = []
    for row, kind, conns, size, requests in rows:
        base = None
        for name, _, _ in servers:
            e = results.get((row, name), {})
            if "runs" not in e or not e["runs"]:
                table.append({"row": row, "server": name, "not_run": e.get("not_run", "no run")})
                continue
            med = lambda k: statistics.median(r[k] for r in e["runs"] if k in r) if any(
                k in r for r in e["runs"]) else None
            t = {"row": row, "kind": kind, "server": name, "reps": len(e["runs"]),
                 "rps": med("rps"), "p50_us": med("p50_ns") / 1000, "p99_us": med("p99_ns") / 1000,
                 "p999_us": med("p999_ns") / 1000,
                 "cpu_us_per_req": med("server_cpu_us_per_req"),
                 "rps_spread": [min(r["rps"] for r in e["runs"]), max(r["rps"] for r in e["runs"])]}
            if kind == "open":
                t["rate"] = rate
            if med("driver_syscalls_per_req") is not None:
                t["driver_syscalls_per_req"] = med("driver_syscalls_per_req")
            if name == "tokio":
                base = t
            table.append(t)
        for t in table:
            if t["row"] == row and "rps" in t and base:
                t["vs_tokio"] = t["rps"] / base["rps"]
                t["cpu_vs_tokio"] = t["cpu_us_per_req"] / base["cpu_us_per_req"]
    targets = check_targets(table, [r[0] for r in rows])
    record = subprocess.run(["bash", os.path.join(ROOT, "scripts", "machine_record.sh")],
                            stdout=subprocess.PIPE, text=True).stdout
    with open(os.path.join(out_dir, "io.json"), "w") as f:
        json.dump({"machine": record, "reps": args.reps, "quick": args.quick, "open_rate": rate,
                   "iperf3": ceiling, "targets": targets, "rows": table}, f, indent=1)
    with open(os.path.join(out_dir, "io.md"), "w") as f:
        f.write(f"# I/O benchmark rows ({machine})\n\n")
        f.write("`scripts/bench_io.py`: echo servers with 1 worker pinned to CPU 1, the one load "
                "generator (bench/tools/echo_client.cpp, every byte checked) pinned to CPU 0; "
                f"{args.reps} interleaved repetitions, medians; ratios against Tokio 1.24.2 in the "
                "same run (req/s, and server CPU per request: below 1 is cheaper). Rows: "
                "pingpong and closed = closed loop (one request in flight per connection); "
                f"open = open loop at {rate or 0:.0f} req/s in all (half the slowest server's "
                "closed_64c_64B peak in the first repetition), latency from when each request "
                "was due (free of coordinated omission); accept_churn = a new connection per "
                "request, 64 at a time (req/s = connections/s); http_wrk = a minimal HTTP/1.1 "
                "responder per implementation loaded by wrk 4.1 (Debian; -t1, keep-alive, "
                "p99 and p50 as wrk reports them, no p999). CPU: the server's utime + stime per "
                "request. Syscalls: blitz's I/O driver calls (waits, submits, wakes) per request, "
                "socket reads and writes not counted.\n\n")
        f.write("| row | server | req/s | vs Tokio | p50 us | p99 us | p999 us | CPU us/req | "
                "CPU vs Tokio | driver syscalls/req | req/s min-max |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|\n")
        for t in table:
            if "not_run" in t:
                f.write(f"| {t['row']} | {t['server']} | not run: {t['not_run']} | | | | | | | | |\n")
                continue
            p999 = "-" if t["p999_us"] != t["p999_us"] else f"{t['p999_us']:.1f}"
            f.write(f"| {t['row']} | {t['server']} | {t['rps']:.0f} | "
                    f"{ratio(t, 'vs_tokio')} | {t['p50_us']:.1f} | {t['p99_us']:.1f} | "
                    f"{p999} | {t['cpu_us_per_req']:.2f} | {ratio(t, 'cpu_vs_tokio')} | "
                    + (f"{t['driver_syscalls_per_req']:.2f}" if "driver_syscalls_per_req" in t
                       else "-") + " | "
                    f"{t['rps_spread'][0]:.0f}-{t['rps_spread'][1]:.0f} |\n")
        f.write("\n## Targets (issue 16; reported, never asserted)\n\n| target | met | measured |\n"
                "|---|---|---|\n")
        for name, met, text in targets:
            f.write(f"| {name} | {'yes' if met else 'no' if met is not None else 'n/a'} | {text} |\n")
        f.write("\n## Loopback ceiling (iperf3)\n\n")
        if "not_run" in ceiling:
            f.write(f"not run: {ceiling['not_run']}\n")
        else:
            f.write(f"iperf3 3.12 (Debian), one TCP stream over 127.0.0.1, server on CPU 1 and client "
                    f"on CPU 0: {ceiling['gbit_s']:.1f} Gbit/s (sender CPU "
                    f"{ceiling['sender_cpu_pct']:.0f}%, receiver {ceiling['receiver_cpu_pct']:.0f}%). "
                    "For scale: closed_64c_1KiB at 100k req/s moves 0.8 Gbit/s each way.\n")
        f.write("\n## Machine\n\n" + record)
    print(f"bench_io: wrote {out_dir}/io.md")


if __name__ == "__main__":
    main()
