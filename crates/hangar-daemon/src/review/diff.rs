//! `hangar diff`: the commits since the merge-base with the session's base
//! plus its staged, unstaged and untracked files, read through a temporary
//! copy of the index (`GIT_INDEX_FILE`), so the checkout's own index is
//! never written. The working tree becomes one tree object; every page of
//! the patch is a diff of that tree, so later pages need no second look at
//! the files.
//!
//! Fast on a big change (10,000 files): the temporary index is kept per
//! checkout while the real one is unchanged, so a second diff re-reads only
//! files whose stamps changed; new blobs go into one pack, not a loose file
//! each; and one `git diff -p` of the whole change is read once per
//! (merge-base, tree) and kept (the last few), each page a slice of it, the
//! file list's counts read from its sections (`patch::count_changes`)
//! instead of a second content pass (`--numstat`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

/// The real index a kept temporary index was copied from: its size,
/// modification time and inode. Another stamp means it changed (a commit,
/// a `git add`): the copy is made again.
type IndexStamp = (u64, std::time::SystemTime, u64);

/// The kept temporary index of each checkout, behind a lock of its own (two
/// diffs of one checkout must not write one index at once).
struct KeptIndex {
    path: PathBuf,
    copied_from: Option<IndexStamp>,
}

/// Each checkout's kept index, by its folder.
type KeptIndexes = Vec<(PathBuf, Arc<Mutex<KeptIndex>>)>;
static KEPT: Mutex<KeptIndexes> = Mutex::new(Vec::new());
/// Checkouts whose temporary index is kept; the oldest goes first.
const KEPT_MAX: usize = 16;

fn index_stamp(path: &Path) -> Option<IndexStamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?, m.ino()))
}

fn kept_index(dir: &Path, scratch: &Path) -> Arc<Mutex<KeptIndex>> {
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, k)) = kept.iter().find(|(d, _)| d == dir) {
        return k.clone();
    }
    if kept.len() >= KEPT_MAX {
        let (_, gone) = kept.remove(0);
        let gone = gone.lock().unwrap_or_else(|p| p.into_inner());
        let _ = std::fs::remove_file(&gone.path);
    }
    let k = Arc::new(Mutex::new(KeptIndex {
        path: scratch.join(format!(
            "index-{}-{}",
            std::process::id(),
            SCRATCH.fetch_add(1, Ordering::Relaxed)
        )),
        copied_from: None,
    }));
    kept.push((dir.to_owned(), k.clone()));
    k
}

fn failed(message: String) -> ApiError {
    ApiError::new(hangar_protocol::message::codes::FAILED, message)
}

