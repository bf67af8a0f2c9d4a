#!/usr/bin/env python3
"""Issue 32 benchmark: what the sandbox adds to an agent's start.

One daemon, one run: `new` requests for a hangar-fake-agent claude session,
alternating plain and `--sandbox` (so both see the same machine load), each
timed from writing the request on the control socket to the daemon's reply.
The reply comes after the agent's first output plus `[restore] settle_ms`,
set to 0 here, so it is the start as a person sees it: the daemon's work, the
fork, for the sandbox bwrap's namespaces and mounts, hangar's relay inside
(its seccomp filter and listener) and the proxy socket, then the agent's own
start up to its first output. Each session is closed before the next.

The first sandboxed start also runs the one trial bwrap the daemon makes to
learn whether the machine can sandbox; it is reported apart.

Usage: bench/sandbox_start.py [--rounds 30]
Needs: bwrap (Debian package bubblewrap) and the binaries
(cargo build --release --workspace --bins, or a debug build with --debug).
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402


def timed_new(c, cwd, sandbox):
    body = {"provider": "claude", "cwd": cwd, "fallback_cwd": cwd, "no_mcp": True}
    if sandbox:
        body["sandbox"] = True
    t0 = time.perf_counter()
    rid = c.send("new", body)
    while True:
        r = c.read()
        if r.get("id") == rid:
            break
    took = time.perf_counter() - t0
    if not r.get("ok") or r["body"].get("state") != "live":
        raise RuntimeError(f"start failed: {r}")
    return r["body"]["id"], took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--debug", action="store_true", help="use target/debug binaries")
    a = ap.parse_args()
    if not shutil.which("bwrap"):
        print("sandbox_start: bwrap is not installed (Debian package bubblewrap)")
        return
    bins = None
    if a.debug:
        d = os.path.join(os.path.dirname(__file__), "..", "target", "debug")
        bins = hb.binaries(os.path.realpath(d))
    h = hb.Home(bins)
    try:
        os.makedirs(h.home, exist_ok=True)
        with open(os.path.join(h.home, "config.toml"), "w") as f:
            f.write("[governor]\nwake_spacing_ms = 0\n[restore]\nsettle_ms = 0\n")
        h.start_daemon()
        c = h.wait_socket()
        # Warm-up of both kinds (first-use allocations, the trial bwrap run).
        sid, _ = timed_new(c, h.work, False)
        c.ask("close", {"session": sid, "yes": True})
        sid, first_sandboxed = timed_new(c, h.work, True)
        c.ask("close", {"session": sid, "yes": True})
        plain, boxed = [], []
        for _ in range(a.rounds):
            for sandbox, out in ((False, plain), (True, boxed)):
                sid, took = timed_new(c, h.work, sandbox)
                out.append(took)
                c.ask("close", {"session": sid, "yes": True})

        def ms(xs):
            return {"median_ms": round(statistics.median(xs) * 1000, 2),
                    "p90_ms": round(sorted(xs)[int(len(xs) * 0.9) - 1] * 1000, 2)}

        print(json.dumps({
            "rounds": a.rounds,
            "load_average": os.getloadavg(),
            "plain_start": ms(plain),
            "sandboxed_start": ms(boxed),
            "added_by_the_sandbox_median_ms": round(
                (statistics.median(boxed) - statistics.median(plain)) * 1000, 2),
            "first_sandboxed_start_with_the_trial_run_ms": round(first_sandboxed * 1000, 2),
        }, indent=1))
    finally:
        h.close()


if __name__ == "__main__":
    main()
