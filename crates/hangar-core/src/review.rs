//! Reviewing and landing an agent's work (issue 30): the pure rules.
//!
//! The daemon runs `git` to learn the facts (what changed, what is checked
//! out where, what would conflict) and asks this module what they mean:
//! which base a diff is taken against, how git's `-z` listings read, how a
//! long patch is cut into pages, which checks refuse a `finish`, which refs
//! a landing moves, and the prompt review comments make. Nothing here runs
//! a program or touches a file.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a session's work started: recorded when it is created (its
/// worktree's base branch and that branch's commit then; for a session
/// without a worktree, the checkout's branch and `HEAD` at its start).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GitBase {
    /// The branch, when the checkout was on one (not detached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The commit id the work started from.
    pub commit: String,
}

/// The refs a diff may be taken against, best first; the daemon uses the
/// first that resolves. An explicit `--base` wins. A worktree's base branch
/// is compared through its merge-base (so work merged into the base since
/// does not show as the agent's). A session working on the very branch it
/// started on is compared with the commit recorded at its start: its own
/// commits are the change.
pub fn diff_base_candidates(
    explicit: Option<&str>,
    recorded: Option<&GitBase>,
    worktree_base: Option<&str>,
    current_branch: Option<&str>,
) -> Vec<String> {
    if let Some(e) = explicit.map(str::trim).filter(|e| !e.is_empty()) {
        return vec![e.to_owned()];
    }
    let mut out = Vec::new();
    let own_branch = |b: &str| current_branch == Some(b);
    if let Some(r) = recorded {
        if let Some(b) = r.branch.as_deref().filter(|b| !own_branch(b)) {
            out.push(b.to_owned());
        }
        out.push(r.commit.clone());
    }
    if let Some(b) = worktree_base.filter(|b| !own_branch(b) && !b.is_empty())
        && !out.iter().any(|o| o == b)
    {
        out.push(b.to_owned());
    }
    out
}

/// What happened to one file, in words (git's status letters).
pub fn status_word(letter: char) -> &'static str {
    match letter {
        'A' => "added",
        'D' => "deleted",
        'R' => "renamed",
        'C' => "copied",
        'T' => "type-changed",
        'U' => "unmerged",
        _ => "modified",
    }
}

/// One changed file of a diff, as `hangar diff --json` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffFile {
    pub path: String,
    /// The path before a rename or copy.
    pub old_path: Option<String>,
    pub status: String,
    /// Lines added and deleted; 0 for a binary file.
    pub additions: u64,
    pub deletions: u64,
    pub binary: bool,
    /// The file modes before and after (`100644`, `100755`, `120000`,
    /// `160000` for a submodule); not in `--json`'s file rows.
    #[serde(skip)]
    pub old_mode: String,
    #[serde(skip)]
    pub new_mode: String,
}

impl DiffFile {
    /// A submodule (a gitlink) on either side.
    pub fn is_submodule(&self) -> bool {
        self.old_mode == "160000" || self.new_mode == "160000"
    }
}

/// Why git's output could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unexpected git output: {0}")]
pub struct ParseError(pub String);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Read `git diff --raw -z` and `git diff --numstat -z` (same diff, same
/// options) into file rows, in git's order.
///
/// `--raw -z`: `:OLDMODE NEWMODE OLDSHA NEWSHA STATUS\0PATH\0`, with a
/// second path for renames and copies (`R086\0OLD\0NEW\0`).
/// `--numstat -z`: `ADD\tDEL\tPATH\0`, or `ADD\tDEL\t\0OLD\0NEW\0` for a
/// rename; `-\t-\t` for a binary file.
pub fn parse_diff(raw: &[u8], numstat: &[u8]) -> Result<Vec<DiffFile>, ParseError> {
    let mut files = Vec::new();
    let mut fields = raw.split(|&b| b == 0).peekable();
    while let Some(head) = fields.next() {
        if head.is_empty() {
            continue;
        }
        let head = text(head);
        let meta = head
            .strip_prefix(':')
            .ok_or_else(|| ParseError(format!("raw line {head:?}")))?;
        let parts: Vec<&str> = meta.split(' ').collect();
        if parts.len() != 5 {
            return Err(ParseError(format!("raw line {head:?}")));
        }
        let letter = parts[4].chars().next().unwrap_or('M');
        let first = fields
            .next()
            .map(text)
            .ok_or_else(|| ParseError("a raw line without its path".into()))?;
        let (path, old_path) = if matches!(letter, 'R' | 'C') {
            let second = fields
                .next()
                .map(text)
                .ok_or_else(|| ParseError("a rename without its new path".into()))?;
            (second, Some(first))
        } else {
            (first, None)
        };
        files.push(DiffFile {
            path,
            old_path,
            status: status_word(letter).to_owned(),
            additions: 0,
            deletions: 0,
            binary: false,
            old_mode: parts[0].to_owned(),
            new_mode: parts[1].to_owned(),
        });
    }
    // numstat rows come in the same order as the raw rows.
    let mut fields = numstat.split(|&b| b == 0);
    let mut i = 0;
    while let Some(row) = fields.next() {
        if row.is_empty() {
            continue;
        }
        let row = text(row);
        let mut cols = row.splitn(3, '\t');
        let (add, del, rest) = match (cols.next(), cols.next(), cols.next()) {
            (Some(a), Some(d), Some(r)) => (a, d, r),
            _ => return Err(ParseError(format!("numstat row {row:?}"))),
        };
        if rest.is_empty() {
            // A rename: the two paths follow as their own fields.
            fields.next();
            fields.next();
        }
        let Some(file) = files.get_mut(i) else {
            return Err(ParseError("more numstat rows than raw rows".into()));
        };
        if add == "-" && del == "-" {
            file.binary = true;
        } else {
            let n = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| ParseError(format!("numstat row {row:?}")))
            };
            file.additions = n(add)?;
            file.deletions = n(del)?;
        }
        i += 1;
    }
    Ok(files)
}

