#!/usr/bin/env python3
"""How long a real agent CLI takes to print its first byte in a terminal
(what `[restore] spawn_timeout_secs` bounds), started as hangar starts it:
its own process group in a fresh 40x120 PTY, nothing typed.

    bench/cli_first_output.py RUNS NAME=COMMAND... [--home DIR]

Each COMMAND runs RUNS times in a fresh HOME (no config: the CLI's first
screen, an onboarding or trust question, is its first output as much as its
input box). Prints min / median / max seconds per CLI. Run it beside the
load it should measure (bench/busy_cores.sh -- bench/cli_first_output.py ...).
"""
import os, pty, select, shlex, statistics, sys, tempfile, time, signal

def first_output(argv, home):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["HOME"] = home
        os.environ["TERM"] = "xterm-256color"
        os.environ.pop("CLAUDE_CONFIG_DIR", None)
        os.execvp(argv[0], argv)
    begun = time.monotonic()
    took = None
    while time.monotonic() - begun < 300:
        r, _, _ = select.select([fd], [], [], 1.0)
        if r:
            try:
                if os.read(fd, 4096):
                    took = time.monotonic() - begun
            except OSError:
                pass
            break
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os.waitpid(pid, 0)
    os.close(fd)
    return took

def main():
    runs = int(sys.argv[1])
    for spec in sys.argv[2:]:
        name, cmd = spec.split("=", 1)
        times = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as home:
                t = first_output(shlex.split(cmd), home)
            times.append(t if t is not None else float("inf"))
        load = open("/proc/loadavg").read().split()[0]
        print(f"{name}: first output min {min(times):.2f} s, median {statistics.median(times):.2f} s, "
              f"max {max(times):.2f} s over {runs} runs (load {load})", flush=True)

if __name__ == "__main__":
    main()
