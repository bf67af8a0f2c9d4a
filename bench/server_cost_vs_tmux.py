#!/usr/bin/env python3
"""Issue 20 baseline: what the server costs, hangar's daemon vs the tmux
server, with no client attached, both in one run.

Server CPU is utime+stime of the daemon (all its threads) or of the tmux
server, from /proc/<pid>/stat before and after; the sessions' own programs
are not counted. Every phase starts a fresh server of each kind, hangar first
then tmux, on the same bytes and the same terminal size (120x40, hangar's
size for a session no client has sized; tmux's history-limit 2000 lines,
hangar's scrollback 2000 lines):

- one session, 100 MB (and, for comparison with bench/attach_vs_tmux.py, the
  same size of plain 99-character lines): the session's shell runs `cat` on 100 MB of agent-like
  output (colours, 256-colour diff backgrounds, long wrapped lines, spinner
  redraws with `\\r` and erase-line, an input box redrawn by cursor-up and
  erase-below), then touches a file; measured until that file exists and the
  server has stopped using CPU (so every byte the server read is counted).
- one session, 100 MB of lines that wrap (`bulk_wrap`): 160-character lines
  of base64 (minified JSON, long log lines), two rows each at 120 columns.
- 20 sessions at 100 KB/s: each shell runs this script's printer, which
  writes the same output at 100 KB/s for 20 s, all starting at one instant.
- 20 idle live agents: `hangar-fake-agent` in 20 sessions (hangar's claude
  provider, without the recording proxy and MCP; the same binary straight
  under tmux), CPU over 30 s after a settle: percent of one core.
- memory per live session: the server's VmRSS and PSS growth per extra live
  agent, and per session after each of the 20 printed about 2 MB of history.
- with --attach, bench/attach_vs_tmux.py's client throughput and key echo on
  the same 100 MB file, and its throughput on the lines that wrap with both
  clients' terminals (so both sessions) at 120x40.

Everything runs in a private HANGAR_HOME and a private tmux socket; every
process carrying that home in its environment is killed at the end, on error
too. Figures go in BENCHMARKS.md; nothing here is ever asserted in a test.

Usage: bench/server_cost_vs_tmux.py [--hangar PATH] [--rounds 3] [--attach] [--json]
Needs a release build: cargo build --release --workspace --bins
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402

COLS, ROWS = 120, 40
TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(pid):
    """utime+stime of a process and all its threads, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def server_memory(pid):
    """(VmRSS, Pss) in KiB."""
    rss = hb.rss_kib(pid)
    pss = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def until_idle(pid, deadline=120):
    """Wait until the server has used no CPU for two samples in a row: the
    bytes still queued between its PTY reader and its screen are counted."""
    end = time.monotonic() + deadline
    last, still = server_cpu(pid), 0
    while still < 2:
        if time.monotonic() > end:
            raise RuntimeError(f"server {pid} never went idle")
        time.sleep(0.25)
        now = server_cpu(pid)
        still = still + 1 if now == last else 0
        last = now


def wait_files(paths, deadline):
    end = time.monotonic() + deadline
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > end:
            missing = [p for p in paths if not os.path.exists(p)]
            raise RuntimeError(f"{len(missing)} sessions never finished, e.g. {missing[0]}")
        time.sleep(0.1)


