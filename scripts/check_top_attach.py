#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`blitz top --attach PID` against another process (issue 46): example_debugging --serve
serves its inspect socket ("auto": $XDG_RUNTIME_DIR/blitz-<pid>.sock, 0600); top's text,
JSON and OpenMetrics snapshots must show its leaked subscriber; the socket goes when the
program ends on SIGTERM; attaching to a process without a socket fails with exit 1.

usage: check_top_attach.py BLITZ EXAMPLE_DEBUGGING
"""
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_top_attach: FAILED: " + msg)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    blitz, example = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as xdg:
        env = dict(os.environ, XDG_RUNTIME_DIR=xdg)
        prog = subprocess.Popen([example, "--serve"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)
        try:
            # The program says when it serves (after its own checks); no time decides.
            for line in prog.stdout:
                if line.startswith("serving the inspect socket"):
                    break
            else:
                fail("example_debugging --serve ended before serving (exit %s)" % prog.wait())
            sock = os.path.join(xdg, "blitz-%d.sock" % prog.pid)
            st = os.lstat(sock)
            if not stat.S_ISSOCK(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o600:
                fail("%s is not a 0600 socket (mode %o)" % (sock, st.st_mode))

            def top(*extra):
                r = subprocess.run([blitz, "top", "--attach", str(prog.pid), "--once"] +
                                   list(extra), capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    fail("blitz top %s: exit %d: %s" % (" ".join(extra), r.returncode, r.stderr))
                return r.stdout

            text = top()
            for want in ("workers", "consume_events", "next_event", "channel recv", "oldest"):
                if want not in text:
                    fail("the text view lacks %r:\n%s" % (want, text))
            view = json.loads(top("--format", "json").splitlines()[0])
            kinds = [t.get("waiting_on", {}).get("kind") for t in view["dump"]["tasks"]]
            if "channel recv" not in kinds or len(view["metrics"]["workers"]) != 2:
                fail("the JSON view: %s" % json.dumps(view)[:400])
            om = top("--format", "openmetrics")
            if "blitz_worker_polls_total" not in om or "# EOF" not in om:
                fail("the OpenMetrics view:\n" + om[:400])
            # By path as well as by pid.
            r = subprocess.run([blitz, "top", "--attach", sock, "--once", "--tasks", "1"],
                               capture_output=True, text=True)
            if r.returncode != 0 or "consume_events" not in r.stdout:
                fail("blitz top --attach PATH: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        finally:
            prog.send_signal(signal.SIGTERM)
            status = prog.wait()
        if status != 0:
            fail("example_debugging --serve exited %d after SIGTERM" % status)
        if os.path.exists(sock):
            fail("the socket %s outlived the program" % sock)
        # Nothing serves: a clear error and exit 1.
        r = subprocess.run([blitz, "top", "--attach", str(os.getpid()), "--once"],
                           capture_output=True, text=True, env=env)
        if r.returncode != 1 or "cannot connect" not in r.stderr:
            fail("attaching to a process without a socket: exit %d: %s" % (r.returncode, r.stderr))
    print("check_top_attach: ok (text, JSON and OpenMetrics views of another process)")


if __name__ == "__main__":
    main()
