//! Issue 30: a daemon SIGKILLed in the middle of `hangar finish`. After a
//! restart the repository and its backup refs agree (the target moved and
//! its backup ref stayed, or the target is untouched and no backup ref is
//! left that backs up nothing), and a second finish works.
//!
//! The daemon is held mid-finish by a stand-in of git's own
//! `reference-transaction` hook (githooks(5), git 2.28 and newer: called
//! with the state, `prepared`, `committed` or `aborted`, and the
//! `<old> <new> <ref>` lines of the transaction on stdin), which waits,
//! after the ref it watches was written, until the test lets it go. The
//! test kills the daemon there, as `kill -9` would: only the daemon, so
//! the git it ran finishes its step alone.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use support::git::{git, make_repo};
use support::*;

fn hangar() -> Hangar {
    Hangar::with_env(&[
        ("GIT_AUTHOR_NAME", "hangar test"),
        ("GIT_AUTHOR_EMAIL", "test@hangar.invalid"),
        ("GIT_COMMITTER_NAME", "hangar test"),
        ("GIT_COMMITTER_EMAIL", "test@hangar.invalid"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ])
}

fn rev(dir: &Path, r: &str) -> String {
    git(dir, &["rev-parse", r]).trim().to_owned()
}

fn backup_refs(dir: &Path) -> Vec<String> {
    git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/hangar/",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// The hook's folder of markers: `hold` arms it, `held` says it holds,
/// `release` lets it go, `released` says its git went on.
struct Hold {
    dir: PathBuf,
}

impl Hold {
    /// Installs the stand-in hook in `repo` (its hooks serve every
    /// worktree), holding after a transaction that wrote a ref starting
    /// with `watch`.
    fn install(h: &Hangar, repo: &Path, watch: &str) -> Hold {
        let dir = h.root.join("hold");
        fs::create_dir_all(&dir).unwrap();
        let hook = repo.join(".git/hooks/reference-transaction");
        fs::create_dir_all(hook.parent().unwrap()).unwrap();
        let d = dir.display();
        fs::write(
            &hook,
            format!(
                "#!/bin/sh\n\
                 PATH=/usr/bin:/bin\n\
                 lines=$(cat)\n\
                 [ \"$1\" = committed ] && [ -e '{d}/hold' ] || exit 0\n\
                 printf '%s\\n' \"$lines\" | grep -q ' {watch}' || exit 0\n\
                 rm -f '{d}/hold'\n\
                 touch '{d}/held'\n\
                 i=0\n\
                 while [ ! -e '{d}/release' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n\
                 touch '{d}/released'\n"
            ),
        )
        .unwrap();
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
        Hold { dir }
    }

    fn arm(&self) {
        fs::write(self.dir.join("hold"), "").unwrap();
    }

    fn held(&self) -> bool {
        self.dir.join("held").exists()
    }

    /// Lets the held git go on, and waits until it did.
    fn release(&self, h: &Hangar) {
        fs::write(self.dir.join("release"), "").unwrap();
        h.wait_until("the held git went on", DEADLINE, || {
            self.dir.join("released").exists()
        });
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("release"), "");
    }
}

/// A shell agent in its own worktree with one commit `main` lacks.
fn agent_with_a_commit(h: &Hangar) -> (String, PathBuf) {
    let id = h.new_agent(&["--provider", "shell", "--worktree", "--title", "cut off"]);
    h.wait_state(&id, "live");
    let wt = PathBuf::from(h.session(&id)["worktree"]["path"].as_str().unwrap());
    fs::write(wt.join("feature.txt"), "feature\n").unwrap();
    git(&wt, &["add", "feature.txt"]);
    git(&wt, &["commit", "-q", "-m", "a feature"]);
    (id, wt)
}

/// `hangar --json finish ID` started in the background.
fn start_finish(h: &Hangar, id: &str) -> Child {
    h.command(&["--json", "finish", id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hangar finish")
}

/// SIGKILLs the daemon, waits for it and for the finish client it
/// stranded, then starts a daemon again.
fn kill_and_restart(h: &Hangar, hold: &Hold, mut finish: Child) {
    let daemon = h.daemon_pid();
    // SAFETY: a plain kill(2) of the fixture's own daemon.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
    h.wait_until("the daemon is gone", DEADLINE, || {
        h.daemon_pid_opt().is_none()
    });
    h.wait_until("the finish client gave up", DEADLINE, || {
        finish.try_wait().ok().flatten().is_some()
    });
    hold.release(h);
    h.start_daemon();
}

#[test]
fn a_daemon_killed_after_the_backup_but_before_the_move_leaves_main_and_no_backup_then_finishes() {
    let h = hangar();
    let repo = make_repo(&h);
    let main_before = rev(&repo, "main");
    let (id, wt) = agent_with_a_commit(&h);
    let tip = rev(&wt, "HEAD");
    // `main` is checked out (clean) in the repository: finish writes the
    // backup ref, then fast-forwards that checkout. Held between the two.
    let hold = Hold::install(&h, &repo, "refs/hangar/backup/");
    hold.arm();
    let finish = start_finish(&h, &id);
    h.wait_until("finish wrote its backup ref", DEADLINE, || hold.held());
    kill_and_restart(&h, &hold, finish);

    // Untouched, with no backup of a move that never happened.
    assert_eq!(rev(&repo, "main"), main_before, "main never moved");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert!(!repo.join("feature.txt").exists());
    assert_eq!(
        backup_refs(&repo),
        Vec::<String>::new(),
        "a backup ref of a move that never happened"
    );
    assert_eq!(rev(&wt, "HEAD"), tip, "the agent's branch is as it was");

    // A second finish lands, with one backup ref of where main was.
    let v = h.json(&["finish", &id]);
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(rev(&repo, "main"), tip);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    let backups = backup_refs(&repo);
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert!(
        backups[0].ends_with(&format!("/heads/main {main_before}")),
        "{backups:?}"
    );
    git(&repo, &["fsck", "--no-dangling", "--no-progress"]);
}

#[test]
fn a_daemon_killed_after_the_move_keeps_the_backup_journals_the_landing_and_finishes_again() {
    let h = hangar();
    let repo = make_repo(&h);
    let main_before = rev(&repo, "main");
    let (id, wt) = agent_with_a_commit(&h);
    let tip = rev(&wt, "HEAD");
    // Held after the checkout's fast-forward wrote main, before the daemon
    // heard of it (so before its journal and its close).
    let hold = Hold::install(&h, &repo, "refs/heads/main");
    hold.arm();
    let finish = start_finish(&h, &id);
    h.wait_until("finish moved main", DEADLINE, || hold.held());
    kill_and_restart(&h, &hold, finish);

    // Moved, with its backup.
    assert_eq!(rev(&repo, "main"), tip);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert!(repo.join("feature.txt").is_file(), "the checkout followed");
    let backups = backup_refs(&repo);
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert!(
        backups[0].ends_with(&format!("/heads/main {main_before}")),
        "{backups:?}"
    );
    // The restart journaled the landing the killed daemon could not.
    let j = h.journal();
    let fin = j
        .iter()
        .find(|e| e["event"] == "finish")
        .expect("a finish event");
    assert_eq!(fin["session"], id.as_str());
    assert_eq!(fin["refs"][0]["ref"], "refs/heads/main");
    assert_eq!(fin["refs"][0]["new"], tip.as_str());

    // A second finish knows there is nothing left to land, and moves
    // nothing.
    let out = h.run(&["--json", "finish", &id]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to land"), "{err}");
    assert_eq!(rev(&repo, "main"), tip);
    assert_eq!(backup_refs(&repo).len(), 1);
    git(&repo, &["fsck", "--no-dangling", "--no-progress"]);
}