def agent_output_block(seed=20):
    """About 1 MB of what a coding agent's terminal receives."""
    rng = random.Random(seed)
    words = ("the daemon session pane screen history reads writes parser cursor line wrap "
             "tokens request answer tool file test build cargo clippy error warning fixed "
             "because which when every before after config restore hibernate").split()
    out = []
    size = 0
    turn = 0
    while size < 1_000_000:
        turn += 1
        parts = [f"\x1b[1m\u25cf \x1b[0m\x1b[1mRead\x1b[0m(crates/hangar-daemon/src/session_{turn % 37}.rs)\n",
                 f"  \x1b[38;5;246m\u23bf  Read {rng.randint(20, 900)} lines (ctrl+r to expand)\x1b[0m\n"]
        for _ in range(rng.randint(1, 3)):
            parts.append(" ".join(rng.choice(words) for _ in range(rng.randint(30, 110))) + ".\n\n")
        parts.append(f"\x1b[1m\u25cf \x1b[0m\x1b[1mUpdate\x1b[0m(src/pty_{turn}.rs)\n")
        for i in range(rng.randint(4, 14)):
            bg, sign = ("22", "+") if i % 3 else ("52", "-")
            code = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
            parts.append(f"  \x1b[38;5;246m{100 + i:>4}\x1b[0m \x1b[48;5;{bg}m\x1b[38;5;255m{sign}    let {code};"
                         f"\x1b[0m\x1b[K\n")
        for s in range(rng.randint(10, 40)):
            frame = "\u2722\u2733\u2736\u273b\u273d"[s % 5]
            parts.append(f"\r\x1b[2K\x1b[38;5;174m{frame}\x1b[0m Thinking\u2026 \x1b[38;5;246m({s}s \u00b7 "
                         f"\u2193 {s * 37} tokens \u00b7 esc to interrupt)\x1b[0m")
        parts.append("\r\x1b[2K\n")
        for _ in range(rng.randint(2, 6)):
            bar = "\u2500" * (COLS - 2)
            typed = " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))
            parts.append(f"\x1b[4A\x1b[0J\x1b[38;5;244m\u256d{bar}\u256e\x1b[0m\n"
                         f"\x1b[38;5;244m\u2502\x1b[0m > {typed}\x1b[7m \x1b[0m\n"
                         f"\x1b[38;5;244m\u2570{bar}\u256f\x1b[0m\n"
                         f"  \x1b[38;5;246m? for shortcuts\x1b[0m\n")
        chunk = "".join(parts).encode()
        out.append(chunk)
        size += len(chunk)
    return b"".join(out)


def printer(block_path, rate, secs, start, done):
    """The session side of the 20-session phase: `rate` bytes a second of the
    block, in 50 ms slices, from the shared instant `start`."""
    with open(block_path, "rb") as f:
        block = f.read()
    looped = block + block
    period = 0.05
    per = int(rate * period)
    off = 0
    time.sleep(max(0.0, start - time.time()))
    t0 = time.monotonic()
    n = 0
    while n * period < secs:
        data = looped[off : off + per]
        off = (off + per) % len(block)
        while data:
            data = data[os.write(1, data):]
        n += 1
        time.sleep(max(0.0, t0 + n * period - time.monotonic()))
    open(done, "w").close()


class HangarServer:
    """A hangar daemon in its own Home, its sessions the shell or the fake agent."""

    name = "hangar"

    def __init__(self, h):
        self.h = h
        os.makedirs(h.home, exist_ok=True)
        # Back-to-back spawns would otherwise wait for the wake queue's pacing.
        with open(os.path.join(h.home, "config.toml"), "w") as f:
            f.write("[governor]\nwake_spacing_ms = 0\n")
        self.pid = h.start_daemon()
        self.client = h.wait_socket()
        self.sessions = []

    def new_shell(self):
        sid = json.loads(self.h.cli("new", "--provider", "shell", "--cwd", self.h.work, "--json"))["id"]
        self.sessions.append(sid)
        return sid

    def new_agent(self):
        body = self.client.ask("new", {"provider": "claude", "cwd": self.h.work, "fallback_cwd": self.h.work,
                                       "no_capture": True, "no_mcp": True})
        self.sessions.append(body["id"])

    def run(self, sid, command):
        self.h.cli("send", sid, command)

    def screen(self, sid):
        return self.h.cli("screen", sid)

    def stop(self):
        self.h.cli("shutdown", check=False)
        try:
            self.h.daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


