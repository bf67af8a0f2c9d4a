//! `hangar diff`: the commits since the merge-base with the session's base
//! plus its staged, unstaged and untracked files, read through a temporary
//! copy of the index (`GIT_INDEX_FILE`), so the checkout's own index is
//! never written.
//!
//! The files are read in place, as `git diff <commit>` reads them: the
//! copy marks untracked files intent-to-add (`add -A -N`), which hashes and
//! writes nothing, so the first diff of a 10,000-file change costs what
//! `git diff --stat` costs (writing a blob per file first made it 6x).
//! The change is read whole once, one `git diff -p` beside one `--raw`,
//! and kept (the last few) under a snapshot name hashed from it: each
//! page is a slice of that read, the file list's counts come from its
//! sections (`patch::count_changes`), and a page asked for after the files
//! moved on is refused rather than mixed in. The temporary index is kept
//! per checkout while the real one is unchanged, so a second diff re-reads
//! only files whose stamps changed.

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
    /// A later page for a client that has the file list: none in the reply.
    pub without_files: bool,
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

/// The kept temporary index of `dir`, locked, a fresh copy of the real one
/// when that changed since.
fn locked_index<'a>(
    os: &dyn Git,
    dir: &Path,
    kept: &'a Mutex<KeptIndex>,
) -> Result<std::sync::MutexGuard<'a, KeptIndex>, ApiError> {
    let index = git_line(
        os,
        dir,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    )?;
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
    Ok(kept)
}

/// The folder for kept indexes, made, with an earlier daemon's swept out.
fn scratch_ready(scratch: &Path) -> Result<(), ApiError> {
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
    Ok(())
}

