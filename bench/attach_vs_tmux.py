#!/usr/bin/env python3
"""Attach throughput and keystroke echo latency: `hangar attach` vs `tmux attach`.

Both run the same /bin/sh session on the same machine in one run, each seen
through a client started in its own pseudo-terminal that this script reads:

- throughput: the session runs `cat` on a 100 MB text file and then prints a
  marker; the time is from sending the command to the marker reaching the
  client (so every byte went session -> server -> client).
- the same with lines that wrap (`--phases wrap`): 100 MB of 160-character
  lines (base64, as in a minified bundle or a long log line) with the
  client's terminal, and so both sessions, at 120x40: every line is two rows.
- echo latency: one printable key written to the client's terminal, timed
  until the client's output shows it (key -> client -> server -> PTY echo ->
  server -> client), repeated, median and p95 reported.

Usage: bench/attach_vs_tmux.py [--hangar PATH] [--mb 100] [--keys 300] [--phases fits,wrap] [--rounds 1]
Build first: cargo build --release -p hangar
"""

import argparse
import os
import pty
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402

ROWS, COLS = 50, 200
# The lines-that-wrap phase: the size of a session no client has sized yet.
WRAP_ROWS, WRAP_COLS = 40, 120


def spawn_in_pty(argv, env, rows=ROWS, cols=COLS):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    import fcntl, struct, termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return pid, fd


ESCAPES = re.compile(rb"\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMNOPZc]")


def read_until(fd, needle, timeout, text_only=False):
    """Read and discard client output until `needle` shows; returns the time it
    did. With `text_only`, escape sequences are ignored (a key like `m` must
    not match the end of a colour sequence)."""
    deadline = time.monotonic() + timeout
    tail = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{needle!r} never arrived; last bytes: {tail[-200:]!r}")
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        try:
            chunk = os.read(fd, 1 << 20)
        except OSError:
            raise TimeoutError("client terminal closed")
        now = time.monotonic()
        tail = (tail + chunk)[-4096:]
        if needle in (ESCAPES.sub(b"", tail) if text_only else tail):
            return now


def drain(fd, quiet=0.3):
    while True:
        r, _, _ = select.select([fd], [], [], quiet)
        if not r:
            return
        try:
            os.read(fd, 1 << 20)
        except OSError:
            return


def echo_latency(fd, keys):
    """Per key: write it, wait for it in the output, then erase it."""
    samples = []
    alphabet = b"abcdefghijklmnopqrstuvwxyz"
    for i in range(keys):
        k = alphabet[i % len(alphabet) : i % len(alphabet) + 1]
        drain(fd, 0.005)
        t0 = time.monotonic()
        os.write(fd, k)
        # The echo is the key itself; with a screen-diffing client (tmux) it
        # may come wrapped in escape sequences, so look for the byte.
        t1 = read_until(fd, k, 5, text_only=True)
        samples.append((t1 - t0) * 1000)
        os.write(fd, b"\x7f")
    drain(fd, 0.1)
    return samples


def throughput(fd, send_command, big):
    drain(fd)
    t0 = time.monotonic()
    send_command(f"cat {big}; echo END_$((40+2))")
    t1 = read_until(fd, b"END_42", 600)
    return t1 - t0


