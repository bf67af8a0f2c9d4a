//! `hangar finish`: land a session's branch on its target, or push it and
//! open a pull request.
//!
//! Every fact is gathered and every check made (`hangar_core::review::
//! finish_check`) before anything changes; a refusal changes nothing. The
//! landed commit is built from objects alone (`merge-tree --write-tree`,
//! `commit-tree`), so no checkout is ever switched; then each ref that moves
//! gets a backup ref first, and the target moves by a fast-forward of the
//! clean checkout that has it, or by `update-ref` (compare-and-swap) when
//! no worktree has it checked out.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use hangar_core::review::{
    FinishFacts, Refusal, Strategy, TargetCheckout, TargetMove, backup_ref, commit_message,
    finish_check, parse_git_version, target_move,
};
use hangar_protocol::message::codes;
use hangar_protocol::reply::{Finished, Landed};
use serde_json::json;

use super::diff::{files_between_raw, working_tree};
use super::git::{
    GitError, current_branch, dirty_files, git, git_env, git_line, in_progress, resolves, worktrees,
};
use super::interrupted;
use crate::errors::ApiError;
use crate::os::Git;

/// What a finish is asked to do, with the session's facts the daemon knows.
pub struct FinishAsk {
    pub session: String,
    /// The checkout the agent works in.
    pub dir: PathBuf,
    /// hangar made that checkout (its own worktree): the agent's branch may
    /// be moved there after a squash or rebase.
    pub own_worktree: bool,
    /// The branch the work started from, the default target.
    pub base_branch: Option<String>,
    pub strategy: Strategy,
    pub into: Option<String>,
    pub commit: bool,
    pub pr: bool,
    pub message: Option<String>,
    pub dry_run: bool,
    pub agent_busy: bool,
    pub title: String,
    pub summary: Option<String>,
    /// A folder of hangar's own for temporary indexes.
    pub scratch: PathBuf,
    /// Where the record of the refs it is about to move goes
    /// (`interrupted`).
    pub record: PathBuf,
    pub now_ms: u64,
}

/// One ref `finish` moved, with the backup ref of where it was.
pub use hangar_protocol::reply::MovedRef as Moved;

/// What a finish did (or, with `dry_run`, would do).
pub struct Done {
    pub reply: Finished,
    pub moved: Vec<Moved>,
    /// The work is landed (not a dry run, not a pull request).
    pub landed: bool,
}

fn failed(message: impl Into<String>) -> ApiError {
    ApiError::new(codes::FAILED, message)
}

/// A refusal as an error whose detail names the check and the files.
fn refused(r: Refusal) -> ApiError {
    let files = match &r {
        Refusal::Conflicts { files } => files.clone(),
        _ => Vec::new(),
    };
    ApiError {
        code: codes::FAILED,
        message: format!("finish refused: {r}"),
        detail: json!({"refused": r.code(), "files": files}),
    }
}

/// `git merge-tree --write-tree -z --name-only --no-messages A B`: the
/// merged tree, or the files that conflict.
fn merge_tree(
    os: &dyn Git,
    dir: &Path,
    args: &[&str],
) -> Result<Result<String, Vec<String>>, ApiError> {
    let mut all = vec![
        "merge-tree",
        "--write-tree",
        "-z",
        "--name-only",
        "--no-messages",
    ];
    all.extend(args);
    let (out, conflicted) = match git(os, dir, &all) {
        Ok(out) => (out, false),
        Err(GitError::Failed {
            code: Some(1),
            stdout,
            ..
        }) => (stdout.into_bytes(), true),
        Err(e) => return Err(e.into()),
    };
    let mut fields = out.split(|&b| b == 0);
    let tree = String::from_utf8_lossy(fields.next().unwrap_or_default())
        .trim()
        .to_owned();
    if !conflicted {
        return Ok(Ok(tree));
    }
    let mut files: Vec<String> = Vec::new();
    for f in fields {
        if f.is_empty() {
            break;
        }
        let f = String::from_utf8_lossy(f).into_owned();
        if !files.contains(&f) {
            files.push(f);
        }
    }
    Ok(Err(files))
}

