#!/usr/bin/env python3
"""`hangar usage --json` over a large usage ledger (issue 29).

A fresh home's store is made by the daemon (so it has the ledger's tables),
the daemon is stopped, N recorded requests (default 100,000: 200 sessions,
three models of which one has no price, a month of times) are written into
`usage_requests` as the ledger writes them, and the daemon is started again.
Then, alternating round by round, the whole processes:

- `hangar usage --json --since 30d` (connect, the daemon's SQL sum, prices,
  the JSON document, print), and
- the peer, `sqlite3 state.db` running the same GROUP BY (the floor: the
  query alone, with no daemon, prices or JSON).

Reported: each one's wall time per call (min / median / max) and the
daemon's RSS after the calls (`VmRSS`). The issue's goal: `hangar usage
--json` over 100,000 requests under 200 ms.

Usage: bench/usage_ledger.py [--n 100000] [--runs 10]
(HANGAR_BIN_DIR: the folder of `hangar` and `hangar-fake-agent`, default
target/release.)
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402

QUERY = (
    "SELECT session, provider, model, count(*), sum(input), sum(output), "
    "sum(cache_write), sum(cache_read) FROM usage_requests WHERE at_ms >= {since} "
    "GROUP BY session, provider, model ORDER BY session, provider, model"
)


def fill(db, n, now_ms):
    models = ["claude-sonnet-4-5", "claude-haiku-4-5", "fake-agent"]
    rows = []
    month = 30 * 86_400_000
    for i in range(n):
        rows.append((
            f"session-{i % 200:04}", f"msg_bench_{i}", "claude", "sha256:bench",
            models[i % 3], now_ms - month + (i * month) // n,
            1000 + i % 97, 200 + i % 31, i % 7, 5000 + i % 13, 200, "proxy",
        ))
    con = sqlite3.connect(db)
    con.executemany(
        "INSERT INTO usage_requests (session, request_key, provider, account, model, at_ms, "
        "input, output, cache_write, cache_read, status, source) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()


def timed(cmd, env, cwd):
    t = time.monotonic()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    ms = (time.monotonic() - t) * 1000
    if out.returncode != 0:
        raise RuntimeError(f"{cmd}: {out.stderr}")
    return ms, out.stdout


def spread(xs):
    return {"min": round(min(xs), 1), "median": round(statistics.median(xs), 1),
            "max": round(max(xs), 1)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=10)
    a = p.parse_args()
    h = hb.Home()
    try:
        h.start_daemon()
        h.wait_socket()
        h.cli("shutdown")
        h.daemon.wait(timeout=30)
        db = os.path.join(h.home, "state.db")
        now_ms = int(time.time() * 1000)
        fill(db, a.n, now_ms)
        pid = h.start_daemon()
        h.wait_socket()
        rss_before = hb.rss_kib(pid)
        since = now_ms - 30 * 86_400_000
        hangar_ms, sqlite_ms = [], []
        for _ in range(a.runs):
            ms, out = timed([h.hangar, "--json", "usage", "--since", "30d"], h.env, h.work)
            hangar_ms.append(ms)
            doc = json.loads(out)
            assert doc["total"]["requests"] >= a.n * 0.99, doc["total"]
            ms, _ = timed(["sqlite3", db, QUERY.format(since=since)], h.env, h.work)
            sqlite_ms.append(ms)
        print(json.dumps({
            "requests": a.n,
            "hangar_usage_json_ms": spread(hangar_ms),
            "sqlite3_group_by_ms": spread(sqlite_ms),
            "daemon_rss_kib_before": rss_before,
            "daemon_rss_kib_after": hb.rss_kib(pid),
            "sessions": len(doc["sessions"]),
            "unpriced_requests": doc["total"]["unpriced_requests"],
        }), flush=True)
    finally:
        h.close()


if __name__ == "__main__":
    main()