def bench_hangar(hangar, big, keys, workdir, rows=ROWS, cols=COLS):
    home = os.path.join(workdir, "hangar-home")
    env = dict(os.environ, HANGAR_HOME=home, HANGAR_SHELL="/bin/sh", SHELL="/bin/sh",
               PS1="$ ", TERM="xterm-256color")
    run = lambda *a: subprocess.run([hangar, *a], env=env, check=True, capture_output=True, text=True)
    daemon = subprocess.Popen([hangar, "daemon"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while subprocess.run([hangar, "status"], env=env, capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("hangar daemon did not start")
            time.sleep(0.05)
        sid = run("new", "--provider", "shell", "--cwd", workdir, "--json").stdout
        import json

        sid = json.loads(sid)["id"]
        pid, fd = spawn_in_pty([hangar, "attach", sid], env, rows, cols)
        try:
            drain(fd, 0.5)
            lat = echo_latency(fd, keys)
            secs = throughput(fd, lambda c: run("send", sid, c), big)
        finally:
            os.write(fd, b"\x02d")
            time.sleep(0.2)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        return secs, lat
    finally:
        subprocess.run([hangar, "shutdown"], env=env, capture_output=True)
        daemon.wait(timeout=30)


def bench_tmux(big, keys, workdir, rows=ROWS, cols=COLS):
    sock = os.path.join(workdir, "tmux.sock")
    env = dict(os.environ, PS1="$ ", TERM="xterm-256color", SHELL="/bin/sh")
    tmux = ["tmux", "-S", sock, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "bench", "-x", str(cols), "-y", str(rows),
                    "-c", workdir, "/bin/sh"], env=env, check=True)
    subprocess.run([*tmux, "set", "-g", "status", "off"], env=env, check=True)
    try:
        pid, fd = spawn_in_pty([*tmux, "attach", "-t", "bench"], env, rows, cols)
        try:
            drain(fd, 0.5)
            lat = echo_latency(fd, keys)
            send = lambda c: subprocess.run([*tmux, "send-keys", "-t", "bench", c, "Enter"], env=env, check=True)
            secs = throughput(fd, send, big)
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        return secs, lat
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)


def summary(name, secs, lat, mb):
    lat = sorted(lat)
    p95 = lat[int(len(lat) * 0.95) - 1]
    return {
        "name": name,
        "secs": secs,
        "mbps": mb / secs,
        "median_ms": statistics.median(lat),
        "p95_ms": p95,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hangar", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "hangar"))
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--keys", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--phases", default="fits,wrap",
                    help="fits: 99-character lines at 200x50; wrap: 160-character lines at 120x40")
    args = ap.parse_args()
    hangar = os.path.abspath(args.hangar)
    if not os.access(hangar, os.X_OK):
        sys.exit(f"{hangar} is missing: cargo build --release -p hangar (or pass --hangar)")
    if not shutil.which("tmux"):
        sys.exit("tmux is not installed")
    phases = [p for p in args.phases.split(",") if p]
    with open("/proc/loadavg") as f:
        load_before = " ".join(f.read().split()[:3])
    rows = []
    with tempfile.TemporaryDirectory(prefix="hangar-bench-") as work:
        files = {}
        if "fits" in phases:
            files["fits"] = (os.path.join(work, "big.txt"), ROWS, COLS)
            line = (b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2)[:99] + b"\n"
            hb.write_repeated(files["fits"][0], line * 10000, args.mb)
        if "wrap" in phases:
            files["wrap"] = (os.path.join(work, "wrap.txt"), WRAP_ROWS, WRAP_COLS)
            hb.write_repeated(files["wrap"][0], hb.wrapping_lines_block(), args.mb)
        for r in range(args.rounds):
            for phase in phases:
                big, h, w = files[phase]
                for name, run in (("hangar attach", lambda d: bench_hangar(hangar, big, args.keys, d, h, w)),
                                  ("tmux attach", lambda d: bench_tmux(big, args.keys, d, h, w))):
                    with tempfile.TemporaryDirectory(prefix="hangar-bench-", dir=work) as d:
                        rows.append((r + 1, f"{phase} {w}x{h}", summary(name, *run(d), args.mb)))
    with open("/proc/loadavg") as f:
        load_after = " ".join(f.read().split()[:3])
    print(f"{'round':<6} {'lines':<13} {'client':<15} {args.mb} MB to client   MB/s    echo median   echo p95")
    for n, phase, r in rows:
        print(f"{n:<6} {phase:<13} {r['name']:<15} {r['secs']:>12.2f} s {r['mbps']:>8.1f} "
              f"{r['median_ms']:>10.2f} ms {r['p95_ms']:>8.2f} ms")
    print(f"load average before {load_before}, after {load_after}")


if __name__ == "__main__":
    main()
