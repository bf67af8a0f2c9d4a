//! A fork's worktree (issue 30, `hangar fork --worktree`): a new worktree
//! from the parent's `HEAD`, holding the parent's uncommitted state as the
//! parent has it: staged changes staged, unstaged ones unstaged, untracked
//! files copied.
//!
//! The parent's checkout is only ever read: its changes are taken as
//! patches (`git diff --binary`, with `GIT_OPTIONAL_LOCKS=0` so not even the
//! index's stat cache is refreshed) and its untracked files are copied.
//! Nothing is made when the parent is mid-rebase or mid-merge (its state is
//! not a state to carry on from), and a copy that fails takes the new
//! worktree back down.

use std::ffi::OsString;
use std::path::Path;

use serde::Serialize;

use super::git::{self, GitError};
use crate::errors::ApiError;
use crate::os::Git;

/// What was carried into the fork's worktree.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CopiedState {
    /// Whether staged changes were applied (to the index and the files).
    pub staged: bool,
    /// Whether unstaged changes were applied (to the files only).
    pub unstaged: bool,
    /// Untracked files copied.
    pub untracked: usize,
}

/// Why a fork's worktree cannot be made from `dir`, before anything is
/// made: a merge, rebase, cherry-pick or revert stopped there.
pub fn refusal(os: &dyn Git, dir: &Path) -> Option<String> {
    git::in_progress(os, dir).map(|what| {
        format!(
            "{} is in the middle of a {what}; finish or abort it there first (its state is not one to fork from)",
            dir.display()
        )
    })
}

/// The commit `dir` has checked out.
pub fn head(os: &dyn Git, dir: &Path) -> Result<String, ApiError> {
    git::resolves(os, dir, "HEAD").ok_or_else(|| {
        ApiError::invalid(format!(
            "{} is not a git checkout with commits; a fork gets a worktree only from one",
            dir.display()
        ))
    })
}

/// Carry `from`'s uncommitted state into the fresh worktree `to` (checked
/// out at `from`'s `HEAD`).
pub fn copy_uncommitted(os: &dyn Git, from: &Path, to: &Path) -> Result<CopiedState, ApiError> {
    let mut copied = CopiedState::default();
    // Submodules are left as they are checked out: their changes are not
    // patches `git apply` can carry.
    let diff = |cached: bool| -> Result<Vec<u8>, GitError> {
        let mut args = vec![
            "-c",
            "core.quotepath=off",
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules",
            "--full-index",
        ];
        if cached {
            args.push("--cached");
        }
        git::git(os, from, args)
    };
    let staged = diff(true)?;
    if !staged.is_empty() {
        apply(os, to, &staged, true)?;
        copied.staged = true;
    }
    let unstaged = diff(false)?;
    if !unstaged.is_empty() {
        apply(os, to, &unstaged, false)?;
        copied.unstaged = true;
    }
    let listed = git::git(
        os,
        from,
        [
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
            "--full-name",
        ],
    )?;
    let root = git::git_line(os, from, &["rev-parse", "--show-toplevel"])?;
    for rel in listed.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).map_err(|_| {
            ApiError::invalid(format!(
                "an untracked file's name in {} is not UTF-8; hangar cannot copy it",
                from.display()
            ))
        })?);
        copy_one(&Path::new(&root).join(rel), &to.join(rel))?;
        copied.untracked += 1;
    }
    Ok(copied)
}

