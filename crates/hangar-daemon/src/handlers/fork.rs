//! `hangar fork` (issue 30): a new session carrying on another session's
//! conversation, the original untouched.
//!
//! Same CLI: the new session's first start is the CLI's own fork of the
//! parent's conversation (`hangar_providers::fork`), after which it resumes
//! its own. Another CLI (`--provider`): a fresh agent given a handoff prompt
//! built from the parent's transcript and diff (`hangar_core::fork`). With
//! `--worktree` the fork works in a new worktree holding the parent's
//! uncommitted state (`review::fork_state`); the parent's folder, index and
//! conversation are only ever read.

use std::path::PathBuf;

use hangar_core::fork::{HandoffFacts, HandoffMessage, handoff_prompt, plan_fork};
use hangar_core::review::diff_base_candidates;
use hangar_core::{Provider, SessionId};
use hangar_protocol::message as msg;
use hangar_protocol::reply::{ForkWorktree, Forked};

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::Caller;
use crate::review::{diff, git};
use crate::sessions::{Added, NewPlace, NewSession, RunState};
use crate::worktree::blocking;
use hangar_providers::transcript::{discovery, messages};

/// How many of the parent's messages a handoff reads (from its end).
const HANDOFF_READ: usize = 400;

pub async fn fork(daemon: &Daemon, req: msg::Fork) -> Result<Forked, ApiError> {
    let config = daemon.config.snapshot();
    let (parent_id, parent) = daemon.sessions.resolve_meta(&req.session)?;
    let target = match req.provider.as_deref().map(str::trim) {
        None | Some("") => parent.provider.clone(),
        Some(p) => Provider::from_name(p),
    };
    // A fork keeps its parent's walls: a sandboxed session's fork is
    // sandboxed, an engine session's runs on the same engine.
    if let Some(engine) = &parent.engine {
        daemon.engines.check_new(&engine.name).map_err(|e| {
            ApiError::invalid(format!(
                "session {} runs on engine {:?}, which its fork cannot use: {}",
                parent_id.short(),
                engine.name,
                e.0
            ))
        })?;
    }
    let mut origin = plan_fork(&parent, &target, daemon.os.now_ms())
        .map_err(|e| ApiError::invalid(e.to_string()))?;
    if let Some(from) = origin.provider_session_id.clone() {
        // A CLI that takes hangar's id (claude) knows it before the
        // conversation exists: a fork of one that never had a turn would
        // find nothing to fork.
        let parent_meta = parent.clone();
        let exists = blocking(move || {
            let root = discovery::session_transcript_root(&parent_meta, &discovery::env_var);
            hangar_providers::adapter::adapter(&parent_meta.provider).conversation_exists(
                root.as_deref(),
                &parent_meta.cwd,
                &from,
            )
        })
        .await?;
        if !exists {
            return Err(ApiError::invalid(format!(
                "session {} has no conversation to fork yet ({} writes it with the first turn); \
                 send it a prompt first",
                parent_id.short(),
                parent.provider.name()
            )));
        }
    }
    let direction = super::sessions::parse_direction(req.direction.as_deref())?;
    let parent_view = daemon
        .sessions
        .view(&parent_id)
        .ok_or_else(|| ApiError::not_found(format!("no session {}", parent_id.short())))?;
    let title = req
        .title
        .clone()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| format!("{} (fork)", parent.title));
    // The worktree (when asked for) is made before the session: a failed
    // save drops it again (`PreparedWorktree`).
    let prepared = if req.worktree || req.worktree_branch.is_some() {
        let base = parent
            .worktree
            .as_ref()
            .map(|w| w.base.clone())
            .or_else(|| parent.git_base.as_ref().and_then(|b| b.branch.clone()));
        Some(
            daemon
                .worktrees
                .prepare_fork_worktree(
                    &parent.cwd,
                    req.worktree_branch.clone(),
                    &title,
                    base,
                    &config.worktree,
                )
                .await?,
        )
    } else {
        None
    };
    if origin.handoff {
        origin.pending_prompt = Some(handoff_for(daemon, &parent_id, &parent).await);
    }
    // A walled parent's CLI keeps its conversation in its own state folder:
    // the fork's gets a copy (made before the fork exists, moved to its
    // folder once it does), so the fork's CLI finds the conversation to fork
    // from and never writes the parent's. A fork into another CLI starts
    // fresh (its handoff prompt carries the conversation).
    let staged = match parent.sandbox.as_deref() {
        Some(dir) if !origin.handoff => {
            // Dropped on any failure below, which removes the copy.
            let staged = StagedState(daemon.sandbox.staging_folder());
            let (from, to, provider) = (
                PathBuf::from(dir),
                staged.0.clone(),
                parent.provider.clone(),
            );
            blocking(move || crate::sandbox::copy_state(&provider, &from, &to))
                .await?
                .map_err(|why| {
                    ApiError::internal(format!(
                        "cannot copy session {}'s CLI state for its fork: {why}",
                        parent_id.short()
                    ))
                })?;
            Some(staged)
        }
        _ => None,
    };
    let cwd = prepared
        .as_ref()
        .map(|p| p.info.path.clone())
        .unwrap_or_else(|| parent.cwd.clone());
    if !std::path::Path::new(&cwd).is_dir() {
        return Err(ApiError::invalid(format!(
            "the parent's folder {cwd} does not exist; `hangar fork --worktree BRANCH` needs it too"
        )));
    }
    let split = (!req.parked && parent_view.placement == "pane").then_some(parent_id.to_string());
    let new = NewSession {
        place: NewPlace {
            tab: parent_view.tab.as_deref(),
            cwd: Some(&cwd),
            fallback_cwd: None,
        },
        provider: target.clone(),
        title: Some(&title),
        now_ms: daemon.os.now_ms(),
        capture: parent.capture,
        mcp: parent.mcp,
        parked: req.parked,
        split: split.as_deref().map(|s| (s, direction)),
    };
    let git_base = parent.git_base.clone();
    let handoff = origin.handoff;
    let walled = parent.sandbox.is_some();
    let engine = parent.engine.clone();
    let finish = |meta: &mut hangar_core::SessionMeta| {
        if let Some(p) = &prepared {
            p.apply(meta);
        }
        if walled {
            meta.sandbox = Some(daemon.sandbox.folder_for(&meta.id));
        }
        meta.engine = engine.clone();
        // The fork's work is compared with what its parent's was.
        meta.git_base = git_base.clone();
        meta.relationships.linked_parent = None;
        meta.forked_from = Some(Box::new(origin.clone()));
    };
    let id = match daemon.sessions.add_session(&new, &cwd, finish)? {
        Added::Session(id) => id,
        Added::Recheck(_) => {
            return Err(ApiError::internal(
                "the fork's folder changed while it was made; try again",
            ));
        }
    };
    if let Some(staged) = staged {
        let own = PathBuf::from(daemon.sandbox.folder_for(&id));
        staged.move_to(&own).map_err(|why| {
            ApiError::internal(format!(
                "fork {} was made but its CLI state could not be put in place: {why}; \
                 close it with `hangar close {}`",
                id.short(),
                id.short()
            ))
        })?;
    }
    let copied = prepared.as_ref().map(|p| p.info.clone());
    if let Some(failed) = daemon.worktrees.adopt_worktree(&id, prepared) {
        return Ok(reply(&id, &parent_id, failed.name(), handoff, copied));
    }
    let state = if req.parked {
        RunState::Hibernated
    } else {
        daemon.governor.wake_as(&id, Caller::New).await?
    };
    Ok(reply(&id, &parent_id, state.name(), handoff, copied))
}