class TmuxServer:
    """A tmux server on a private socket; sessions inherit the Home's
    environment, so the Home's cleanup finds and kills them too."""

    name = "tmux"

    def __init__(self, h):
        self.h = h
        self.tmux = ["tmux", "-S", os.path.join(h.root, "tmux.sock"), "-f", "/dev/null"]
        self.count = 0
        self._new("/bin/sh")
        self._tmux("set", "-g", "status", "off")
        self.pid = int(self._tmux("display", "-p", "#{pid}").strip())
        self.sessions = []

    def _tmux(self, *args):
        return subprocess.run([*self.tmux, *args], env=self.h.env, cwd=self.h.work, check=True,
                              capture_output=True, text=True).stdout

    def _new(self, command):
        name = f"s{self.count}"
        self.count += 1
        self._tmux("new-session", "-d", "-s", name, "-x", str(COLS), "-y", str(ROWS), "-c", self.h.work, command)
        return name

    def new_shell(self):
        sid = self._new("/bin/sh")
        self.sessions.append(sid)
        return sid

    def new_agent(self):
        # As hangar starts claude: a fresh conversation under a session id of its own.
        self.sessions.append(self._new(f"{self.h.fake} --session-id {uuid.uuid4()}"))

    def run(self, sid, command):
        self._tmux("send-keys", "-t", sid, command, "Enter")

    def screen(self, sid):
        return self._tmux("capture-pane", "-p", "-t", sid)

    def stop(self):
        subprocess.run([*self.tmux, "kill-server"], env=self.h.env, capture_output=True)


def with_server(kind, phase):
    h = hb.Home()
    try:
        server = kind(h)
        try:
            return phase(server, h)
        finally:
            server.stop()
    finally:
        h.close()


def one_session_bulk(big, mb):
    def phase(s, h):
        sid = s.new_shell()
        time.sleep(1.0)
        until_idle(s.pid)
        mem0 = server_memory(s.pid)
        done = os.path.join(h.root, "bulk.done")
        cpu0, t0 = server_cpu(s.pid), time.monotonic()
        s.run(sid, f"cat {big}; touch {done}; echo END_$((40+2))")
        wait_files([done], 600)
        wall = time.monotonic() - t0
        # The marker on the session's screen proves the server parsed every byte, none deferred.
        end = time.monotonic() + 120
        while "END_42" not in s.screen(sid):
            if time.monotonic() > end:
                raise RuntimeError(f"{s.name}: the end marker never reached the screen")
            time.sleep(0.5)
        until_idle(s.pid)
        cpu = server_cpu(s.pid) - cpu0
        mem1 = server_memory(s.pid)
        return {"cpu_s": round(cpu, 3), "wall_s": round(wall, 2), "mb_per_cpu_s": round(mb / cpu, 1) if cpu else None,
                "rss_growth_kib": mem1[0] - mem0[0]}
    return phase


def many_sessions_printing(block_path, n, rate, secs):
    def phase(s, h):
        sids = [s.new_shell() for _ in range(n)]
        time.sleep(1.0)
        until_idle(s.pid)
        mem0 = server_memory(s.pid)
        start = time.time() + 3.0
        dones = []
        for i, sid in enumerate(sids):
            done = os.path.join(h.root, f"print{i}.done")
            dones.append(done)
            s.run(sid, f"{sys.executable} {os.path.abspath(__file__)} --printer {block_path} {rate} {secs} {start} {done}")
        time.sleep(max(0.0, start - time.time()))
        cpu0 = server_cpu(s.pid)
        wait_files(dones, secs + 120)
        until_idle(s.pid)
        cpu = server_cpu(s.pid) - cpu0
        mem1 = server_memory(s.pid)
        return {"cpu_s": round(cpu, 3), "core_pct": round(100 * cpu / secs, 2),
                "rss_per_session_after_history_kib": round((mem1[0] - mem0[0]) / n, 1),
                "pss_per_session_after_history_kib": round((mem1[1] - mem0[1]) / n, 1)}
    return phase