/// `git diff --patch-with-raw -z` cut in two: the raw records (for
/// [`parse_diff`]) and the patch. The patch follows the records after one
/// more NUL (git's separator with `-z`); `-z` leaves the patch's own text
/// as `git diff -p` writes it.
pub fn split_raw_and_patch(out: &[u8]) -> Result<(&[u8], &[u8]), ParseError> {
    let mut at = 0;
    let field_end = |from: usize| -> Result<usize, ParseError> {
        out[from..]
            .iter()
            .position(|&b| b == 0)
            .map(|n| from + n)
            .ok_or_else(|| ParseError("a raw record without its NUL".into()))
    };
    while at < out.len() {
        match out[at] {
            b':' => {
                let head_end = field_end(at)?;
                let letter = out[..head_end]
                    .iter()
                    .rposition(|&b| b == b' ')
                    .and_then(|i| out.get(i + 1))
                    .copied();
                let paths = if matches!(letter, Some(b'R' | b'C')) {
                    2
                } else {
                    1
                };
                at = head_end + 1;
                for _ in 0..paths {
                    at = field_end(at)? + 1;
                }
            }
            0 => return Ok((&out[..at], &out[at + 1..])),
            _ => {
                return Err(ParseError(
                    "neither a raw record nor the patch's separator".into(),
                ));
            }
        }
    }
    Ok((out, &[]))
}

/// What one of a diff's parallel reads covers, as pathspecs: its
/// entries (`Only`), or, for the last part, everything but the other
/// parts' entries (`AllBut`), so a path no listing saw (a file deleted from
/// the index) still falls in exactly one part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffPart {
    Only(Vec<PartEntry>),
    AllBut(Vec<PartEntry>),
}

/// One entry of a [`DiffPart`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PartEntry {
    /// A file, or a folder with everything under it.
    Path(Vec<u8>),
    /// The files of one folder whose names begin so (`folder/f0`): a
    /// folder of more files than a part holds, cut by name.
    NamesFrom(Vec<u8>),
}

impl PartEntry {
    fn pathspec(&self, exclude: bool) -> Vec<u8> {
        let ex: &[u8] = if exclude { b"exclude," } else { b"" };
        match self {
            PartEntry::Path(p) => [b":(", ex, b"top,literal)", p].concat(),
            PartEntry::NamesFrom(p) => {
                let mut out = [b":(", ex, b"top,glob)"].concat();
                for &b in p {
                    if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
                        out.push(b'\\');
                    }
                    out.push(b);
                }
                out.push(b'*');
                out
            }
        }
    }
}

impl DiffPart {
    /// The part's pathspecs, from the top of the checkout.
    pub fn pathspecs(&self) -> Vec<Vec<u8>> {
        match self {
            DiffPart::Only(e) => e.iter().map(|e| e.pathspec(false)).collect(),
            DiffPart::AllBut(e) => e.iter().map(|e| e.pathspec(true)).collect(),
        }
    }
}

/// The most pathspecs a part names: git matches every path against each.
const PART_ENTRIES_MAX: usize = 256;

/// A folder of more entries than this is cut by name, not entry by entry.
const FOLDER_ENTRIES_MAX: usize = 128;

/// A checkout's paths (sorted bytewise, as git's index is) cut into at most
/// `parts` runs of about equal size for reading a diff in parallel (git's
/// diff is one thread). A run is whole entries: a top-level file or folder,
/// or, where one folder holds more than a part's share, that folder's own
/// entries (or, when it has many, its files by the beginnings of their
/// names), and so on down. One part (everything) when the paths are fewer
/// than `min_per_part` per part.
pub fn diff_parts(paths: &[&[u8]], parts: usize, min_per_part: usize) -> Vec<DiffPart> {
    let parts = parts.min(paths.len() / min_per_part.max(1)).max(1);
    if parts == 1 {
        return vec![DiffPart::AllBut(Vec::new())];
    }
    let share = paths.len().div_ceil(parts);
    // Entries with how many paths each holds, in the paths' order.
    let mut entries: Vec<(PartEntry, usize)> = Vec::new();
    collect_entries(paths, 0, share, &mut entries);
    // A name that is both a file and a folder (the index's file, a folder
    // on disk) comes as two entries with one pathspec: one of them, or a
    // path would fall in two parts.
    let mut unique: Vec<(PartEntry, usize)> = Vec::with_capacity(entries.len());
    let mut at: std::collections::HashMap<PartEntry, usize> = Default::default();
    for (entry, n) in entries {
        match at.get(&entry) {
            Some(&i) => unique[i].1 += n,
            None => {
                at.insert(entry.clone(), unique.len());
                unique.push((entry, n));
            }
        }
    }
    let entries = unique;
    if entries.len() > PART_ENTRIES_MAX {
        return vec![DiffPart::AllBut(Vec::new())];
    }
    let mut runs: Vec<Vec<PartEntry>> = vec![Vec::new()];
    let mut filled = 0;
    for (entry, n) in entries {
        if filled >= share && runs.len() < parts {
            runs.push(Vec::new());
            filled = 0;
        }
        runs.last_mut().expect("one run at least").push(entry);
        filled += n;
    }
    let last = runs.pop().unwrap_or_default();
    if runs.is_empty() || last.is_empty() {
        return vec![DiffPart::AllBut(Vec::new())];
    }
    let others: Vec<PartEntry> = runs.iter().flatten().cloned().collect();
    let mut out: Vec<DiffPart> = runs.into_iter().map(DiffPart::Only).collect();
    out.push(DiffPart::AllBut(others));
    out
}

