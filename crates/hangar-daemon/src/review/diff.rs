//! `hangar diff`: the commits since the merge-base with the session's base
//! plus its staged, unstaged and untracked files, read through a temporary
//! copy of the index (`GIT_INDEX_FILE`), so the checkout's own index is
//! never written.
//!
//! The files are read in place, as `git diff <commit>` reads them: the
//! copy marks the untracked files (one `ls-files`) intent-to-add, which
//! hashes and writes nothing. The change is read whole once, by one
//! `git diff --patch-with-raw` per part of the checkout, the parts read in
//! parallel (git's diff is one thread: a 10,000-file change then costs
//! about what one `git diff --stat` costs), and kept (the last few) under
//! a snapshot name hashed from it: each page is a slice of that read, the
//! file list's counts come from its sections (`patch::count_changes`), and
//! a page asked for after the files moved on is refused rather than mixed
//! in. The temporary index is kept per checkout while the real one is
//! unchanged.

use std::ffi::OsStr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hangar_core::review::{
    DiffFile, DiffPart, PATCH_PAGE_LINES, PartEntry, diff_parts, page_end, parse_diff,
    split_raw_and_patch,
};
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

/// The top folder of `dir`'s checkout and its kept temporary index,
/// locked, a fresh copy of the real one when that changed since.
fn locked_index<'a>(
    os: &dyn Git,
    dir: &Path,
    kept: &'a Mutex<KeptIndex>,
) -> Result<(PathBuf, std::sync::MutexGuard<'a, KeptIndex>), ApiError> {
    let paths = git_line(
        os,
        dir,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "index",
            "--show-toplevel",
        ],
    )?;
    let (index, top) = paths
        .split_once('\n')
        .ok_or_else(|| failed(format!("git rev-parse said {paths:?}")))?;
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    let stamp = index_stamp(Path::new(index));
    if stamp.is_none() || kept.copied_from != stamp || !kept.path.is_file() {
        // The copy keeps the index's file stamps: only changed files are read.
        let _ = std::fs::remove_file(&kept.path);
        kept.copied_from = None;
        if stamp.is_some() {
            std::fs::copy(index, &kept.path)
                .map_err(|e| failed(format!("cannot copy the index {index}: {e}")))?;
            kept.copied_from = stamp;
        }
    }
    Ok((PathBuf::from(top), kept))
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
    let (_, mut kept) = locked_index(os, dir, &kept)?;
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
/// `git diff <commit>` reads them: the kept index with the untracked files
/// marked intent-to-add (hashes and writes nothing), read in parts in
/// parallel. Returns the snapshot's name and its listing.
fn worktree_listing(
    os: &dyn Git,
    dir: &Path,
    from: &str,
    scratch: &Path,
    (base, head): (&str, &str),
) -> Result<(String, Arc<Listed>), ApiError> {
    scratch_ready(scratch)?;
    let kept = kept_index(dir, scratch);
    let (top, mut kept) = locked_index(os, dir, &kept)?;
    let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", kept.path.as_os_str())];
    let read = checkout_paths(os, &top, &env).and_then(|paths| {
        let paths: Vec<&[u8]> = paths.iter().map(Vec::as_slice).collect();
        let parts = diff_parts(&paths, read_threads(), MIN_PATHS_PER_PART);
        let reader = ChangeReader {
            os,
            dir: &top,
            from,
            to: None,
            env: &env,
        };
        reader.read(&parts)
    });
    let listed = match read {
        Ok(listed) => Listed {
            read_with: Some((base.to_owned(), head.to_owned())),
            ..listed
        },
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

/// How many parts of a checkout are read at once.
fn read_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// A part read by its own git is worth it from this many paths on.
const MIN_PATHS_PER_PART: usize = 500;

/// Every path of the checkout at `top` (tracked, and untracked but not
/// ignored: a folder holding only such files as one entry, `name/`),
/// sorted as git's index is; the untracked ones are marked intent-to-add
/// in the index of `env` first.
fn checkout_paths(
    os: &dyn Git,
    top: &Path,
    env: &[(&str, &OsStr)],
) -> Result<Vec<Vec<u8>>, ApiError> {
    let listing = git_env(
        os,
        top,
        [
            "ls-files",
            "-z",
            "-t",
            "--cached",
            "--others",
            "--directory",
            "--no-empty-directory",
            "--exclude-standard",
        ],
        env,
    )?;
    let mut paths = Vec::new();
    let mut untracked = Vec::new();
    let mut untracked_count = 0;
    for row in listing.split(|&b| b == 0).filter(|r| r.len() > 2) {
        // `-t` tags each row: `? ` untracked, a letter and a space otherwise.
        let path = &row[2..];
        if row[0] == b'?' {
            untracked.extend_from_slice(path);
            untracked.push(0);
            untracked_count += 1;
        }
        paths.push(path.to_vec());
    }
    // Each pathspec is matched against every path: many untracked files
    // in folders git knows are marked by one walk of the whole checkout
    // instead (10,000 named took git 1.3 s, the walk 0.1 s).
    let (args, stdin): (&[&str], _) = match untracked_count {
        0 => (&[], None),
        1..=UNTRACKED_NAMED_MAX => (
            &[
                "--literal-pathspecs",
                "add",
                "-N",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            Some(untracked.as_slice()),
        ),
        _ => (&["add", "-A", "-N", "--", ":/"], None),
    };
    if !args.is_empty() {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let out = os
            .run_git(top, &args, env, stdin)
            .map_err(|e| ApiError::from(GitError::NoGit(e)))?;
        if !out.success() {
            return Err(failed(format!(
                "git add -N of the untracked files failed in {}: {}",
                top.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    paths.sort_unstable();
    Ok(paths)
}

/// The most untracked files (or wholly untracked folders) marked by name.
const UNTRACKED_NAMED_MAX: usize = 256;

const DIFF_OPTS: [&str; 5] = [
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "-M",
    "--ignore-submodules=none",
];

/// A change read whole: its files and, when each file has one section of
/// the patch (a type change has two: then pages are read by path), the
/// patch with each file's section, in the files' order.
struct Listed {
    files: Vec<DiffFile>,
    patch: Option<(String, Vec<Range<usize>>)>,
    /// A hash of the change as read (its list and patch).
    fingerprint: u64,
    /// The base and HEAD a read of the files in place was made against:
    /// what its later pages say without asking git again.
    read_with: Option<(String, String)>,
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
    let reader = ChangeReader {
        os,
        dir,
        from,
        to: Some(to),
        env: &[],
    };
    let listed = Arc::new(reader.read(&[DiffPart::AllBut(Vec::new())])?);
    remember(key, &listed);
    Ok(listed)
}

/// The most files read again together when renames may cross parts.
const LOOSE_FILES_MAX: usize = 256;

/// `git -C dir diff FROM [TO]` through the index in `env`: to a tree, or
/// (None) to the files in place.
#[derive(Clone, Copy)]
struct ChangeReader<'a> {
    os: &'a dyn Git,
    dir: &'a Path,
    from: &'a str,
    to: Option<&'a str>,
    env: &'a [(&'a str, &'a OsStr)],
}

/// One part of a change as read.
struct PartRead {
    files: Vec<DiffFile>,
    patch: String,
    /// Each file's section of `patch`, when each file has exactly one.
    sections: Option<Vec<Range<usize>>>,
}

impl ChangeReader<'_> {
    /// The change read whole, each of `parts` by its own
    /// `git diff --patch-with-raw` (the list and the patch from one
    /// content pass), the parts at once.
    fn read(self, parts: &[DiffPart]) -> Result<Listed, ApiError> {
        let mut reads = self.read_parts(parts)?;
        if reads.len() > 1 {
            // Renames are found within a part: a file deleted in one part
            // and one added in another may be one file moved. Those files
            // are read again together (git pairs only deleted and added
            // files), or the whole change when they are many.
            let source = |f: &DiffFile| matches!(f.status.as_str(), "deleted" | "renamed");
            let target = |f: &DiffFile| matches!(f.status.as_str(), "added" | "renamed" | "copied");
            let crossing = reads.iter().enumerate().any(|(i, r)| {
                r.files.iter().any(source)
                    && reads
                        .iter()
                        .enumerate()
                        .any(|(j, o)| i != j && o.files.iter().any(target))
            });
            let loose = |f: &DiffFile| crossing && (source(f) || target(f));
            let names: Vec<PartEntry> = reads
                .iter()
                .flat_map(|r| r.files.iter().filter(|f| loose(f)))
                .flat_map(|f| std::iter::once(&f.path).chain(&f.old_path))
                .map(|p| PartEntry::Path(p.as_bytes().to_vec()))
                .collect();
            if names.len() > LOOSE_FILES_MAX {
                reads = self.read_parts(&[DiffPart::AllBut(Vec::new())])?;
            } else {
                if crossing {
                    reads.push(self.read_part(&DiffPart::Only(names))?);
                    let last = reads.len() - 1;
                    for r in &mut reads[..last] {
                        r.drop_files(loose);
                    }
                }
                reads = vec![PartRead::merged(reads)];
            }
        }
        let PartRead {
            files,
            patch,
            sections,
        } = reads
            .pop()
            .ok_or_else(|| ApiError::internal("a diff read in no part"))?;
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            // Keyed alike in every run of this build: a snapshot's name
            // stays the same for the same change.
            let mut h = std::hash::DefaultHasher::new();
            patch.hash(&mut h);
            files.len().hash(&mut h);
            for f in &files {
                (&f.path, &f.old_path, &f.status).hash(&mut h);
            }
            h.finish()
        };
        // A huge patch is not kept: its pages are read by path.
        let keep = sections.filter(|_| patch.len() <= KEEP_PATCH_BYTES);
        Ok(Listed {
            files,
            patch: keep.map(|r| (patch, r)),
            fingerprint,
            read_with: None,
        })
    }

    /// Each of `parts` read by its own git, at once.
    fn read_parts(self, parts: &[DiffPart]) -> Result<Vec<PartRead>, ApiError> {
        if let [part] = parts {
            return Ok(vec![self.read_part(part)?]);
        }
        std::thread::scope(|s| {
            let reads: Vec<_> = parts
                .iter()
                .map(|part| s.spawn(move || self.read_part(part)))
                .collect();
            reads
                .into_iter()
                .map(|r| {
                    r.join()
                        .unwrap_or_else(|_| Err(ApiError::internal("a diff's part panicked")))
                })
                .collect()
        })
    }

    /// One part of the change: its files, counted from their sections of
    /// the patch (from `--numstat` when a file has two, as a type change
    /// has).
    fn read_part(self, part: &DiffPart) -> Result<PartRead, ApiError> {
        let pathspecs = part.pathspecs();
        let pathspecs: Vec<&OsStr> = pathspecs
            .iter()
            .map(|p| std::os::unix::ffi::OsStrExt::from_bytes(p))
            .collect();
        let mut out = self.output(&["--patch-with-raw", "-z"], &pathspecs)?;
        let bad = |e: hangar_core::review::ParseError| ApiError::internal(e.to_string());
        let raw_len = split_raw_and_patch(&out).map_err(bad)?.0.len();
        let patch = out.split_off((raw_len + 1).min(out.len()));
        let mut files = parse_diff(&out, &[]).map_err(bad)?;
        let patch = String::from_utf8(patch)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let sections = hangar_core::patch::file_ranges(&patch);
        if sections.len() == files.len() {
            for (f, r) in files.iter_mut().zip(&sections) {
                (f.additions, f.deletions, f.binary) =
                    hangar_core::patch::count_changes(&patch[r.clone()]);
            }
            return Ok(PartRead {
                files,
                patch,
                sections: Some(sections),
            });
        }
        let numstat = self.output(&["--numstat", "-z"], &pathspecs)?;
        Ok(PartRead {
            files: parse_diff(&out, &numstat).map_err(bad)?,
            patch,
            sections: None,
        })
    }

    /// `git diff WHAT <opts> FROM [TO] -- PATHSPECS`.
    fn output(self, what: &[&str], pathspecs: &[&OsStr]) -> Result<Vec<u8>, GitError> {
        let mut args: Vec<&OsStr> = vec!["diff".as_ref()];
        args.extend(what.iter().map(OsStr::new));
        args.extend(DIFF_OPTS.iter().map(OsStr::new));
        args.push(self.from.as_ref());
        args.extend(self.to.map(OsStr::new));
        args.push("--".as_ref());
        args.extend(pathspecs);
        git_env(self.os, self.dir, &args, self.env)
    }
}

impl PartRead {
    /// Without the files `drop` names (and their sections).
    fn drop_files(&mut self, drop: impl Fn(&DiffFile) -> bool) {
        let mut keep = self.files.iter().map(|f| !drop(f));
        if let Some(sections) = &mut self.sections {
            let mut text = String::with_capacity(self.patch.len());
            let mut kept = Vec::with_capacity(sections.len());
            for r in sections.iter() {
                if keep.next() == Some(true) {
                    kept.push(text.len()..text.len() + r.len());
                    text.push_str(&self.patch[r.clone()]);
                }
            }
            (self.patch, *sections) = (text, kept);
        }
        self.files.retain(|f| !drop(f));
    }

    /// Parts made one, its files in git's order (by path: a rename stands
    /// where its new name does), as one `git diff` would give them.
    fn merged(reads: Vec<PartRead>) -> PartRead {
        let whole = reads.iter().all(|r| r.sections.is_some());
        let mut rows: Vec<(DiffFile, &str)> = Vec::new();
        let mut patch = String::new();
        for r in &reads {
            match &r.sections {
                Some(sections) => rows.extend(
                    r.files
                        .iter()
                        .cloned()
                        .zip(sections.iter().map(|s| &r.patch[s.clone()])),
                ),
                None => rows.extend(r.files.iter().cloned().map(|f| (f, ""))),
            }
            if !whole {
                patch.push_str(&r.patch);
            }
        }
        rows.sort_by(|a, b| a.0.path.as_bytes().cmp(b.0.path.as_bytes()));
        let mut sections = Vec::with_capacity(rows.len());
        if whole {
            for (_, text) in &rows {
                sections.push(patch.len()..patch.len() + text.len());
                patch.push_str(text);
            }
        }
        PartRead {
            files: rows.into_iter().map(|(f, _)| f).collect(),
            patch,
            sections: whole.then_some(sections),
        }
    }
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
    // Named from the top: a session's folder may be inside the checkout.
    let named = |p: &str| format!(":(top,literal){p}");
    let mut args: Vec<String> = vec!["diff".into(), "-p".into()];
    args.extend(DIFF_OPTS.iter().map(|o| o.to_string()));
    args.push(from.into());
    args.extend(to.map(str::to_owned));
    args.push("--".into());
    if !whole {
        for f in files {
            args.push(named(&f.path));
            if let Some(old) = &f.old_path {
                args.push(named(old));
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
    let refs = (base.as_str(), head.as_str());
    let (merge_base, tree, l) = match (&ask.merge_base, &ask.tree) {
        (Some(m), Some(t)) => {
            let l = later_page(os, dir, m, t, &ask.scratch, refs)?;
            (m.clone(), t.clone(), l)
        }
        _ => {
            let mb = git_line(os, dir, &["merge-base", "--end-of-options", &base, "HEAD"])
                .map_err(|_| {
                    ApiError::invalid(format!(
                        "{base} and HEAD have no common history; pass --base REF"
                    ))
                })?;
            let (snapshot, l) = worktree_listing(os, dir, &mb, &ask.scratch, refs)?;
            (mb, snapshot, l)
        }
    };
    if let Some(page) = slice_page(&l, &ask, (&base, &merge_base, &head, &tree)) {
        return Ok(page);
    }
    // Not kept whole (huge, or a file with two sections): the page's files
    // are read by path.
    let files = &l.files;
    let end = page_end(files, ask.from_file, PATCH_PAGE_LINES);
    let from = ask.from_file.min(files.len());
    let whole = from == 0 && end == files.len();
    let text = if tree.starts_with(WORKTREE_SNAPSHOT) {
        let kept = kept_index(dir, &ask.scratch);
        let (_, kept) = locked_index(os, dir, &kept)?;
        let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", kept.path.as_os_str())];
        patch(os, dir, &merge_base, None, &files[from..end], whole, &env)?
    } else {
        let page = &files[from..end];
        patch(os, dir, &merge_base, Some(&tree), page, whole, &[])?
    };
    Ok(DiffPage {
        base,
        merge_base,
        head,
        tree,
        files: if ask.without_files {
            Vec::new()
        } else {
            l.files.clone()
        },
        patch: Some(text),
        next_file: (end < files.len()).then_some(end),
    })
}

/// A later page of a read of the files in place that is still kept: a
/// slice of it, with the base and HEAD it was read against, no git asked.
pub fn kept_page(ask: &DiffAsk) -> Option<DiffPage> {
    let (merge_base, tree) = (ask.merge_base.as_ref()?, ask.tree.as_ref()?);
    let l = cached(&(ask.dir.clone(), merge_base.clone(), tree.clone()))?;
    let (base, head) = l.read_with.as_ref()?;
    slice_page(&l, ask, (base, merge_base, head, tree))
}

/// The page `ask` names, cut from `l` when that needs no git: its list, or
/// a slice of its kept patch.
fn slice_page(
    l: &Listed,
    ask: &DiffAsk,
    (base, merge_base, head, tree): (&str, &str, &str, &str),
) -> Option<DiffPage> {
    let (patch, next_file) = if ask.stat {
        (None, None)
    } else {
        let end = page_end(&l.files, ask.from_file, PATCH_PAGE_LINES);
        let from = ask.from_file.min(l.files.len());
        let text = match &l.patch {
            _ if from == end => String::new(),
            Some((whole, sections)) => {
                whole[sections[from].start..sections[end - 1].end].to_owned()
            }
            None => return None,
        };
        (Some(text), (end < l.files.len()).then_some(end))
    };
    Some(DiffPage {
        base: base.to_owned(),
        merge_base: merge_base.to_owned(),
        head: head.to_owned(),
        tree: tree.to_owned(),
        files: if ask.without_files {
            Vec::new()
        } else {
            l.files.clone()
        },
        patch,
        next_file,
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
    refs: (&str, &str),
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
        let (now, l) = worktree_listing(os, dir, merge_base, scratch, refs)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::RealOs;
    use crate::review::tests::sh;

    /// The first page of `dir`'s diff against `main`.
    fn first_page(dir: &Path, scratch: &Path) -> DiffAsk {
        DiffAsk {
            dir: dir.to_owned(),
            bases: vec!["main".into()],
            stat: false,
            from_file: 0,
            tree: None,
            merge_base: None,
            scratch: scratch.to_owned(),
            without_files: false,
        }
    }

    /// Two folders of 600 files each: enough paths to be read in two parts.
    fn repo(root: &Path) -> PathBuf {
        let dir = root.join("repo");
        for folder in ["a", "b"] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
            for i in 0..600 {
                let text = format!("file {i} of {folder}\nsecond line\n");
                std::fs::write(dir.join(folder).join(format!("f{i}")), text).unwrap();
            }
        }
        std::fs::write(dir.join("b/bin"), [0u8, 1, 2, 3]).unwrap();
        sh(&dir, &["init", "-q", "-b", "main"]);
        sh(&dir, &["add", "."]);
        sh(&dir, &["commit", "-q", "-m", "init"]);
        dir
    }

    #[test]
    fn a_change_read_in_parallel_parts_is_the_change_read_whole_renames_across_parts_too() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::TempDir::new().unwrap();
        let dir = repo(tmp.path());
        std::fs::write(dir.join("a/f1"), "changed\n").unwrap();
        std::fs::write(dir.join("b/f1"), "changed too\n").unwrap();
        // Moved from one part to the other, without git: a deletion in one
        // part, an untracked file in the other.
        std::fs::rename(dir.join("a/f2"), dir.join("b/moved")).unwrap();
        // Gone from the index: no listing names it.
        sh(&dir, &["rm", "-q", "b/f3"]);
        // A file become a link: two sections of the patch for one file.
        std::fs::remove_file(dir.join("a/f4")).unwrap();
        std::os::unix::fs::symlink("f5", dir.join("a/f4")).unwrap();
        std::fs::set_permissions(dir.join("a/f5"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("a/new.txt"), "new\n").unwrap();
        std::fs::write(dir.join("b/bin"), [9u8, 0, 8]).unwrap();
        // A folder git has never seen: marked by its name, ignored files
        // in it left out.
        std::fs::create_dir_all(dir.join("c")).unwrap();
        std::fs::write(dir.join("c/one"), "1\n").unwrap();
        std::fs::write(dir.join("c/skip.log"), "ignored\n").unwrap();
        std::fs::write(dir.join(".gitignore"), "*.log\n").unwrap();

        let scratch = tmp.path().join("scratch");
        let ask = || first_page(&dir, &scratch);
        // The page against the same change read by one git through the
        // same index, and `git diff -p` of it.
        let read_whole = || {
            let page = diff(&RealOs, ask()).unwrap();
            let kept = kept_index(&dir, &scratch);
            let (top, kept) = locked_index(&RealOs, &dir, &kept).unwrap();
            let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", kept.path.as_os_str())];
            let paths = checkout_paths(&RealOs, &top, &env).unwrap();
            let paths: Vec<&[u8]> = paths.iter().map(Vec::as_slice).collect();
            let parts = diff_parts(&paths, 2, MIN_PATHS_PER_PART).len();
            let reader = ChangeReader {
                os: &RealOs,
                dir: &top,
                from: &page.merge_base,
                to: None,
                env: &env,
            };
            let one = reader.read(&[DiffPart::AllBut(Vec::new())]).unwrap();
            let git_p = patch(&RealOs, &top, &page.merge_base, None, &[], true, &env).unwrap();
            (page, one, git_p, parts)
        };
        let (page, one, git_p, parts) = read_whole();
        assert_eq!(parts, 2);
        assert_eq!(page.files, one.files);
        assert_eq!(page.patch.as_deref(), Some(git_p.as_str()));
        let status = |path: &str| {
            let f = page.files.iter().find(|f| f.path == path);
            f.map(|f| {
                (
                    f.status.as_str(),
                    f.old_path.as_deref(),
                    f.additions,
                    f.deletions,
                )
            })
        };
        assert_eq!(status("b/moved"), Some(("renamed", Some("a/f2"), 0, 0)));
        assert_eq!(status("b/f3"), Some(("deleted", None, 0, 2)));
        assert_eq!(status("a/new.txt"), Some(("added", None, 1, 0)));
        assert_eq!(status("a/f1"), Some(("modified", None, 1, 2)));
        assert_eq!(status("b/f1"), Some(("modified", None, 1, 2)));
        assert_eq!(status("a/f4").map(|s| s.0), Some("type-changed"));
        let f5 = page.files.iter().find(|f| f.path == "a/f5").unwrap();
        assert_eq!(
            (f5.old_mode.as_str(), f5.new_mode.as_str()),
            ("100644", "100755")
        );
        assert!(page.files.iter().any(|f| f.path == "b/bin" && f.binary));
        assert_eq!(status("c/one"), Some(("added", None, 1, 0)));
        assert_eq!(status("c/skip.log"), None);
        // A second look at the same files is the same snapshot.
        assert_eq!(diff(&RealOs, ask()).unwrap().tree, page.tree);

        // Without the type change each file has one section: the page is a
        // slice of the parts' patches joined in git's order.
        std::fs::remove_file(dir.join("a/f4")).unwrap();
        std::fs::write(dir.join("a/f4"), "file 4 of a\nsecond line\n").unwrap();
        // Untracked files too many to name: marked by one walk.
        for i in 0..UNTRACKED_NAMED_MAX + 1 {
            std::fs::write(dir.join(format!("b/u{i}")), "u\n").unwrap();
        }
        let (page, one, git_p, _) = read_whole();
        let added = page.files.iter().filter(|f| f.status == "added").count();
        assert_eq!(
            added,
            UNTRACKED_NAMED_MAX + 1 + 3,
            "b/u*, a/new.txt, c/one, .gitignore"
        );
        assert!(one.patch.is_some(), "pages are slices of one read");
        assert_eq!(page.files, one.files);
        assert_eq!(page.patch.as_deref(), Some(git_p.as_str()));
        assert!(!page.files.iter().any(|f| f.path == "a/f4"));
        // A later page is a slice of the kept read, asked of no git.
        let later = DiffAsk {
            merge_base: Some(page.merge_base.clone()),
            tree: Some(page.tree.clone()),
            without_files: true,
            ..ask()
        };
        let kept = kept_page(&later).expect("the read is kept");
        assert_eq!(
            (kept.patch, kept.head, kept.files.len()),
            (page.patch, page.head, 0)
        );
    }

    #[test]
    fn one_folder_of_many_files_is_read_in_parts_by_name_and_git_matches_them_so() {
        let tmp = tempfile::TempDir::new().unwrap();
        let dir = tmp.path().join("repo");
        let flat = dir.join("flat");
        std::fs::create_dir_all(flat.join("sub")).unwrap();
        for i in 0..1_200 {
            std::fs::write(flat.join(format!("f{i:04}")), format!("{i}\n")).unwrap();
        }
        // Names a glob would read as patterns, and a subfolder's file.
        for odd in ["f0[1]", "f0*", "f1?x", "f1\\y"] {
            std::fs::write(flat.join(odd), "odd\n").unwrap();
        }
        std::fs::write(flat.join("sub/x"), "x\n").unwrap();
        sh(&dir, &["init", "-q", "-b", "main"]);
        sh(&dir, &["add", "."]);
        sh(&dir, &["commit", "-q", "-m", "init"]);
        for name in ["f0001", "f0[1]", "f0*", "f1?x", "f1\\y", "sub/x", "f1199"] {
            std::fs::write(flat.join(name), "changed\n").unwrap();
        }
        sh(&dir, &["rm", "-q", "flat/f0600"]);

        let scratch = tmp.path().join("scratch");
        let page = diff(&RealOs, first_page(&dir, &scratch)).unwrap();
        let kept = kept_index(&dir, &scratch);
        let (top, kept) = locked_index(&RealOs, &dir, &kept).unwrap();
        let env: [(&str, &OsStr); 1] = [("GIT_INDEX_FILE", kept.path.as_os_str())];
        let paths = checkout_paths(&RealOs, &top, &env).unwrap();
        let paths: Vec<&[u8]> = paths.iter().map(Vec::as_slice).collect();
        let parts = diff_parts(&paths, 2, MIN_PATHS_PER_PART);
        let DiffPart::Only(first) = &parts[0] else {
            panic!("one part: {parts:?}")
        };
        assert!(
            first.iter().any(|e| matches!(e, PartEntry::NamesFrom(_))),
            "{parts:?}"
        );
        let git_p = patch(&RealOs, &top, &page.merge_base, None, &[], true, &env).unwrap();
        assert_eq!(page.patch.as_deref(), Some(git_p.as_str()));
        let changed: Vec<&str> = page.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            changed,
            [
                "flat/f0*",
                "flat/f0001",
                "flat/f0600",
                "flat/f0[1]",
                "flat/f1199",
                "flat/f1?x",
                "flat/f1\\y",
                "flat/sub/x"
            ]
        );
    }
}