def idle_agents(n, secs):
    def phase(s, h):
        # One agent started and left running first: first-use allocations are not per-session cost.
        s.new_agent()
        time.sleep(2.0)
        until_idle(s.pid, 60)
        mem0 = server_memory(s.pid)
        for _ in range(n):
            s.new_agent()
        time.sleep(5.0)
        live = len(hb.fake_agents(h.pids()))
        if live != n + 1:
            raise RuntimeError(f"{s.name}: {live} fake agents live, expected {n + 1}")
        mem1 = server_memory(s.pid)
        cpu0 = server_cpu(s.pid)
        time.sleep(secs)
        cpu = server_cpu(s.pid) - cpu0
        return {"cpu_s": round(cpu, 3), "core_pct": round(100 * cpu / secs, 3),
                "rss_per_live_session_kib": round((mem1[0] - mem0[0]) / n, 1),
                "pss_per_live_session_kib": round((mem1[1] - mem0[1]) / n, 1)}
    return phase


def attach(big, keys, mb, rows=None, cols=None):
    import attach_vs_tmux as avt

    rows, cols = rows or avt.ROWS, cols or avt.COLS
    hangar, _ = hb.binaries()
    out = {}
    for name, run in (("hangar", lambda w: avt.bench_hangar(hangar, big, keys, w, rows, cols)),
                      ("tmux", lambda w: avt.bench_tmux(big, keys, w, rows, cols))):
        h = hb.Home()
        try:
            out[name] = avt.summary(name, *run(h.root), mb)
        finally:
            h.close()
    return out


PHASES = ("bulk", "bulk_plain", "bulk_wrap", "printing", "idle")


def one_round(a, big, plain, wrap, block_path):
    phases = [
        ("bulk", one_session_bulk(big, a.mb)),
        ("bulk_plain", one_session_bulk(plain, a.mb)),
        ("bulk_wrap", one_session_bulk(wrap, a.mb)),
        ("printing", many_sessions_printing(block_path, a.sessions, a.rate, a.print_secs)),
        ("idle", idle_agents(a.sessions, a.idle_secs)),
    ]
    phases = [(key, phase) for key, phase in phases if key in a.phases]
    result = {}
    for key, phase in phases:
        result[key] = {kind.name: with_server(kind, phase) for kind in (HangarServer, TmuxServer)}
        print(f"  {key}: {json.dumps(result[key])}", file=sys.stderr, flush=True)
    if a.attach:
        result["attach"] = attach(big, a.keys, a.mb)
        print(f"  attach: {json.dumps(result['attach'])}", file=sys.stderr, flush=True)
        if "bulk_wrap" in a.phases:
            result["attach_wrap"] = attach(wrap, 1, a.mb, ROWS, COLS)
            print(f"  attach_wrap: {json.dumps(result['attach_wrap'])}", file=sys.stderr, flush=True)
    return result


ROWS_SHOWN = [
    ("bulk", "cpu_s", "server CPU s, {mb} MB from one session"),
    ("bulk_plain", "cpu_s", "  same, {mb} MB of plain 99-char lines"),
    ("bulk_wrap", "cpu_s", "  same, {mb} MB of 160-char lines (they wrap)"),
    ("printing", "cpu_s", "server CPU s, {n} sessions x {rate} KB/s x {secs} s"),
    ("printing", "core_pct", "  as % of one core"),
    ("idle", "core_pct", "% of one core, {n} idle live agents"),
    ("idle", "rss_per_live_session_kib", "RSS KiB per live agent"),
    ("idle", "pss_per_live_session_kib", "PSS KiB per live agent"),
    ("printing", "rss_per_session_after_history_kib", "RSS KiB per session after ~2 MB printed"),
    ("bulk", "rss_growth_kib", "RSS KiB growth, one session after {mb} MB"),
    ("attach", "secs", "{mb} MB to an attached client, s"),
    ("attach", "median_ms", "key echo median, ms"),
    ("attach_wrap", "secs", "{mb} MB of 160-char lines to a client, 120x40, s"),
]


