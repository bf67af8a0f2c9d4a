//! Worktree isolation: each agent in its own git worktree, created on demand
//! and never lost.
//!
//! Everything here goes through the `git` program (worktree add, status,
//! rev-list, worktree remove, branch -d), run through the daemon's `Os`
//! (`os::Git`, scripted by `FakeOs` in tests); hangar never edits `.git`
//! itself.
//! The rules (branch names, "may this worktree be removed") live in
//! `hangar_core::worktree`; this module gathers git's facts and carries the
//! answers out.
//!
//! What it must never do: pass `--force` to git, delete a branch with `-D`,
//! remove a worktree that holds uncommitted or unpushed work, or recreate a
//! worktree somewhere else when its folder was deleted by hand. Worktrees
//! hangar created are recorded in `$HANGAR_HOME/worktrees.json`, so they are
//! still known (and listed by `hangar worktrees`) after their session closed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hangar_core::SessionId;
use hangar_core::worktree::{
    CleanupDecision, WorktreeFacts, WorktreeInfo, branch_slug, cleanup_decision, unique_branch,
    worktree_folder,
};
use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply::{WorktreeKept, WorktreeRemoved};
use hangar_protocol::view::WorktreeView;
use serde::{Deserialize, Serialize};

use crate::Paths;
use crate::errors::ApiError;
use crate::os::{Clock, Git, Os};
use crate::sessions::{RunState, Sessions};

/// The file (in `.worktreeinclude` gitignore syntax) naming untracked files
/// copied from the main checkout into each new worktree.
pub const INCLUDE_FILE: &str = ".worktreeinclude";
/// The most output of a failed setup command kept in the session's reason.
const SETUP_OUTPUT_LINES: usize = 20;
/// How long a status computed for `ls` is reused: a TUI polling `ls` must
/// not run git several times a second per worktree.
const STATUS_TTL: Duration = Duration::from_secs(2);

/// Why a worktree could not be created or managed; the message says what to
/// do next.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(
        "--worktree needs a git repository, but {cwd} is not inside one; run it from a repository or pass --cwd"
    )]
    NotARepository { cwd: String },
    #[error("the repository at {root} has no commits yet; commit once before using --worktree")]
    NoCommits { root: String },
    #[error("branch {branch:?} already exists; pick another name or omit it to get a fresh one")]
    BranchExists { branch: String },
    #[error("{branch:?} is not a valid branch name")]
    BadBranch { branch: String },
    #[error("folder {path} already exists; remove it or pick another branch name")]
    FolderExists { path: String },
    #[error("cannot run git: {0}; install git or put it on PATH")]
    NoGit(std::io::Error),
    #[error("git {args} failed in {dir}: {stderr}")]
    Git {
        args: String,
        dir: String,
        stderr: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl From<WorktreeError> for ApiError {
    fn from(e: WorktreeError) -> Self {
        match e {
            WorktreeError::NoGit(_) | WorktreeError::Io { .. } => {
                ApiError::new(codes::FAILED, e.to_string())
            }
            WorktreeError::Git { .. } => ApiError::new(codes::FAILED, e.to_string()),
            _ => ApiError::invalid(e.to_string()),
        }
    }
}

/// Run `git -C dir ARGS`; stdout on success, stderr in the error.
fn git(os: &dyn Git, dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    let out = git_output(os, dir, args, None)?;
    if out.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(git_failed(dir, args, &out))
    }
}

/// What `git -C dir ARGS` answered, with `stdin` written to it.
fn git_output(
    os: &dyn Git,
    dir: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> Result<crate::os::GitOutput, WorktreeError> {
    let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    os.run_git(dir, &args, &[], stdin)
        .map_err(WorktreeError::NoGit)
}

fn git_failed(dir: &Path, args: &[&str], out: &crate::os::GitOutput) -> WorktreeError {
    WorktreeError::Git {
        args: args.join(" "),
        dir: dir.display().to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    }
}

/// The repository a folder is in, as `git` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repo {
    /// The checkout's top folder.
    pub root: PathBuf,
    /// The repository's name: the folder holding its common `.git`, so a
    /// worktree made from inside another worktree still files under the
    /// same repository.
    pub name: String,
    /// The checked-out branch, or the commit id when detached.
    pub head: String,
}

impl Repo {
    pub fn discover(os: &dyn Git, cwd: &Path) -> Result<Repo, WorktreeError> {
        let not_repo = || WorktreeError::NotARepository {
            cwd: cwd.display().to_string(),
        };
        let out = git(
            os,
            cwd,
            &[
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-common-dir",
            ],
        )
        .map_err(|e| match e {
            WorktreeError::Git { .. } => not_repo(),
            other => other,
        })?;
        let mut lines = out.lines();
        let root = PathBuf::from(
            lines
                .next()
                .filter(|l| !l.is_empty())
                .ok_or_else(not_repo)?,
        );
        let common = PathBuf::from(lines.next().unwrap_or_default());
        let name_from = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = if common.file_name().is_some_and(|n| n == ".git") {
            common.parent().and_then(name_from)
        } else {
            name_from(&common).map(|n| n.trim_end_matches(".git").to_owned())
        }
        .filter(|n| !n.is_empty())
        .or_else(|| name_from(&root))
        .unwrap_or_else(|| "repo".to_owned());
        let no_commits = || WorktreeError::NoCommits {
            root: root.display().to_string(),
        };
        git(os, &root, &["rev-parse", "--verify", "-q", "HEAD^{commit}"])
            .map_err(|_| no_commits())?;
        let head = match git(os, &root, &["symbolic-ref", "-q", "--short", "HEAD"]) {
            Ok(branch) if !branch.trim().is_empty() => branch.trim().to_owned(),
            _ => git(os, &root, &["rev-parse", "HEAD"])?.trim().to_owned(),
        };
        Ok(Repo { root, name, head })
    }

