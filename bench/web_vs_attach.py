#!/usr/bin/env python3
"""What a browser attached through `hangar web` receives per second, beside
`hangar attach`.

One daemon, one /bin/sh session, three clients one after the other (each
alone, so the PTY takes that client's size and nothing competes):

- `hangar attach` in a pseudo-terminal this script reads (200x50);
- a bare WebSocket client (this script, no browser) on `hangar web`'s
  /api/sessions/ID/attach?cols=200&rows=50: the web bridge's own cost;
- headless Chromium on the page itself (xterm.js, driven over WebDriver by
  chromedriver): what a person's browser shows. The time ends when the
  marker is drawn in xterm.js's rows.

Each time runs from sending `cat FILE; echo END_$((N+1))` (with `hangar send`)
until the computed marker reaches that client; MB/s is the file's size over that time.

Usage: bench/web_vs_attach.py [--hangar PATH] [--mb 20] [--runs 1]
Build first: cargo build --release -p hangar. Needs chromium and chromedriver
for the browser row (skipped with a note otherwise).
"""

import argparse
import base64
import json
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROWS, COLS = 50, 200
_marks = iter(range(1000, 10**9))


def next_command(big):
    """The command and the marker it prints: a new marker each time, so a
    screen still showing the last run's marker never ends a timing early
    (the marker only appears computed, never in the typed command)."""
    n = next(_marks)
    return f"cat {big}; echo END_$(({n}+1))", f"END_{n + 1}".encode()


def spawn_in_pty(argv, env):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    import fcntl, struct, termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    return pid, fd


def read_fd_until(fd, needle, timeout):
    deadline = time.monotonic() + timeout
    tail = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{needle!r} never arrived")
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        chunk = os.read(fd, 1 << 20)
        tail = (tail + chunk)[-256:]
        if needle in tail:
            return time.monotonic()


def drain_fd(fd, quiet=0.3):
    while select.select([fd], [], [], quiet)[0]:
        try:
            os.read(fd, 1 << 20)
        except OSError:
            return


