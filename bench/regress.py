#!/usr/bin/env python3
"""Issue 48's regression check: two (or more) hangar builds, every figure of
the issue measured on each in one run on this machine, a table, and a
non-zero exit when the last build is more than --tolerance (15%) worse than
the first on any figure.

Builds are folders holding `hangar` and `hangar-fake-agent` (release builds:
`cargo build --release -p hangar -p hangar-fake-agent --bins`, then copy the
two binaries aside for the build before). Rounds alternate the builds, so a
load that comes and goes falls on both; each figure is the median of its
rounds.

Figures (lower is better for every one):

  restore   10,000 saved sessions, 9 panes (bench/restore_first_fork.py's
            round): exec to the first pane's `spawn-begin`, exec to every
            pane live, the daemon's own `restore.duration_ms`, its VmRSS
            once every pane is live.
  agents    a daemon with the recording proxy on (the default) and its
            orchestration server: RSS and PSS growth from 1 live claude
            session (`hangar-fake-agent`) to 1 + 40, and the PSS per extra
            live agent (bench/live_agents_cost.py's measure).
  cpu       the daemon's CPU for 100 MB of agent-like output and of 160-column
            lines that wrap from one session, no client
            (bench/server_cost_vs_tmux.py's `bulk` and `bulk_wrap`).
  attach    seconds for 100 MB of agent-like output and of wrapping lines to
            an attached client (bench/attach_vs_tmux.py's client,
            bench/server_cost_vs_tmux.py's `--attach`).

The tmux side of each comparison is a property of tmux, not of a build, so
it is not run here; `server_cost_vs_tmux.py` measures hangar beside tmux.
Wall-clock figures: never run by CI. Figures under 1 ms (or 1 MiB) of
difference are not counted as regressions whatever the percentage.

usage: bench/regress.py --build old=DIR --build new=DIR [--rounds 2]
         [--figures restore,agents,cpu,attach] [--tolerance 0.15] [--mb 100]
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402
import live_agents_cost  # noqa: E402
import restore_first_fork  # noqa: E402

# (figure, unit, the smallest difference that counts as a change)
FIGURES = {
    "restore": [("first_spawn_begin_ms", "ms", 1.0), ("all_panes_live_ms", "ms", 5.0),
                ("daemon_restore_ms", "ms", 5.0), ("vm_rss_kib", "KiB", 1024)],
    "agents": [("rss_growth_40_kib", "KiB", 1024), ("pss_growth_40_kib", "KiB", 1024),
               ("pss_per_agent_kib", "KiB", 25)],
    "cpu": [("cpu_agent_like_s", "s", 0.05), ("cpu_wrapping_s", "s", 0.05)],
    "attach": [("attach_agent_like_s", "s", 0.1), ("attach_wrapping_s", "s", 0.1)],
}


def use_build(bins):
    """The server_cost / attach helpers find the build through HANGAR_BIN_DIR."""
    os.environ["HANGAR_BIN_DIR"] = os.path.dirname(os.path.abspath(bins[0]))


def measure(kind, bins, a, files):
    use_build(bins)
    if kind == "restore":
        r = restore_first_fork.run_one("build", bins, 10000, 9)
        return {k: r[k] for k, _, _ in FIGURES["restore"]}
    if kind == "agents":
        return live_agents_cost.growth(bins, 40)
    import server_cost_vs_tmux as sc

    if kind == "cpu":
        out = {}
        for key, path in (("cpu_agent_like_s", files["agent_like"]), ("cpu_wrapping_s", files["wrapping"])):
            out[key] = sc.with_server(sc.HangarServer, sc.one_session_bulk(path, a.mb))["cpu_s"]
        return out
    if kind == "attach":
        import attach_vs_tmux as avt

        out = {}
        for key, path, rows, cols in (("attach_agent_like_s", files["agent_like"], avt.ROWS, avt.COLS),
                                      ("attach_wrapping_s", files["wrapping"], sc.ROWS, sc.COLS)):
            h = hb.Home(bins=bins)
            try:
                secs, _lat = avt.bench_hangar(bins[0], path, 1, h.root, rows, cols)
            finally:
                h.close()
            out[key] = round(secs, 3)
        return out
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", required=True,
                    help="NAME=DIR: a folder with `hangar` and `hangar-fake-agent`; the first is the "
                         "reference, the last the build checked")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--figures", default="restore,agents,cpu,attach")
    ap.add_argument("--tolerance", type=float, default=0.15)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--json", action="store_true", help="also print every round as JSON")
    a = ap.parse_args()
    kinds = [k for k in a.figures.split(",") if k]
    for k in kinds:
        if k not in FIGURES:
            ap.error(f"unknown figure set {k!r} (known: {', '.join(FIGURES)})")
    builds = []
    for b in a.build:
        name, _, d = b.partition("=")
        builds.append((name, hb.binaries(d)))
    if len(builds) < 2:
        ap.error("give two builds: --build old=DIR --build new=DIR")
    load_before = open("/proc/loadavg").read().split()[:3]

    data = hb.Home(bins=builds[0][1])
    files = {}
    try:
        if "cpu" in kinds or "attach" in kinds:
            import server_cost_vs_tmux as sc

            files["agent_like"] = os.path.join(data.root, "agent-like.bin")
            hb.write_repeated(files["agent_like"], sc.agent_output_block(), a.mb)
            files["wrapping"] = os.path.join(data.root, "wrapping.txt")
            hb.write_repeated(files["wrapping"], hb.wrapping_lines_block(), a.mb)
        results = {name: {} for name, _ in builds}
        for rnd in range(a.rounds):
            for kind in kinds:
                # Alternate which build goes first from round to round.
                order = builds if rnd % 2 == 0 else list(reversed(builds))
                for name, bins in order:
                    got = measure(kind, bins, a, files)
                    if a.json:
                        print(json.dumps({"round": rnd + 1, "build": name, kind: got}), flush=True)
                    for k, v in got.items():
                        results[name].setdefault(k, []).append(v)
                    print(f"round {rnd + 1}: {name} {kind} {got}", file=sys.stderr, flush=True)
    finally:
        data.close()
    load_after = open("/proc/loadavg").read().split()[:3]

    ref_name, new_name = builds[0][0], builds[-1][0]
    names = [n for n, _ in builds]
    print(f"| figure | {' | '.join(names)} | {new_name} / {ref_name} | verdict |")
    print("|" + " --- |" * (len(names) + 3))
    worse = []
    for kind in kinds:
        for key, unit, floor in FIGURES[kind]:
            meds = {n: statistics.median(results[n][key]) for n in names if results[n].get(key)}
            if ref_name not in meds or new_name not in meds:
                continue
            ref, new = meds[ref_name], meds[new_name]
            ratio = new / ref if ref else float("inf")
            bad = new > ref * (1 + a.tolerance) and new - ref >= floor
            if bad:
                worse.append(key)
            cells = " | ".join(f"{meds[n]:,.1f} {unit}" for n in names)
            print(f"| {key} | {cells} | {ratio:.2f}x | {'WORSE' if bad else 'ok'} |")
    print(f"\n{a.rounds} round(s), medians; load average before {' '.join(load_before)}, "
          f"after {' '.join(load_after)}")
    if worse:
        print(f"{new_name} is more than {a.tolerance:.0%} worse than {ref_name} on: {', '.join(worse)}")
        return 1
    print(f"{new_name} is within {a.tolerance:.0%} of {ref_name} on every figure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
