#!/usr/bin/env python3
"""What one save costs the daemon with N persisted sessions.

For each build given (`--build NAME=DIR`, DIR holding `hangar` and
`hangar-fake-agent`), alternating builds round by round: N sessions (9 panes,
the rest parked) imported into a fresh home, the daemon started and left to
finish its restore, then `hangar pin` and `hangar unpin` of one parked session
`--pairs` times through the CLI (each one save). Reported: the daemon's CPU
(utime + stime from `/proc/<pid>/stat`, 10 ms ticks) per save, and the wall
time per CLI call (the CLI process's own start included).

Usage: bench/store_save_cost.py --build old=DIR --build new=DIR
       [--n 10000] [--pairs 20] [--rounds 2]
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def run_one(name, bins, n, pairs):
    h = hb.Home(bins=bins)
    try:
        ws, _, _ = h.import_crafted(n, 9)
        pid = h.start_daemon()
        c = h.wait_socket()
        deadline = time.monotonic() + 60
        while not c.ask("status", {})["restore"]["complete"]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: the restore did not complete")
            time.sleep(0.01)
        # Let the panes' first output and settles pass, so the ticks below
        # are the saves'.
        time.sleep(1.5)
        parked = ws["workspace"]["parked"] if "workspace" in ws else ws["parked"]
        sid = sorted(parked)[0]
        ticks0, wall0 = cpu_ticks(pid), time.monotonic()
        for _ in range(pairs):
            h.cli("pin", sid)
            h.cli("unpin", sid)
        saves = 2 * pairs
        return {
            "build": name, "n": n, "saves": saves,
            "daemon_cpu_ms_per_save": round((cpu_ticks(pid) - ticks0) * 10 / saves, 2),
            "wall_ms_per_cli_call": round((time.monotonic() - wall0) * 1000 / saves, 1),
        }
    finally:
        h.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", action="append", required=True, help="NAME=DIR")
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    builds = [(b.split("=", 1)[0], hb.binaries(b.split("=", 1)[1])) for b in a.build]
    for _ in range(a.rounds):
        for name, bins in builds:
            print(json.dumps(run_one(name, bins, a.n, a.pairs)), flush=True)


if __name__ == "__main__":
    main()
