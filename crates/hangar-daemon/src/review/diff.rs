//! `hangar diff`: the commits since the merge-base with the session's base
//! plus its staged, unstaged and untracked files, read through a temporary
//! copy of the index (`GIT_INDEX_FILE`), so the checkout's own index is
//! never written. The working tree becomes one tree object; every page of
//! the patch is a diff of that tree, so later pages need no second look at
//! the files.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use hangar_core::review::{DiffFile, PATCH_PAGE_LINES, page_end, parse_diff};
use hangar_protocol::reply::DiffPage;

use super::git::{GitError, git, git_env, git_line, resolves};
use crate::errors::ApiError;
use crate::os::Git;

/// What a diff is asked for.
pub struct DiffAsk {
    /// The checkout the session works in.
    pub dir: PathBuf,
    /// The refs to compare with, best first (`diff_base_candidates`).
    pub bases: Vec<String>,
    pub stat: bool,
    pub from_file: usize,
    /// From an earlier page: the working tree and merge-base it listed.
    pub tree: Option<String>,
    pub merge_base: Option<String>,
    /// A folder of hangar's own for the temporary index.
    pub scratch: PathBuf,
}

static SCRATCH: AtomicU64 = AtomicU64::new(0);

/// The working tree of `dir` as a tree object: its index copied, every
/// change (untracked files too, ignored ones not) added to the copy.
pub fn working_tree(os: &dyn Git, dir: &Path, scratch: &Path) -> Result<String, ApiError> {
    let index = git_line(
        os,
        dir,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    )?;
    std::fs::create_dir_all(scratch).map_err(|e| {
        ApiError::new(
            hangar_protocol::message::codes::FAILED,
            format!("cannot create {}: {e}", scratch.display()),
        )
    })?;
    let tmp = scratch.join(format!(
        "index-{}-{}",
        std::process::id(),
        SCRATCH.fetch_add(1, Ordering::Relaxed)
    ));
    let _gone = Remove(tmp.clone());
    // The copy keeps the index's file stamps: only changed files are read.
    if Path::new(&index).is_file() {
        std::fs::copy(&index, &tmp).map_err(|e| {
            ApiError::new(
                hangar_protocol::message::codes::FAILED,
                format!("cannot copy the index {index}: {e}"),
            )
        })?;
    }
    let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", tmp.as_os_str())];
    git_env(os, dir, ["add", "-A", "--", ":/"], &env)?;
    let tree = git_env(os, dir, ["write-tree"], &env)?;
    Ok(String::from_utf8_lossy(&tree).trim().to_owned())
}

/// Removes a scratch file when dropped.
struct Remove(PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const DIFF_OPTS: [&str; 5] = [
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "-M",
    "--ignore-submodules=none",
];

/// The changed files between two trees (or commits).
pub fn files_between(
    os: &dyn Git,
    dir: &Path,
    from: &str,
    to: &str,
) -> Result<Vec<DiffFile>, ApiError> {
    let run = |what: &str| -> Result<Vec<u8>, GitError> {
        let mut args = vec!["diff", what, "-z"];
        args.extend(DIFF_OPTS);
        args.extend([from, to]);
        git(os, dir, &args)
    };
    let raw = run("--raw")?;
    let numstat = run("--numstat")?;
    parse_diff(&raw, &numstat).map_err(|e| ApiError::internal(e.to_string()))
}

/// The patch of `files` between two trees (all of them when `whole`).
fn patch(
    os: &dyn Git,
    dir: &Path,
    from: &str,
    to: &str,
    files: &[DiffFile],
    whole: bool,
) -> Result<String, ApiError> {
    let mut args: Vec<&str> = vec!["--literal-pathspecs", "diff", "-p"];
    args.extend(DIFF_OPTS);
    args.extend([from, to, "--"]);
    if !whole {
        for f in files {
            args.push(&f.path);
            if let Some(old) = &f.old_path {
                args.push(old);
            }
        }
    }
    let out = git(os, dir, &args)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// One page of a session's diff: `{base, merge_base, head, tree, files,
/// patch, next_file}` (`next_file` when more pages follow).
pub fn diff(os: &dyn Git, ask: DiffAsk) -> Result<DiffPage, ApiError> {
    let dir = ask.dir.as_path();
    if !dir.is_dir() {
        return Err(ApiError::invalid(format!(
            "the session's folder {} does not exist",
            dir.display()
        )));
    }
    let head = resolves(os, dir, "HEAD").ok_or_else(|| {
        ApiError::invalid(format!(
            "{} is not a git checkout with commits; there is nothing to diff",
            dir.display()
        ))
    })?;
    let base = ask
        .bases
        .iter()
        .find(|b| resolves(os, dir, b).is_some())
        .cloned()
        .ok_or_else(|| {
            ApiError::invalid(if ask.bases.is_empty() {
                "no base was recorded for this session; pass --base REF".to_owned()
            } else {
                format!(
                    "the base {} is not a commit here; pass --base REF",
                    ask.bases.join(" or ")
                )
            })
        })?;
    let (merge_base, tree) = match (ask.merge_base, ask.tree) {
        (Some(m), Some(t)) => (m, t),
        _ => {
            let mb = git_line(os, dir, &["merge-base", "--end-of-options", &base, "HEAD"])
                .map_err(|_| {
                    ApiError::invalid(format!(
                        "{base} and HEAD have no common history; pass --base REF"
                    ))
                })?;
            (mb, working_tree(os, dir, &ask.scratch)?)
        }
    };
    let files = files_between(os, dir, &merge_base, &tree)?;
    let (patch_text, next) = if ask.stat {
        (None, None)
    } else {
        let end = page_end(&files, ask.from_file, PATCH_PAGE_LINES);
        let from = ask.from_file.min(files.len());
        let whole = from == 0 && end == files.len();
        let text = if from == end {
            String::new()
        } else {
            patch(os, dir, &merge_base, &tree, &files[from..end], whole)?
        };
        (Some(text), (end < files.len()).then_some(end))
    };
    Ok(DiffPage {
        base,
        merge_base,
        head,
        tree,
        files,
        patch: patch_text,
        next_file: next,
    })
}