def table(rounds, a):
    fmt = dict(mb=a.mb, n=a.sessions, rate=a.rate // 1000, secs=a.print_secs)
    print(f"{'measure':<46} {'hangar':>22} {'tmux':>22} {'ratio':>7}")
    for phase, key, label in ROWS_SHOWN:
        if phase not in rounds[0]:
            continue
        hs = [r[phase]["hangar"][key] for r in rounds]
        ts = [r[phase]["tmux"][key] for r in rounds]

        def num(x):
            return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"

        def cell(xs):
            if len(xs) == 1:
                return num(xs[0])
            return f"{num(min(xs))} / {num(statistics.median(xs))}"

        hm, tm = statistics.median(hs), statistics.median(ts)
        ratio = f"{hm / tm:.2f}x" if tm else "-"
        print(f"{label.format(**fmt):<46} {cell(hs):>22} {cell(ts):>22} {ratio:>7}")
    if len(rounds) > 1:
        print(f"(min / median over {len(rounds)} rounds; ratio of the medians, hangar / tmux)")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--printer":
        block_path, rate, secs, start, done = sys.argv[2:7]
        printer(block_path, int(rate), float(secs), float(start), done)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hangar", help="the hangar binary to measure (hangar-fake-agent must sit next to it); "
                                     "default: $HANGAR_BIN_DIR or the release target dir")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--rate", type=int, default=100_000, help="bytes a second per printing session")
    ap.add_argument("--print-secs", type=float, default=20)
    ap.add_argument("--idle-secs", type=float, default=30)
    ap.add_argument("--attach", action="store_true", help="also run attach_vs_tmux's throughput and echo")
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--phases", default=",".join(PHASES),
                    help="which scenarios to run, comma-separated: bulk (agent-like output), bulk_plain "
                         "(plain lines), bulk_wrap (160-char lines that wrap; with --attach also to a "
                         "client), printing (many sessions), idle (idle agents: CPU and memory per "
                         "live session); default: all")
    a = ap.parse_args()
    a.phases = [p for p in a.phases.split(",") if p]
    unknown = [p for p in a.phases if p not in PHASES]
    if unknown:
        ap.error(f"unknown phase {unknown[0]!r} (known: {', '.join(PHASES)})")
    if a.hangar:
        os.environ["HANGAR_BIN_DIR"] = os.path.dirname(os.path.abspath(a.hangar))
    hb.binaries()
    if not shutil.which("tmux"):
        sys.exit("tmux is not installed")
    # A SIGTERM must still run every cleanup below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with open("/proc/loadavg") as f:
        load_before = " ".join(f.read().split()[:3])
    data = hb.Home()
    try:
        block_path = os.path.join(data.root, "agent-output.bin")
        block = agent_output_block()
        with open(block_path, "wb") as f:
            f.write(block)
        big = os.path.join(data.root, f"agent-output-{a.mb}mb.bin")
        hb.write_repeated(big, block, a.mb)
        # attach_vs_tmux.py's file: plain text, no escapes, for comparison with its figures.
        plain = os.path.join(data.root, f"plain-{a.mb}mb.txt")
        hb.write_repeated(plain, ((b"0123456789abcdefghijklmnopqrstuvwxyz" * 3)[:99] + b"\n") * 10000, a.mb)
        import attach_vs_tmux as avt

        wrap = os.path.join(data.root, f"wrap-{a.mb}mb.txt")
        hb.write_repeated(wrap, hb.wrapping_lines_block(), a.mb)
        rounds = []
        for i in range(a.rounds):
            print(f"round {i + 1}/{a.rounds}", file=sys.stderr, flush=True)
            rounds.append(one_round(a, big, plain, wrap, block_path))
    finally:
        data.close()
    with open("/proc/loadavg") as f:
        load_after = " ".join(f.read().split()[:3])
    tmux_version = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()
    if a.json:
        print(json.dumps({"tmux": tmux_version, "hangar": hb.binaries()[0], "load_before": load_before,
                          "load_after": load_after, "rounds": rounds}, indent=1))
    else:
        table(rounds, a)
        print(f"{tmux_version}; load average before {load_before}, after {load_after}")


if __name__ == "__main__":
    main()