/// The runs of `run` whose paths share their first `depth` names (the
/// entries at that depth), in order.
fn groups_at<'r, 'a>(run: &'r [&'a [u8]], depth: usize) -> Vec<(&'a [u8], &'r [&'a [u8]])> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < run.len() {
        let name = entry_at(run[start], depth);
        let mut end = start + 1;
        while end < run.len() && entry_at(run[end], depth) == name {
            end += 1;
        }
        groups.push((name, &run[start..end]));
        start = end;
    }
    groups
}

/// The entries of `run` (paths that share their first `depth` names), in
/// order, with how many paths each holds: a folder holding more than
/// `share` is given as its own entries instead, or by the beginnings of
/// its names when it holds many.
fn collect_entries(run: &[&[u8]], depth: usize, share: usize, out: &mut Vec<(PartEntry, usize)>) {
    for (name, group) in groups_at(run, depth) {
        let is_folder = group[0].len() > name.len();
        if !is_folder || group.len() <= share || out.len() >= PART_ENTRIES_MAX {
            out.push((PartEntry::Path(name.to_vec()), group.len()));
        } else if groups_at(group, depth + 1).len() > FOLDER_ENTRIES_MAX {
            collect_names(group, name.len() + 1, share, out);
        } else {
            collect_entries(group, depth + 1, share, out);
        }
    }
}

/// The paths of `run` (which share their first `from` bytes, up to a
/// folder's `/` or into a name) as entries of at most `share` paths each
/// where the names allow: cut at each next byte, a subfolder whole.
fn collect_names(run: &[&[u8]], from: usize, share: usize, out: &mut Vec<(PartEntry, usize)>) {
    let prefix = &run[0][..from];
    // A name pattern matches files of this folder only, not a subfolder's.
    let files_only = || run.iter().all(|p| !p[from..].contains(&b'/'));
    if run.len() <= share && prefix.last() != Some(&b'/') && files_only() {
        out.push((PartEntry::NamesFrom(prefix.to_vec()), run.len()));
        return;
    }
    let mut start = 0;
    while start < run.len() {
        let next = run[start].get(from).copied();
        let mut end = start + 1;
        while end < run.len() && run[end].get(from).copied() == next {
            end += 1;
        }
        let group = &run[start..end];
        match next {
            // The file whose name is the prefix itself.
            None => out.push((PartEntry::Path(prefix.to_vec()), group.len())),
            // A subfolder: whole, as a path.
            Some(b'/') => out.push((PartEntry::Path(prefix.to_vec()), group.len())),
            Some(_) if out.len() >= PART_ENTRIES_MAX => out.push((
                PartEntry::NamesFrom(group[0][..from + 1].to_vec()),
                group.len(),
            )),
            Some(_) => collect_names(group, from + 1, share, out),
        }
        start = end;
    }
}

/// `path` up to the end of its name at `depth` (0: the top-level entry).
fn entry_at(path: &[u8], depth: usize) -> &[u8] {
    let mut slashes = path.iter().enumerate().filter(|(_, b)| **b == b'/');
    match slashes.nth(depth) {
        Some((i, _)) => &path[..i],
        None => path,
    }
}

/// The most patch lines one page carries (a page holds at least one file).
pub const PATCH_PAGE_LINES: u64 = 20_000;

/// The end (exclusive) of the page of files starting at `from`: files are
/// added while their changed lines fit in `budget`, at least one.
pub fn page_end(files: &[DiffFile], from: usize, budget: u64) -> usize {
    let mut used = 0u64;
    let mut end = from;
    for f in files.iter().skip(from) {
        // A header's few lines count too, so a page of tiny files ends.
        let cost = f.additions + f.deletions + 4;
        if end > from && used + cost > budget {
            break;
        }
        used += cost;
        end += 1;
    }
    end
}

/// One review comment on a line of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewComment {
    pub file: String,
    pub line: u32,
    pub text: String,
}

/// Read `FILE:LINE` (the file may itself hold colons; the line is after
/// the last one).
pub fn parse_location(loc: &str) -> Result<(String, u32), String> {
    let (file, line) = loc
        .rsplit_once(':')
        .ok_or_else(|| format!("{loc:?} is not FILE:LINE"))?;
    let line: u32 = line
        .trim()
        .parse()
        .map_err(|_| format!("{loc:?}: the line after ':' must be a number"))?;
    if file.trim().is_empty() || line == 0 {
        return Err(format!("{loc:?}: name a file and a line from 1"));
    }
    Ok((file.to_owned(), line))
}