    fn branch_exists(&self, os: &dyn Git, branch: &str) -> bool {
        git(
            os,
            &self.root,
            &[
                "show-ref",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}"),
            ],
        )
        .is_ok()
    }
}

/// Where worktrees go and what runs in a new one: `[worktree]` in config.
#[derive(Clone, Debug, Default)]
pub struct WorktreeSettings {
    /// The configured folder (may hold `{repo}` and `{branch}`), or `None`
    /// for `$HANGAR_HOME/worktrees`.
    pub folder: Option<String>,
    pub setup_command: Option<String>,
    pub setup_timeout: Option<Duration>,
}

/// The absolute folder setting: `~/` is the user's home, a relative folder
/// is relative to the repository's root.
fn folder_setting(settings: &WorktreeSettings, home: &Path, repo: &Repo) -> String {
    match settings.folder.as_deref().map(str::trim) {
        None | Some("") => home.join("worktrees").display().to_string(),
        Some(f) => {
            let expanded = match f.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(rest))
                    .unwrap_or_else(|| PathBuf::from(f)),
                None => PathBuf::from(f),
            };
            if expanded.is_absolute() {
                expanded.display().to_string()
            } else {
                repo.root.join(expanded).display().to_string()
            }
        }
    }
}

/// Create a worktree on a new branch for a session titled `title`. The
/// branch is `wanted` when given (it must not exist yet), else one made from
/// the title and made unique. Untracked files named by `.worktreeinclude`
/// are copied in. Never reuses or overwrites an existing folder.
pub fn create(
    os: &dyn Git,
    cwd: &Path,
    wanted: Option<&str>,
    title: &str,
    home: &Path,
    settings: &WorktreeSettings,
) -> Result<WorktreeInfo, WorktreeError> {
    let repo = Repo::discover(os, cwd)?;
    let (branch, path) = new_branch_and_folder(os, &repo, wanted, title, home, settings)?;
    git(
        os,
        &repo.root,
        &["worktree", "add", "-b", &branch, &path, &repo.head],
    )?;
    let info = WorktreeInfo {
        path,
        branch,
        base: repo.head.clone(),
        repo_root: repo.root.display().to_string(),
        created_by_hangar: true,
    };
    if let Err(e) = copy_included(os, &repo.root, Path::new(&info.path)) {
        // Nothing but hangar's own copies is in it yet; take it back down.
        let _ = remove(os, &info, true);
        return Err(e);
    }
    Ok(info)
}

/// The new branch (`wanted`, which must not exist yet, or one made unique
/// from the title) and the folder a new worktree of `repo` gets. Never an
/// existing folder.
fn new_branch_and_folder(
    os: &dyn Git,
    repo: &Repo,
    wanted: Option<&str>,
    title: &str,
    home: &Path,
    settings: &WorktreeSettings,
) -> Result<(String, String), WorktreeError> {
    let folder = folder_setting(settings, home, repo);
    let branch = match wanted.map(str::trim).filter(|w| !w.is_empty()) {
        Some(w) => {
            if git(os, &repo.root, &["check-ref-format", "--branch", w]).is_err() {
                return Err(WorktreeError::BadBranch { branch: w.into() });
            }
            if repo.branch_exists(os, w) {
                return Err(WorktreeError::BranchExists { branch: w.into() });
            }
            w.to_owned()
        }
        None => unique_branch(&branch_slug(title), |name| {
            repo.branch_exists(os, name)
                || Path::new(&worktree_folder(&folder, &repo.name, name)).exists()
        }),
    };
    let path = worktree_folder(&folder, &repo.name, &branch);
    if Path::new(&path).exists() {
        return Err(WorktreeError::FolderExists { path });
    }
    if let Some(parent) = Path::new(&path).parent() {
        std::fs::create_dir_all(parent).map_err(|source| WorktreeError::Io {
            what: format!("cannot create {}", parent.display()),
            source,
        })?;
    }
    Ok((branch, path))
}

/// A fork's worktree (`hangar fork --worktree`): a new branch from the
/// checkout `parent`'s `HEAD`, holding `parent`'s uncommitted state
/// (`review::fork_state`), compared with `base` like its parent's work.
/// Refused, with nothing made, while `parent` is mid-rebase or mid-merge.
pub fn create_fork(
    os: &dyn Git,
    parent: &Path,
    wanted: Option<&str>,
    title: &str,
    home: &Path,
    settings: &WorktreeSettings,
    base: Option<&str>,
) -> Result<WorktreeInfo, ApiError> {
    use crate::review::fork_state;
    if let Some(why) = fork_state::refusal(os, parent) {
        return Err(ApiError::invalid(why));
    }
    let repo = Repo::discover(os, parent)?;
    let head = fork_state::head(os, parent)?;
    let (branch, path) = new_branch_and_folder(os, &repo, wanted, title, home, settings)?;
    git(
        os,
        &repo.root,
        &["worktree", "add", "-b", &branch, &path, &head],
    )?;
    let info = WorktreeInfo {
        path,
        branch,
        base: base.map(str::to_owned).unwrap_or_else(|| repo.head.clone()),
        repo_root: repo.root.display().to_string(),
        created_by_hangar: true,
    };
    let copied = copy_included(os, &repo.root, Path::new(&info.path))
        .map_err(ApiError::from)
        .and_then(|_| fork_state::copy_uncommitted(os, parent, Path::new(&info.path)));
    if let Err(e) = copied {
        // Nothing but hangar's own copies is in it yet; take it back down.
        let _ = remove(os, &info, true);
        return Err(e);
    }
    Ok(info)
}

