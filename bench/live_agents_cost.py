#!/usr/bin/env python3
"""Issue 48: what live captured agents cost the daemon.

A daemon with the defaults that matter here (the recording proxy on, each
agent given the orchestration MCP server; `[governor] wake_spacing_ms = 0`
so back-to-back starts are not paced), its sessions `hangar-fake-agent` as
claude. One agent is started and left to settle first (first-use
allocations, the proxy's CA and listener, are not a per-agent cost); then
N more (default 40), each through the control socket's `new`; once all are
live and the daemon has gone idle, its memory is read again:

- RSS and PSS growth (`/proc/<pid>/status` VmRSS, `smaps_rollup` Pss) for
  the N agents;
- PSS per extra live agent: the growth divided by N (the way jcode and
  synaps give theirs, the agents' own processes excluded: they are the CLIs,
  not hangar). Nothing was printed into history beyond the agents' start
  screens, so this is the cost without history.

usage: bench/live_agents_cost.py [--build DIR] [--n 40] [--rounds 1] [--massif FILE]
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


def memory(pid):
    """(VmRSS, Pss) in KiB."""
    rss = hb.rss_kib(pid)
    pss = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def until_idle(pid, deadline=60):
    end = time.monotonic() + deadline
    last, still = cpu_ticks(pid), 0
    while still < 2 and time.monotonic() < end:
        time.sleep(0.25)
        now = cpu_ticks(pid)
        still = still + 1 if now == last else 0
        last = now


def growth(bins, n, massif=None):
    """The growth for `n` agents; with `massif` (a file name) the daemon runs
    under valgrind's massif, whose snapshots before and after the `n` starts
    say where the growth went (its memory figures are then massif's)."""
    h = hb.Home(bins=bins)
    try:
        os.makedirs(h.home, exist_ok=True)
        with open(os.path.join(h.home, "config.toml"), "w") as f:
            f.write("[governor]\nwake_spacing_ms = 0\n")
        if massif:
            log = open(os.path.join(h.root, "massif.log"), "wb")
            h.daemon = subprocess.Popen(["valgrind", "--tool=massif", "--time-unit=ms", "--detailed-freq=1",
                                         "--max-snapshots=200", "--threshold=0.5",
                                         f"--massif-out-file={massif}", h.hangar, "daemon"],
                                        env=h.env, cwd=h.work, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            c = h.wait_socket(300)
            pid = int(open(os.path.join(h.home, "run", "daemon.lock")).read())
        else:
            pid = h.start_daemon()
            c = h.wait_socket()

        def new():
            c.ask("new", {"provider": "claude", "cwd": h.work, "fallback_cwd": h.work})

        new()
        time.sleep(2.0)
        until_idle(pid)
        rss0, pss0 = memory(pid)
        for _ in range(n):
            new()
        end = time.monotonic() + 120
        while c.ask("status", {})["sessions"]["live"] < n + 1:
            if time.monotonic() > end:
                raise RuntimeError(f"{n + 1} agents never all live")
            time.sleep(0.05)
        time.sleep(2.0)
        until_idle(pid)
        live = len(hb.fake_agents(h.pids()))
        if live != n + 1:
            raise RuntimeError(f"{live} fake agents alive, expected {n + 1}")
        rss1, pss1 = memory(pid)
        return {"rss_growth_40_kib" if n == 40 else f"rss_growth_{n}_kib": rss1 - rss0,
                "pss_growth_40_kib" if n == 40 else f"pss_growth_{n}_kib": pss1 - pss0,
                "pss_per_agent_kib": round((pss1 - pss0) / n, 1),
                "rss_before_kib": rss0}
    finally:
        h.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="a folder with hangar and hangar-fake-agent (default: HANGAR_BIN_DIR "
                                    "or target/release)")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--massif", help="run the daemon under valgrind's massif, its data written to this file "
                                     "(ms_print FILE shows where the growth went)")
    a = ap.parse_args()
    bins = hb.binaries(a.build)
    print(f"load average before {open('/proc/loadavg').read().strip()}")
    rounds = []
    for _ in range(a.rounds):
        r = growth(bins, a.n, a.massif)
        rounds.append(r)
        print(json.dumps(r), flush=True)
    if len(rounds) > 1:
        print(json.dumps({k: statistics.median(r[k] for r in rounds) for k in rounds[0]}))
    print(f"load average after {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
