#!/usr/bin/env python3
"""Issue 3 benchmark: the daemon's own cost per session, with
hangar-fake-agent as the agent.

- spawn overhead: from writing a `new` request on the control socket until
  the agent's pid exists as a child of the daemon (read from
  /proc/<daemon>/task/*/children in a tight loop). This is the daemon's work
  (decode, resolve, persist, PTY, fork) without the agent's own start-up. The
  full reply latency is reported too: it also waits for the agent's first
  output plus a 300 ms settle in which a failing login would exit.
  The wake queue spaces starts (`[governor] wake_spacing_ms`, default 500):
  back-to-back `new`s wait for it, so the overhead is measured with spacing
  0 (`--spacing-ms 0`, the default here) and, for reference, with the
  product default (`--spacing-ms 500`).
- resident memory per live session: the daemon's VmRSS with 0, 1 and 50 live
  sessions (the children's memory is theirs, not counted).

Usage: bench/spawn_overhead.py [--rounds 30] [--spacing-ms 0]
Needs a release build: cargo build --release --workspace --bins
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402


def children(daemon):
    out = set()
    for tid in os.listdir(f"/proc/{daemon}/task"):
        try:
            with open(f"/proc/{daemon}/task/{tid}/children") as f:
                out.update(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


def timed_new(c, daemon, cwd):
    before = children(daemon)
    t0 = time.perf_counter()
    rid = c.send("new", {"provider": "claude", "cwd": cwd, "fallback_cwd": cwd,
                         "no_capture": True, "no_mcp": True})
    # Poll gently: a busy loop would take a core from the daemon it measures.
    while not (children(daemon) - before):
        time.sleep(0.0002)
    t_pid = time.perf_counter() - t0
    while True:
        r = c.read()
        if r.get("id") == rid:
            break
    t_reply = time.perf_counter() - t0
    if not r.get("ok"):
        raise RuntimeError(r)
    return r["body"]["id"], t_pid, t_reply


def settle_rss(pid):
    time.sleep(1.0)
    return hb.rss_kib(pid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--spacing-ms", type=int, default=0)
    a = ap.parse_args()
    h = hb.Home()
    try:
        os.makedirs(h.home, exist_ok=True)
        with open(os.path.join(h.home, "config.toml"), "w") as f:
            f.write(f"[governor]\nwake_spacing_ms = {a.spacing_ms}\n")
        daemon = h.start_daemon()
        c = h.wait_socket()
        # Warm-up: first-use allocations are not per-session cost.
        sid, _, _ = timed_new(c, daemon, h.work)
        c.ask("close", {"session": sid, "yes": True})
        rss0 = settle_rss(daemon)

        # 1 session: spawn, measure, close; repeated.
        one_pid, one_reply = [], []
        for _ in range(a.rounds):
            sid, tp, tr = timed_new(c, daemon, h.work)
            one_pid.append(tp)
            one_reply.append(tr)
            c.ask("close", {"session": sid, "yes": True})
        sid, _, _ = timed_new(c, daemon, h.work)
        rss1 = settle_rss(daemon)

        # 50 sessions: grow to 50 live, timing each spawn.
        fifty_pid, fifty_reply = [], []
        for _ in range(49):
            _, tp, tr = timed_new(c, daemon, h.work)
            fifty_pid.append(tp)
            fifty_reply.append(tr)
        rss50 = settle_rss(daemon)
        live = len(hb.fake_agents(h.pids()))

        def ms(xs):
            return {"median_ms": round(statistics.median(xs) * 1000, 2),
                    "p90_ms": round(sorted(xs)[int(len(xs) * 0.9) - 1] * 1000, 2)}

        print(json.dumps({
            "wake_spacing_ms": a.spacing_ms,
            "spawn_request_to_pid_1_live": ms(one_pid),
            "spawn_reply_1_live": ms(one_reply),
            "spawn_request_to_pid_up_to_50_live": ms(fifty_pid),
            "spawn_reply_up_to_50_live": ms(fifty_reply),
            "daemon_rss_kib": {"0": rss0, "1": rss1, "50": rss50},
            "rss_per_live_session_kib_1": rss1 - rss0,
            "rss_per_live_session_kib_50": round((rss50 - rss0) / 50, 1),
            "live_agents_at_end": live,
        }, indent=1))
    finally:
        h.close()


if __name__ == "__main__":
    main()
