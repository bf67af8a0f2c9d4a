//! Reviewing and landing an agent's work (issue 30): `hangar diff`,
//! `hangar finish`. Every git command runs here, in blocking tasks, never
//! under the sessions' lock; the rules (which base, which checks refuse,
//! which refs move) are `hangar_core::review`'s.
//!
//! What it must never do: touch the real index of a checkout (a diff reads
//! the working tree through a temporary index), check anything out in a
//! checkout hangar did not make, move a ref without a backup ref, or change
//! anything when a check refuses.

pub mod diff;
pub mod finish;
pub mod fork_state;
pub mod git;
pub mod interrupted;

use std::path::Path;

use hangar_core::review::GitBase;
use hangar_core::worktree::WorktreeInfo;

use crate::os::Git;

/// Where a new session's work starts: its worktree's base branch and the
/// commit the worktree was made from; without a worktree, the branch and
/// `HEAD` of the checkout its folder is in. `None` outside a repository.
pub fn start_base(os: &dyn Git, worktree: Option<&WorktreeInfo>, cwd: &Path) -> Option<GitBase> {
    match worktree {
        Some(info) => {
            let commit = git::resolves(os, Path::new(&info.path), "HEAD")?;
            // `base` is a branch name, or the commit id itself when the
            // main checkout was detached.
            let branch = (!info.base.starts_with(&commit) && !info.base.is_empty())
                .then(|| info.base.clone());
            Some(GitBase { branch, commit })
        }
        None => {
            let commit = git::resolves(os, cwd, "HEAD")?;
            Some(GitBase {
                branch: git::current_branch(os, cwd),
                commit,
            })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;
    use std::process::Command;

    /// `git -C dir ARGS` for a test's own repository, with an identity;
    /// its output.
    pub(crate) fn sh(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}