class Hangar:
    def __init__(self, binary, workdir):
        self.bin = binary
        self.env = dict(os.environ, HANGAR_HOME=os.path.join(workdir, "home"), HANGAR_SHELL="/bin/sh",
                        SHELL="/bin/sh", PS1="$ ", TERM="xterm-256color")
        self.workdir = workdir
        self.web = None

    def run(self, *args):
        return subprocess.run([self.bin, *args], env=self.env, check=True, capture_output=True, text=True).stdout

    def start(self):
        self.session = json.loads(self.run("--json", "new", "--provider", "shell", "--cwd", self.workdir))["id"]
        self.web = subprocess.Popen([self.bin, "--json", "web"], env=self.env, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
        info = json.loads(self.web.stdout.readline())
        self.url = info["url"]
        self.base, self.token = self.url.split("/?token=")
        self.host, self.port = info["listen"].rsplit(":", 1)

    def send(self, text):
        self.run("send", self.session, text)

    def stop(self):
        if self.web:
            self.web.terminate()
            self.web.wait(timeout=10)
        subprocess.run([self.bin, "shutdown"], env=self.env, capture_output=True)


def bench_attach(h, big):
    pid, fd = spawn_in_pty([h.bin, "attach", h.session], h.env)
    try:
        drain_fd(fd, 0.5)
        command, mark = next_command(big)
        t0 = time.monotonic()
        h.send(command)
        t1 = read_fd_until(fd, mark, 900)
        drain_fd(fd)
        return t1 - t0
    finally:
        os.write(fd, b"\x02d")
        time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def bench_websocket(h, big):
    """A minimal RFC 6455 client: handshake, then read unmasked server frames."""
    s = socket.create_connection((h.host, int(h.port)))
    key = base64.b64encode(os.urandom(16)).decode()
    path = f"/api/sessions/{h.session}/attach?cols={COLS}&rows={ROWS}"
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {h.host}:{h.port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Authorization: Bearer {h.token}\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, buf = buf.split(b"\r\n\r\n", 1)
    if b" 101 " not in head.split(b"\r\n")[0]:
        raise RuntimeError(f"no WebSocket: {head[:200]!r}")
    received = 0
    tail = b""

    def frames():
        nonlocal buf
        while True:
            while len(buf) < 2:
                buf += s.recv(1 << 20)
            b1 = buf[1] & 0x7F
            off = 2
            if b1 == 126:
                need = 4
            elif b1 == 127:
                need = 10
            else:
                need = 2
            while len(buf) < need:
                buf += s.recv(1 << 20)
            if b1 == 126:
                b1 = int.from_bytes(buf[2:4], "big")
                off = 4
            elif b1 == 127:
                b1 = int.from_bytes(buf[2:10], "big")
                off = 10
            while len(buf) < off + b1:
                buf += s.recv(1 << 20)
            op, payload, buf = buf[0] & 0x0F, buf[off:off + b1], buf[off + b1:]
            yield op, payload

    s.settimeout(900)
    command, mark = next_command(big)
    t0 = time.monotonic()
    h.send(command)
    for op, payload in frames():
        if op == 2:
            received += len(payload)
            tail = (tail + payload)[-256:]
            if mark in tail:
                t1 = time.monotonic()
                break
    s.close()
    return t1 - t0, received


class WebDriver:
    def __init__(self, chromium, chromedriver, profile):
        self.port = free_port()
        self.driver = subprocess.Popen([chromedriver, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port)).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1700,1000", f"--user-data-dir={profile}"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                                                 "goog:chromeOptions": {"binary": chromium, "args": args}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=900) as r:
            return json.loads(r.read())["value"]

    def js(self, script):
        return self.call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": []})

    def goto(self, url):
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def quit(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        finally:
            os.killpg(self.driver.pid, signal.SIGKILL)
            self.driver.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_js(wd, script, timeout, every=0.02):
    deadline = time.monotonic() + timeout
    while not wd.js(script):
        if time.monotonic() > deadline:
            raise TimeoutError(script)
        time.sleep(every)
    return time.monotonic()


def bench_browser(h, big, chromium, chromedriver, workdir):
    wd = WebDriver(chromium, chromedriver, os.path.join(workdir, "chromium-profile"))
    try:
        wd.goto(h.url)
        wd.goto(f"{h.base}/#/s/{h.session}")
        rows = "document.querySelector('#term .xterm-rows')"
        wait_js(wd, f"return !!{rows} && /[$#] /.test({rows}.textContent);", 30)
        size = wd.js("return [document.querySelector('#term .xterm-rows').children.length, "
                     "window.innerWidth];")
        time.sleep(0.5)
        command, mark = next_command(big)
        t0 = time.monotonic()
        h.send(command)
        t1 = wait_js(wd, f"return {rows}.textContent.includes('{mark.decode()}');", 900)
        return t1 - t0, size
    finally:
        wd.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hangar", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "hangar"))
    ap.add_argument("--mb", type=int, default=20)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    binary = os.path.abspath(args.hangar)
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} is missing: cargo build --release -p hangar (or pass --hangar)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    with tempfile.TemporaryDirectory(prefix="hangar-web-bench-") as work:
        big = os.path.join(work, "big.txt")
        line = (b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2)[:99] + b"\n"
        with open(big, "wb") as f:
            block = line * 10000
            for _ in range(args.mb * 1_000_000 // len(block)):
                f.write(block)
        mb = os.path.getsize(big) / 1e6
        h = Hangar(binary, work)
        h.start()
        try:
            print(f"{'client':<34} {mb:.0f} MB to client       MB/s")
            for run in range(args.runs):
                secs = bench_attach(h, big)
                print(f"{'hangar attach (PTY, 200x50)':<34} {secs:>12.2f} s {mb / secs:>10.1f}", flush=True)
                secs, got = bench_websocket(h, big)
                print(f"{'hangar web, bare WebSocket':<34} {secs:>12.2f} s {mb / secs:>10.1f}"
                      f"   ({got / 1e6:.1f} MB of frames)", flush=True)
                if chromium and chromedriver:
                    secs, size = bench_browser(h, big, chromium, chromedriver, work)
                    print(f"{'hangar web, Chromium + xterm.js':<34} {secs:>12.2f} s {mb / secs:>10.1f}"
                          f"   ({size[0]} rows, {size[1]} px wide)", flush=True)
                else:
                    print("hangar web, Chromium + xterm.js: skipped (chromium/chromedriver not installed)")
        finally:
            h.stop()


if __name__ == "__main__":
    main()