/// Copy the untracked files of `root` that `.worktreeinclude` names into the
/// same place under `dest`. git itself does the matching (`ls-files
/// --others --ignored --exclude-from`), so the file has exactly gitignore's
/// syntax: `*`, `**`, `?`, leading and trailing `/`, `!` negation, comments.
/// Tracked files are never copied: the checkout already has them. Only files
/// git also ignores are copied (`.worktreeinclude` selects among the
/// gitignored files, as Claude Code and Conductor define it): a copied file
/// git does not ignore would make the new worktree dirty forever, so closing
/// its agent could never remove it.
pub fn copy_included(os: &dyn Git, root: &Path, dest: &Path) -> Result<Vec<String>, WorktreeError> {
    let include = root.join(INCLUDE_FILE);
    if !include.is_file() {
        return Ok(Vec::new());
    }
    let exclude_from = format!("--exclude-from={}", include.display());
    let listed = git(
        os,
        root,
        &["ls-files", "-z", "--others", "--ignored", &exclude_from],
    )?;
    let named: Vec<&str> = listed.split('\0').filter(|r| !r.is_empty()).collect();
    let ignored = ignored_by_git(os, root, &named)?;
    let mut copied = Vec::new();
    for rel in named.into_iter().filter(|r| ignored.contains(*r)) {
        let from = root.join(rel);
        let to = dest.join(rel);
        let io = |what: &str| {
            let what = format!("cannot {what} {rel} into the worktree");
            move |source| WorktreeError::Io { what, source }
        };
        if to.symlink_metadata().is_ok() {
            continue;
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io("create the folder of"))?;
        }
        let meta = from.symlink_metadata().map_err(io("read"))?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&from).map_err(io("read the link"))?;
            std::os::unix::fs::symlink(target, &to).map_err(io("link"))?;
        } else if meta.is_file() {
            std::fs::copy(&from, &to).map_err(io("copy"))?;
        } else {
            continue;
        }
        copied.push(rel.to_owned());
    }
    Ok(copied)
}

/// Of the untracked `paths` (relative to `root`), the ones git ignores
/// (`.gitignore`, `.git/info/exclude`, the global excludes file).
fn ignored_by_git(
    os: &dyn Git,
    root: &Path,
    paths: &[&str],
) -> Result<std::collections::HashSet<String>, WorktreeError> {
    if paths.is_empty() {
        return Ok(Default::default());
    }
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p.as_bytes());
        input.push(0);
    }
    let args = ["check-ignore", "-z", "--stdin"];
    let out = git_output(os, root, &args, Some(&input))?;
    match out.code {
        // 0: some are ignored (listed); 1: none of them is.
        Some(0) | Some(1) => Ok(String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()),
        _ => Err(git_failed(root, &args, &out)),
    }
}

/// Run the configured setup command in a new worktree. `Err` carries what a
/// person needs to see: the command, the exit status and its last output.
pub async fn run_setup(
    command: &str,
    info: &WorktreeInfo,
    home: &Path,
    timeout: Duration,
) -> Result<(), String> {
    // Both streams into one pipe, in the order the command wrote them.
    let script = format!("exec 2>&1\n{command}");
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&script)
        .current_dir(&info.path)
        .env("HANGAR_HOME", home)
        .env("HANGAR_WORKTREE", &info.path)
        .env("HANGAR_WORKTREE_BRANCH", &info.branch)
        .env("HANGAR_WORKTREE_BASE", &info.base)
        .env("HANGAR_REPO_ROOT", &info.repo_root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run the worktree setup command {command:?}: {e}"))?;
    let pgid = child.id();
    let mut stdout = child.stdout.take();
    let read = async {
        let mut buf = Vec::new();
        if let Some(out) = stdout.as_mut() {
            use tokio::io::AsyncReadExt;
            let _ = out.read_to_end(&mut buf).await;
        }
        let status = child.wait().await;
        (buf, status)
    };
    let (output, status) = match tokio::time::timeout(timeout, read).await {
        Ok(done) => done,
        Err(_) => {
            if let Some(pgid) = pgid {
                // The group we created for the command; one that ended
                // meanwhile is not an error.
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pgid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            return Err(format!(
                "the worktree setup command {command:?} did not finish within {}s in {}",
                timeout.as_secs(),
                info.path
            ));
        }
    };
    let status = status.map_err(|e| format!("the worktree setup command {command:?}: {e}"))?;
    if status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(SETUP_OUTPUT_LINES)..].join("\n");
    let code = status
        .code()
        .map(|c| format!("exit code {c}"))
        .unwrap_or_else(|| "killed by a signal".to_owned());
    Err(format!(
        "the worktree setup command {command:?} failed in {} ({code}){}",
        info.path,
        if tail.trim().is_empty() {
            String::new()
        } else {
            format!(":\n{}", tail.trim_end())
        }
    ))
}

/// The full state of a worktree: what cleanup decides on, plus ahead/behind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorktreeState {
    pub facts: WorktreeFacts,
    pub ahead: Option<u32>,
    pub behind: Option<u32>,
}