/// A fork's copy of its parent's state, before it is moved to the fork's
/// own folder; removed should the fork not be made.
struct StagedState(PathBuf);

impl StagedState {
    fn move_to(self, own: &std::path::Path) -> Result<(), String> {
        let moved = std::fs::rename(&self.0, own)
            .map_err(|e| format!("cannot move {} to {}: {e}", self.0.display(), own.display()));
        // Moved, its drop finds nothing left to remove.
        drop(self);
        moved
    }
}

impl Drop for StagedState {
    fn drop(&mut self) {
        if self.0.exists()
            && let Err(e) = std::fs::remove_dir_all(&self.0)
        {
            tracing::warn!(
                "cannot remove a fork's unused state {}: {e}",
                self.0.display()
            );
        }
    }
}

fn reply(
    id: &SessionId,
    parent: &SessionId,
    state: &str,
    handoff: bool,
    worktree: Option<hangar_core::worktree::WorktreeInfo>,
) -> Forked {
    Forked {
        id: id.to_string(),
        forked_from: parent.to_string(),
        handoff,
        state: state.to_owned(),
        worktree: worktree.map(|w| ForkWorktree {
            path: w.path,
            branch: w.branch,
            base: w.base,
        }),
    }
}

/// The handoff prompt for a fork of `parent` into another CLI: its
/// transcript's task and last messages, and the files it changed so far.
/// What cannot be read is left out (a shell has no transcript, a folder
/// outside git no diff), never an error: the prompt still says so.
async fn handoff_for(
    daemon: &Daemon,
    parent_id: &SessionId,
    parent: &hangar_core::SessionMeta,
) -> String {
    let meta = parent.clone();
    let scratch = daemon.paths.home.join("scratch");
    let os = daemon.os.clone();
    let read = blocking(move || {
        let messages: Vec<HandoffMessage> =
            discovery::session_transcript_root(&meta, &discovery::env_var)
                .zip(meta.durable_provider_id())
                .and_then(|(root, psid)| {
                    discovery::find_transcript(&meta.provider, &root, &meta.cwd, psid)
                })
                .and_then(|path| messages::read_tail(&meta.provider, &path, HANDOFF_READ).ok())
                .unwrap_or_default()
                .into_iter()
                .map(|m| HandoffMessage {
                    role: m.role,
                    text: m.text,
                })
                .collect();
        let dir = PathBuf::from(&meta.cwd);
        let current = git::current_branch(os.as_ref(), &dir);
        let bases = diff_base_candidates(
            None,
            meta.git_base.as_deref(),
            meta.worktree.as_ref().map(|w| w.base.as_str()),
            current.as_deref(),
        );
        let files: Vec<String> = diff::diff(
            os.as_ref(),
            diff::DiffAsk {
                dir,
                bases,
                stat: true,
                from_file: 0,
                tree: None,
                merge_base: None,
                scratch,
                without_files: false,
            },
        )
        .map(|page| page.files)
        // A folder outside git, or without commits, has no diff to name.
        .unwrap_or_else(|e| {
            tracing::debug!("no diff for the handoff of {}: {}", meta.id, e.message);
            Vec::new()
        })
        .iter()
        .map(|f| {
            if f.binary {
                format!("{} (binary, {})", f.path, f.status)
            } else {
                format!(
                    "{} ({} +{} -{})",
                    f.path, f.status, f.additions, f.deletions
                )
            }
        })
        .collect();
        (messages, files)
    })
    .await;
    let (messages, files) = match read {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(
                "cannot read {parent_id}'s transcript for a handoff: {}",
                e.message
            );
            (Vec::new(), Vec::new())
        }
    };
    handoff_prompt(&HandoffFacts {
        parent: parent_id.short(),
        parent_provider: parent.provider.name(),
        parent_title: &parent.title,
        messages: &messages,
        changed_files: &files,
    })
}