/// The one prompt the comments of a review make, each naming its file and
/// line. Control characters of the comments are replaced: a newline could
/// submit the prompt early in a terminal agent.
/// A file name or comment as typed into an agent (DESIGN.md rule 11): a
/// control, bidi, separator or tag character (which could end the line
/// early or make the text read otherwise) becomes a space.
fn prompt_text(s: &str) -> String {
    s.chars()
        .map(|c| {
            if crate::display::is_terminal_unsafe(c) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

pub fn review_prompt(comments: &[ReviewComment]) -> String {
    let clean = prompt_text;
    let mut out = String::from("Review comments on your changes; please address each one:");
    for (i, c) in comments.iter().enumerate() {
        out.push_str(&format!(
            " ({}) {}:{}: {}",
            i + 1,
            clean(&c.file),
            c.line,
            clean(c.text.trim())
        ));
    }
    out
}

/// The prompt of `finish --resolve`: rebase onto the target in the agent's
/// own worktree and resolve the files that conflict.
pub fn resolve_prompt(target: &str, files: &[String]) -> String {
    let clean = prompt_text;
    let list: Vec<String> = files.iter().map(|f| clean(f)).collect();
    format!(
        "Your branch conflicts with {target}. In this worktree, rebase onto {target} (`git rebase {target}`), resolve the conflicts in: {}; finish the rebase (`git rebase --continue`) so the worktree is clean, then tell me it is done.",
        list.join(", "),
        target = clean(target)
    )
}

/// How `finish` lands the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// A merge commit (a fast-forward when the target has not moved).
    Merge,
    /// One commit on the target with all the changes.
    Squash,
    /// The branch's commits replayed on the target, which then moves to them.
    Rebase,
}

impl Strategy {
    pub fn from_name(s: &str) -> Option<Strategy> {
        match s {
            "merge" => Some(Strategy::Merge),
            "squash" => Some(Strategy::Squash),
            "rebase" => Some(Strategy::Rebase),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Merge => "merge",
            Strategy::Squash => "squash",
            Strategy::Rebase => "rebase",
        }
    }
}

/// The oldest git whose `merge-tree --write-tree` predicts conflicts
/// without touching a worktree.
pub const MERGE_TREE_GIT: (u32, u32) = (2, 38);

/// `git version 2.47.3` (or `2.39.2.windows.1`, `2.43.0.rc1`) -> (2, 47).
pub fn parse_git_version(s: &str) -> Option<(u32, u32)> {
    let v = s.trim().strip_prefix("git version ")?;
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

/// A checkout (a worktree folder) that has the target branch checked out.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TargetCheckout {
    pub path: String,
    /// Uncommitted files there (tracked changes and untracked files).
    pub dirty_files: usize,
    /// A merge, rebase, cherry-pick or revert stopped there.
    pub in_progress: Option<String>,
}

/// What the daemon learnt before a `finish`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FinishFacts {
    /// The agent is mid-turn or waiting for the person.
    pub agent_busy: bool,
    /// The session's branch; `None` when its checkout is detached.
    pub branch: Option<String>,
    /// The branch to land on.
    pub target: String,
    /// The target exists as a local branch.
    pub target_exists: bool,
    /// A merge or rebase stopped in the agent's worktree.
    pub in_progress: Option<String>,
    /// Uncommitted files in the agent's worktree.
    pub dirty_files: usize,
    /// `--commit` was given: uncommitted work is committed first.
    pub commit_requested: bool,
    /// A submodule is in the change or in either side.
    pub submodule: bool,
    /// Every checkout that has the target branch checked out.
    pub target_checkouts: Vec<TargetCheckout>,
    /// `git version`'s (major, minor).
    pub git_version: Option<(u32, u32)>,
    /// Files `merge-tree --write-tree` says would conflict.
    pub conflicts: Vec<String>,
    /// Commits on the branch not on the target.
    pub commits_ahead: usize,
    /// Opening a pull request instead of landing locally.
    pub pr: bool,
}

/// Why `finish` refuses; each says what to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    Busy,
    Detached,
    SameBranch { branch: String },
    NoTarget { target: String },
    InProgress { what: String },
    Uncommitted { files: usize },
    Submodule,
    TargetDirty { path: String, files: usize },
    TargetInProgress { path: String, what: String },
    TargetCheckedOutTwice { paths: Vec<String> },
    OldGit { have: (u32, u32) },
    Conflicts { files: Vec<String> },
    NothingToLand { target: String },
}

impl Refusal {
    /// A short name scripts can match on (`--json`'s `refused`).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Busy => "agent-busy",
            Refusal::Detached => "detached",
            Refusal::SameBranch { .. } => "same-branch",
            Refusal::NoTarget { .. } => "no-target",
            Refusal::InProgress { .. } => "in-progress",
            Refusal::Uncommitted { .. } => "uncommitted",
            Refusal::Submodule => "submodule",
            Refusal::TargetDirty { .. } => "target-dirty",
            Refusal::TargetInProgress { .. } => "target-in-progress",
            Refusal::TargetCheckedOutTwice { .. } => "target-checked-out-twice",
            Refusal::OldGit { .. } => "old-git",
            Refusal::Conflicts { .. } => "conflicts",
            Refusal::NothingToLand { .. } => "nothing-to-land",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Busy => write!(
                f,
                "the agent is mid-turn (or waiting for you); let it finish (`hangar wait ID`) and run finish again"
            ),
            Refusal::Detached => write!(
                f,
                "the session's checkout is on no branch (detached HEAD); nothing to land"
            ),
            Refusal::SameBranch { branch } => write!(
                f,
                "the session works on {branch} itself; nothing to land onto it (pass --into another branch)"
            ),
            Refusal::NoTarget { target } => write!(
                f,
                "the target branch {target} does not exist; pass --into an existing branch"
            ),
            Refusal::InProgress { what } => write!(
                f,
                "a {what} is in progress in the agent's worktree; finish or abort it there first"
            ),
            Refusal::Uncommitted { files } => write!(
                f,
                "the agent's worktree has {files} uncommitted file(s); commit them, or pass --commit to have hangar commit them"
            ),
            Refusal::Submodule => write!(
                f,
                "the change involves a submodule; hangar does not land submodules, land it with git by hand"
            ),
            Refusal::TargetDirty { path, files } => write!(
                f,
                "the target branch is checked out in {path} with {files} uncommitted file(s); commit or stash them there first (hangar never moves a branch under uncommitted changes)"
            ),
            Refusal::TargetInProgress { path, what } => write!(
                f,
                "a {what} is in progress in {path}, where the target branch is checked out; finish or abort it there first"
            ),
            Refusal::TargetCheckedOutTwice { paths } => write!(
                f,
                "the target branch is checked out in {} worktrees ({}); hangar will not move it",
                paths.len(),
                paths.join(", ")
            ),
            Refusal::OldGit { have } => write!(
                f,
                "finish needs git {}.{} or newer to predict conflicts (`git merge-tree --write-tree`); this is git {}.{}",
                MERGE_TREE_GIT.0, MERGE_TREE_GIT.1, have.0, have.1
            ),
            Refusal::Conflicts { files } => write!(
                f,
                "landing would conflict in {} file(s): {}; nothing was changed. `hangar finish ID --resolve` asks the agent to rebase and resolve them",
                files.len(),
                files.join(", ")
            ),
            Refusal::NothingToLand { target } => write!(
                f,
                "the branch has no commits that {target} lacks; nothing to land"
            ),
        }
    }
}

