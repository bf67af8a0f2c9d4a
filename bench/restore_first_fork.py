#!/usr/bin/env python3
"""Issue 20 restore benchmark: how soon a daemon with N persisted sessions
forks its first pane, how soon all its visible panes are live, and how much
memory it holds once they are.

For each hangar build given (`--build NAME=DIR`, DIR holding `hangar` and
`hangar-fake-agent`), in one run and alternating the builds round by round:
the workspace (V panes over 3 tabs, N - V parked, every session with a
provider session id) is written to a fresh store through hangar itself
(`hangar import hangar FILE`, offline: no daemon running), then
`hangar daemon` is exec'd and timed from the moment `Popen` returned (the
exec succeeded) to:

- first SpawnBegin: the journal's first `spawn-begin` line (`time_ms` is the
  daemon's wall-anchored clock, compared with this script's wall clock; the
  daemon records it just before it forks the pane's process);
- first agent in /proc: the first child of the daemon (any of its threads'
  `/proc/<pid>/task/<tid>/children`) whose command line resumes a session
  (`--resume`), polled every 0.5 ms; the daemon's own `--version` probe of
  the CLI is not a pane and is not counted;
- all panes live: `status` over the control socket reports the restore
  complete with V sessions live (polled every 10 ms);
- memory: the daemon's `VmRSS` and `VmHWM` (peak) from `/proc/<pid>/status`
  once every pane is live and the restore is complete.

Usage: bench/restore_first_fork.py --build old=DIR --build new=DIR
       [--n 10000] [--visible 9] [--rounds 3]
Needs release builds (`cargo build --release -p hangar -p hangar-fake-agent`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402


def children(pid):
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def resumes(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"--resume" in f.read().split(b"\0")
    except OSError:
        return False


def vm(pid):
    got = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM"):
                got[key] = int(line.split()[1])
    return got


def first_spawn_begin_ms(home):
    path = os.path.join(home, "journal.jsonl")
    try:
        with open(path) as f:
            for line in f:
                entry = json.loads(line)
                if entry.get("event") == "spawn-begin":
                    return entry["time_ms"]
    except OSError:
        pass
    return None


def run_one(name, bins, n, visible):
    h = hb.Home(bins=bins)
    try:
        ws, panes, _ = h.import_crafted(n, visible)
        wall0 = time.time()
        t0 = time.monotonic()
        pid = h.start_daemon()
        first_agent = None
        deadline = t0 + 60
        while first_agent is None and time.monotonic() < deadline:
            if any(resumes(c) for c in children(pid)):
                first_agent = time.monotonic() - t0
                break
            time.sleep(0.0005)
        c = h.wait_socket()
        while True:
            st = c.ask("status", {})
            if st["restore"]["complete"] and st["sessions"]["live"] >= visible:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: the restore did not complete: {st}")
            time.sleep(0.01)
        all_live = time.monotonic() - t0
        mem = vm(pid)
        begin = first_spawn_begin_ms(h.home)
        return {
            "build": name, "n": n, "visible": visible,
            "first_spawn_begin_ms": None if begin is None else round(begin - wall0 * 1000, 1),
            "first_agent_in_proc_ms": None if first_agent is None else round(first_agent * 1000, 1),
            "all_panes_live_ms": round(all_live * 1000, 1),
            "daemon_restore_ms": st["restore"]["duration_ms"],
            "live": st["sessions"]["live"], "hibernated": st["restore"]["hibernated"],
            "agents_alive": len(hb.fake_agents(h.pids())),
            "vm_rss_kib": mem.get("VmRSS"), "vm_hwm_kib": mem.get("VmHWM"),
        }
    finally:
        h.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True,
                    help="NAME=DIR: a folder with `hangar` and `hangar-fake-agent`")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--visible", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    builds = []
    for b in a.build:
        name, _, d = b.partition("=")
        builds.append((name, hb.binaries(d)))
    results = {name: [] for name, _ in builds}
    for _ in range(a.rounds):
        for name, bins in builds:
            r = run_one(name, bins, a.n, a.visible)
            results[name].append(r)
            print(json.dumps(r), flush=True)
    for name, rs in results.items():
        def med(key):
            vals = [r[key] for r in rs if r[key] is not None]
            return statistics.median(vals) if vals else None
        print(json.dumps({
            "build": name, "n": a.n, "visible": a.visible, "rounds": len(rs),
            "median_first_spawn_begin_ms": med("first_spawn_begin_ms"),
            "median_first_agent_in_proc_ms": med("first_agent_in_proc_ms"),
            "median_all_panes_live_ms": med("all_panes_live_ms"),
            "median_vm_rss_kib": med("vm_rss_kib"), "median_vm_hwm_kib": med("vm_hwm_kib"),
        }), flush=True)


if __name__ == "__main__":
    main()
