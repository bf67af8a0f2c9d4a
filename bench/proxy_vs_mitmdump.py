#!/usr/bin/env python3
"""hangar's shared recording proxy against one mitmdump per session.

For each fleet size N (default 1, 10, 40), in one run:

  direct    N concurrent streamed calls straight to a local HTTPS test
            server (the stand-in for the provider API): the latency floor.
  hangar    a hangar daemon with N live fake-agent sessions, once with
            [proxy] enabled = false and once with it on; the N calls go
            through the daemon's proxy with each session's own credentials
            (read from the agent's environment) and are recorded. Extra memory
            = daemon RSS with the proxy minus without; extra processes are
            counted from /proc.
  mitmdump  N mitmdump processes (the old design: one recording proxy per
            session, each writing its flows with -w); each call goes through
            its own mitmdump. Extra memory = the sum of their RSS.

Latency is measured by the client: time to the first body byte and to the
last byte of a server-sent event stream (20 events, 10 ms apart), minus the
direct figure. Loopback only; everything started here is stopped at exit.

usage: bench/proxy_vs_mitmdump.py --hangar target/release/hangar \
         --mitmdump /path/to/mitmdump [--sessions 1,10,40] [--rounds 3]
(hangar-fake-agent is taken from next to the hangar binary)
"""

import argparse
import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from base64 import b64encode
from pathlib import Path

EVENTS = 20
PAUSE = 0.010


# ---------------------------------------------------------------- test server

def make_certs(d: Path):
    """A CA and a localhost certificate signed by it (openssl CLI)."""
    def run(*a):
        subprocess.run(a, check=True, capture_output=True, cwd=d)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench upstream CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost")
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "ext.cnf")
    return d / "ca.pem", d / "leaf.pem", d / "leaf.key"


class SSE(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.flush()
        for i in range(EVENTS):
            ev = ("event: message_delta\ndata: {\"type\":\"message_delta\",\"i\":%d,"
                  "\"usage\":{\"output_tokens\":%d}}\n\n" % (i, i)).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            self.wfile.flush()
            time.sleep(PAUSE)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


def start_server(cert, key):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SSE)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


# ---------------------------------------------------------------- client

def read_head(f):
    status = f.readline()
    while True:
        line = f.readline()
        if line in (b"\r\n", b"\n", b""):
            break
    return int(status.split()[1])


def call(port, cafile, proxy=None, auth=None):
    """One streamed call; returns (first_byte_s, last_byte_s)."""
    t0 = time.perf_counter()
    if proxy:
        s = socket.create_connection(("127.0.0.1", proxy))
        req = "CONNECT localhost:%d HTTP/1.1\r\nHost: localhost:%d\r\n" % (port, port)
        if auth:
            req += "Proxy-Authorization: Basic %s\r\n" % b64encode(auth.encode()).decode()
        s.sendall((req + "\r\n").encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            b = s.recv(1)
            if not b:
                raise RuntimeError("proxy closed")
            head += b
        if b" 200" not in head.split(b"\r\n")[0]:
            raise RuntimeError("proxy said %r" % head[:40])
    else:
        s = socket.create_connection(("127.0.0.1", port))
    ctx = ssl.create_default_context(cafile=str(cafile))
    t = ctx.wrap_socket(s, server_hostname="localhost")
    body = b'{"model":"bench","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    t.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: localhost:%d\r\nContent-Type: application/json\r\n"
              b"Authorization: Bearer sk-bench-000000000000000000000\r\nContent-Length: %d\r\n\r\n%s"
              % (port, len(body), body))
    f = t.makefile("rb")
    status = read_head(f)
    assert status == 200, status
    first = None
    while True:
        size = int(f.readline().split(b";")[0], 16)
        if size == 0:
            f.readline()
            break
        f.read(size)
        f.readline()
        if first is None:
            first = time.perf_counter() - t0
    last = time.perf_counter() - t0
    t.close()
    return first, last


def concurrent_calls(n, make_args):
    out = [None] * n
    barrier = threading.Barrier(n)

    def one(i):
        barrier.wait()
        out[i] = call(*make_args(i))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


# ---------------------------------------------------------------- /proc