/// `git apply [--index] --binary` of `patch` in `dir`, from standard input.
fn apply(os: &dyn Git, dir: &Path, patch: &[u8], index: bool) -> Result<(), ApiError> {
    let mut args: Vec<OsString> = ["apply", "--binary", "--whitespace=nowarn"]
        .into_iter()
        .map(OsString::from)
        .collect();
    if index {
        args.push("--index".into());
    }
    let out = os
        .run_git(dir, &args, &[], Some(patch))
        .map_err(|e| ApiError::internal(format!("cannot run git apply: {e}")))?;
    if out.code != Some(0) {
        return Err(ApiError::internal(format!(
            "git apply of the parent's {} changes failed in {}: {}",
            if index { "staged" } else { "unstaged" },
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Copy one untracked file (or symlink) with its permissions.
fn copy_one(from: &Path, to: &Path) -> Result<(), ApiError> {
    let io = |what: &str, e: std::io::Error| {
        ApiError::internal(format!("cannot {what} {}: {e}", to.display()))
    };
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io("make the folder of", e))?;
    }
    let meta = std::fs::symlink_metadata(from).map_err(|e| io("read the parent's", e))?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from).map_err(|e| io("read the link for", e))?;
        std::os::unix::fs::symlink(target, to).map_err(|e| io("link", e))?;
    } else {
        std::fs::copy(from, to).map_err(|e| io("copy", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::RealOs;
    use crate::review::tests::sh;
    use std::path::PathBuf;

    fn repo(root: &Path) -> PathBuf {
        let dir = root.join("repo");
        std::fs::create_dir_all(&dir).unwrap();
        sh(&dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.join("gone.txt"), "bye\n").unwrap();
        std::fs::write(dir.join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
        sh(&dir, &["add", "."]);
        sh(&dir, &["commit", "-q", "-m", "init"]);
        dir
    }

    #[test]
    fn the_parents_staged_unstaged_and_untracked_state_arrives_as_it_was_and_the_parent_is_untouched()
     {
        let tmp = tempfile::TempDir::new().unwrap();
        let parent = repo(tmp.path());
        // Staged: a change and a deletion; unstaged on top; untracked files.
        std::fs::write(parent.join("a.txt"), "one\nstaged\n").unwrap();
        sh(&parent, &["add", "a.txt"]);
        sh(&parent, &["rm", "-q", "gone.txt"]);
        std::fs::write(parent.join("a.txt"), "one\nstaged\nunstaged\n").unwrap();
        std::fs::write(parent.join("bin.dat"), [9u8, 0, 8, 0]).unwrap();
        std::fs::create_dir_all(parent.join("new/deep")).unwrap();
        std::fs::write(parent.join("new/deep/n.txt"), "untracked\n").unwrap();
        std::fs::write(parent.join("tab\tname.txt"), "odd\n").unwrap();
        let status_before = sh(&parent, &["status", "--porcelain=v1", "-z"]);
        let index_before = std::fs::read(parent.join(".git/index")).unwrap();

        let fork = tmp.path().join("fork");
        let head = head(&RealOs, &parent).unwrap();
        sh(
            &parent,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "f",
                fork.to_str().unwrap(),
                &head,
            ],
        );
        let copied = copy_uncommitted(&RealOs, &parent, &fork).unwrap();
        assert_eq!(
            copied,
            CopiedState {
                staged: true,
                unstaged: true,
                untracked: 2
            }
        );
        // Same files, same staged/unstaged split.
        assert_eq!(
            sh(&fork, &["status", "--porcelain=v1", "-z"]),
            status_before
        );
        assert_eq!(
            std::fs::read_to_string(fork.join("a.txt")).unwrap(),
            "one\nstaged\nunstaged\n"
        );
        assert_eq!(
            sh(&fork, &["show", ":a.txt"]),
            "one\nstaged\n",
            "the staged version is in the fork's index"
        );
        assert_eq!(std::fs::read(fork.join("bin.dat")).unwrap(), [9u8, 0, 8, 0]);
        assert!(!fork.join("gone.txt").exists());
        // The parent is exactly as it was, its index not even rewritten.
        assert_eq!(
            std::fs::read(parent.join(".git/index")).unwrap(),
            index_before
        );
        assert_eq!(
            sh(&parent, &["status", "--porcelain=v1", "-z"]),
            status_before
        );
    }

    #[test]
    fn a_parent_mid_merge_is_refused_before_anything_is_made() {
        let tmp = tempfile::TempDir::new().unwrap();
        let parent = repo(tmp.path());
        assert_eq!(refusal(&RealOs, &parent), None);
        let git_dir = parent.join(".git");
        std::fs::write(git_dir.join("MERGE_HEAD"), head(&RealOs, &parent).unwrap()).unwrap();
        assert!(
            refusal(&RealOs, &parent)
                .unwrap()
                .contains("middle of a merge")
        );
    }
}
