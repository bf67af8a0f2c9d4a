#!/usr/bin/env python3
"""What one relay process costs a key's echo (issue 31 item 5; docs/src/benchmarks-history.md,
"Key echo over a host"). Three clients of the same kind of /bin/sh session,
120x40, alternated in one run, bench/attach_vs_tmux.py's echo loop:

- `tmux attach`: tmux's client hands its terminal to the server (SCM_RIGHTS),
  so a key goes terminal -> tmux server -> PTY;
- `script -q -c 'tmux attach' /dev/null`: the same with one relay process
  (util-linux `script`, copying between this terminal and a PTY of its own)
  in front, the shape of hangar's path;
- `hangar attach`: terminal -> attach process -> daemon -> PTY.

Usage: bench/relay_hop_echo.py --hangar target/release/hangar [--keys 300] [--rounds 3]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attach_vs_tmux as b  # noqa: E402  (the shared PTY and timing helpers)

ap = argparse.ArgumentParser()
ap.add_argument("--hangar", required=True)
ap.add_argument("--keys", type=int, default=300)
ap.add_argument("--rounds", type=int, default=3)
args = ap.parse_args()
keys = args.keys
work = tempfile.mkdtemp()
sock = os.path.join(work, "tmux.sock")
env = dict(os.environ, PS1="$ ", TERM="xterm-256color", SHELL="/bin/sh")
tmux = ["tmux", "-S", sock, "-f", "/dev/null"]
subprocess.run([*tmux, "new-session", "-d", "-s", "bench", "-x", "120", "-y", "40", "-c", work, "/bin/sh"], env=env, check=True)
subprocess.run([*tmux, "set", "-g", "status", "off"], env=env, check=True)
hh = os.path.join(work, "hh")
henv = dict(os.environ, HANGAR_HOME=hh, HANGAR_SHELL="/bin/sh", SHELL="/bin/sh", PS1="$ ", TERM="xterm-256color")
hangar = os.path.abspath(args.hangar)
sid = json.loads(subprocess.run([hangar, "new", "--provider", "shell", "--cwd", work, "--json"], env=henv, check=True, capture_output=True, text=True).stdout)["id"]
def run(label, argv, e):
    pid, fd = b.spawn_in_pty(argv, e, 40, 120)
    b.drain(fd, 0.8)
    lat = b.echo_latency(fd, keys)
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0); os.close(fd)
    print(f"{label:40s} median {statistics.median(lat):.3f} ms", flush=True)
try:
    for _ in range(args.rounds):
        run("tmux attach", [*tmux, "attach", "-t", "bench"], env)
        run("script (a relay process + pty) tmux", ["script", "-q", "-c", " ".join(tmux + ["attach", "-t", "bench"]), "/dev/null"], env)
        run("hangar attach", [hangar, "attach", sid], henv)
finally:
    subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)
    subprocess.run([hangar, "shutdown"], env=henv, capture_output=True)