/// The checks of `finish`, in the order a person would fix them; the
/// first that fails refuses, before anything is changed.
pub fn finish_check(f: &FinishFacts) -> Result<(), Refusal> {
    if f.agent_busy {
        return Err(Refusal::Busy);
    }
    let Some(branch) = f.branch.as_deref() else {
        return Err(Refusal::Detached);
    };
    if branch == f.target {
        return Err(Refusal::SameBranch {
            branch: branch.to_owned(),
        });
    }
    if !f.target_exists {
        return Err(Refusal::NoTarget {
            target: f.target.clone(),
        });
    }
    if let Some(what) = &f.in_progress {
        return Err(Refusal::InProgress { what: what.clone() });
    }
    if f.submodule {
        return Err(Refusal::Submodule);
    }
    if f.dirty_files > 0 && !f.commit_requested {
        return Err(Refusal::Uncommitted {
            files: f.dirty_files,
        });
    }
    if let Some(have) = f.git_version
        && have < MERGE_TREE_GIT
    {
        return Err(Refusal::OldGit { have });
    }
    if f.pr {
        // A pull request moves no local ref: the checkouts do not matter,
        // and conflicts are the forge's to show.
        return Ok(());
    }
    match f.target_checkouts.as_slice() {
        [] => {}
        [one] => {
            if let Some(what) = &one.in_progress {
                return Err(Refusal::TargetInProgress {
                    path: one.path.clone(),
                    what: what.clone(),
                });
            }
            if one.dirty_files > 0 {
                return Err(Refusal::TargetDirty {
                    path: one.path.clone(),
                    files: one.dirty_files,
                });
            }
        }
        many => {
            return Err(Refusal::TargetCheckedOutTwice {
                paths: many.iter().map(|c| c.path.clone()).collect(),
            });
        }
    }
    if !f.conflicts.is_empty() {
        return Err(Refusal::Conflicts {
            files: f.conflicts.clone(),
        });
    }
    if f.commits_ahead == 0 && !(f.commit_requested && f.dirty_files > 0) {
        return Err(Refusal::NothingToLand {
            target: f.target.clone(),
        });
    }
    Ok(())
}

/// How the target ref is moved once the landed commit exists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum TargetMove {
    /// Fast-forward the clean checkout that has it (`merge --ff-only`
    /// there): its files follow the ref.
    FastForwardCheckout { path: String },
    /// No worktree has it checked out: the ref alone moves.
    RefOnly,
}

pub fn target_move(checkouts: &[TargetCheckout]) -> TargetMove {
    match checkouts.first() {
        Some(c) => TargetMove::FastForwardCheckout {
            path: c.path.clone(),
        },
        None => TargetMove::RefOnly,
    }
}

/// The backup ref kept for a ref `finish` moves:
/// `refs/hangar/backup/<session>/<time>/<ref without refs/>`.
pub fn backup_ref(session: &str, time_ms: u64, refname: &str) -> String {
    let short = refname.strip_prefix("refs/").unwrap_or(refname);
    let session: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("refs/hangar/backup/{session}/{time_ms}/{short}")
}

/// The message of a commit hangar makes (`--commit`, `--squash`, a merge):
/// the person's `--message`, else the session's title and the agent's last
/// summary.
pub fn commit_message(
    explicit: Option<&str>,
    title: &str,
    summary: Option<&str>,
    fallback: &str,
) -> String {
    if let Some(m) = explicit.map(str::trim).filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let title = title.trim();
    let mut out = if title.is_empty() {
        fallback.to_owned()
    } else {
        title.to_owned()
    };
    if let Some(s) = summary.map(str::trim).filter(|s| !s.is_empty()) {
        out.push_str("\n\n");
        out.push_str(s);
    }
    out
}

/// What became of one ref a finish meant to move when the finish was cut
/// off between its steps (the daemon killed): read from where the ref is
/// now, after a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterruptedMove {
    /// It moved: the work is landed, its backup ref stays.
    Moved,
    /// It never moved: its backup ref backs up nothing and goes, so the
    /// repository is as before the finish.
    NeverMoved,
    /// Something else moved it since (or it is gone): its backup ref stays,
    /// it may be the only record of where the ref was.
    MovedSince,
}

/// The rule for a ref planned to move from `old` to `new`, now at `now`.
pub fn interrupted_move(old: &str, new: &str, now: Option<&str>) -> InterruptedMove {
    match now {
        Some(n) if n == new => InterruptedMove::Moved,
        Some(n) if n == old => InterruptedMove::NeverMoved,
        _ => InterruptedMove::MovedSince,
    }
}

#[cfg(test)]
mod tests {
    use super::{DiffPart, PartEntry, diff_parts, split_raw_and_patch};