/// The working tree of `dir` as a tree object: its index copied, every
/// change (untracked files too, ignored ones not) added to the copy.
pub fn working_tree(os: &dyn Git, dir: &Path, scratch: &Path) -> Result<String, ApiError> {
    let index = git_line(
        os,
        dir,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    )?;
    std::fs::create_dir_all(scratch)
        .map_err(|e| failed(format!("cannot create {}: {e}", scratch.display())))?;
    // Kept indexes of an earlier daemon are nobody's now.
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        let mine = format!("index-{}-", std::process::id());
        for e in std::fs::read_dir(scratch).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("index-") && !name.starts_with(&mine) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    });
    let kept = kept_index(dir, scratch);
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    let stamp = index_stamp(Path::new(&index));
    if stamp.is_none() || kept.copied_from != stamp || !kept.path.is_file() {
        // The copy keeps the index's file stamps: only changed files are read.
        let _ = std::fs::remove_file(&kept.path);
        kept.copied_from = None;
        if stamp.is_some() {
            std::fs::copy(&index, &kept.path)
                .map_err(|e| failed(format!("cannot copy the index {index}: {e}")))?;
            kept.copied_from = stamp;
        }
    }
    let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", kept.path.as_os_str())];
    // Every blob bigger than the threshold (here: all) streams into one
    // pack instead of a loose file each: 10,000 new files are one write.
    let added = git_env(
        os,
        dir,
        ["-c", "core.bigFileThreshold=1", "add", "-A", "--", ":/"],
        &env,
    );
    let tree = added.and_then(|_| git_env(os, dir, ["write-tree"], &env));
    match tree {
        Ok(tree) => Ok(String::from_utf8_lossy(&tree).trim().to_owned()),
        Err(e) => {
            // Never kept after a failure: the next diff starts from a copy.
            let _ = std::fs::remove_file(&kept.path);
            kept.copied_from = None;
            Err(e.into())
        }
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

/// A change read whole: its files and, when each file has one section of
/// the patch (a type change has two: then pages are read by path), the
/// sections in the files' order.
struct Listed {
    files: Vec<DiffFile>,
    sections: Option<Vec<String>>,
}

/// The last few changes read, by (checkout, from, to): a change's later
/// pages (and the web page's files) are slices of one read.
static LISTED: Mutex<Vec<(ListedKey, Arc<Listed>)>> = Mutex::new(Vec::new());
/// (checkout, from, to).
type ListedKey = (PathBuf, String, String);
const LISTED_MAX: usize = 4;
/// The largest patch kept whole.
const KEEP_PATCH_BYTES: usize = 64 << 20;

fn listed(os: &dyn Git, dir: &Path, from: &str, to: &str) -> Result<Arc<Listed>, ApiError> {
    let key = (dir.to_owned(), from.to_owned(), to.to_owned());
    {
        let cache = LISTED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, l)) = cache.iter().find(|(k, _)| *k == key) {
            return Ok(l.clone());
        }
    }
    // The list (no content read) beside the patch (the one content pass).
    let (files, whole) = std::thread::scope(|s| {
        let list = s.spawn(|| files_between_raw(os, dir, from, to));
        let whole = patch(os, dir, from, to, &[], true);
        let files = list
            .join()
            .unwrap_or_else(|_| Err(ApiError::internal("the diff's file list panicked")));
        (files, whole)
    });
    let (mut files, whole) = (files?, whole?);
    let split = hangar_core::patch::split_files(&whole);
    let listed = if split.len() == files.len() {
        for (f, section) in files.iter_mut().zip(&split) {
            (f.additions, f.deletions, f.binary) = hangar_core::patch::count_changes(section);
        }
        Listed {
            files,
            // A huge patch is not kept: its pages are read by path.
            sections: (whole.len() <= KEEP_PATCH_BYTES)
                .then(|| split.into_iter().map(str::to_owned).collect()),
        }
    } else {
        Listed {
            files: files_between(os, dir, from, to)?,
            sections: None,
        }
    };
    let listed = Arc::new(listed);
    let mut cache = LISTED.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= LISTED_MAX {
        cache.remove(0);
    }
    cache.push((key, listed.clone()));
    Ok(listed)
}

/// The changed files between two trees without their line counts (one
/// `--raw`, no content read): enough to see modes, as a submodule check.
pub fn files_between_raw(
    os: &dyn Git,
    dir: &Path,
    from: &str,
    to: &str,
) -> Result<Vec<DiffFile>, ApiError> {
    let mut args = vec!["diff", "--raw", "-z"];
    args.extend(DIFF_OPTS);
    args.extend([from, to]);
    let raw = git(os, dir, &args)?;
    parse_diff(&raw, &[]).map_err(|e| ApiError::internal(e.to_string()))
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
    let (files, patch_text, next) = if ask.stat {
        // A list alone: one read a later page (or the web's file) reuses.
        let l = listed(os, dir, &merge_base, &tree)?;
        (l.files.clone(), None, None)
    } else {
        let l = listed(os, dir, &merge_base, &tree)?;
        let files = &l.files;
        let end = page_end(files, ask.from_file, PATCH_PAGE_LINES);
        let from = ask.from_file.min(files.len());
        let text = match &l.sections {
            _ if from == end => String::new(),
            Some(sections) => sections[from..end].concat(),
            None => patch(
                os,
                dir,
                &merge_base,
                &tree,
                &files[from..end],
                from == 0 && end == files.len(),
            )?,
        };
        (
            files.clone(),
            Some(text),
            (end < files.len()).then_some(end),
        )
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
