//! Requests about reviewing and landing a session's work: `diff`,
//! `review` (comments typed into the agent) and `finish`.

use std::path::PathBuf;
use std::sync::Arc;

use hangar_core::SessionId;
use hangar_core::review::{ReviewComment, diff_base_candidates, review_prompt};
use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply::{DiffPage, Finished, Resolving, Reviewed, Sent};
use serde_json::Value;

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::Caller;
use crate::review::{diff, git, interrupted};
use crate::sessions::RunState;
use crate::worktree::blocking;

/// `hangar diff`: one page of what the session changed since its base.
pub async fn diff(daemon: &Arc<Daemon>, req: msg::Diff) -> Result<DiffPage, ApiError> {
    let id = daemon.sessions.resolve(&req.session)?;
    let meta = daemon
        .sessions
        .meta(&id)
        .ok_or_else(|| ApiError::new(codes::NOT_FOUND, format!("no session {}", id.short())))?;
    let scratch = daemon.paths.home.join("scratch");
    let os = daemon.os.clone();
    blocking(move || {
        let os = os.as_ref();
        let dir = PathBuf::from(&meta.cwd);
        let mut ask = diff::DiffAsk {
            dir,
            bases: Vec::new(),
            stat: req.stat,
            from_file: req.from_file,
            tree: req.tree,
            merge_base: req.merge_base,
            scratch,
            without_files: req.without_files,
        };
        if let Some(page) = diff::kept_page(&ask) {
            return Ok(page);
        }
        let current = git::current_branch(os, &ask.dir);
        ask.bases = diff_base_candidates(
            req.base.as_deref(),
            meta.git_base.as_deref(),
            meta.worktree.as_ref().map(|w| w.base.as_str()),
            current.as_deref(),
        );
        diff::diff(os, ask)
    })
    .await?
}

/// Type `text` into the agent the way `hangar send` does: woken first,
/// refused while it is mid-turn or waiting for the person.
pub(crate) async fn prompt_agent(
    daemon: &Arc<Daemon>,
    id: &SessionId,
    text: &str,
) -> Result<Sent, ApiError> {
    let busy = || {
        ApiError::new(
            codes::FAILED,
            format!(
                "the agent of {} is mid-turn (or waiting for you); nothing was sent. Wait for it (`hangar wait {}`) and try again",
                id.short(),
                id.short()
            ),
        )
    };
    if daemon.monitor.is_busy(id) {
        return Err(busy());
    }
    // Held from the budget until the prompt is typed.
    let (state, _held) = daemon.governor.wake_to_prompt(id, Caller::Send).await?;
    if let RunState::Failed(reason) = state {
        return Err(ApiError::new(codes::FAILED, reason));
    }
    if daemon.monitor.is_busy(id) {
        return Err(busy());
    }
    daemon.delivery.send(id, text, true).await
}

/// `hangar review ID --comment FILE:LINE TEXT`: every comment in one prompt.
pub async fn review(daemon: &Arc<Daemon>, req: msg::Review) -> Result<Reviewed, ApiError> {
    let id = daemon.sessions.resolve(&req.session)?;
    let comments: Vec<ReviewComment> = req
        .comments
        .into_iter()
        .filter(|c| !c.text.trim().is_empty())
        .collect();
    if comments.is_empty() {
        return Err(ApiError::invalid(
            "no comments: pass --comment FILE:LINE TEXT at least once",
        ));
    }
    let prompt = review_prompt(&comments);
    let sent = prompt_agent(daemon, &id, &prompt).await?;
    Ok(Reviewed {
        sent,
        prompt,
        comments: comments.len(),
    })
}

/// The agent's last answer, for a commit message or a pull request's body;
/// `None` when its transcript cannot be read (a shell, a fresh session).
async fn last_summary(daemon: &Arc<Daemon>, id: &SessionId) -> Option<String> {
    let v = super::identity::transcript(
        daemon,
        msg::Transcript {
            session: id.to_string(),
            tail: Some(10),
        },
    )
    .await
    .ok()?;
    v.messages
        .iter()
        .rev()
        .find(|m| m.role == "assistant")
        .map(|m| m.text.chars().take(4000).collect())
}

