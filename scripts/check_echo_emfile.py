#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""example_echo's server out of descriptors (issue 44): it must back off and shed, never spin.

Starts `example_echo [BACKEND] serve 0` under `prlimit --nofile=64:64`, opens 200 silent
clients (more than the server can hold), closes them, and checks that a new client is echoed.
Then SIGTERM: the server prints its accept loop's counters. The verdict is in counts: at most
64 exhaustion events (a spinning accept loop makes thousands in a second), at most 5 lines on
stderr (the old example printed one per failed accept: 630,000 in 7 s), the new client's bytes
back, exit status 0. Times below only keep a broken server from hanging the test.

Usage: check_echo_emfile.py EXAMPLE_ECHO [BACKEND]
"""

import re
import signal
import socket
import subprocess
import sys
import time


def main():
    binary = sys.argv[1]
    backend = sys.argv[2:3]
    server = subprocess.Popen(["prlimit", "--nofile=64:64", binary, *backend, "serve", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        print(server.stdout.readline().strip())  # I/O backend: ...
        m = re.search(r"listening on [\d.]+:(\d+)", server.stdout.readline())
        if not m:
            print("no 'listening on' line")
            return 1
        port = int(m.group(1))
        clients = []
        for _ in range(200):
            c = socket.socket()
            c.settimeout(10)
            try:
                c.connect(("127.0.0.1", port))
            except OSError as e:  # a full backlog: the client gives up, as a real one would
                print(f"connect: {e}")
                c.close()
                continue
            clients.append(c)
        time.sleep(1.5)  # the server meets EMFILE while these stay silent
        for c in clients:
            c.close()
        fresh = socket.create_connection(("127.0.0.1", port), timeout=10)
        fresh.sendall(b"ping after the storm")
        got = b""
        deadline = time.time() + 10
        while len(got) < 20 and time.time() < deadline:
            part = fresh.recv(64)
            if not part:
                break
            got += part
        fresh.close()
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=30)
    except Exception:
        server.kill()
        raise
    print(out.strip())
    err_lines = err.splitlines()
    print(f"stderr: {len(err_lines)} lines" + (f", first: {err_lines[0]}" if err_lines else ""))
    stats = re.search(r"accepted (\d+), exhausted (\d+), shed (\d+), backoffs (\d+)", out)
    failures = []
    if got != b"ping after the storm":
        failures.append(f"the new client got {got!r} back")
    if not stats:
        failures.append("no counters at exit")
    elif int(stats.group(2)) > 64:
        failures.append(f"{stats.group(2)} exhaustion events: the accept loop spins")
    elif int(stats.group(2)) == 0:
        failures.append("no exhaustion event: the limit did not bite, the check proves nothing")
    if len(err_lines) > 5:
        failures.append(f"{len(err_lines)} lines on stderr")
    if server.returncode != 0:
        failures.append(f"exit status {server.returncode}")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
