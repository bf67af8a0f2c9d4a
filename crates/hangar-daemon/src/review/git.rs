//! Running `git` for review and landing: bytes out, stderr in the error,
//! never a prompt, never an editor; through the daemon's `Os` (`os::Git`),
//! so a test on `FakeOs` scripts it.

use std::ffi::OsStr;
use std::path::Path;

use hangar_protocol::message::codes;

use crate::errors::ApiError;
use crate::os::Git;

/// `git -C dir ARGS` with extra environment; stdout as bytes. Run through
/// the daemon's `Os` (`os::Git`: never a prompt, never an editor).
pub fn git_env<I, S>(
    os: &dyn Git,
    dir: &Path,
    args: I,
    env: &[(&str, &OsStr)],
) -> Result<Vec<u8>, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let out = os.run_git(dir, &args, env, None).map_err(GitError::NoGit)?;
    if out.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            dir: dir.display().to_string(),
            code: out.code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

pub fn git<I, S>(os: &dyn Git, dir: &Path, args: I) -> Result<Vec<u8>, GitError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    git_env(os, dir, args, &[])
}

/// `git` whose output is one line of text (an id, a branch).
pub fn git_line(os: &dyn Git, dir: &Path, args: &[&str]) -> Result<String, GitError> {
    git(os, dir, args).map(|o| String::from_utf8_lossy(&o).trim().to_owned())
}

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}; install git or put it on PATH")]
    NoGit(std::io::Error),
    #[error("git {args} failed in {dir}: {stderr}")]
    Failed {
        args: String,
        dir: String,
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
}

impl From<GitError> for ApiError {
    fn from(e: GitError) -> Self {
        ApiError::new(codes::FAILED, e.to_string())
    }
}

/// The branch checked out in `dir`, or `None` when detached.
pub fn current_branch(os: &dyn Git, dir: &Path) -> Option<String> {
    git_line(os, dir, &["symbolic-ref", "-q", "--short", "HEAD"])
        .ok()
        .filter(|b| !b.is_empty())
}

/// Whether `rev` names a commit here.
pub fn resolves(os: &dyn Git, dir: &Path, rev: &str) -> Option<String> {
    git_line(
        os,
        dir,
        &[
            "rev-parse",
            "--verify",
            "-q",
            "--end-of-options",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .ok()
    .filter(|c| !c.is_empty())
}

/// A merge, rebase, cherry-pick or revert stopped in the checkout `dir`.
pub fn in_progress(os: &dyn Git, dir: &Path) -> Option<String> {
    let git_dir = git_line(
        os,
        dir,
        &["rev-parse", "--path-format=absolute", "--git-dir"],
    )
    .ok()?;
    let g = Path::new(&git_dir);
    [
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("MERGE_HEAD", "merge"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
    ]
    .iter()
    .find(|(f, _)| g.join(f).exists())
    .map(|(_, what)| (*what).to_owned())
}

/// Uncommitted files in `dir`: tracked changes and untracked files.
pub fn dirty_files(os: &dyn Git, dir: &Path) -> Result<usize, GitError> {
    let out = git(
        os,
        dir,
        ["status", "--porcelain=v1", "-z", "--untracked-files=normal"],
    )?;
    // Renames carry a second path: count entries by their status prefix.
    let mut n = 0;
    let mut fields = out.split(|&b| b == 0);
    while let Some(f) = fields.next() {
        if f.len() < 3 {
            continue;
        }
        n += 1;
        if matches!(f[0], b'R' | b'C') {
            fields.next();
        }
    }
    Ok(n)
}

/// Every worktree of the repository with the branch it has checked out:
/// `(folder, Some("refs/heads/B"))`, from `git worktree list --porcelain -z`.
pub fn worktrees(os: &dyn Git, dir: &Path) -> Result<Vec<(String, Option<String>)>, GitError> {
    let out = git(os, dir, ["worktree", "list", "--porcelain", "-z"])?;
    let mut list = Vec::new();
    let mut path: Option<String> = None;
    let mut branch: Option<String> = None;
    for field in out.split(|&b| b == 0) {
        let f = String::from_utf8_lossy(field);
        if f.is_empty() {
            if let Some(p) = path.take() {
                list.push((p, branch.take()));
            }
            branch = None;
        } else if let Some(p) = f.strip_prefix("worktree ") {
            path = Some(p.to_owned());
        } else if let Some(b) = f.strip_prefix("branch ") {
            branch = Some(b.to_owned());
        }
    }
    if let Some(p) = path.take() {
        list.push((p, branch.take()));
    }
    Ok(list)
}