/// `git commit-tree TREE -p P... -m MESSAGE` with optional author facts.
fn commit_tree(
    os: &dyn Git,
    dir: &Path,
    tree: &str,
    parents: &[&str],
    message: &str,
    env: &[(&str, &OsStr)],
) -> Result<String, ApiError> {
    let mut args = vec!["commit-tree".to_owned(), tree.to_owned()];
    for p in parents {
        args.push("-p".into());
        args.push((*p).to_owned());
    }
    args.push("-m".into());
    args.push(message.to_owned());
    let out = git_env(os, dir, &args, env).map_err(|e| {
        failed(format!(
            "{e}; if git says it needs your identity, set user.name and user.email"
        ))
    })?;
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// The remote to push to: the branch's own, else `origin`, else the only one.
fn push_remote(os: &dyn Git, dir: &Path, branch: &str) -> Result<String, ApiError> {
    if let Ok(r) = git_line(
        os,
        dir,
        &["config", "--get", &format!("branch.{branch}.remote")],
    ) && !r.is_empty()
        && r != "."
    {
        return Ok(r);
    }
    let list = git_line(os, dir, &["remote"])?;
    let remotes: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
    if remotes.contains(&"origin") {
        return Ok("origin".into());
    }
    match remotes.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(failed(
            "--pr needs a git remote to push to, and this repository has none; add one (`git remote add origin URL`)",
        )),
        many => Err(failed(format!(
            "--pr cannot choose among the remotes {}; set the branch's remote (`git branch --set-upstream-to`) or add `origin`",
            many.join(", ")
        ))),
    }
}

/// `gh` on the daemon's PATH.
fn find_gh() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("gh"))
        .find(|p| p.is_file())
}

/// The facts and the tip to land, gathered without changing anything (a
/// predicted `--commit` is an unreferenced commit object at most).
struct Gathered {
    facts: FinishFacts,
    target_old: Option<String>,
}

fn gather(
    os: &dyn Git,
    ask: &FinishAsk,
    branch: Option<String>,
    target: &str,
) -> Result<Gathered, ApiError> {
    let dir = ask.dir.as_path();
    let head = resolves(os, dir, "HEAD")
        .ok_or_else(|| ApiError::invalid(format!("{} has no commits", dir.display())))?;
    let target_ref = format!("refs/heads/{target}");
    let target_old = resolves(os, dir, &target_ref);
    let dirty = dirty_files(os, dir)?;
    let git_version = git_line(os, dir, &["version"])
        .ok()
        .and_then(|v| parse_git_version(&v));
    let mut facts = FinishFacts {
        agent_busy: ask.agent_busy,
        branch,
        target: target.to_owned(),
        target_exists: target_old.is_some(),
        in_progress: in_progress(os, dir),
        dirty_files: dirty,
        commit_requested: ask.commit,
        git_version,
        pr: ask.pr,
        ..Default::default()
    };
    for (path, checked_out) in worktrees(os, dir)? {
        if checked_out.as_deref() == Some(target_ref.as_str()) {
            let p = Path::new(&path);
            facts.target_checkouts.push(TargetCheckout {
                dirty_files: dirty_files(os, p).unwrap_or(usize::MAX),
                in_progress: in_progress(os, p),
                path,
            });
        }
    }
    // What would land: HEAD, or with --commit the working tree on top.
    let tip = if dirty > 0 && ask.commit && facts.in_progress.is_none() {
        let tree = working_tree(os, dir, &ask.scratch)?;
        commit_tree(os, dir, &tree, &[&head], "hangar: predicted commit", &[])?
    } else {
        head.clone()
    };
    let has_gitmodules =
        |rev: &str| git(os, dir, ["cat-file", "-e", &format!("{rev}:.gitmodules")]).is_ok();
    if let Some(old) = &target_old {
        facts.commits_ahead =
            git_line(os, dir, &["rev-list", "--count", &format!("{old}..{tip}")])?
                .parse()
                .unwrap_or(0);
        let mb = git_line(os, dir, &["merge-base", old, &tip]).ok();
        let changed_submodule = match &mb {
            Some(mb) => files_between_raw(os, dir, mb, &tip)?
                .iter()
                .any(|f| f.is_submodule()),
            None => false,
        };
        facts.submodule = changed_submodule || has_gitmodules(&tip) || has_gitmodules(old);
        let new_enough = git_version.is_none_or(|v| v >= hangar_core::review::MERGE_TREE_GIT);
        if new_enough
            && !ask.pr
            && !facts.submodule
            && let Err(files) = merge_tree(os, dir, &[old, &tip])?
        {
            facts.conflicts = files;
        }
    } else {
        facts.submodule = has_gitmodules(&tip);
    }
    Ok(Gathered { facts, target_old })
}

