#!/usr/bin/env python3
"""What a TUI pane's history costs the TUI (issue 20, session 5): the TUI's
memory with 9 panes whose sessions each printed 10,000 long lines, and how
long the TUI takes to show a pane whose session holds 40,000 lines of
history.

    cargo build --release -p hangar --bins
    python3 bench/pane_history_cost.py [--runs 3]

HANGAR_BIN_DIR picks another build (e.g. a copy of the one before a change).
Sessions are shell panes printing with awk; the TUI runs in a pseudo-terminal
of 60 x 240 (9 panes of about 19 x 78). Never used by tests.
"""

import argparse
import json
import os
import pty
import select
import signal
import statistics
import struct
import threading
import time

import hangar_bench as hb

ROWS, COLS = 60, 240
LONG = "x" * 180


class Tui:
    """The TUI in a pseudo-terminal, its output drained on a thread."""

    def __init__(self, home):
        self.t0 = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(home.work)
            os.execve(home.hangar, [home.hangar], home.env)
        import fcntl
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.pid, self.fd = pid, fd
        self.tail = b""
        self.seen = {}
        self.watch = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self):
        while True:
            r, _, _ = select.select([self.fd], [], [], 0.5)
            if not r:
                continue
            try:
                chunk = os.read(self.fd, 1 << 20)
            except OSError:
                return
            if not chunk:
                return
            now = time.monotonic()
            with self.lock:
                self.tail = (self.tail + chunk)[-65536:]
                for needle in self.watch:
                    if needle not in self.seen and needle in self.tail:
                        self.seen[needle] = now

    def wait_for(self, needle, timeout=120):
        with self.lock:
            self.watch.append(needle)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if needle in self.seen:
                    return self.seen[needle]
                if needle in self.tail:
                    return time.monotonic()
            time.sleep(0.005)
        raise TimeoutError(f"{needle!r} never showed in the TUI")

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


def wait_screen(home, sid, needle, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in home.cli("screen", sid, check=False):
            return
        time.sleep(0.05)
    raise TimeoutError(f"{sid}: {needle!r} never on screen")


def shell(home):
    out = home.cli("--json", "new", "--provider", "shell", "--cwd", home.work)
    try:
        return json.loads(out)["id"]
    except ValueError:
        raise RuntimeError(f"`hangar new` printed {out!r}")


def print_lines(home, sid, n, width, marker):
    text = "x" * width
    home.cli("send", sid, f"awk 'BEGIN{{for(i=1;i<={n};i++) printf \"%06d {text}\\n\", i}}'; echo {marker}_$((40+2))")
    wait_screen(home, sid, f"{marker}_42")


def settled_rss(pid, quiet=3.0, timeout=120):
    deadline = time.monotonic() + timeout
    last, since = hb.rss_kib(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = hb.rss_kib(pid)
        if abs(now - last) > max(last // 200, 256):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    raise TimeoutError("the TUI's memory never settled")


def nine_panes_rss(lines=10_000):
    """KiB of the TUI's RSS with 9 panes of `lines` long lines each."""
    home = hb.Home()
    try:
        home.start_daemon()
        home.wait_socket()
        sids = [shell(home) for _ in range(9)]
        for i, sid in enumerate(sids):
            print_lines(home, sid, lines, 180, f"DONE{i}")
        tui = Tui(home)
        try:
            # Some panes are too narrow to show a marker: wait for the TUI's
            # memory to settle instead (unchanged for 3 s after it attached).
            tui.wait_for(b"DONE0_42")
            return settled_rss(tui.pid)
        finally:
            tui.close()
    finally:
        home.close()


def attach_40k_ms(runs, lines=40_000):
    """ms from starting the TUI to its one pane showing the end of a session
    with `lines` lines of history (and a 500-line page's round trip)."""
    home = hb.Home()
    try:
        home.start_daemon()
        home.wait_socket()
        sid = shell(home)
        print_lines(home, sid, lines, 70, "FULL")
        kept = home.json("screen", sid, "--scrollback", "100000")["history"]
        pages = page_ms(home, sid)
        full = []
        for _ in range(runs):
            tui = Tui(home)
            try:
                full.append((tui.wait_for(b"FULL_42") - tui.t0) * 1000)
            finally:
                tui.close()
        return full, len(kept), pages
    finally:
        home.close()


def page_ms(home, sid, pages=80):
    """ms per `history` request of 500 lines (a pane's page), walking back
    from the newest; None from a daemon without paged history."""
    c = hb.Client(os.path.join(home.home, "run", "hangar.sock"))
    try:
        before = None
        took = []
        for _ in range(pages):
            t0 = time.monotonic()
            try:
                body = {"session": sid, "lines": 500}
                if before is not None:
                    body["before"] = before
                page = c.ask("history", body)
            except RuntimeError:
                return None
            took.append((time.monotonic() - t0) * 1000)
            if page["start"] <= page["first"]:
                break
            before = page["start"]
        return took
    finally:
        c.s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    empty = nine_panes_rss(0)
    print(f"TUI RSS, the same 9 panes with no history: {empty / 1024:.1f} MiB")
    rss = [nine_panes_rss() for _ in range(args.runs)]
    print(f"TUI RSS, 9 panes x 10,000 lines of 188 chars: {[round(r / 1024, 1) for r in rss]} MiB, "
          f"median {statistics.median(rss) / 1024:.1f} MiB")
    few, few_kept, _ = attach_40k_ms(args.runs, lines=10)
    print(f"TUI start to a pane showing the end of a session with {few_kept} lines of history: "
          f"{[round(t) for t in few]} ms, median {statistics.median(few):.0f} ms")
    full, kept, pages = attach_40k_ms(args.runs)
    print(f"TUI start to a pane showing the end of a session with {kept} lines of history: "
          f"{[round(t) for t in full]} ms, median {statistics.median(full):.0f} ms")
    if pages:
        print(f"a page of 500 lines of it (`history` request), {len(pages)} pages back to line 1: "
              f"median {statistics.median(pages):.2f} ms, max {max(pages):.2f} ms")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