/// Ask git about a worktree: uncommitted files, commits ahead of and behind
/// its base, and commits that exist nowhere else. Counted from the
/// worktree's own `HEAD`, so work survives even if its branch was switched.
pub fn inspect(os: &dyn Git, info: &WorktreeInfo, with_unpushed: bool) -> WorktreeState {
    let path = Path::new(&info.path);
    if !path.is_dir() {
        return WorktreeState::default();
    }
    let dirty_files = git(
        os,
        path,
        &["status", "--porcelain", "--untracked-files=normal"],
    )
    .map(|s| s.lines().filter(|l| !l.trim().is_empty()).count())
    // A folder git cannot read is treated as holding work: never removed.
    .unwrap_or(usize::MAX);
    let (behind, ahead) = git(
        os,
        path,
        &[
            "rev-list",
            "--left-right",
            "--count",
            &format!("{}...HEAD", info.base),
        ],
    )
    .ok()
    .and_then(|s| {
        let mut n = s.split_whitespace().map(|x| x.parse::<u32>().ok());
        Some((n.next()??, n.next()??))
    })
    .map_or((None, None), |(b, a)| (Some(b), Some(a)));
    let unpushed = if with_unpushed {
        let count = |args: &[&str]| {
            git(os, path, args)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
        };
        count(&[
            "rev-list",
            "--count",
            "HEAD",
            "--not",
            &info.base,
            "--remotes",
        ])
        // The base branch is gone: count against the remotes alone.
        .or_else(|| count(&["rev-list", "--count", "HEAD", "--not", "--remotes"]))
        .unwrap_or(usize::MAX)
    } else {
        0
    };
    WorktreeState {
        facts: WorktreeFacts {
            exists: true,
            dirty_files,
            unpushed,
        },
        ahead,
        behind,
    }
}

/// What removing a worktree did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    pub branch_deleted: bool,
    /// Why the branch was kept although its deletion was asked for.
    pub branch_note: Option<String>,
}

/// `git worktree remove` (never `--force`: git itself refuses a dirty one),
/// then `git branch -d` (never `-D`) when asked.
pub fn remove(
    os: &dyn Git,
    info: &WorktreeInfo,
    delete_branch: bool,
) -> Result<Removed, WorktreeError> {
    let root = Path::new(&info.repo_root);
    git(os, root, &["worktree", "remove", &info.path])?;
    if !delete_branch {
        return Ok(Removed {
            branch_deleted: false,
            branch_note: None,
        });
    }
    Ok(match git(os, root, &["branch", "-d", &info.branch]) {
        Ok(_) => Removed {
            branch_deleted: true,
            branch_note: None,
        },
        Err(e) => Removed {
            branch_deleted: false,
            branch_note: Some(format!("branch {} kept: {e}", info.branch)),
        },
    })
}

/// One worktree hangar created, remembered after its session is gone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub session: SessionId,
    #[serde(default)]
    pub title: String,
    pub worktree: WorktreeInfo,
    #[serde(default)]
    pub created_at_ms: u64,
}

/// `$HANGAR_HOME/worktrees.json`: every worktree hangar created and has not
/// removed, keyed by folder.
pub struct Registry {
    path: PathBuf,
}

/// Serializes read-modify-write of registry files within this process.
static REGISTRY_LOCK: Mutex<()> = Mutex::new(());

impl Registry {
    pub fn new(home: &Path) -> Registry {
        Registry {
            path: home.join("worktrees.json"),
        }
    }

    pub fn load(&self) -> BTreeMap<String, Record> {
        let _g = REGISTRY_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        self.read()
    }

    fn read(&self) -> BTreeMap<String, Record> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return BTreeMap::new();
        };
        match serde_json::from_str::<Vec<Record>>(&text) {
            Ok(list) => list
                .into_iter()
                .map(|r| (r.worktree.path.clone(), r))
                .collect(),
            Err(e) => {
                tracing::warn!("ignoring unreadable {}: {e}", self.path.display());
                BTreeMap::new()
            }
        }
    }

    fn update(&self, f: impl FnOnce(&mut BTreeMap<String, Record>)) {
        let _g = REGISTRY_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.read();
        f(&mut all);
        let list: Vec<&Record> = all.values().collect();
        let text = serde_json::to_string_pretty(&list).unwrap_or_else(|_| "[]".into());
        // Write then rename: a crash never leaves a half-written registry.
        let tmp = self.path.with_extension("json.tmp");
        let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            tracing::warn!("cannot write {}: {e}", self.path.display());
        }
    }

    pub fn add(&self, record: Record) {
        self.update(|all| {
            all.insert(record.worktree.path.clone(), record);
        });
    }

    pub fn forget(&self, path: &str) {
        self.update(|all| {
            all.remove(path);
        });
    }
}

/// A worktree made for a `new` request that is not yet owned by a saved
/// session. Dropping it unadopted takes the worktree back down, so a `new`
/// that fails after creating it (an unknown split target, a failed save)
/// leaves nothing behind.
pub struct PreparedWorktree {
    pub info: WorktreeInfo,
    /// The setup command's failure, shown on the session.
    pub setup_failure: Option<String>,
    adopted: bool,
    /// What takes it back down when no session adopts it.
    git: Arc<dyn Git>,
}

impl PreparedWorktree {
    /// Point a new session at the worktree.
    pub fn apply(&self, meta: &mut hangar_core::SessionMeta) {
        meta.cwd = self.info.path.clone();
        meta.worktree = Some(Box::new(self.info.clone()));
    }
}

impl Drop for PreparedWorktree {
    fn drop(&mut self) {
        if !self.adopted {
            // Error path only: a few milliseconds of blocking git is fine here.
            if let Err(e) = remove(self.git.as_ref(), &self.info, true) {
                tracing::warn!("could not take back worktree {}: {e}", self.info.path);
            }
        }
    }
}

/// The static part of a session's worktree view (no git run).
pub fn static_view(info: &WorktreeInfo) -> WorktreeView {
    WorktreeView {
        path: info.path.clone(),
        branch: info.branch.clone(),
        base: info.base.clone(),
        exists: Path::new(&info.path).is_dir(),
        dirty: None,
        ahead: None,
        behind: None,
    }
}

type StatusCache = BTreeMap<String, (Instant, WorktreeState)>;
static STATUS_CACHE: Mutex<StatusCache> = Mutex::new(BTreeMap::new());

