#!/usr/bin/env python3
"""Issue 32 benchmark: an agent in a Podman container against the same agent
as a plain process on this machine, in one run.

One daemon with one `[engines.pod]` (Podman's Docker Engine API, `podman
system service` on a socket of its own, `--runtime runc`), hangar-fake-agent
as claude in both cases (in the container it is the target folder,
bind-mounted read-only, in the image `hangar engine image build` makes):

- start, cold: `new` of a fresh session; for the container that makes the
  volume and the container, starts it and execs the agent;
- wake, warm: `wake` of a session just hibernated (the host agent's process
  is gone; the container is stopped and kept, started again and exec'd);
  each timed from the request to the daemon's reply (after the agent's
  first output, `[restore] settle_ms = 0`);
- idle memory per agent: the sum of Pss (/proc/PID/smaps_rollup) of every
  process a session adds: the host agent; for the container the exec
  bridge, the agent, the container's keep-alive, its `sleep` and the
  container's conmon; Podman's API service is shared by every container
  and reported apart;
- a 9-pane restore: 9 visible panes (and nothing else) of each kind saved,
  the daemon stopped, started again, and timed until `status` says the
  restore is complete with 9 live.

Rounds alternate host and container so both see the same load.

Usage: bench/engine_vs_host.py [--rounds 5] [--debug]
Needs: podman, runc, mmdebstrap (the image is built once, as the tests do).
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import hangar_bench as hb  # noqa: E402

IMAGE = "localhost/hangar-test-engines"


def home_hash(home):
    """hangar_core::engine::home_hash: FNV-1a 64 of the home's path."""
    h = 0xcbf29ce484222325
    for b in home.encode():
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def children(pid):
    out = []
    for p in all_pids():
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(p)
    return out


def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def session_pss_kb(c, sid, container):
    """Pss of what one session adds: its process tree (the agent, or the
    bridge), and for a container everything the container runs plus its
    conmon."""
    row = next(r for r in c.ask("list", {}) if r["id"] == sid)
    pids = set(tree(row["pid"]))
    if container:
        want = f"HANGAR_SESSION_ID={sid}".encode()
        name = f"hangar-{sid}"
        for p in all_pids():
            args = cmdline(p)
            if want in environ(p):
                pids.update(tree(p))
            elif args and args[0].endswith("conmon") and name in " ".join(args):
                pids.add(p)
        # The container's keep-alive and its sleep (no HANGAR_SESSION_ID).
        out = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}}", name],
                             capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip().isdigit():
            pids.update(tree(int(out.stdout.strip())))
    return sum(pss_kb(p) for p in pids), len(pids)


def timed(c, kind, body):
    t0 = time.perf_counter()
    rid = c.send(kind, body)
    while True:
        r = c.read()
        if r.get("id") == rid:
            break
    took = time.perf_counter() - t0
    if not r.get("ok"):
        raise RuntimeError(f"{kind} failed: {r}")
    return r["body"], took


def wait_live(c, sid, deadline=60):
    end = time.time() + deadline
    while time.time() < end:
        row = next(r for r in c.ask("list", {}) if r["id"] == sid)
        if row["state"] == "live":
            return
        if row["state"] == "failed":
            raise RuntimeError(f"{sid} failed: {row.get('reason')}")
        time.sleep(0.02)
    raise RuntimeError(f"{sid} did not come up")