/// `hangar finish`: check, then land (or open a pull request, or with
/// `resolve` ask the agent to rebase); after landing, close the session
/// and remove its worktree unless it still holds work.
pub async fn finish(daemon: &Arc<Daemon>, req: msg::Finish) -> Result<Finished, ApiError> {
    use crate::review::finish::{FinishAsk, finish as land};
    use hangar_core::review::Strategy;
    let id = daemon.sessions.resolve(&req.session)?;
    let meta = daemon
        .sessions
        .meta(&id)
        .ok_or_else(|| ApiError::new(codes::NOT_FOUND, format!("no session {}", id.short())))?;
    let strategy = match req.strategy.as_deref() {
        None => Strategy::Merge,
        Some(s) => Strategy::from_name(s).ok_or_else(|| {
            ApiError::invalid(format!(
                "strategy must be merge, squash or rebase, not {s:?}"
            ))
        })?,
    };
    let summary = last_summary(daemon, &id).await;
    let ask = FinishAsk {
        session: id.to_string(),
        dir: PathBuf::from(&meta.cwd),
        own_worktree: meta
            .worktree
            .as_ref()
            .is_some_and(|w| w.created_by_hangar && w.path == meta.cwd),
        base_branch: meta
            .git_base
            .as_ref()
            .and_then(|b| b.branch.clone())
            .or_else(|| meta.worktree.as_ref().map(|w| w.base.clone())),
        strategy,
        into: req.into.clone(),
        commit: req.commit,
        pr: req.pr,
        message: req.message.clone(),
        dry_run: req.dry_run || req.resolve,
        agent_busy: daemon.monitor.is_busy(&id),
        title: meta.title.clone(),
        summary,
        scratch: daemon.paths.home.join("scratch"),
        record: interrupted::folder(&daemon.paths.home).join(format!(
            "{}-{}.json",
            id,
            daemon.os.now_ms()
        )),
        now_ms: daemon.os.now_ms(),
    };
    let os = daemon.os.clone();
    let done = blocking(move || land(os.as_ref(), ask)).await?;
    if req.resolve {
        return resolve(daemon, &id, done, req.into.clone()).await;
    }
    let done = done?;
    let Finished::Landed(mut reply) = done.reply else {
        return Ok(done.reply);
    };
    daemon.journal.record(crate::journal::Event::Finish {
        session: id.to_string(),
        strategy: strategy.name().to_owned(),
        refs: serde_json::to_value(&done.moved).unwrap_or(Value::Null),
    });
    if req.keep_session {
        reply.closed = false;
        return Ok(Finished::Landed(reply));
    }
    let cascade = daemon.sessions.close_cascade(&id.to_string())?;
    if cascade.len() > 1 {
        reply.closed = false;
        reply.note = Some(format!(
            "the session was kept: closing it would also close {} linked session(s); `hangar close {} --yes` closes them all",
            cascade.len() - 1,
            id.short()
        ));
        return Ok(Finished::Landed(reply));
    }
    let (kept, removed) = daemon
        .governor
        .close_sessions(
            &cascade,
            req.delete_branch,
            crate::journal::CloseCause::User,
            &cascade,
        )
        .await?;
    reply.closed = true;
    reply.kept_worktrees = Some(kept);
    reply.removed_worktrees = Some(removed);
    Ok(Finished::Landed(reply))
}

/// Settle every finish a killed daemon cut off: at start, before any
/// request is served (so never beside a finish of this daemon's own).
pub async fn settle_interrupted(daemon: &Arc<Daemon>) {
    let os = daemon.os.clone();
    let folder = interrupted::folder(&daemon.paths.home);
    match blocking(move || interrupted::settle_all(os.as_ref(), &folder)).await {
        Ok(settled) => journal_interrupted(daemon, settled),
        Err(e) => tracing::warn!("cannot settle interrupted finishes: {}", e.message),
    }
}

/// A cut-off finish whose target moved landed: journaled as every finish.
fn journal_interrupted(
    daemon: &Arc<Daemon>,
    settled: Vec<(interrupted::Record, Vec<crate::review::finish::Moved>)>,
) {
    for (record, moved) in settled {
        if moved.is_empty() {
            continue;
        }
        daemon.journal.record(crate::journal::Event::Finish {
            session: record.session,
            strategy: record.strategy,
            refs: serde_json::to_value(&moved).unwrap_or(Value::Null),
        });
    }
}

/// `finish --resolve`: the predicted conflicts go to the agent as a prompt
/// to rebase onto the target in its own worktree and resolve them.
async fn resolve(
    daemon: &Arc<Daemon>,
    id: &SessionId,
    dry: Result<crate::review::finish::Done, ApiError>,
    into: Option<String>,
) -> Result<Finished, ApiError> {
    let err = match dry {
        Ok(_) => {
            return Err(ApiError::invalid(
                "no conflicts are predicted; run finish without --resolve",
            ));
        }
        Err(e) if e.detail["refused"] == "conflicts" => e,
        Err(e) => return Err(e),
    };
    let files: Vec<String> = err.detail["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect();
    let meta = daemon
        .sessions
        .meta(id)
        .ok_or_else(|| ApiError::new(codes::NOT_FOUND, format!("no session {}", id.short())))?;
    let target = into
        .or_else(|| meta.git_base.as_ref().and_then(|b| b.branch.clone()))
        .or_else(|| meta.worktree.as_ref().map(|w| w.base.clone()))
        .unwrap_or_else(|| "the target branch".into());
    let prompt = hangar_core::review::resolve_prompt(&target, &files);
    let sent = prompt_agent(daemon, id, &prompt).await?;
    Ok(Finished::Resolving(Resolving {
        sent,
        prompt,
        conflicts: files,
    }))
}