def rss_kib(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open("/proc/%s/stat" % d).read()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return kids


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for k in children(todo.pop()):
            out.append(k)
            todo.append(k)
    return out


def env_of(pid, name):
    try:
        for e in open("/proc/%d/environ" % pid, "rb").read().split(b"\0"):
            if e.startswith(name.encode() + b"="):
                return e.split(b"=", 1)[1].decode()
    except OSError:
        pass
    return None


def wait_for(what, f, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        v = f()
        if v:
            return v
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


# ---------------------------------------------------------------- hangar

class Hangar:
    def __init__(self, hangar, root, ca, enabled):
        self.bin = hangar
        self.home = root / ("home-on" if enabled else "home-off")
        self.work = root / "work"
        self.work.mkdir(exist_ok=True)
        self.home.mkdir()
        (self.home / "config.toml").write_text(
            "[proxy]\nenabled = %s\nallow_hosts = [\"localhost\"]\nextra_ca_file = %s\n"
            "[governor]\nwake_spacing_ms = 0\nwake_concurrency = 8\n"
            % ("true" if enabled else "false", json.dumps(str(ca))))
        fake = Path(hangar).parent / "hangar-fake-agent"
        self.env = {"PATH": os.environ["PATH"], "HOME": str(root), "HANGAR_HOME": str(self.home),
                    "HANGAR_CLAUDE_BIN": str(fake), "CLAUDE_CONFIG_DIR": str(root / "claude"),
                    "TERM": "xterm-256color"}
        log = open(self.home / "daemon.out", "w")
        self.daemon = subprocess.Popen([hangar, "daemon"], env=self.env, stdout=log, stderr=log,
                                       start_new_session=True)
        wait_for("daemon", lambda: self.run("status").returncode == 0)

    def run(self, *args):
        return subprocess.run([self.bin, *args], env=self.env, cwd=self.work, capture_output=True)

    def json(self, *args):
        r = self.run("--json", *args)
        if r.returncode != 0:
            raise RuntimeError(r.stderr.decode())
        return json.loads(r.stdout)

    def sessions(self, n):
        for i in range(n):
            if i % 10 == 0:
                self.run("tab", "new", "t%d" % i)
            self.json("new", "--provider", "claude")
        wait_for("%d live" % n,
                 lambda: sum(r["state"] == "live" for r in self.json("ls")) == n)
        return [r["pid"] for r in self.json("ls")]

    def stop(self):
        self.run("shutdown")
        try:
            self.daemon.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.daemon.pid, signal.SIGKILL)


# ---------------------------------------------------------------- mitmdump

def start_mitmdumps(mitmdump, n, root, ca, stream=False):
    conf = root / "mitm-conf"
    conf.mkdir(exist_ok=True)
    procs, ports = [], []
    for i in range(n):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        p = subprocess.Popen(
            [mitmdump, "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port),
             "--set", "confdir=%s" % conf, "--set", "ssl_verify_upstream_trusted_ca=%s" % ca,
             "-w", str(root / ("flows-%d.mitm" % i))]
            # Streaming passes chunks on at once but then records no body.
            + (["--set", "stream_large_bodies=1"] if stream else []),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(p)
        ports.append(port)
        if i == 0:
            # The first one makes the CA the others share.
            wait_for("mitmproxy CA", lambda: (conf / "mitmproxy-ca-cert.pem").exists())

    def listening(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False

    for port in ports:
        wait_for("mitmdump on %d" % port, lambda port=port: listening(port))
    return procs, ports, conf / "mitmproxy-ca-cert.pem"


# ---------------------------------------------------------------- main

def med(xs):
    return statistics.median(xs) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hangar", required=True)
    ap.add_argument("--mitmdump", required=True)
    ap.add_argument("--sessions", default="1,10,40")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mitm-stream", action="store_true",
                    help="run mitmdump with stream_large_bodies=1 (streams, but records no bodies)")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    ca, leaf, key = make_certs(root)
    _srv, port = start_server(leaf, key)
    results = []
    try:
        for n in [int(x) for x in a.sessions.split(",")]:
            r = {"sessions": n}
            direct = []
            for _ in range(a.rounds):
                direct += concurrent_calls(n, lambda i: (port, ca))
            r["direct_first_ms"] = med([x[0] for x in direct])
            r["direct_last_ms"] = med([x[1] for x in direct])

            # hangar without the proxy: the same daemon and sessions.
            base = root / ("n%d" % n)
            base.mkdir()
            off = Hangar(a.hangar, base, ca, enabled=False)
            off.sessions(n)
            for _ in range(a.rounds):
                concurrent_calls(n, lambda i: (port, ca))
            rss_off = rss_kib(off.daemon.pid)
            off.stop()

            on = Hangar(a.hangar, base, ca, enabled=True)
            pids = on.sessions(n)
            auths, proxy_port = [], None
            for pid in pids:
                url = env_of(pid, "HTTPS_PROXY")
                creds, addr = url[len("http://"):].rsplit("@", 1)
                auths.append(creds)
                proxy_port = int(addr.rsplit(":", 1)[1])
            hangar_ca = on.home / "proxy" / "ca.pem"
            peak = [0]
            stop_sampling = threading.Event()

            def sample(pid=on.daemon.pid):
                while not stop_sampling.is_set():
                    peak[0] = max(peak[0], rss_kib(pid))
                    time.sleep(0.005)

            sampler = threading.Thread(target=sample)
            sampler.start()
            via = []
            for _ in range(a.rounds):
                via += concurrent_calls(n, lambda i: (port, hangar_ca, proxy_port, auths[i]))
            stop_sampling.set()
            sampler.join()
            rss_on = rss_kib(on.daemon.pid)
            extra_procs = len(descendants(on.daemon.pid)) - n
            captured = sum(1 for _ in (on.home / "capture").iterdir())
            on.stop()
            r.update({
                "hangar_extra_rss_kib": rss_on - rss_off,
                "hangar_peak_extra_rss_kib": max(peak[0], rss_on) - rss_off,
                "hangar_extra_processes": extra_procs,
                "hangar_first_ms": med([x[0] for x in via]),
                "hangar_last_ms": med([x[1] for x in via]),
                "hangar_sessions_captured": captured,
            })

            procs, ports, mitm_ca = start_mitmdumps(a.mitmdump, n, base, ca, a.mitm_stream)
            peak_m = [0]
            stop_sampling.clear()

            def sample_m():
                while not stop_sampling.is_set():
                    peak_m[0] = max(peak_m[0], sum(rss_kib(p.pid) for p in procs))
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample_m)
            sampler.start()
            viam = []
            for _ in range(a.rounds):
                viam += concurrent_calls(n, lambda i: (port, mitm_ca, ports[i], None))
            stop_sampling.set()
            sampler.join()
            rss_m = sum(rss_kib(p.pid) for p in procs)
            for p in procs:
                os.killpg(p.pid, signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
            r.update({
                "mitmdump_extra_rss_kib": rss_m,
                "mitmdump_peak_extra_rss_kib": max(peak_m[0], rss_m),
                "mitmdump_extra_processes": len(procs),
                "mitmdump_first_ms": med([x[0] for x in viam]),
                "mitmdump_last_ms": med([x[1] for x in viam]),
            })
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print()
    print("| sessions | extra RSS: hangar | extra RSS: mitmdump | ratio | extra processes: hangar / mitmdump "
          "| added first byte: hangar / mitmdump | added last byte: hangar / mitmdump |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        mib = lambda k: r[k] / 1024
        ratio = r["mitmdump_extra_rss_kib"] / max(r["hangar_extra_rss_kib"], 1)
        print("| %d | %.1f MiB (peak %.1f) | %.1f MiB (peak %.1f) | %.0fx | %d / %d | %.1f / %.1f ms | %.1f / %.1f ms |" % (
            r["sessions"], mib("hangar_extra_rss_kib"), mib("hangar_peak_extra_rss_kib"),
            mib("mitmdump_extra_rss_kib"), mib("mitmdump_peak_extra_rss_kib"), ratio,
            r["hangar_extra_processes"], r["mitmdump_extra_processes"],
            r["hangar_first_ms"] - r["direct_first_ms"], r["mitmdump_first_ms"] - r["direct_first_ms"],
            r["hangar_last_ms"] - r["direct_last_ms"], r["mitmdump_last_ms"] - r["direct_last_ms"]))
    print("\nload average at the end: %s" % open("/proc/loadavg").read().strip())
    print("direct (no proxy) medians: " + ", ".join(
        "%d sessions: first %.1f ms, last %.1f ms" % (r["sessions"], r["direct_first_ms"], r["direct_last_ms"])
        for r in results))


if __name__ == "__main__":
    sys.exit(main())