def restore_ms(h, engine, visible=9):
    """Make `visible` panes (on the engine or not), stop the daemon, start it
    again, and time until the restore is complete with them live."""
    h.start_daemon()
    c = h.wait_socket()
    for _ in range(visible):
        body = {"provider": "claude", "cwd": h.work, "fallback_cwd": h.work, "no_mcp": True}
        if engine:
            body["engine"] = "pod"
        made, _ = timed(c, "new", body)
        wait_live(c, made["id"])
    h.cli("shutdown")
    h.daemon.wait(timeout=60)
    t0 = time.perf_counter()
    h.start_daemon()
    c = h.wait_socket()
    while True:
        st = c.ask("status", {})
        if st["restore"]["complete"] and st["sessions"]["live"] >= visible:
            break
        if st["sessions"]["failed"]:
            raise RuntimeError(f"restore failed: {st}")
        if time.perf_counter() - t0 > 300:
            raise RuntimeError(f"restore did not finish: {st}")
        time.sleep(0.02)
    took = time.perf_counter() - t0
    h.cli("shutdown")
    h.daemon.wait(timeout=60)
    return took, st["restore"]["duration_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--debug", action="store_true", help="use target/debug binaries")
    a = ap.parse_args()
    missing = [p for p in ("podman", "runc", "mmdebstrap") if not shutil.which(p)]
    if missing:
        print(f"engine_vs_host: {', '.join(missing)} not installed")
        return
    bins = None
    if a.debug:
        d = os.path.join(os.path.dirname(__file__), "..", "target", "debug")
        bins = hb.binaries(os.path.realpath(d))
    sock_dir = tempfile.mkdtemp(prefix="hangar-bench-podman-")
    sock = os.path.join(sock_dir, "podman.sock")
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    homes = []
    try:
        while not os.path.exists(sock):
            time.sleep(0.01)
        h = hb.Home(bins)
        homes.append(h)
        target = os.path.dirname(h.fake)
        config = (
            "[governor]\nwake_spacing_ms = 0\n[restore]\nsettle_ms = 0\n"
            f"[engines.pod]\nkind = \"podman\"\nsocket = \"{sock}\"\nimage = \"{IMAGE}\"\n"
            "runtime = \"runc\"\nulimits = { nofile = 20000, nproc = 32768 }\n"
            f"mounts = [\"{target}:{target}:ro\"]\nprograms = {{ claude = \"{h.fake}\" }}\n"
            "stop_timeout_secs = 2\n"
        )
        os.makedirs(h.home, exist_ok=True)
        with open(os.path.join(h.home, "config.toml"), "w") as f:
            f.write(config)
        if subprocess.run(["podman", "image", "exists", IMAGE]).returncode != 0:
            h.cli("engine", "image", "build", "pod")
        h.start_daemon()
        c = h.wait_socket()
        results = {"host": {"start": [], "wake": [], "pss_kb": []},
                   "podman": {"start": [], "wake": [], "pss_kb": []}}
        procs = {}
        for _ in range(a.rounds):
            for kind in ("host", "podman"):
                body = {"provider": "claude", "cwd": h.work, "fallback_cwd": h.work, "no_mcp": True}
                if kind == "podman":
                    body["engine"] = "pod"
                made, took = timed(c, "new", body)
                sid = made["id"]
                wait_live(c, sid)
                results[kind]["start"].append(took)
                time.sleep(1.0)  # idle: the agent has printed and waits
                kb, n = session_pss_kb(c, sid, kind == "podman")
                results[kind]["pss_kb"].append(kb)
                procs[kind] = n
                c.ask("hibernate", {"session": sid})
                _, took = timed(c, "wake", {"session": sid})
                wait_live(c, sid)
                results[kind]["wake"].append(took)
                c.ask("close", {"session": sid, "yes": True})
        service_pss = sum(pss_kb(p) for p in tree(service.pid))
        h.cli("shutdown")
        h.daemon.wait(timeout=60)

        restores = {}
        for kind in ("host", "podman"):
            r = hb.Home(bins)
            homes.append(r)
            os.makedirs(r.home, exist_ok=True)
            with open(os.path.join(r.home, "config.toml"), "w") as f:
                f.write(config)
            wall, daemon_ms = restore_ms(r, kind == "podman")
            restores[kind] = {"until_9_live_ms": round(wall * 1000, 1),
                              "daemon_restore_ms": daemon_ms}

        def ms(xs):
            return {"median_ms": round(statistics.median(xs) * 1000, 1),
                    "max_ms": round(max(xs) * 1000, 1)}

        print(json.dumps({
            "rounds": a.rounds,
            "load_average": os.getloadavg(),
            "start_cold": {k: ms(v["start"]) for k, v in results.items()},
            "wake_warm": {k: ms(v["wake"]) for k, v in results.items()},
            "idle_pss_kb_per_agent": {k: statistics.median(v["pss_kb"]) for k, v in results.items()},
            "processes_per_agent": procs,
            "podman_service_pss_kb_shared": service_pss,
            "restore_9_panes": restores,
        }, indent=1))
    finally:
        for h in homes:
            h.close()
        for h in homes:
            # Whatever a failed run left of these homes (close removes the rest).
            filt = f"label=hangar.home={home_hash(h.home)}"
            subprocess.run(["podman", "rm", "--force", "--volumes", "--filter", filt],
                           capture_output=True)
            subprocess.run(["podman", "volume", "prune", "--force", "--filter", filt],
                           capture_output=True)
        service.send_signal(signal.SIGTERM)
        try:
            service.wait(timeout=10)
        except subprocess.TimeoutExpired:
            service.kill()
        shutil.rmtree(sock_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