/// `inspect` without unpushed counts, reused for [`STATUS_TTL`].
pub(crate) fn cached_status(os: &dyn Git, info: &WorktreeInfo) -> WorktreeState {
    let fresh = STATUS_CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&info.path)
        .filter(|(at, _)| at.elapsed() < STATUS_TTL)
        .map(|(_, s)| s.clone());
    if let Some(s) = fresh {
        return s;
    }
    let state = inspect(os, info, false);
    let mut cache = STATUS_CACHE.lock().unwrap_or_else(|p| p.into_inner());
    cache.retain(|_, (at, _)| at.elapsed() < STATUS_TTL);
    cache.insert(info.path.clone(), (Instant::now(), state.clone()));
    state
}

/// Run git work off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("worktree task failed: {e}")))
}

/// What `[worktree]` asks of a new worktree.
fn worktree_settings(config: &WorktreeConfig) -> WorktreeSettings {
    WorktreeSettings {
        folder: config.folder.clone(),
        setup_command: config.setup_command.clone(),
        setup_timeout: Some(Duration::from_secs(config.setup_timeout_secs.max(1))),
    }
}

/// The worktrees of sessions: made for `new --worktree`, remembered in the
/// home's registry, removed when clean after a close.
pub struct Worktrees {
    sessions: Arc<Sessions>,
    paths: Paths,
    clock: Arc<dyn Clock>,
    git: Arc<dyn Git>,
}

impl Worktrees {
    pub fn new(sessions: Arc<Sessions>, paths: Paths, os: Arc<dyn Os>) -> Worktrees {
        Worktrees {
            sessions,
            paths,
            clock: os.clone(),
            git: os,
        }
    }

    /// For `new --worktree`: find the folder the session would start in,
    /// create its worktree there and run the setup command. `None` when no
    /// worktree was asked for.
    pub async fn prepare_worktree(
        &self,
        req: &msg::NewSession,
        title: &str,
        config: &WorktreeConfig,
    ) -> Result<Option<PreparedWorktree>, ApiError> {
        if !req.worktree {
            return Ok(None);
        }
        let cwd = self.sessions.worktree_base_folder(
            req.tab.as_deref(),
            req.cwd.as_deref(),
            req.fallback_cwd.as_deref(),
        )?;
        let home = self.paths.home.clone();
        let settings = worktree_settings(config);
        let wanted = req.worktree_branch.clone();
        let title = title.to_owned();
        let created = {
            let settings = settings.clone();
            let git = self.git.clone();
            blocking(move || {
                create(
                    git.as_ref(),
                    Path::new(&cwd),
                    wanted.as_deref(),
                    &title,
                    &home,
                    &settings,
                )
            })
            .await??
        };
        Ok(Some(self.set_up(created, settings).await))
    }

    /// A worktree just made, with the setup command run in it (its
    /// failure kept to be shown on the session).
    async fn set_up(&self, info: WorktreeInfo, settings: WorktreeSettings) -> PreparedWorktree {
        let mut prepared = PreparedWorktree {
            info,
            setup_failure: None,
            adopted: false,
            git: self.git.clone(),
        };
        if let Some(command) = settings.setup_command.filter(|c| !c.trim().is_empty()) {
            let timeout = settings.setup_timeout.unwrap_or(Duration::from_secs(600));
            prepared.setup_failure = run_setup(&command, &prepared.info, &self.paths.home, timeout)
                .await
                .err();
        }
        prepared
    }

    /// For `fork --worktree`: the fork's worktree from the parent's
    /// checkout `parent_cwd` (`create_fork`), then the setup command.
    pub async fn prepare_fork_worktree(
        &self,
        parent_cwd: &str,
        wanted: Option<String>,
        title: &str,
        base: Option<String>,
        config: &WorktreeConfig,
    ) -> Result<PreparedWorktree, ApiError> {
        let home = self.paths.home.clone();
        let settings = worktree_settings(config);
        let parent = PathBuf::from(parent_cwd);
        let title = title.to_owned();
        let created = {
            let settings = settings.clone();
            let git = self.git.clone();
            blocking(move || {
                create_fork(
                    git.as_ref(),
                    &parent,
                    wanted.as_deref(),
                    &title,
                    &home,
                    &settings,
                    base.as_deref(),
                )
            })
            .await??
        };
        Ok(self.set_up(created, settings).await)
    }

    /// The session owning `prepared` is saved: remember the worktree, and
    /// when its setup failed, mark the session failed instead of starting
    /// it. Returns the state to answer with in that case.
    pub fn adopt_worktree(
        &self,
        id: &SessionId,
        prepared: Option<PreparedWorktree>,
    ) -> Option<RunState> {
        let mut prepared = prepared?;
        prepared.adopted = true;
        let title = self.sessions.meta(id).map(|m| m.title).unwrap_or_default();
        Registry::new(&self.paths.home).add(Record {
            session: id.clone(),
            title,
            worktree: prepared.info.clone(),
            created_at_ms: self.clock.now_ms(),
        });
        let reason = prepared.setup_failure.take()?;
        Some(self.sessions.mark_failed(id, reason))
    }