/// Decide, and unless refused or a dry run, land (or open the PR).
pub fn finish(os: &dyn Git, ask: FinishAsk) -> Result<Done, ApiError> {
    let dir = ask.dir.clone();
    if !dir.is_dir() {
        return Err(ApiError::invalid(format!(
            "the session's folder {} does not exist",
            dir.display()
        )));
    }
    let branch = current_branch(os, &dir);
    let target = match ask
        .into
        .clone()
        .or_else(|| ask.base_branch.clone())
        .filter(|t| !t.trim().is_empty())
    {
        Some(t) => t,
        None => {
            return Err(ApiError::invalid(
                "no base branch was recorded for this session; pass --into BRANCH",
            ));
        }
    };
    let g = gather(os, &ask, branch.clone(), &target)?;
    finish_check(&g.facts).map_err(refused)?;
    // Checked: there is a branch and the target exists.
    let branch = branch.unwrap_or_default();
    let target_old = g.target_old.clone().unwrap_or_default();
    let will_commit = g.facts.dirty_files > 0 && ask.commit;
    let how = target_move(&g.facts.target_checkouts);
    let message = |fallback: &str| {
        commit_message(
            ask.message.as_deref(),
            &ask.title,
            ask.summary.as_deref(),
            fallback,
        )
    };

    if ask.pr {
        let remote = push_remote(os, &dir, &branch)?;
        let gh = find_gh().ok_or_else(|| {
            failed("--pr needs the GitHub CLI `gh` on the daemon's PATH, and none was found; install gh (https://cli.github.com) and run `gh auth login`")
        })?;
        if ask.dry_run {
            return Ok(Done {
                reply: Finished::PullRequestPlan {
                    dry_run: true,
                    pr: true,
                    branch,
                    target,
                    remote,
                    commit: will_commit,
                },
                moved: Vec::new(),
                landed: false,
            });
        }
        if will_commit {
            commit_in_place(os, &dir, &message(&format!("hangar: work of {branch}")))?;
        }
        git(
            os,
            &dir,
            [
                "push",
                "--set-upstream",
                &remote,
                &format!("refs/heads/{branch}:refs/heads/{branch}"),
            ],
        )?;
        let title = {
            let t = ask.title.trim();
            if t.is_empty() {
                branch.clone()
            } else {
                t.to_owned()
            }
        };
        let body = ask
            .summary
            .clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| {
                format!(
                    "The work of hangar session {} on branch {branch}.",
                    ask.session
                )
            });
        let out = std::process::Command::new(&gh)
            .args([
                "pr", "create", "--title", &title, "--body", &body, "--base", &target, "--head",
                &branch,
            ])
            .current_dir(&dir)
            .env("GH_PROMPT_DISABLED", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| failed(format!("cannot run {}: {e}", gh.display())))?;
        if !out.status.success() {
            return Err(failed(format!(
                "the branch {branch} was pushed to {remote}, but `gh pr create` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        return Ok(Done {
            reply: Finished::PullRequest {
                pr: true,
                url,
                branch,
                target,
                remote,
                committed: will_commit,
            },
            moved: Vec::new(),
            landed: false,
        });
    }

    if ask.dry_run {
        return Ok(Done {
            reply: Finished::LandingPlan {
                dry_run: true,
                strategy: ask.strategy.name().to_owned(),
                branch,
                target,
                target_at: target_old,
                commits: g.facts.commits_ahead,
                commit: will_commit,
                how,
            },
            moved: Vec::new(),
            landed: false,
        });
    }

    // From here on things change, in an order that leaves a consistent
    // repository at every step: new objects first, then backups, then refs.
    let tip = if will_commit {
        commit_in_place(os, &dir, &message(&format!("hangar: work of {branch}")))?
    } else {
        git_line(os, &dir, &["rev-parse", "HEAD"])?
    };
    let new = match ask.strategy {
        Strategy::Merge => {
            let mb = git_line(os, &dir, &["merge-base", &target_old, &tip])?;
            if mb == target_old {
                tip.clone()
            } else {
                let tree = merge_tree(os, &dir, &[&target_old, &tip])?
                    .map_err(|files| refused(Refusal::Conflicts { files }))?;
                commit_tree(
                    os,
                    &dir,
                    &tree,
                    &[&target_old, &tip],
                    &message(&format!("Merge branch '{branch}' into {target}")),
                    &[],
                )?
            }
        }
        Strategy::Squash => {
            let tree = merge_tree(os, &dir, &[&target_old, &tip])?
                .map_err(|files| refused(Refusal::Conflicts { files }))?;
            commit_tree(
                os,
                &dir,
                &tree,
                &[&target_old],
                &message(&format!("Squashed branch '{branch}'")),
                &[],
            )?
        }
        Strategy::Rebase => replay(os, &dir, &target_old, &tip)?,
    };

    let target_ref = format!("refs/heads/{target}");
    let target_moves = Moved {
        backup: backup_ref(&ask.session, ask.now_ms, &target_ref),
        refname: target_ref,
        old: target_old.clone(),
        new: new.clone(),
    };
    // After a squash or rebase the agent's own branch follows the landed
    // commit (its old commits kept by a backup ref), so the worktree holds
    // nothing unlanded and the agent, if kept, goes on from the target.
    let branch_follows =
        (ask.strategy != Strategy::Merge && ask.own_worktree && new != tip).then(|| {
            let branch_ref = format!("refs/heads/{branch}");
            Moved {
                backup: backup_ref(&ask.session, ask.now_ms, &branch_ref),
                refname: branch_ref,
                old: tip.clone(),
                new: new.clone(),
            }
        });
    // Written before the first ref changes: a daemon killed between the
    // steps below leaves it, and the next start settles what it finds
    // (`interrupted`): a backup without its move is dropped, a move keeps
    // its backup.
    let record = interrupted::Record {
        session: ask.session.clone(),
        strategy: ask.strategy.name().to_owned(),
        dir: dir.clone(),
        moves: std::iter::once(target_moves.clone())
            .chain(branch_follows.clone())
            .collect(),
    };
    interrupted::write(&ask.record, &record).map_err(|e| {
        failed(format!(
            "cannot write {}: {e}; nothing was moved",
            ask.record.display()
        ))
    })?;
    let moved = move_refs(
        os,
        &dir,
        &target,
        &how,
        &target_moves,
        branch_follows.as_ref(),
    );
    if moved.is_err() {
        // A step failed (not a crash): settle now as a restart would.
        interrupted::settle(os, &record);
    }
    let _ = std::fs::remove_file(&ask.record);
    let moved = moved?;
    Ok(Done {
        reply: Finished::Landed(Landed {
            landed: true,
            strategy: ask.strategy.name().to_owned(),
            branch,
            target,
            commit: new,
            committed: will_commit,
            how,
            refs: moved.clone(),
            closed: false,
            note: None,
            kept_worktrees: None,
            removed_worktrees: None,
        }),
        moved,
        landed: true,
    })
}

/// Move the target (with its backup ref, in one transaction when no
/// checkout has it), then the agent's branch when it follows.
fn move_refs(
    os: &dyn Git,
    dir: &Path,
    target: &str,
    how: &TargetMove,
    t: &Moved,
    branch: Option<&Moved>,
) -> Result<Vec<Moved>, ApiError> {
    match how {
        TargetMove::FastForwardCheckout { path } => {
            git(os, dir, ["update-ref", &t.backup, &t.old])?;
            // Checked clean above; git's own fast-forward refuses anything
            // that would overwrite a file.
            git(os, Path::new(path), ["merge", "--ff-only", "-q", &t.new]).map_err(|e| {
                failed(format!(
                    "could not fast-forward {target} in {path}; nothing was moved ({e})"
                ))
            })?;
        }
        TargetMove::RefOnly => {
            // The backup and the move in one ref transaction: both or neither.
            let script = format!(
                "create {} {}\nupdate {} {} {}\n",
                t.backup, t.old, t.refname, t.new, t.old
            );
            let args: Vec<std::ffi::OsString> = ["update-ref", "-m", "hangar finish", "--stdin"]
                .iter()
                .map(Into::into)
                .collect();
            let out = os
                .run_git(dir, &args, &[], Some(script.as_bytes()))
                .map_err(GitError::NoGit)?;
            if !out.success() {
                return Err(failed(format!(
                    "could not move {target}; nothing was moved: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
    }
    let mut moved = vec![t.clone()];
    if let Some(b) = branch {
        git(os, dir, ["update-ref", &b.backup, &b.old])?;
        match git(os, dir, ["reset", "--keep", "-q", &b.new]) {
            Ok(_) => moved.push(b.clone()),
            Err(e) => {
                // The work is landed; the branch keeps its own commits.
                tracing::warn!("could not move {} to the landed commit: {e}", b.refname);
                let _ = git(os, dir, ["update-ref", "-d", &b.backup, &b.old]);
            }
        }
    }
    Ok(moved)
}

/// `git add -A` and `git commit` in the agent's own checkout (`--commit`).
fn commit_in_place(os: &dyn Git, dir: &Path, message: &str) -> Result<String, ApiError> {
    git(os, dir, ["add", "-A", "--", ":/"])?;
    git(os, dir, ["commit", "-q", "--no-verify", "-m", message]).map_err(|e| {
        failed(format!(
            "{e}; if git says it needs your identity, set user.name and user.email"
        ))
    })?;
    Ok(git_line(os, dir, &["rev-parse", "HEAD"])?)
}

/// Replay the commits `onto..tip` on `onto` from objects alone (no
/// checkout), keeping each commit's author and message.
fn replay(os: &dyn Git, dir: &Path, onto: &str, tip: &str) -> Result<String, ApiError> {
    let list = git_line(
        os,
        dir,
        &[
            "rev-list",
            "--reverse",
            "--parents",
            &format!("{onto}..{tip}"),
        ],
    )?;
    let mut cur = onto.to_owned();
    for line in list.lines().filter(|l| !l.is_empty()) {
        let ids: Vec<&str> = line.split(' ').collect();
        if ids.len() != 2 {
            return Err(refused_merge_commit(ids[0]));
        }
        let (c, parent) = (ids[0], ids[1]);
        let tree = merge_tree(os, dir, &[&format!("--merge-base={parent}"), &cur, c])?
            .map_err(|files| refused(Refusal::Conflicts { files }))?;
        let info = git(
            os,
            dir,
            [
                "log",
                "-1",
                "--format=%an%x00%ae%x00%ad%x00%B",
                "--date=raw",
                c,
            ],
        )?;
        let info = String::from_utf8_lossy(&info).into_owned();
        let mut parts = info.splitn(4, '\0');
        let (name, email, date, msg) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default().trim_end(),
        );
        let env: [(&str, &OsStr); 3] = [
            ("GIT_AUTHOR_NAME", OsStr::new(name)),
            ("GIT_AUTHOR_EMAIL", OsStr::new(email)),
            ("GIT_AUTHOR_DATE", OsStr::new(date)),
        ];
        cur = commit_tree(os, dir, &tree, &[&cur], msg, &env)?;
    }
    Ok(cur)
}

fn refused_merge_commit(c: &str) -> ApiError {
    ApiError {
        code: codes::FAILED,
        message: format!(
            "finish refused: the branch holds a merge commit ({}); --rebase replays plain commits only, use --merge or --squash",
            &c[..c.len().min(12)]
        ),
        detail: json!({"refused": "merge-commit", "files": []}),
    }
}
