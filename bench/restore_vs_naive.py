#!/usr/bin/env python3
"""Issue 4 headline benchmark: restoring N persisted sessions with V visible.

hangar: the workspace (V panes over 3 tabs, N-V parked, every session with a
provider session id) is written to a fresh store with `hangar import`; then
`hangar daemon` starts and we time until `status` reports the restore
complete with every pane live. We count the agent processes that ever ran
(sampled from /proc, and exactly from the transcripts the fake agents wrote),
the peak number of this run's processes alive at once, and peak load
(/proc/loadavg: the 1-minute average and the instantaneous runnable count).

naive (--strategy naive): what the old design did, done by this script, not
by hangar: one agent per persisted session, all started at once, each in its
own PTY resuming its id; timed until every one has written its start record.
The old design also ran one capture proxy per agent; that is not modelled,
so the naive figures are a lower bound on the old cost.

Usage: bench/restore_vs_naive.py [--n 49,1000,10000] [--visible 9]
       [--strategy both|hangar|naive] [--naive-max 1000]
Needs a release build: cargo build --release --workspace --bins
"""

import argparse
import json
import os
import pty
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402


def transcripts_started(claude_dir):
    n = 0
    for root, _, files in os.walk(os.path.join(claude_dir, "projects")):
        n += sum(1 for f in files if f.endswith(".jsonl"))
    return n


def run_hangar(n, visible):
    h = hb.Home()
    try:
        ws, panes, _ = h.import_crafted(n, visible)
        with hb.Sampler(lambda: hb.fake_agents(h.pids())) as s:
            t0 = time.monotonic()
            h.start_daemon()
            c = h.wait_socket()
            while True:
                st = c.ask("status", {})
                if st["restore"]["complete"] and st["sessions"]["live"] >= visible:
                    break
                time.sleep(0.01)
            elapsed = time.monotonic() - t0
            time.sleep(0.3)  # one more sample round after the end
        live = hb.fake_agents(h.pids())
        return {
            "strategy": "hangar", "n": n, "visible": visible,
            "spawned": transcripts_started(h.claude), "spawned_seen": len(s.seen),
            "alive_after": len(live), "seconds_all_panes_live": round(elapsed, 3),
            "daemon_restore_ms": st["restore"]["duration_ms"],
            "peak_procs": s.peak_procs, "peak_running": s.peak_running,
            "peak_load1": s.peak_load1, "hibernated": st["restore"]["hibernated"],
        }
    finally:
        h.close()


def run_naive(n):
    h = hb.Home()
    procs, masters = [], []
    try:
        _, panes, others = hb.craft(n, 0, h.work)
        ids = [psid for _, psid in panes + others]
        with hb.Sampler(lambda: hb.fake_agents(h.pids())) as s:
            t0 = time.monotonic()
            for psid in ids:
                m, slave = pty.openpty()
                p = subprocess.Popen([h.fake, "--resume", psid], env=h.env, cwd=h.work,
                                     stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True)
                os.close(slave)
                procs.append(p)
                masters.append(m)
            while transcripts_started(h.claude) < n:
                # Drain the PTYs so no agent blocks on a full terminal.
                for m in masters:
                    try:
                        os.set_blocking(m, False)
                        os.read(m, 65536)
                    except OSError:
                        pass
                time.sleep(0.01)
            elapsed = time.monotonic() - t0
            time.sleep(0.3)
        return {
            "strategy": "naive", "n": n, "spawned": transcripts_started(h.claude),
            "alive_after": sum(1 for p in procs if p.poll() is None),
            "seconds_all_started": round(elapsed, 3), "peak_procs": s.peak_procs,
            "peak_running": s.peak_running, "peak_load1": s.peak_load1,
        }
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, 9)
            except OSError:
                pass
        for p in procs:
            p.wait()
        for m in masters:
            os.close(m)
        h.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="49,1000,10000")
    ap.add_argument("--visible", type=int, default=9)
    ap.add_argument("--strategy", default="both", choices=["both", "hangar", "naive"])
    ap.add_argument("--naive-max", type=int, default=1000,
                    help="largest N the naive strategy really runs (10,000 PTYs exceed "
                         "the default pty limit of 4096); larger N are extrapolated")
    a = ap.parse_args()
    for n in [int(x) for x in a.n.split(",")]:
        if a.strategy in ("both", "hangar"):
            print(json.dumps(run_hangar(n, a.visible)), flush=True)
        if a.strategy in ("both", "naive"):
            if n <= a.naive_max:
                print(json.dumps(run_naive(n)), flush=True)
            else:
                print(json.dumps({"strategy": "naive", "n": n, "skipped":
                                  f"above --naive-max {a.naive_max}; extrapolate"}), flush=True)


if __name__ == "__main__":
    main()