    /// After closing sessions: remove each clean worktree (keeping its
    /// branch unless `delete_branch`), keep every one holding work. Returns
    /// `(kept, removed)` for the reply.
    pub async fn clean_up_worktrees(
        &self,
        closed: Vec<(SessionId, WorktreeInfo)>,
        delete_branch: bool,
    ) -> (Vec<WorktreeKept>, Vec<WorktreeRemoved>) {
        if closed.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let home = self.paths.home.clone();
        let git = self.git.clone();
        let done = blocking(move || {
            let registry = Registry::new(&home);
            let mut kept = Vec::new();
            let mut removed = Vec::new();
            for (id, info) in closed {
                let state = inspect(git.as_ref(), &info, true);
                match cleanup_decision(&info, &state.facts) {
                    CleanupDecision::Remove => match remove(git.as_ref(), &info, delete_branch) {
                        Ok(r) => {
                            registry.forget(&info.path);
                            removed.push(WorktreeRemoved {
                                id: id.to_string(),
                                path: info.path,
                                branch: info.branch,
                                branch_deleted: r.branch_deleted,
                                note: r.branch_note,
                            });
                        }
                        Err(e) => kept.push(WorktreeKept {
                            id: id.to_string(),
                            path: info.path,
                            branch: info.branch,
                            reason: format!("git could not remove it: {e}"),
                        }),
                    },
                    CleanupDecision::Keep(reason) => kept.push(WorktreeKept {
                        id: id.to_string(),
                        path: info.path,
                        branch: info.branch,
                        reason,
                    }),
                    CleanupDecision::AlreadyGone => registry.forget(&info.path),
                    CleanupDecision::NotOurs => {}
                }
            }
            (kept, removed)
        })
        .await;
        done.unwrap_or_else(|e| {
            tracing::warn!("worktree clean-up failed: {}", e.message);
            (Vec::new(), Vec::new())
        })
    }
}

/// `[worktree]`: where `hangar new --worktree` puts worktrees and what runs
/// in a new one before its agent starts.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeConfig {
    /// The folder for new worktrees; may name `{repo}` and `{branch}`, else
    /// `<repo>/<branch>` is appended. Relative to the repository's root;
    /// `~/` is the user's home. Default: `$HANGAR_HOME/worktrees`.
    #[serde(default)]
    pub folder: Option<String>,
    /// A shell command run in each new worktree (e.g. `npm ci`); when it
    /// fails the session is marked failed with its output.
    #[serde(default)]
    pub setup_command: Option<String>,
    /// How long the setup command may run.
    #[serde(default = "default_setup_timeout")]
    pub setup_timeout_secs: u64,
}

impl Default for WorktreeConfig {
    fn default() -> Self {
        WorktreeConfig {
            folder: None,
            setup_command: None,
            setup_timeout_secs: default_setup_timeout(),
        }
    }
}

