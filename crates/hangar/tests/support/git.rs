//! Real git repositories for the worktree tests (issue 12), made in the
//! fixture's project folder. Only runs `git`; never touches a repository
//! outside the test's temp folder.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Hangar;

/// `git -C dir ARGS` with an identity, so commits work on a clean machine.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=hangar test",
            "-c",
            "user.email=test@hangar.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Turn the fixture's project folder into a repository with one commit:
/// `file.txt` tracked, `.env` ignored.
pub fn make_repo(h: &Hangar) -> PathBuf {
    let repo = h.work.clone();
    git(&repo, &["init", "-q"]);
    fs::write(repo.join("file.txt"), "original\n").unwrap();
    fs::write(repo.join(".gitignore"), ".env\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    repo
}
