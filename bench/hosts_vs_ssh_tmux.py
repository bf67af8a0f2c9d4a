#!/usr/bin/env python3
"""Through SSH: `hangar --host H attach` vs `ssh -t H tmux attach` (issue 22).

Both reach the same kind of /bin/sh session on the "remote" side of a real
OpenSSH server that this script starts on loopback (its own host key, user
key, known_hosts and client config in a temp folder; nothing of the
machine's own ssh setup is read). Each client runs in a PTY this script
reads; the measures are bench/attach_vs_tmux.py's:

- throughput: the session runs `cat` on a 10 MB text file, then prints a
  marker; time from sending the command to the marker reaching the client
  (session -> server -> sshd -> ssh -> client);
- echo latency: one key written to the client's terminal until the client
  shows it (key -> ssh -> sshd -> server -> PTY echo -> back), median, p95.

hangar: `hangar --host bench attach ID`, which in a terminal is `ssh -t ...
hangar attach -- ID` (since session 16; before, the shared link `ssh -T ...
hangar bridge --mux` relayed by the local attach), the remote attach handing
sshd's terminal to the remote daemon, which reads and writes it itself.
tmux: `ssh -t bench-alias tmux attach`, the usual way to reach a remote
tmux, whose client hands the terminal to its server the same way.

Usage: bench/hosts_vs_ssh_tmux.py [--hangar PATH] [--mb 10] [--keys 200] [--rounds N]
Needs: cargo build --release -p hangar; openssh-server, openssh-client, tmux;
root (sshd wants /run/sshd).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attach_vs_tmux as base  # noqa: E402  (the shared PTY and timing helpers)

SSHD = "/usr/sbin/sshd"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sshd(work):
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(work, name)], check=True)
    shutil.copy(os.path.join(work, "user_key.pub"), os.path.join(work, "authorized_keys"))
    os.makedirs("/run/sshd", exist_ok=True)
    user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    port = free_port()
    cfg = os.path.join(work, "sshd_config")
    with open(cfg, "w") as f:
        f.write(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {work}/host_key\nPidFile {work}/sshd.pid\n"
            f"AuthorizedKeysFile {work}/authorized_keys\nStrictModes no\nUsePAM no\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
            "PrintMotd no\nPrintLastLog no\n"
        )
    sshd = subprocess.Popen([SSHD, "-D", "-f", cfg, "-E", os.path.join(work, "sshd.log")])
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                if s.recv(4) == b"SSH-":
                    break
        except OSError:
            pass
        if time.monotonic() > deadline or sshd.poll() is not None:
            raise RuntimeError("sshd did not start")
        time.sleep(0.05)
    kind, key = open(os.path.join(work, "host_key.pub")).read().split()[:2]
    with open(os.path.join(work, "known_hosts"), "w") as f:
        f.write(f"[127.0.0.1]:{port} {kind} {key}\n")
    ssh_cfg = os.path.join(work, "ssh_config")
    with open(ssh_cfg, "w") as f:
        f.write(
            f"Host bench-alias\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {work}/user_key\n"
            f"Host *\n  UserKnownHostsFile {work}/known_hosts\n  StrictHostKeyChecking yes\n"
            "  IdentitiesOnly yes\n  BatchMode yes\n  LogLevel ERROR\n"
        )
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    wrapper = os.path.join(bindir, "ssh")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nexec /usr/bin/ssh -F '{ssh_cfg}' \"$@\"\n")
    os.chmod(wrapper, 0o755)
    return sshd, bindir


def bench_hangar(hangar, big, keys, work, bindir):
    # A fresh pair of homes each round (--rounds).
    homes = tempfile.mkdtemp(dir=work, prefix="round-")
    remote_home = os.path.join(homes, "remote-home")
    local_home = os.path.join(homes, "local-home")
    os.makedirs(local_home)
    # The remote machine's hangar: its shell provider is /bin/sh.
    remote = os.path.join(homes, "remote-hangar")
    with open(remote, "w") as f:
        f.write(f"#!/bin/sh\nexport HANGAR_SHELL=/bin/sh SHELL=/bin/sh PS1='$ ' TERM=xterm-256color\nexec '{hangar}' \"$@\"\n")
    os.chmod(remote, 0o755)
    with open(os.path.join(local_home, "config.toml"), "w") as f:
        f.write(f'[hosts.bench]\nssh = "bench-alias"\nhangar = "{remote}"\nhome = "{remote_home}"\n')
    renv = dict(os.environ, HANGAR_HOME=remote_home)
    run = lambda *a: subprocess.run([remote, *a], env=renv, check=True, capture_output=True, text=True)
    try:
        sid = json.loads(run("new", "--provider", "shell", "--cwd", work, "--json").stdout)["id"]
        lenv = dict(os.environ, HANGAR_HOME=local_home, PATH=f"{bindir}:{os.environ['PATH']}", TERM="xterm-256color")
        pid, fd = base.spawn_in_pty([hangar, "--host", "bench", "attach", sid], lenv)
        try:
            base.drain(fd, 1.0)
            lat = base.echo_latency(fd, keys)
            secs = base.throughput(fd, lambda c: run("send", sid, c), big)
        finally:
            os.write(fd, b"\x02d")
            time.sleep(0.3)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        return secs, lat
    finally:
        subprocess.run([remote, "shutdown"], env=renv, capture_output=True)


def bench_tmux(big, keys, work, bindir):
    sock = os.path.join(work, "tmux.sock")
    env = dict(os.environ, PS1="$ ", TERM="xterm-256color", SHELL="/bin/sh")
    tmux = ["tmux", "-S", sock, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "bench", "-x", str(base.COLS), "-y", str(base.ROWS),
                    "-c", work, "/bin/sh"], env=env, check=True)
    subprocess.run([*tmux, "set", "-g", "status", "off"], env=env, check=True)
    try:
        client = [os.path.join(bindir, "ssh"), "-t", "bench-alias", "tmux", "-S", sock, "attach", "-t", "bench"]
        pid, fd = base.spawn_in_pty(client, env)
        try:
            base.drain(fd, 1.0)
            lat = base.echo_latency(fd, keys)
            send = lambda c: subprocess.run([*tmux, "send-keys", "-t", "bench", c, "Enter"], env=env, check=True)
            secs = base.throughput(fd, send, big)
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
        return secs, lat
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hangar", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "hangar"))
    ap.add_argument("--mb", type=int, default=10)
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1, help="alternate the two clients this many times")
    args = ap.parse_args()
    hangar = os.path.abspath(args.hangar)
    if not os.access(hangar, os.X_OK):
        sys.exit(f"{hangar} is missing: cargo build --release -p hangar (or pass --hangar)")
    for need in (SSHD, shutil.which("ssh"), shutil.which("tmux")):
        if not need or not os.path.exists(need):
            sys.exit("needs openssh-server, openssh-client and tmux")
    with tempfile.TemporaryDirectory(prefix="hangar-hosts-bench-") as work:
        sshd, bindir = start_sshd(work)
        try:
            big = os.path.join(work, "big.txt")
            line = (b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2)[:99] + b"\n"
            with open(big, "wb") as f:
                block = line * 10000
                for _ in range(max(1, args.mb * 1_000_000 // len(block))):
                    f.write(block)
            rows = []
            # Alternated, so a change in the machine's load falls on both.
            for _ in range(args.rounds):
                rows.append(base.summary("hangar --host", *bench_hangar(hangar, big, args.keys, work, bindir), args.mb))
                rows.append(base.summary("ssh -t tmux", *bench_tmux(big, args.keys, work, bindir), args.mb))
        finally:
            sshd.terminate()
            sshd.wait(timeout=10)
    print(f"{'client':<15} {args.mb} MB to client   MB/s    echo median   echo p95")
    for r in rows:
        print(f"{r['name']:<15} {r['secs']:>12.2f} s {r['mbps']:>8.1f} {r['median_ms']:>10.2f} ms {r['p95_ms']:>8.2f} ms")


if __name__ == "__main__":
    main()