    /// Real `git diff --patch-with-raw -z -M HEAD` (git 2.47) of a rename,
    /// an intent-to-add file and a name with a tab, cut at the first `diff`.
    const PATCH_WITH_RAW: &[u8] = b":100644 100644 587be6b 587be6b R100\0plain\0renamed\0\
:000000 100644 0000000 3e75765 A\0untracked\0\
:100644 100644 7898192 0000000 M\0we ird\tname\0\0diff --git a/plain b/renamed\n";

    #[test]
    fn a_patch_with_raw_is_cut_after_its_records_whatever_the_names_hold() {
        let (raw, patch) = split_raw_and_patch(PATCH_WITH_RAW).unwrap();
        assert_eq!(patch, b"diff --git a/plain b/renamed\n");
        let files = super::parse_diff(raw, &[]).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| (f.path.as_str(), f.old_path.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("renamed", Some("plain")),
                ("untracked", None),
                ("we ird\tname", None)
            ]
        );
        // A rename's second name is a path, not the separator.
        let rename = b":100644 100644 a b R100\0x\0y\0";
        assert_eq!(
            split_raw_and_patch(rename).unwrap(),
            (&rename[..], &b""[..])
        );
        assert!(split_raw_and_patch(b"").unwrap().0.is_empty());
        assert!(split_raw_and_patch(b":100644 100644 a b M\0x").is_err());
        assert!(split_raw_and_patch(b"garbage").is_err());
    }

    fn paths(n: usize, folder: impl Fn(usize) -> String) -> Vec<Vec<u8>> {
        let mut p: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("{}/f{i}", folder(i)).into_bytes())
            .collect();
        p.sort();
        p
    }

    fn cut(p: &[Vec<u8>], parts: usize) -> Vec<DiffPart> {
        let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
        diff_parts(&refs, parts, 500)
    }

    /// Which part a path falls in, as git would match the pathspecs.
    fn owner(parts: &[DiffPart], path: &[u8]) -> Vec<usize> {
        // As git matches `literal` and `glob` pathspecs (`*` stops at `/`).
        let matches = |e: &PartEntry| match e {
            PartEntry::Path(name) => {
                path == name.as_slice()
                    || (path.starts_with(name) && path.get(name.len()) == Some(&b'/'))
            }
            PartEntry::NamesFrom(pre) => {
                path.starts_with(pre) && !path[pre.len()..].contains(&b'/')
            }
        };
        parts
            .iter()
            .enumerate()
            .filter(|(_, part)| match part {
                DiffPart::Only(e) => e.iter().any(matches),
                DiffPart::AllBut(e) => !e.iter().any(matches),
            })
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn twenty_folders_of_five_hundred_files_are_read_as_two_halves() {
        let p = paths(10_000, |i| format!("d{}", i / 500));
        let parts = cut(&p, 2);
        assert_eq!(parts.len(), 2);
        let DiffPart::Only(first) = &parts[0] else {
            panic!("{parts:?}")
        };
        assert_eq!(first.len(), 10, "{first:?}");
        let counts = (0..2).map(|k| p.iter().filter(|x| owner(&parts, x) == [k]).count());
        assert_eq!(counts.collect::<Vec<_>>(), [5_000, 5_000]);
        assert_eq!(parts[0].pathspecs()[0], b":(top,literal)d0");
        assert_eq!(parts[1].pathspecs()[0], b":(exclude,top,literal)d0");
    }

    #[test]
    fn one_folder_holding_most_is_cut_inside_and_few_files_are_one_read() {
        let p = paths(8_000, |i| {
            if i < 7_800 {
                format!("src/m{}", i / 100)
            } else {
                "docs".into()
            }
        });
        let parts = cut(&p, 4);
        assert_eq!(parts.len(), 4, "{parts:?}");
        let DiffPart::Only(first) = &parts[0] else {
            panic!()
        };
        assert_eq!(first[0], PartEntry::Path(b"docs".to_vec()));
        assert_eq!(
            first[1],
            PartEntry::Path(b"src/m0".to_vec()),
            "src cut inside"
        );
        let sizes: Vec<usize> = (0..4)
            .map(|k| p.iter().filter(|x| owner(&parts, x) == [k]).count())
            .collect();
        assert!(
            sizes.iter().all(|n| (1_500..=2_500).contains(n)),
            "{sizes:?}"
        );
        assert_eq!(cut(&p[..900], 4), [DiffPart::AllBut(vec![])]);
    }

    #[test]
    fn one_folder_of_ten_thousand_files_is_cut_by_the_beginnings_of_their_names() {
        let mut p: Vec<Vec<u8>> = (0..10_000)
            .map(|i| format!("flat/f{i:05}").into_bytes())
            .collect();
        p.push(b"flat/sub/x".to_vec());
        p.push(b"top.txt".to_vec());
        p.sort();
        let parts = cut(&p, 2);
        assert_eq!(parts.len(), 2, "{parts:?}");
        let DiffPart::Only(first) = &parts[0] else {
            panic!("{parts:?}")
        };
        assert!(
            first.contains(&PartEntry::NamesFrom(b"flat/f00".to_vec())),
            "{first:?}"
        );
        let sizes: Vec<usize> = (0..2)
            .map(|k| p.iter().filter(|x| owner(&parts, x) == [k]).count())
            .collect();
        assert!(
            sizes.iter().all(|n| (4_000..=6_000).contains(n)),
            "{sizes:?}"
        );
        // Glob characters in a name are matched as themselves.
        let spec = PartEntry::NamesFrom(b"f/a*[b]?\\".to_vec()).pathspec(false);
        assert_eq!(spec, b":(top,glob)f/a\\*\\[b\\]\\?\\\\*");
    }

    proptest::proptest! {
        #[test]
        fn every_path_of_a_big_folder_falls_in_exactly_one_part(
            names in proptest::collection::vec("[a-e0-2]{1,4}(/[a-b]{1,2})?", 100..2_000),
            parts in 2usize..5,
            unlisted in "f/[a-e0-2]{1,5}",
        ) {
            let mut p: Vec<Vec<u8>> = names.into_iter().map(|n| format!("f/{n}").into_bytes()).collect();
            p.sort();
            p.dedup();
            let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
            let cut = diff_parts(&refs, parts, 20);
            for x in p.iter().chain([&unlisted.into_bytes()]) {
                proptest::prop_assert_eq!(owner(&cut, x).len(), 1, "{:?} in {:?}", x, cut);
            }
        }

        #[test]
        fn every_path_and_every_path_nobody_listed_falls_in_exactly_one_part(
            names in proptest::collection::vec("[a-c]{1,2}(/[a-c]{1,2}){0,3}", 1..3_000),
            parts in 1usize..5,
            unlisted in "[a-d]{1,3}(/[a-c]{1,2}){0,2}",
        ) {
            let mut p: Vec<Vec<u8>> = names.into_iter().map(String::into_bytes).collect();
            p.sort();
            p.dedup();
            let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
            let cut = diff_parts(&refs, parts, 50);
            proptest::prop_assert!(cut.len() <= parts);
            for x in p.iter().chain([&unlisted.into_bytes()]) {
                proptest::prop_assert_eq!(owner(&cut, x).len(), 1, "{:?} in {:?}", x, cut);
            }
        }
    }
    #[test]
    fn a_review_prompt_carries_no_bidi_or_control_character_of_a_file_name() {
        let prompt = super::review_prompt(&[super::ReviewComment {
            file: "evil\u{202e}txt.exe\nrm -rf".into(),
            line: 3,
            text: "look\u{2066}here\u{e0041}".into(),
        }]);
        assert!(
            !prompt.chars().any(crate::display::is_terminal_unsafe),
            "{prompt:?}"
        );
        assert!(
            prompt.contains("evil txt.exe rm -rf:3: look here"),
            "{prompt:?}"
        );
    }

    use super::*;

    #[test]
    fn an_explicit_base_wins_and_a_worktree_compares_with_its_base_branch() {
        let rec = GitBase {
            branch: Some("main".into()),
            commit: "abc".into(),
        };
        assert_eq!(
            diff_base_candidates(Some("dev"), Some(&rec), None, Some("fix")),
            ["dev"]
        );
        assert_eq!(
            diff_base_candidates(None, Some(&rec), Some("main"), Some("fix")),
            ["main", "abc"]
        );
    }

    #[test]
    fn a_session_on_its_own_start_branch_compares_with_the_start_commit() {
        let rec = GitBase {
            branch: Some("main".into()),
            commit: "abc".into(),
        };
        assert_eq!(
            diff_base_candidates(None, Some(&rec), None, Some("main")),
            ["abc"]
        );
        // A session from before bases were recorded: its worktree's base.
        assert_eq!(
            diff_base_candidates(None, None, Some("main"), Some("fix")),
            ["main"]
        );
        assert!(diff_base_candidates(None, None, None, Some("main")).is_empty());
    }

    // From `git diff --raw -z -M` and `git diff --numstat -z -M` (git
    // 2.47.3) of a change with a modified, a renamed, a binary, a deleted
    // and an executable-bit file.
    const RAW: &[u8] = b":100644 100644 1111111 2222222 M\0file.txt\0:100644 100644 3333333 3333333 R100\0old name.txt\0new name.txt\0:000000 100644 0000000 4444444 A\0image.bin\0:100644 000000 5555555 0000000 D\0gone.txt\0:100644 100755 6666666 6666666 M\0run.sh\0";
    const NUMSTAT: &[u8] = b"2\t1\tfile.txt\x000\t0\t\0old name.txt\0new name.txt\0-\t-\timage.bin\x000\t3\tgone.txt\x000\t0\trun.sh\0";

    #[test]
    fn raw_and_numstat_listings_read_into_file_rows() {
        let files = parse_diff(RAW, NUMSTAT).unwrap();
        assert_eq!(files.len(), 5);
        assert_eq!(files[0].path, "file.txt");
        assert_eq!((files[0].additions, files[0].deletions), (2, 1));
        assert_eq!(files[1].status, "renamed");
        assert_eq!(files[1].path, "new name.txt");
        assert_eq!(files[1].old_path.as_deref(), Some("old name.txt"));
        assert!(files[2].binary);
        assert_eq!(files[2].status, "added");
        assert_eq!(files[3].status, "deleted");
        assert_eq!(files[3].deletions, 3);
        assert_eq!(
            (files[4].old_mode.as_str(), files[4].new_mode.as_str()),
            ("100644", "100755")
        );
        assert!(!files[4].is_submodule());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_diff(b"nonsense\0", b"").is_err());
        assert!(parse_diff(RAW, b"1\t2\tfile.txt\0x\0").is_err());
        assert_eq!(parse_diff(b"", b"").unwrap(), vec![]);
    }

    fn file(n: u64) -> DiffFile {
        DiffFile {
            path: "f".into(),
            old_path: None,
            status: "modified".into(),
            additions: n,
            deletions: 0,
            binary: false,
            old_mode: String::new(),
            new_mode: String::new(),
        }
    }

    #[test]
    fn pages_fill_up_to_the_budget_and_hold_at_least_one_file() {
        let files = vec![file(10), file(10), file(100), file(5)];
        assert_eq!(page_end(&files, 0, 30), 2);
        assert_eq!(page_end(&files, 2, 30), 3, "one big file alone");
        assert_eq!(page_end(&files, 3, 30), 4);
        assert_eq!(page_end(&files, 4, 30), 4, "past the end: empty");
    }

    #[test]
    fn locations_take_the_line_after_the_last_colon() {
        assert_eq!(
            parse_location("src/a:b.rs:12"),
            Ok(("src/a:b.rs".into(), 12))
        );
        assert!(parse_location("src/a.rs").is_err());
        assert!(parse_location("src/a.rs:x").is_err());
        assert!(parse_location(":3").is_err());
        assert!(parse_location("a:0").is_err());
    }

    #[test]
    fn a_review_is_one_line_prompt_naming_each_file_and_line() {
        let p = review_prompt(&[
            ReviewComment {
                file: "src/a.rs".into(),
                line: 3,
                text: "rename this\nplease".into(),
            },
            ReviewComment {
                file: "b.rs".into(),
                line: 40,
                text: "no unwrap".into(),
            },
        ]);
        assert!(p.contains("(1) src/a.rs:3: rename this please"), "{p}");
        assert!(p.contains("(2) b.rs:40: no unwrap"), "{p}");
        assert!(!p.contains('\n'));
    }

    fn ready() -> FinishFacts {
        FinishFacts {
            branch: Some("fix".into()),
            target: "main".into(),
            target_exists: true,
            git_version: Some((2, 47)),
            commits_ahead: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_clean_branch_with_commits_may_land() {
        assert_eq!(finish_check(&ready()), Ok(()));
    }

    #[test]
    fn each_check_refuses_with_its_reason() {
        let mut f = ready();
        f.agent_busy = true;
        assert_eq!(finish_check(&f), Err(Refusal::Busy));

        let mut f = ready();
        f.in_progress = Some("rebase".into());
        assert_eq!(finish_check(&f).unwrap_err().code(), "in-progress");

        let mut f = ready();
        f.dirty_files = 2;
        let e = finish_check(&f).unwrap_err();
        assert!(e.to_string().contains("--commit"), "{e}");
        f.commit_requested = true;
        assert_eq!(finish_check(&f), Ok(()));

        let mut f = ready();
        f.submodule = true;
        assert_eq!(finish_check(&f), Err(Refusal::Submodule));

        let mut f = ready();
        f.git_version = Some((2, 37));
        let e = finish_check(&f).unwrap_err();
        assert!(
            e.to_string().contains("2.38") && e.to_string().contains("2.37"),
            "{e}"
        );

        let mut f = ready();
        f.target_checkouts = vec![TargetCheckout {
            path: "/src/app".into(),
            dirty_files: 1,
            in_progress: None,
        }];
        let e = finish_check(&f).unwrap_err();
        assert_eq!(e.code(), "target-dirty");
        assert!(e.to_string().contains("/src/app"), "{e}");

        let mut f = ready();
        f.conflicts = vec!["a.txt".into()];
        let e = finish_check(&f).unwrap_err();
        assert!(
            e.to_string().contains("a.txt") && e.to_string().contains("--resolve"),
            "{e}"
        );

        let mut f = ready();
        f.commits_ahead = 0;
        assert_eq!(finish_check(&f).unwrap_err().code(), "nothing-to-land");

        let mut f = ready();
        f.target = "fix".into();
        assert_eq!(finish_check(&f).unwrap_err().code(), "same-branch");

        let mut f = ready();
        f.branch = None;
        assert_eq!(finish_check(&f), Err(Refusal::Detached));
    }

    #[test]
    fn a_pull_request_ignores_local_checkouts_and_conflicts() {
        let mut f = ready();
        f.pr = true;
        f.conflicts = vec!["a".into()];
        f.target_checkouts = vec![TargetCheckout {
            path: "/x".into(),
            dirty_files: 3,
            in_progress: None,
        }];
        assert_eq!(finish_check(&f), Ok(()));
    }

    #[test]
    fn a_clean_checkout_is_fast_forwarded_else_the_ref_alone_moves() {
        assert_eq!(target_move(&[]), TargetMove::RefOnly);
        let c = TargetCheckout {
            path: "/src/app".into(),
            ..Default::default()
        };
        assert_eq!(
            target_move(&[c]),
            TargetMove::FastForwardCheckout {
                path: "/src/app".into()
            }
        );
    }

    #[test]
    fn git_versions_read_with_suffixes() {
        assert_eq!(parse_git_version("git version 2.47.3\n"), Some((2, 47)));
        assert_eq!(
            parse_git_version("git version 2.39.2.windows.1"),
            Some((2, 39))
        );
        assert_eq!(parse_git_version("git version 2.43rc1"), Some((2, 43)));
        assert_eq!(parse_git_version("nonsense"), None);
    }

    #[test]
    fn backup_refs_name_the_session_time_and_ref() {
        assert_eq!(
            backup_ref("3f2a-9", 1700, "refs/heads/main"),
            "refs/hangar/backup/3f2a-9/1700/heads/main"
        );
    }

    #[test]
    fn commit_messages_prefer_the_persons_then_title_and_summary() {
        assert_eq!(commit_message(Some("mine"), "t", Some("s"), "f"), "mine");
        assert_eq!(
            commit_message(None, "Fix login", Some("Done."), "f"),
            "Fix login\n\nDone."
        );
        assert_eq!(
            commit_message(None, " ", None, "hangar: land fix"),
            "hangar: land fix"
        );
    }

    #[test]
    fn an_interrupted_finish_keeps_a_backup_only_where_its_ref_moved() {
        use InterruptedMove::*;
        assert_eq!(interrupted_move("a", "b", Some("b")), Moved);
        assert_eq!(interrupted_move("a", "b", Some("a")), NeverMoved);
        assert_eq!(interrupted_move("a", "b", Some("c")), MovedSince);
        assert_eq!(interrupted_move("a", "b", None), MovedSince);
    }
}
