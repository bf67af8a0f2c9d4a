"""Shared pieces of the whole-process benchmarks: locating the binaries, a
private HANGAR_HOME with every provider pointed at hangar-fake-agent, a raw
control-socket client, crafted workspaces, and /proc sampling.

Never used by tests; never touches a home it did not create.
"""

import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time


def bin_dir():
    """Where `hangar` and `hangar-fake-agent` live (release build)."""
    d = os.environ.get("HANGAR_BIN_DIR")
    if d:
        return d
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "target"))
    return os.path.join(target, "release")


def binaries(d=None):
    """`hangar` and `hangar-fake-agent` of the build in folder `d` (default:
    `bin_dir()`)."""
    d = d or bin_dir()
    hangar = os.path.join(d, "hangar")
    fake = os.path.join(d, "hangar-fake-agent")
    for b in (hangar, fake):
        if not os.path.exists(b):
            raise SystemExit(f"{b} is missing: run `cargo build --release --workspace --bins` first "
                             "(or set HANGAR_BIN_DIR)")
    return hangar, fake


class Home:
    """A temp HANGAR_HOME plus a project folder, removed on close."""

    def __init__(self, bins=None):
        """`bins`: the (hangar, hangar-fake-agent) pair to use (default: `binaries()`)."""
        self.hangar, self.fake = bins or binaries()
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="hangar-bench-"))
        self.home = os.path.join(self.root, "home")
        self.work = os.path.join(self.root, "proj.x")
        self.claude = os.path.join(self.root, "claude")
        for d in (self.work, self.claude, os.path.join(self.root, "user")):
            os.makedirs(d)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.path.join(self.root, "user"),
            "HANGAR_HOME": self.home,
            "HANGAR_CLAUDE_BIN": self.fake,
            "HANGAR_SHELL": "/bin/sh",
            "CLAUDE_CONFIG_DIR": self.claude,
            "CODEX_HOME": os.path.join(self.root, "codex"),
            "TERM": "xterm-256color",
            "HANGAR_LOG": "warn",
        }
        self.daemon = None

    def cli(self, *args, check=True):
        out = subprocess.run([self.hangar, *args], env=self.env, cwd=self.work,
                             capture_output=True, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"hangar {' '.join(args)}: {out.stderr}")
        return out.stdout

    def json(self, *args):
        return json.loads(self.cli("--json", *args))

    def import_crafted(self, n, visible):
        """Persist a crafted workspace of `n` sessions (`visible` of them panes)
        through `hangar import`, with no daemon running; returns craft's result."""
        crafted = craft(n, visible, self.work)
        path = os.path.join(self.root, "ws.json")
        with open(path, "w") as f:
            json.dump(crafted[0], f)
        self.cli("import", "hangar", path)
        return crafted

    def start_daemon(self):
        log = open(os.path.join(self.root, "daemon.log"), "ab")
        self.daemon = subprocess.Popen([self.hangar, "daemon"], env=self.env, cwd=self.work,
                                       stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        return self.daemon.pid

    def wait_socket(self, deadline=60):
        sock = os.path.join(self.home, "run", "hangar.sock")
        end = time.time() + deadline
        while time.time() < end:
            try:
                c = Client(sock)
                return c
            except OSError:
                time.sleep(0.005)
        raise RuntimeError("the daemon did not answer")

    def pids(self):
        """Every process carrying this home in its environment."""
        needle = f"HANGAR_HOME={self.home}".encode()
        found = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open(f"/proc/{p}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(p))
            except OSError:
                pass
        return found

    def close(self):
        if self.daemon and self.daemon.poll() is None:
            self.cli("shutdown", check=False)
            try:
                self.daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        for pid in self.pids():
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        if self.daemon:
            try:
                self.daemon.kill()
                self.daemon.wait()
            except OSError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)


class Client:
    """A raw control-socket client: u32 BE length (tag+payload), u8 tag, JSON."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.next = 1
        self.ask("hello", {"protocol_version": 1, "client": "bench"})

    def send(self, kind, body):
        rid = self.next
        self.next += 1
        payload = json.dumps({"id": rid, "kind": kind, "body": body}).encode()
        self.s.sendall(struct.pack(">IB", len(payload) + 1, 1) + payload)
        return rid

    def read(self):
        head = self._exact(4)
        (n,) = struct.unpack(">I", head)
        body = self._exact(n)
        return json.loads(body[1:])

    def ask(self, kind, body):
        rid = self.send(kind, body)
        while True:
            r = self.read()
            if r.get("id") == rid:
                if not r.get("ok"):
                    raise RuntimeError(f"{kind}: {r.get('error')}")
                return r.get("body")

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("daemon closed the connection")
            buf += chunk
        return buf


def craft(n, visible, cwd):
    """N sessions: `visible` panes over 3 tabs, the rest parked, each with a
    provider session id (the export format `hangar import hangar` reads)."""
    tabs_n = 3
    tabs, sessions, parked = [], {}, {}
    panes = []

    def meta(sid, psid, title):
        return {"id": sid, "provider": "claude", "cwd": cwd, "title": title,
                "provider_session": {"id": psid, "source": "transcript"},
                "relationships": {}, "capture": False, "mcp": False}

    per_tab = [visible // tabs_n + (1 if i < visible % tabs_n else 0) for i in range(tabs_n)]
    k = 0
    for t in range(tabs_n):
        leaves = []
        for _ in range(per_tab[t]):
            sid, psid = f"0000000a-0000-4000-8000-{k:012x}", f"00000c1a-0000-4000-8000-{k:012x}"
            sessions[sid] = meta(sid, psid, f"pane {k}")
            leaves.append(sid)
            panes.append((sid, psid))
            k += 1
        root = None
        for leaf in reversed(leaves):
            node = {"type": "leaf", "session": leaf}
            root = node if root is None else {"type": "split", "direction": "vertical",
                                              "ratio": 0.5, "a": node, "b": root}
        tab = {"id": f"000007ab-0000-4000-8000-{t:012x}", "title": f"project {t}", "cwd": cwd}
        if root:
            tab["root"] = root
        tabs.append(tab)
    others = []
    for i in range(n - visible):
        sid, psid = f"0000000b-0000-4000-8000-{i:012x}", f"00000c1b-0000-4000-8000-{i:012x}"
        sessions[sid] = meta(sid, psid, f"parked {i}")
        parked[sid] = {"session": sid, "tab": tabs[i % tabs_n]["id"]}
        others.append((sid, psid))
    ws = {"format": "hangar-workspace", "version": 1,
          "workspace": {"tabs": tabs, "active_tab": tabs[0]["id"], "sessions": sessions,
                        "parked": parked, "buried": {}, "pins": [], "dispatch": {},
                        "settings": {"dangerous": False}}}
    return ws, panes, others


class Sampler:
    """Samples /proc/loadavg and counts processes of interest every `period` s."""

    def __init__(self, count, period=0.05):
        self.count = count
        self.period = period
        self.peak_load1 = 0.0
        self.peak_running = 0
        self.peak_procs = 0
        self.seen = set()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            with open("/proc/loadavg") as f:
                parts = f.read().split()
            self.peak_load1 = max(self.peak_load1, float(parts[0]))
            self.peak_running = max(self.peak_running, int(parts[3].split("/")[0]))
            pids = self.count()
            self.seen.update(pids)
            self.peak_procs = max(self.peak_procs, len(pids))
            self._stop.wait(self.period)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def fake_agents(pids):
    out = []
    for p in pids:
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].endswith(b"hangar-fake-agent"):
                    out.append(p)
        except OSError:
            pass
    return out


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wrapping_lines_block():
    """10,000 different 160-character lines of base64 (wider than 120
    columns): minified JSON, a bundle, a long log line."""
    import base64
    import random

    rng = random.Random(31)
    return b"".join(base64.b64encode(rng.randbytes(120)) + b"\n" for _ in range(10000))


def write_repeated(path, block, mb):
    """`block` repeated into `path` until it holds `mb` megabytes."""
    total = mb * 1_000_000
    with open(path, "wb") as f:
        written = 0
        while written < total:
            part = block[: total - written]
            f.write(part)
            written += len(part)