/// The working tree of `dir` as a tree object: its index copied, every
/// change (untracked files too, ignored ones not) added to the copy.
/// (`finish --commit`'s check; a diff reads the files in place instead.)
pub fn working_tree(os: &dyn Git, dir: &Path, scratch: &Path) -> Result<String, ApiError> {
    scratch_ready(scratch)?;
    let kept = kept_index(dir, scratch);
    let mut kept = locked_index(os, dir, &kept)?;
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

/// What a diff of the working tree is named by in its pages: the files as
/// they were read (a hash of the change), so a later page of the same
/// change is a slice of the first read, and one asked for after the files
/// moved on is refused instead of mixing two states.
const WORKTREE_SNAPSHOT: &str = "worktree-";

/// The change from `from` to the files as they are now, read in place as
/// `git diff <commit>` reads them: the kept index with every untracked file
/// marked intent-to-add (`add -A -N` hashes and writes nothing), so a
/// 10,000-file change costs what `git diff --stat` costs, not a blob
/// written per file. Returns the snapshot's name and its listing.
fn worktree_listing(
    os: &dyn Git,
    dir: &Path,
    from: &str,
    scratch: &Path,
) -> Result<(String, Arc<Listed>), ApiError> {
    scratch_ready(scratch)?;
    let kept = kept_index(dir, scratch);
    let mut kept = locked_index(os, dir, &kept)?;
    let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", kept.path.as_os_str())];
    let read = git_env(os, dir, ["add", "-A", "-N", "--", ":/"], &env)
        .map_err(ApiError::from)
        .and_then(|_| read_change(os, dir, from, None, &env));
    let listed = match read {
        Ok(listed) => listed,
        Err(e) => {
            let _ = std::fs::remove_file(&kept.path);
            kept.copied_from = None;
            return Err(e);
        }
    };
    drop(kept);
    let snapshot = format!("{WORKTREE_SNAPSHOT}{:016x}", listed.fingerprint);
    let listed = Arc::new(listed);
    remember((dir.to_owned(), from.to_owned(), snapshot.clone()), &listed);
    Ok((snapshot, listed))
}

const DIFF_OPTS: [&str; 5] = [
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "-M",
    "--ignore-submodules=none",
];

/// A change read whole: its files and, when each file has one section of
/// the patch (a type change has two: then pages are read by path), the
/// sections in the files' order.
struct Listed {
    files: Vec<DiffFile>,
    sections: Option<Vec<String>>,
    /// A hash of the change as read (its list and patch).
    fingerprint: u64,
}

/// The last few changes read, by (checkout, from, to): a change's later
/// pages (and the web page's files) are slices of one read.
static LISTED: Mutex<Vec<(ListedKey, Arc<Listed>)>> = Mutex::new(Vec::new());
/// (checkout, from, to).
type ListedKey = (PathBuf, String, String);
const LISTED_MAX: usize = 4;
/// The largest patch kept whole.
const KEEP_PATCH_BYTES: usize = 64 << 20;

fn cached(key: &ListedKey) -> Option<Arc<Listed>> {
    let cache = LISTED.lock().unwrap_or_else(|p| p.into_inner());
    cache.iter().find(|(k, _)| k == key).map(|(_, l)| l.clone())
}

fn remember(key: ListedKey, listed: &Arc<Listed>) {
    let mut cache = LISTED.lock().unwrap_or_else(|p| p.into_inner());
    cache.retain(|(k, _)| *k != key);
    if cache.len() >= LISTED_MAX {
        cache.remove(0);
    }
    cache.push((key, listed.clone()));
}

/// The change between two trees, read once and kept.
fn listed(os: &dyn Git, dir: &Path, from: &str, to: &str) -> Result<Arc<Listed>, ApiError> {
    let key = (dir.to_owned(), from.to_owned(), to.to_owned());
    if let Some(l) = cached(&key) {
        return Ok(l);
    }
    let listed = Arc::new(read_change(os, dir, from, Some(to), &[])?);
    remember(key, &listed);
    Ok(listed)
}

/// The change from `from` to `to` (None: the files in place) read whole:
/// the list (no content read) beside the patch (the one content pass).
fn read_change(
    os: &dyn Git,
    dir: &Path,
    from: &str,
    to: Option<&str>,
    env: &[(&str, &OsStr)],
) -> Result<Listed, ApiError> {
    let (files, whole) = std::thread::scope(|s| {
        let list = s.spawn(|| {
            let raw = diff_output(os, dir, &["--raw", "-z"], from, to, env)?;
            parse_diff(&raw, &[]).map_err(|e| ApiError::internal(e.to_string()))
        });
        let whole = patch(os, dir, from, to, &[], true, env);
        let files = list
            .join()
            .unwrap_or_else(|_| Err(ApiError::internal("the diff's file list panicked")));
        (files, whole)
    });
    let (mut files, whole) = (files?, whole?);
    let fingerprint = {
        use std::hash::{Hash, Hasher};
        // Keyed alike in every run of this build: a snapshot's name stays
        // the same for the same change.
        let mut h = std::hash::DefaultHasher::new();
        whole.hash(&mut h);
        files.len().hash(&mut h);
        for f in &files {
            (&f.path, &f.old_path, &f.status).hash(&mut h);
        }
        h.finish()
    };
    let split = hangar_core::patch::split_files(&whole);
    if split.len() == files.len() {
        for (f, section) in files.iter_mut().zip(&split) {
            (f.additions, f.deletions, f.binary) = hangar_core::patch::count_changes(section);
        }
        Ok(Listed {
            files,
            // A huge patch is not kept: its pages are read by path.
            sections: (whole.len() <= KEEP_PATCH_BYTES)
                .then(|| split.into_iter().map(str::to_owned).collect()),
            fingerprint,
        })
    } else {
        let raw = diff_output(os, dir, &["--raw", "-z"], from, to, env)?;
        let numstat = diff_output(os, dir, &["--numstat", "-z"], from, to, env)?;
        Ok(Listed {
            files: parse_diff(&raw, &numstat).map_err(|e| ApiError::internal(e.to_string()))?,
            sections: None,
            fingerprint,
        })
    }
}

/// `git diff WHAT <opts> FROM [TO]`: to a tree, or (None) to the files in
/// place, through the index in `env`.
fn diff_output(
    os: &dyn Git,
    dir: &Path,
    what: &[&str],
    from: &str,
    to: Option<&str>,
    env: &[(&str, &OsStr)],
) -> Result<Vec<u8>, GitError> {
    let mut args = vec!["diff"];
    args.extend(what);
    args.extend(DIFF_OPTS);
    args.push(from);
    args.extend(to);
    git_env(os, dir, &args, env)
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

/// The patch of `files` from `from` to `to` (None: the files in place;
/// all of them when `whole`).
fn patch(
    os: &dyn Git,
    dir: &Path,
    from: &str,
    to: Option<&str>,
    files: &[DiffFile],
    whole: bool,
    env: &[(&str, &OsStr)],
) -> Result<String, ApiError> {
    let mut args: Vec<&str> = vec!["--literal-pathspecs", "diff", "-p"];
    args.extend(DIFF_OPTS);
    args.push(from);
    args.extend(to);
    args.push("--");
    if !whole {
        for f in files {
            args.push(&f.path);
            if let Some(old) = &f.old_path {
                args.push(old);
            }
        }
    }
    let out = git_env(os, dir, &args, env)?;
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
    let (merge_base, tree, l) = match (ask.merge_base, ask.tree) {
        (Some(m), Some(t)) => {
            let l = later_page(os, dir, &m, &t, &ask.scratch)?;
            (m, t, l)
        }
        _ => {
            let mb = git_line(os, dir, &["merge-base", "--end-of-options", &base, "HEAD"])
                .map_err(|_| {
                    ApiError::invalid(format!(
                        "{base} and HEAD have no common history; pass --base REF"
                    ))
                })?;
            let (snapshot, l) = worktree_listing(os, dir, &mb, &ask.scratch)?;
            (mb, snapshot, l)
        }
    };
    let listed_files = || {
        if ask.without_files {
            Vec::new()
        } else {
            l.files.clone()
        }
    };
    let (files, patch_text, next) = if ask.stat {
        (listed_files(), None, None)
    } else {
        let files = &l.files;
        let end = page_end(files, ask.from_file, PATCH_PAGE_LINES);
        let from = ask.from_file.min(files.len());
        let text = match &l.sections {
            _ if from == end => String::new(),
            Some(sections) => sections[from..end].concat(),
            None => {
                let whole = from == 0 && end == files.len();
                if tree.starts_with(WORKTREE_SNAPSHOT) {
                    let kept = kept_index(dir, &ask.scratch);
                    let kept = locked_index(os, dir, &kept)?;
                    let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", kept.path.as_os_str())];
                    patch(os, dir, &merge_base, None, &files[from..end], whole, &env)?
                } else {
                    patch(
                        os,
                        dir,
                        &merge_base,
                        Some(&tree),
                        &files[from..end],
                        whole,
                        &[],
                    )?
                }
            }
        };
        (
            listed_files(),
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

/// The change a later page belongs to: kept from its first page, read
/// again when it was let go if the files still hold it, refused when they
/// moved on (a page of another state would be mixed into the review).
fn later_page(
    os: &dyn Git,
    dir: &Path,
    merge_base: &str,
    snapshot: &str,
    scratch: &Path,
) -> Result<Arc<Listed>, ApiError> {
    let is_id = |s: &str| (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_id(merge_base) {
        return Err(ApiError::invalid("merge_base is not a commit id"));
    }
    if snapshot.starts_with(WORKTREE_SNAPSHOT) {
        let key = (dir.to_owned(), merge_base.to_owned(), snapshot.to_owned());
        if let Some(l) = cached(&key) {
            return Ok(l);
        }
        let (now, l) = worktree_listing(os, dir, merge_base, scratch)?;
        if now != snapshot {
            return Err(ApiError::invalid(
                "the session's files changed since this diff was listed; list it again",
            ));
        }
        return Ok(l);
    }
    // A tree id (what an earlier hangar named its pages by).
    if !is_id(snapshot) {
        return Err(ApiError::invalid(
            "tree is neither a tree id nor a diff's snapshot",
        ));
    }
    listed(os, dir, merge_base, snapshot)
}
