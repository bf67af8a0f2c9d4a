//! Real git repositories for tests, made in a test's own temp folder. Only
//! runs `git`; never touches a repository outside it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::home::Hangar;

/// `git -C dir ARGS` with an identity, no signing, `main` as the first
/// branch and no system config, so commits work the same on a clean
/// machine; asserts success and returns stdout.
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

/// Makes `dir` a repository with one commit on `main`: `file.txt` tracked,
/// `.env` ignored.
pub fn init_repo(dir: &Path) {
    fs::create_dir_all(dir).expect("create the repository folder");
    git(dir, &["init", "-q"]);
    fs::write(dir.join("file.txt"), "original\n").expect("write file.txt");
    fs::write(dir.join(".gitignore"), ".env\n").expect("write .gitignore");
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

/// Turns the fixture's project folder into a repository with one commit
/// (see [`init_repo`]); returns its path.
pub fn make_repo(h: &Hangar) -> PathBuf {
    let repo = h.work.clone();
    init_repo(&repo);
    repo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_repository_has_one_commit_on_main_and_ignores_env() {
        let dir = tempfile::tempdir().unwrap();
        init_repo(dir.path());
        assert_eq!(
            git(dir.path(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
            "main"
        );
        assert_eq!(
            git(dir.path(), &["rev-list", "--count", "HEAD"]).trim(),
            "1"
        );
        fs::write(dir.path().join(".env"), "SECRET=1\n").unwrap();
        assert_eq!(git(dir.path(), &["status", "--porcelain"]), "");
    }
}