fn default_setup_timeout() -> u64 {
    600
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::RealOs;
    // The shared git fixture: an identity, no signing, `main` first.
    use hangar_testkit::git::git as sh_git;

    /// A throwaway repository with one commit on `main`.
    struct TestRepo {
        _dir: tempfile::TempDir,
        root: PathBuf,
        home: PathBuf,
    }

    fn repo() -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("api");
        std::fs::create_dir_all(&root).unwrap();
        sh_git(&root, &["init", "-q"]);
        std::fs::write(root.join("README"), "hello\n").unwrap();
        std::fs::write(root.join(".gitignore"), ".env\nsecrets/\n*.log\n").unwrap();
        sh_git(&root, &["add", "."]);
        sh_git(&root, &["commit", "-q", "-m", "first"]);
        TestRepo {
            _dir: dir,
            home: base.join("home"),
            root,
        }
    }

    fn settings() -> WorktreeSettings {
        WorktreeSettings::default()
    }

    #[test]
    fn a_worktree_is_made_under_home_on_a_new_branch_from_the_title() {
        let r = repo();
        let info = create(&RealOs, &r.root, None, "Fix login!", &r.home, &settings()).unwrap();
        assert_eq!(info.branch, "fix-login");
        assert_eq!(info.base, "main");
        assert_eq!(
            info.path,
            r.home.join("worktrees/api/fix-login").display().to_string()
        );
        assert!(Path::new(&info.path).join("README").is_file());
        let head = sh_git(Path::new(&info.path), &["symbolic-ref", "--short", "HEAD"]);
        assert_eq!(head.trim(), "fix-login");
        // The main checkout is untouched and still on main.
        let main = sh_git(&r.root, &["symbolic-ref", "--short", "HEAD"]);
        assert_eq!(main.trim(), "main");
    }

    #[test]
    fn a_second_worktree_with_the_same_title_gets_a_unique_branch() {
        let r = repo();
        let a = create(&RealOs, &r.root, None, "review", &r.home, &settings()).unwrap();
        let b = create(&RealOs, &r.root, None, "review", &r.home, &settings()).unwrap();
        assert_eq!(a.branch, "review");
        assert_eq!(b.branch, "review-2");
        assert_ne!(a.path, b.path);
    }

    #[test]
    fn an_explicit_branch_that_exists_is_refused() {
        let r = repo();
        let e = create(&RealOs, &r.root, Some("main"), "x", &r.home, &settings()).unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        let bad = create(
            &RealOs,
            &r.root,
            Some("bad..name"),
            "x",
            &r.home,
            &settings(),
        )
        .unwrap_err();
        assert!(bad.to_string().contains("not a valid branch"), "{bad}");
    }

    #[test]
    fn outside_a_repository_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = create(&RealOs, dir.path(), None, "x", dir.path(), &settings()).unwrap_err();
        assert!(matches!(e, WorktreeError::NotARepository { .. }), "{e}");
        assert!(e.to_string().contains("not inside one"), "{e}");
    }

    #[test]
    fn a_configured_folder_template_is_used() {
        let r = repo();
        let s = WorktreeSettings {
            folder: Some("../wt-{repo}/{branch}".into()),
            ..Default::default()
        };
        let info = create(&RealOs, &r.root, Some("feature/x"), "t", &r.home, &s).unwrap();
        assert!(
            info.path.ends_with("/api/../wt-api/feature-x"),
            "{}",
            info.path
        );
        assert!(Path::new(&info.path).is_dir());
    }

    #[test]
    fn worktreeinclude_copies_untracked_files_with_gitignore_syntax() {
        let r = repo();
        std::fs::write(r.root.join(".env"), "TOKEN=1\n").unwrap();
        std::fs::create_dir_all(r.root.join("secrets/deep")).unwrap();
        std::fs::write(r.root.join("secrets/deep/key.pem"), "k").unwrap();
        std::fs::write(r.root.join("secrets/skip.txt"), "s").unwrap();
        std::fs::write(r.root.join("app.log"), "l").unwrap();
        std::fs::create_dir_all(r.root.join("sub")).unwrap();
        std::fs::write(r.root.join("sub/app.log"), "l").unwrap();
        std::fs::write(r.root.join("sub/.env"), "nested").unwrap();
        std::fs::write(
            r.root.join(INCLUDE_FILE),
            "# comment\n/.env\nsecrets/**/*.pem\n/*.lo?\n!app.log\nREADME\n",
        )
        .unwrap();
        let info = create(&RealOs, &r.root, None, "inc", &r.home, &settings()).unwrap();
        let wt = Path::new(&info.path);
        assert_eq!(
            std::fs::read_to_string(wt.join(".env")).unwrap(),
            "TOKEN=1\n"
        );
        assert!(wt.join("secrets/deep/key.pem").is_file(), "** matches");
        assert!(!wt.join("secrets/skip.txt").exists(), "unlisted");
        assert!(!wt.join("app.log").exists(), "negated");
        assert!(!wt.join("sub/.env").exists(), "leading / anchors");
        assert!(!wt.join("sub/app.log").exists(), "leading / anchors");
        // Tracked files come from the checkout, not the main folder's copy.
        std::fs::write(r.root.join("README"), "edited in main\n").unwrap();
        let info2 = create(&RealOs, &r.root, None, "inc", &r.home, &settings()).unwrap();
        assert_eq!(
            std::fs::read_to_string(Path::new(&info2.path).join("README")).unwrap(),
            "hello\n"
        );
        // The copies are ignored files: the new worktree is clean.
        assert_eq!(inspect(&RealOs, &info, true).facts.dirty_files, 0);
    }

    #[test]
    fn worktreeinclude_never_copies_a_file_git_does_not_ignore() {
        let r = repo();
        // `.env` is ignored by the test repository; `local.toml` is not.
        std::fs::write(r.root.join(".env"), "TOKEN=1\n").unwrap();
        std::fs::write(r.root.join("local.toml"), "x = 1\n").unwrap();
        std::fs::write(r.root.join(INCLUDE_FILE), ".env\nlocal.toml\n").unwrap();
        let info = create(&RealOs, &r.root, None, "only-ignored", &r.home, &settings()).unwrap();
        let wt = Path::new(&info.path);
        assert!(wt.join(".env").is_file(), "an ignored file is copied");
        assert!(
            !wt.join("local.toml").exists(),
            "a file git would show as untracked is not copied"
        );
        assert_eq!(inspect(&RealOs, &info, true).facts.dirty_files, 0);
        remove(&RealOs, &info, false).expect("a clean worktree can be removed without --force");
    }

    #[test]
    fn dirty_and_unpushed_work_is_seen_and_kept() {
        let r = repo();
        let info = create(&RealOs, &r.root, None, "work", &r.home, &settings()).unwrap();
        let wt = Path::new(&info.path);
        let clean = inspect(&RealOs, &info, true);
        assert_eq!(
            clean.facts,
            WorktreeFacts {
                exists: true,
                dirty_files: 0,
                unpushed: 0
            }
        );
        assert_eq!((clean.ahead, clean.behind), (Some(0), Some(0)));

        std::fs::write(wt.join("new.txt"), "x").unwrap();
        assert_eq!(inspect(&RealOs, &info, true).facts.dirty_files, 1);
        assert!(
            remove(&RealOs, &info, false).is_err(),
            "git refuses a dirty worktree"
        );

        sh_git(wt, &["add", "."]);
        sh_git(wt, &["commit", "-q", "-m", "work"]);
        let committed = inspect(&RealOs, &info, true);
        assert_eq!(committed.facts.dirty_files, 0);
        assert_eq!(committed.facts.unpushed, 1);
        assert_eq!(committed.ahead, Some(1));
        assert!(matches!(
            cleanup_decision(&info, &committed.facts),
            CleanupDecision::Keep(_)
        ));

        // Merged into its base: nothing is lost by removing it.
        sh_git(&r.root, &["merge", "-q", "--ff-only", &info.branch]);
        let merged = inspect(&RealOs, &info, true);
        assert_eq!(merged.facts.unpushed, 0);
        assert_eq!(
            cleanup_decision(&info, &merged.facts),
            CleanupDecision::Remove
        );
    }

    #[test]
    fn removing_keeps_the_branch_unless_asked_and_never_forces() {
        let r = repo();
        let keep = create(&RealOs, &r.root, None, "keep", &r.home, &settings()).unwrap();
        let r1 = remove(&RealOs, &keep, false).unwrap();
        assert!(!r1.branch_deleted);
        assert!(!Path::new(&keep.path).exists());
        assert!(sh_git(&r.root, &["branch", "--list", "keep"]).contains("keep"));

        let del = create(&RealOs, &r.root, None, "del", &r.home, &settings()).unwrap();
        assert!(remove(&RealOs, &del, true).unwrap().branch_deleted);
        assert!(
            sh_git(&r.root, &["branch", "--list", "del"])
                .trim()
                .is_empty()
        );
    }

    #[test]
    fn the_registry_remembers_and_forgets_worktrees() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::new(dir.path());
        let info = WorktreeInfo {
            path: "/w/a".into(),
            branch: "a".into(),
            base: "main".into(),
            repo_root: "/r".into(),
            created_by_hangar: true,
        };
        reg.add(Record {
            session: SessionId::from("s1"),
            title: "t".into(),
            worktree: info.clone(),
            created_at_ms: 1,
        });
        let again = Registry::new(dir.path()).load();
        assert_eq!(again["/w/a"].worktree, info);
        reg.forget("/w/a");
        assert!(reg.load().is_empty());
    }

    #[tokio::test]
    async fn a_failing_setup_command_reports_its_exit_code_and_output() {
        let r = repo();
        let info = create(&RealOs, &r.root, None, "setup", &r.home, &settings()).unwrap();
        let ok = run_setup("test -f README", &info, &r.home, Duration::from_secs(30)).await;
        assert_eq!(ok, Ok(()));
        let e = run_setup(
            "echo installing; echo broken >&2; exit 3",
            &info,
            &r.home,
            Duration::from_secs(30),
        )
        .await
        .unwrap_err();
        assert!(e.contains("exit code 3"), "{e}");
        assert!(e.contains("installing") && e.contains("broken"), "{e}");
    }

    /// The fake machine's git scripted as a repository `proj` (one commit
    /// on `main`, no branch `fix-login`) whose new worktree is clean or
    /// holds `status` as uncommitted work.
    fn fake_repo(m: &crate::on_a_fake_machine::FakeMachine, status: &str) -> PathBuf {
        let root = m.home.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let git = m.os.git();
        let top = format!("{}\n{}/.git\n", root.display(), root.display());
        git.answer(&["rev-parse", "--path-format=absolute"], 0, &top);
        git.answer(&["rev-parse", "--verify", "-q", "HEAD^{commit}"], 0, "");
        git.answer(&["symbolic-ref", "-q", "--short", "HEAD"], 0, "main\n");
        git.answer(&["check-ref-format", "--branch"], 0, "fix-login\n");
        git.answer(&["show-ref"], 1, "");
        git.answer(&["worktree", "add"], 0, "");
        git.answer(&["status", "--porcelain"], 0, status);
        git.answer(&["rev-list", "--left-right"], 0, "0\t0\n");
        git.answer(&["rev-list", "--count"], 0, "0\n");
        git.answer(&["worktree", "remove"], 0, "");
        git.answer(&["branch", "-d"], 0, "Deleted branch fix-login\n");
        root
    }

    /// `new --worktree` then closing its session, on the fake machine:
    /// the worktree is made from `main` on its own branch, remembered,
    /// and removed (its branch too) when clean, never with `--force`.
    async fn made_and_closed(status: &str) -> (Vec<crate::os::GitCall>, String, PathBuf, bool) {
        use crate::on_a_fake_machine::with_sessions;
        let m = with_sessions(&["a"], &[]);
        let root = fake_repo(&m, status);
        let worktrees = &m.daemon.worktrees;
        let req = msg::NewSession {
            cwd: Some(root.display().to_string()),
            worktree: true,
            worktree_branch: Some("fix-login".into()),
            ..Default::default()
        };
        let prepared = worktrees
            .prepare_worktree(&req, "fix login", &WorktreeConfig::default())
            .await
            .unwrap()
            .expect("a worktree was asked for");
        let info = prepared.info.clone();
        // What `git worktree add` made (the fake git makes no folder).
        std::fs::create_dir_all(&info.path).unwrap();
        let id = SessionId::from("a");
        assert_eq!(worktrees.adopt_worktree(&id, Some(prepared)), None);
        let registry = Registry::new(&m.daemon.paths.home);
        assert!(registry.load().contains_key(&info.path), "remembered");
        let (kept, removed) = worktrees
            .clean_up_worktrees(vec![(id, info.clone())], true)
            .await;
        let remembered = registry.load().contains_key(&info.path);
        let outcome = match (kept.as_slice(), removed.as_slice()) {
            ([], [r]) if r.branch_deleted => "removed with its branch".to_owned(),
            ([k], []) => format!("kept: {}", k.reason),
            other => format!("{other:?}"),
        };
        assert_eq!(info.branch, "fix-login");
        assert_eq!(info.base, "main");
        (
            m.os.git().calls(),
            outcome,
            PathBuf::from(&info.path),
            remembered,
        )
    }

    #[tokio::test]
    async fn a_clean_worktree_is_made_and_removed_with_its_branch_on_the_fake_machine() {
        let (calls, outcome, path, remembered) = made_and_closed("").await;
        assert_eq!(outcome, "removed with its branch");
        assert!(!remembered, "forgotten once removed");
        let path = path.display().to_string();
        let ran: Vec<String> = calls.iter().map(|c| c.args.join(" ")).collect();
        let add = format!("worktree add -b fix-login {path} main");
        let remove = format!("worktree remove {path}");
        let at = |cmd: &str| {
            ran.iter()
                .position(|r| r == cmd)
                .unwrap_or_else(|| panic!("`git {cmd}` never ran: {ran:#?}"))
        };
        assert!(at(&add) < at(&remove) && at(&remove) < at("branch -d fix-login"));
        assert!(
            ran.iter()
                .all(|r| !r.contains("--force") && !r.contains(" -D")),
            "never forced: {ran:#?}"
        );
        assert!(
            calls
                .iter()
                .filter(|c| c.args[0] == "worktree")
                .all(|c| c.dir.ends_with("proj")),
            "worktree commands run in the repository"
        );
    }

    #[tokio::test]
    async fn a_worktree_holding_uncommitted_work_is_kept_on_the_fake_machine() {
        let (calls, outcome, _, remembered) = made_and_closed(" M src/login.rs\n").await;
        assert!(outcome.starts_with("kept: "), "{outcome}");
        assert!(outcome.contains("uncommitted"), "{outcome}");
        assert!(remembered, "still listed by `hangar worktrees`");
        assert!(
            calls
                .iter()
                .all(|c| !c.args.starts_with(&["worktree".into(), "remove".into()])),
            "never removed"
        );
    }
}
