#!/usr/bin/env python3
"""Issue 47 part 3 benchmark: the peak memory of a fleet of agents that grow,
without a memory budget and with one, measured as the governor measures it
(proportional set size, `Pss` of /proc/PID/smaps_rollup: a page shared by
many agents counted once) and beside it as resident memory (RSS, a shared
page counted once per process that maps it).

One run of the script, two daemons one after the other, the same work:
N parked hangar-fake-agent claude sessions, each mapping the same runtime
file (FAKE_AGENT_SHARED_FILE: the pages node's binary and the CLI's code
are for real agents) and holding BASE MiB of its own at start; a person
(W workers at once) sends each agent R prompts `grow G MS` in turn (a turn
that takes G MiB more as it works and keeps it, as an agent's heap keeps
what a tool run made it take), waiting for each turn to end. A sampler reads
every fake agent's PSS and RSS every 200 ms; the peaks are reported, with
the daemon's own figure (`status`), the budget's hibernations (journal) and
the wall time.

With the budget, a send to an agent the budget hibernated wakes it through
the admission (room made first, or a wait in the queue); the woken agent
starts at its idle size, which is what the budget saves.

Usage: bench/memory_budget.py [--agents 20] [--rounds 3] [--grow-mb 25]
       [--grow-ms 1500] [--base-mb 25] [--shared-mb 150] [--workers 4]
       [--budget-mb 500] [--debug]
Needs the binaries (cargo build --release --workspace --bins, or a debug
build with --debug).
"""

import argparse
import concurrent.futures
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402

MIB = 1024 * 1024


def kib(path, field):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class MemorySampler:
    """Every `period` s: the sum of every fake agent's PSS and RSS (KiB),
    and the daemon's own `status` figure; keeps the peaks."""

    def __init__(self, home, period=0.2):
        self.home = home
        self.period = period
        self.peak_pss = 0
        self.peak_rss = 0
        self.peak_live = 0
        self.peak_status = 0
        self.peak_status_resident = 0
        self.samples = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            agents = hb.fake_agents(self.home.pids())
            pss = sum(kib(f"/proc/{p}/smaps_rollup", "Pss") for p in agents)
            rss = sum(kib(f"/proc/{p}/smaps_rollup", "Rss") for p in agents)
            self.peak_pss = max(self.peak_pss, pss)
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_live = max(self.peak_live, len(agents))
            try:
                b = self.home.json("status")["budget"]
                self.peak_status = max(self.peak_status, b["memory_bytes"] // 1024)
                self.peak_status_resident = max(self.peak_status_resident,
                                                b.get("resident_bytes", 0) // 1024)
            except (RuntimeError, ValueError, KeyError):
                pass
            self.samples += 1
            self._stop.wait(self.period)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def run(a, bins, budget_mb):
    h = hb.Home(bins)
    try:
        os.makedirs(h.home, exist_ok=True)
        shared = os.path.join(h.root, "runtime.bin")
        with open(shared, "wb") as f:
            f.write(os.urandom(MIB) * a.shared_mb)
        h.env["FAKE_AGENT_SHARED_FILE"] = shared
        h.env["FAKE_AGENT_ALLOC_MB"] = str(a.base_mb)
        governor = "[governor]\nwake_spacing_ms = 0\n"
        if budget_mb:
            governor += f"max_memory_mb = {budget_mb}\n"
        with open(os.path.join(h.home, "config.toml"), "w") as f:
            f.write(governor + "[restore]\nsettle_ms = 0\n")
        h.start_daemon()
        c = h.wait_socket()
        ids = []
        for i in range(a.agents):
            r = c.ask("new", {"provider": "claude", "cwd": h.work, "fallback_cwd": h.work,
                              "title": f"agent {i}", "parked": True, "no_mcp": True})
            ids.append(r["id"])
        jobs = [(sid, r) for r in range(a.rounds) for sid in ids]
        prompt = f"grow {a.grow_mb} {a.grow_ms}"

        def turn(job):
            sid, _ = job
            h.cli("send", sid, prompt)
            waited = h.json("wait", sid, "--until", "idle", "--timeout", "300s")
            return bool(waited.get("done"))

        start = time.monotonic()
        with MemorySampler(h) as sampler:
            with concurrent.futures.ThreadPoolExecutor(a.workers) as pool:
                turns = sum(pool.map(turn, jobs))
        wall = time.monotonic() - start
        summary = h.json("journal", "summarize")
        return {
            "budget_mb": budget_mb,
            "peak_fleet_pss_mib": round(sampler.peak_pss / 1024),
            "peak_fleet_rss_mib": round(sampler.peak_rss / 1024),
            "peak_status_memory_mib": round(sampler.peak_status / 1024),
            "peak_status_resident_mib": round(sampler.peak_status_resident / 1024),
            "peak_live_agents": sampler.peak_live,
            "budget_hibernations": summary.get("budget_hibernations"),
            "turns_finished": turns,
            "turns_sent": len(jobs),
            "wall_s": round(wall, 1),
            "samples": sampler.samples,
        }
    finally:
        h.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--grow-mb", type=int, default=25)
    ap.add_argument("--grow-ms", type=int, default=1500)
    ap.add_argument("--base-mb", type=int, default=25)
    ap.add_argument("--shared-mb", type=int, default=150)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--budget-mb", type=int, default=500)
    ap.add_argument("--debug", action="store_true", help="use target/debug binaries")
    a = ap.parse_args()
    bins = None
    if a.debug:
        d = os.path.join(os.path.dirname(__file__), "..", "target", "debug")
        bins = hb.binaries(os.path.realpath(d))
    without = run(a, bins, None)
    within = run(a, bins, a.budget_mb)
    print(json.dumps({
        "agents": a.agents,
        "rounds": a.rounds,
        "grow": f"{a.grow_mb} MiB over {a.grow_ms} ms per turn",
        "base_mb": a.base_mb,
        "shared_mb": a.shared_mb,
        "workers": a.workers,
        "load_average": os.getloadavg(),
        "without_budget": without,
        "with_budget": within,
    }, indent=1))


if __name__ == "__main__":
    main()
