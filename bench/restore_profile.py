#!/usr/bin/env python3
"""Issue 48: where a daemon restoring N saved sessions spends its memory and
its first milliseconds, with named tools.

One daemon start per mode, on a store of N sessions (V panes over 3 tabs,
N - V parked, each with a provider session id; `hangar_bench.craft`), written
through `hangar import hangar` with no daemon running:

- `--mode memory` (default): the daemon as it is; once `status` reports the
  restore complete with V live, its memory by kind of mapping from
  `/proc/<pid>/smaps`: the heap (`[heap]` and anonymous mappings), thread
  stacks, the binary's own pages, shared libraries; and `smaps_rollup`'s
  Rss / Pss / Anonymous.
- `--mode massif`: the same start under valgrind's massif (heaptrack cannot
  profile it: the daemon closes every inherited descriptor first, heaptrack's
  own pipe among them); once every pane is live and 2 s have passed the
  daemon is shut down; `ms_print`'s report is written beside the data: its
  peak is the load's, its last detailed snapshot before the shutdown the
  heap once every pane is live.
- `--mode timeline`: the start under `strace -f -ttt` (process, file and
  socket calls); the first `--window-ms` after exec as one line per call,
  milliseconds from the exec, with the files named, then the first fork of a
  pane. strace slows every call it sees, so the times are upper bounds; the
  order is what it shows.

usage: bench/restore_profile.py --build DIR [--n 10000] [--visible 9]
         [--mode memory|massif|timeline] [--out FILE] [--window-ms 50]
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402


def daemon_pid(home, deadline=60):
    """The daemon's own pid, from its lock file (under valgrind or strace
    the process started is the wrapper, not the daemon)."""
    lock = os.path.join(home, "run", "daemon.lock")
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            pid = int(open(lock).read().strip())
            # `hangar import` took the same lock and left its own pid there.
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"daemon" in f.read().split(b"\0"):
                    return pid
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    raise RuntimeError("the daemon never wrote its pid")


def wait_restored(h, visible, deadline=120):
    c = h.wait_socket(deadline)
    end = time.monotonic() + deadline
    while True:
        st = c.ask("status", {})
        if st["restore"]["complete"] and st["sessions"]["live"] >= visible:
            return st
        if time.monotonic() > end:
            raise RuntimeError(f"the restore did not complete: {st}")
        time.sleep(0.01)


def smaps_by_kind(pid, binary):
    """Rss and Pss in KiB per kind of mapping."""
    kinds = {}
    kind = None
    binary = os.path.realpath(binary)
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
            if head:
                path = head.group(4).strip()
                if path == "[heap]":
                    kind = "heap ([heap])"
                elif path == "[stack]":
                    kind = "main thread stack"
                elif path == "":
                    kind = "anonymous (malloc arenas, thread stacks, mmap'd allocations)"
                elif os.path.realpath(path) == binary or path.endswith("/hangar"):
                    kind = "the hangar binary"
                elif ".so" in path:
                    kind = "shared libraries"
                else:
                    kind = "other: " + path
                continue
            m = re.match(r"^(Rss|Pss):\s+(\d+) kB", line)
            if m and kind:
                d = kinds.setdefault(kind, {"Rss": 0, "Pss": 0})
                d[m.group(1)] += int(m.group(2))
    return kinds


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            m = re.match(r"^(Rss|Pss|Anonymous|Pss_Anon|Pss_File):\s+(\d+) kB", line)
            if m:
                out[m.group(1)] = int(m.group(2))
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads")):
                k, v = line.split(":", 1)
                out[k] = v.strip()
    return out


def mode_memory(a, h, visible):
    h.start_daemon()
    pid = daemon_pid(h.home)
    st = wait_restored(h, visible)
    print(f"restore: {st['restore'].get('duration_ms')} ms, {st['sessions']['live']} live, "
          f"{st['restore'].get('hibernated')} hibernated")
    for k, v in rollup(pid).items():
        print(f"  {k}: {v}")
    for kind, d in sorted(smaps_by_kind(pid, h.hangar).items(), key=lambda kv: -kv[1]["Rss"]):
        print(f"  {d['Rss']:>7} KiB rss {d['Pss']:>7} KiB pss  {kind}")


def mode_massif(a, h, visible):
    out = a.out or os.path.join(os.getcwd(), "restore.massif")
    log = open(os.path.join(h.root, "massif.log"), "wb")
    # heaptrack cannot profile the daemon: it closes every inherited fd
    # first (hangar's main.rs), heaptrack's pipe among them. valgrind keeps
    # its own descriptors out of the process's reach.
    wrapper = subprocess.Popen(["valgrind", "--tool=massif", "--time-unit=ms", "--detailed-freq=1",
                                "--max-snapshots=200", "--threshold=0.5", f"--massif-out-file={out}",
                                h.hangar, "daemon"], env=h.env, cwd=h.work,
                               stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    pid = daemon_pid(h.home, 600)
    st = wait_restored(h, visible, 1200)
    time.sleep(2.0)
    print(f"restore under massif: {st['restore'].get('duration_ms')} ms, "
          f"{st['sessions']['live']} live; VmRSS {rollup(pid).get('VmRSS')}")
    mark = time.monotonic()
    h.cli("shutdown", check=False)
    wrapper.wait(600)
    text = subprocess.run(["ms_print", "--threshold=0.5", out], capture_output=True, text=True).stdout
    report = out + ".txt"
    with open(report, "w") as f:
        f.write(text)
    print(f"massif data: {out}; ms_print report: {report} (the peak snapshot is the load's; the "
          f"last detailed snapshot before the shutdown, {time.monotonic() - mark:.1f} s before the "
          "end, is the heap once every pane is live)")


def mode_timeline(a, h, visible):
    out = a.out or os.path.join(h.root, "strace.txt")
    wrapper = subprocess.Popen(
        ["strace", "-f", "--seccomp-bpf", "-ttt", "-o", out, "-e",
         "trace=%process,openat,bind,listen,fsync,fdatasync,flock,rename", h.hangar, "daemon"],
        env=h.env, cwd=h.work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    daemon_pid(h.home)
    wait_restored(h, visible, 300)
    h.cli("shutdown", check=False)
    wrapper.wait(60)
    lines = open(out).read().splitlines()
    t0 = None
    first_pane = None
    shown = []
    for line in lines:
        m = re.match(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$", line)
        if not m:
            continue
        t = float(m.group(2))
        call = m.group(3)
        if t0 is None and call.startswith("execve("):
            t0 = t
        if t0 is None:
            continue
        ms = (t - t0) * 1000
        if first_pane is None and call.startswith("execve(") and "--resume" in call:
            first_pane = ms
        if ms <= a.window_ms and not call.startswith(("+++", "---")):
            shown.append(f"{ms:8.2f} ms  [{m.group(1)}] {call[:160]}")
    print("\n".join(shown))
    print(f"first pane's exec (--resume): {first_pane:.2f} ms after the daemon's exec (under strace)"
          if first_pane is not None else "no pane exec seen")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="a folder holding hangar and hangar-fake-agent (default: HANGAR_BIN_DIR "
                                    "or target/release)")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--visible", type=int, default=9)
    ap.add_argument("--mode", choices=("memory", "massif", "timeline"), default="memory")
    ap.add_argument("--out", help="massif data file or strace output (default: beside the run)")
    ap.add_argument("--window-ms", type=float, default=50)
    a = ap.parse_args()
    h = hb.Home(bins=hb.binaries(a.build))
    try:
        h.import_crafted(a.n, a.visible)
        print(f"load average {open('/proc/loadavg').read().strip()}")
        {"memory": mode_memory, "massif": mode_massif, "timeline": mode_timeline}[a.mode](a, h, a.visible)
    finally:
        h.close()


if __name__ == "__main__":
    main()
