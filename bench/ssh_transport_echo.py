#!/usr/bin/env python3
"""Key echo through ssh alone, no multiplexer: how much of a key's round trip
over a host is the transport (issue 31 item 5; docs/src/benchmarks-history.md, "Key echo over
a host"). The same loopback sshd as bench/hosts_vs_ssh_tmux.py; `cat` on the
far side sends each byte back:

A: ssh -t alias 'stty raw -echo; cat'   the client on a PTY this script reads
   (bench/attach_vs_tmux.py's echo loop), the far side a PTY: tmux's transport
B: ssh -T alias cat                      the client's stdin and stdout a socket
   pair (a byte written, read back): hangar's link (`ssh -T ... bridge --mux`)
C: ssh -tt alias 'stty raw -echo; cat'   a socket pair here, a raw PTY there

Usage: bench/ssh_transport_echo.py [KEYS]   (as root: sshd wants /run/sshd)
"""
import os, sys, socket, subprocess, tempfile, time, statistics, signal
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hosts_vs_ssh_tmux as h
import attach_vs_tmux as base

def echo_sock(sock, keys):
    lat = []
    sock.settimeout(5)
    for i in range(keys):
        b = bytes([97 + i % 26])
        t = time.perf_counter()
        sock.sendall(b)
        got = b""
        while b not in got:
            got += sock.recv(4096)
        lat.append((time.perf_counter() - t) * 1000)
    return lat

def main():
    keys = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    work = tempfile.mkdtemp()
    sshd, bindir = h.start_sshd(work)
    ssh = os.path.join(bindir, "ssh")
    try:
        for rnd in range(2):
            # A
            pid, fd = base.spawn_in_pty([ssh, "-t", "bench-alias", "stty raw -echo; echo READY; cat"], dict(os.environ))
            base.read_until(fd, b"READY", 10)
            base.drain(fd, 0.5)
            lat = base.echo_latency(fd, keys)
            os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0); os.close(fd)
            print(f"A ssh -t (pty both ends)      median {statistics.median(lat):.3f} ms")
            # B and C
            for label, args in (("B ssh -T cat (socketpair)   ", [ssh, "-T", "bench-alias", "echo READY; exec cat"]),
                                ("C ssh -tt raw (socketpair)  ", [ssh, "-tt", "bench-alias", "stty raw -echo; echo READY; exec cat"])):
                ours, theirs = socket.socketpair()
                p = subprocess.Popen(args, stdin=theirs, stdout=theirs, stderr=subprocess.DEVNULL)
                theirs.close()
                got = b""
                ours.settimeout(10)
                while b"READY" not in got:
                    got += ours.recv(4096)
                time.sleep(0.3)
                ours.setblocking(False)
                try:
                    while ours.recv(4096): pass
                except BlockingIOError:
                    pass
                ours.setblocking(True)
                lat = echo_sock(ours, keys)
                p.kill(); p.wait(); ours.close()
                print(f"{label} median {statistics.median(lat):.3f} ms")
    finally:
        sshd.kill()

main()
