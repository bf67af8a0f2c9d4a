#!/usr/bin/env python3
"""Issue 32 benchmark: the memory of an idle sandboxed agent against an idle
unsandboxed one.

One daemon, one run: N hangar-fake-agent claude sessions started plain and N
with `--sandbox` (alternating), left idle, then every process of each
session is measured from /proc: the session's pid (`hangar ls`) and all its
descendants. For a plain session that is the agent; for a sandboxed one it
is bwrap (and bwrap's own child, the pid namespace's init), hangar's relay
(`hangar __sandbox-relay`) and the agent. PSS (`/proc/PID/smaps_rollup`)
shares each page among the processes that map it, so the figures add up
without counting the shared hangar binary or libc once per process; RSS is
given too. What the daemon keeps per sandboxed session (the proxy socket,
its own socket back) is in the daemon's total, reported before and after.

The agent is hangar-fake-agent, not a real CLI: the point is what the
sandbox adds around any agent, which is the same for every CLI.

Usage: bench/sandbox_memory.py [--sessions 8] [--debug]
Needs: bwrap (Debian package bubblewrap) and the binaries
(cargo build --release -p hangar -p hangar-fake-agent --bins, or a debug build with --debug).
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


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def tree(pid):
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(children(p))
    return seen


def kib(pid, field, path):
    try:
        with open(path.format(pid)) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss(pid):
    return kib(pid, "Pss", "/proc/{}/smaps_rollup")


def rss(pid):
    return kib(pid, "VmRSS", "/proc/{}/status")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--debug", action="store_true", help="use target/debug binaries")
    a = ap.parse_args()
    if not shutil.which("bwrap"):
        print("sandbox_memory: bwrap is not installed (Debian package bubblewrap)")
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
        daemon = h.start_daemon()
        c = h.wait_socket()
        daemon_before = pss(daemon)
        ids = {False: [], True: []}
        for _ in range(a.sessions):
            for sandbox in (False, True):
                body = {"provider": "claude", "cwd": h.work, "fallback_cwd": h.work,
                        "no_mcp": True}
                if sandbox:
                    body["sandbox"] = True
                r = c.ask("new", body)
                if r.get("state") != "live":
                    raise RuntimeError(f"start failed: {r}")
                ids[sandbox].append(r["id"])
        # Idle: nothing typed; let start-up allocations settle.
        time.sleep(2)
        rows = {row["id"]: row for row in h.json("ls")}
        result = {}
        for sandbox, name in ((False, "plain"), (True, "sandboxed")):
            per_pss, per_rss, procs = [], [], []
            for sid in ids[sandbox]:
                pids = tree(rows[sid]["pid"])
                per_pss.append(sum(pss(p) for p in pids))
                per_rss.append(sum(rss(p) for p in pids))
                procs.append(len(pids))
            result[name] = {
                "processes_per_session": statistics.median(procs),
                "pss_kib_median": statistics.median(per_pss),
                "rss_kib_median": statistics.median(per_rss),
            }
        print(json.dumps({
            "sessions_each": a.sessions,
            "load_average": os.getloadavg(),
            **result,
            "added_by_the_sandbox_pss_kib": result["sandboxed"]["pss_kib_median"]
            - result["plain"]["pss_kib_median"],
            "daemon_pss_kib_before": daemon_before,
            "daemon_pss_kib_with_all_sessions": pss(daemon),
        }, indent=1))
    finally:
        h.close()


if __name__ == "__main__":
    main()
