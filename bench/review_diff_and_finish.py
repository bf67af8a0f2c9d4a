#!/usr/bin/env python3
"""Issue 30's figures, whole processes in one run:

1. `hangar diff ID --json` of a session whose worktree changes 10,000 files,
   against `git diff --stat` alone on the same change (goal: within 1.2x),
   in folders of 500 and all in one folder;
2. `hangar finish ID` of a 1,000-commit branch (fast-forward of the clean
   main checkout, with its backup ref), against `git merge --ff-only` of the
   same branch in a copy of the repository.

Each is timed `--runs` times (median and best); `hangar finish` lands once
per fresh repository, so its runs each make one. Agents are shells
(`/bin/sh`), so no agent CLI is needed. Release build:
`cargo build --release -p hangar -p hangar-fake-agent --bins`, then
`python3 bench/review_diff_and_finish.py [--files 10000] [--commits 1000]`.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import time

import hangar_bench

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@hangar.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@hangar.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd, *args, env=None):
    e = dict(os.environ, **GIT_ENV, **(env or {}))
    return subprocess.run(["git", "-C", cwd, *args], check=True, capture_output=True, env=e).stdout


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def repo_with_files(path, n, per_folder=500):
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    for i in range(n):
        d = os.path.join(path, f"d{i // per_folder}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.txt"), "w") as f:
            f.write(f"line one of {i}\nline two\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "base")


def agent_in_worktree(home, cwd, title):
    out = home.json("new", "--provider", "shell", "--cwd", cwd, "--worktree", "--title", title)
    sid = out["id"]
    rows = home.json("ls")
    row = next(r for r in rows if r["id"] == sid)
    return sid, row["worktree"]["path"]


def bench_diff(home, n, runs, per_folder=500):
    repo = os.path.join(home.work, f"diffrepo-{per_folder}")
    repo_with_files(repo, n, per_folder)
    sid, wt = agent_in_worktree(home, repo, f"ten thousand {per_folder}")
    for root, _, files in os.walk(wt):
        if ".git" in root:
            continue
        for name in files:
            if name.endswith(".txt"):
                with open(os.path.join(root, name), "a") as f:
                    f.write("changed by the agent\n")
    hangar_t = [timed(lambda: home.cli("diff", sid, "--json")) for _ in range(runs)]
    git_t = [timed(lambda: git(wt, "diff", "--stat", "main")) for _ in range(runs)]
    return hangar_t, git_t


def bench_finish(home, commits, runs):
    hangar_t, git_t = [], []
    for r in range(runs):
        repo = os.path.join(home.work, f"finishrepo{r}")
        repo_with_files(repo, 10)
        sid, wt = agent_in_worktree(home, repo, f"long branch {r}")
        for i in range(commits):
            with open(os.path.join(wt, "log.txt"), "a") as f:
                f.write(f"{i}\n")
            git(wt, "add", "log.txt")
            git(wt, "commit", "-q", "-m", f"step {i}")
        copy = repo + "-copy"
        shutil.copytree(repo, copy, symlinks=True)
        branch = git(wt, "rev-parse", "--abbrev-ref", "HEAD").decode().strip()
        hangar_t.append(timed(lambda: home.cli("finish", sid, "--json", "--keep-session")))
        git_t.append(timed(lambda: git(copy, "merge", "-q", "--ff-only", branch)))
    return hangar_t, git_t


def show(name, ours, peer, peer_name):
    m, p = statistics.median(ours), statistics.median(peer)
    # The first run is hangar's cold one (it writes the change's blobs and
    # makes its temporary index); later runs reuse both, as a second look
    # at a session's diff does.
    print(f"{name}: hangar median {m * 1000:.0f} ms (best {min(ours) * 1000:.0f}, "
          f"first {ours[0] * 1000:.0f}), "
          f"{peer_name} median {p * 1000:.0f} ms (best {min(peer) * 1000:.0f}, "
          f"first {peer[0] * 1000:.0f}): {m / p:.2f}x, first runs {ours[0] / peer[0]:.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    home = hangar_bench.Home()
    try:
        home.env.update(GIT_ENV)
        home.start_daemon()
        home.wait_socket()
        show(f"diff of {a.files} changed files, 500 a folder", *bench_diff(home, a.files, a.runs),
             "git diff --stat")
        # One folder of them all: hangar cannot cut it into parts to read
        # at once (a pathspec per file costs git more than it saves).
        show(f"diff of {a.files} changed files in one folder",
             *bench_diff(home, a.files, a.runs, per_folder=a.files), "git diff --stat")
        show(f"finish of a {a.commits}-commit branch", *bench_finish(home, a.commits, max(1, a.runs // 2)),
             "git merge --ff-only")
    finally:
        home.close()


if __name__ == "__main__":
    main()
