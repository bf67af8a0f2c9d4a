//! Requests about git worktrees: `ls` with each session's worktree state,
//! and `worktrees` (list, prune, remove).

use std::collections::BTreeMap;
use std::sync::Arc;

use hangar_core::SessionId;
use hangar_core::worktree::{CleanupDecision, WorktreeInfo, cleanup_decision};

use hangar_protocol::message as msg;
use hangar_protocol::reply::{WorktreeList, WorktreeRow};
use hangar_protocol::view::SessionView;

use crate::Daemon;
use crate::errors::ApiError;
use crate::worktree::{Record, Registry, blocking, cached_status, inspect, remove, static_view};

/// `ls` with each worktree's dirty/ahead/behind filled in. git runs only
/// for sessions with a worktree, off the state lock, at most once per
/// worktree every few seconds.
pub async fn list(daemon: &Arc<Daemon>) -> Vec<SessionView> {
    let rows = crate::handlers::sessions::list(daemon);
    let ids: Vec<(usize, SessionId)> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| (i, SessionId::from(row.id.as_str())))
        .collect();
    let found = daemon
        .sessions
        .worktrees_of(&ids.iter().map(|(_, id)| id.clone()).collect::<Vec<_>>());
    let infos: Vec<(usize, WorktreeInfo)> = ids
        .into_iter()
        .zip(found)
        .filter_map(|((i, _), info)| Some((i, info?)))
        .collect();
    if infos.is_empty() {
        return rows;
    }
    let git = daemon.os.clone();
    let states = blocking(move || {
        infos
            .into_iter()
            .map(|(i, info)| (i, static_view(&info), cached_status(git.as_ref(), &info)))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let mut rows = rows;
    for (i, mut view, state) in states {
        if view.exists {
            view.dirty = Some(state.facts.dirty_files > 0);
            view.ahead = state.ahead;
            view.behind = state.behind;
        }
        if let Some(row) = rows.get_mut(i) {
            row.worktree = Some(view);
        }
    }
    rows
}

/// `hangar worktrees [--prune]`: every worktree hangar created, with its
/// state; with `prune`, remove the clean ones whose session is gone.
pub async fn worktrees(
    daemon: &Arc<Daemon>,
    req: msg::Worktrees,
) -> Result<WorktreeList, ApiError> {
    let registry = Registry::new(&daemon.paths.home);
    let mut records = registry.load();
    let alive: BTreeMap<SessionId, String> = {
        let with_worktrees = daemon.sessions.with_worktrees();
        for meta in &with_worktrees {
            if let Some(info) = meta.worktree.as_ref().filter(|w| w.created_by_hangar) {
                records.entry(info.path.clone()).or_insert_with(|| Record {
                    session: meta.id.clone(),
                    title: meta.title.clone(),
                    worktree: (**info).clone(),
                    created_at_ms: meta.created_at_ms,
                });
            }
        }
        with_worktrees
            .iter()
            .filter_map(|m| Some((m.id.clone(), m.worktree.as_ref()?.path.clone())))
            .collect()
    };
    let home = daemon.paths.home.clone();
    let prune = req.prune;
    let git = daemon.os.clone();
    let (rows, pruned) = blocking(move || {
        let registry = Registry::new(&home);
        let mut rows = Vec::new();
        let mut pruned = Vec::new();
        for record in records.into_values() {
            let info = &record.worktree;
            let session_alive = alive.get(&record.session) == Some(&info.path);
            let state = inspect(git.as_ref(), info, true);
            let decision = cleanup_decision(info, &state.facts);
            let status = match (&decision, session_alive) {
                (CleanupDecision::AlreadyGone, _) => "missing",
                (_, true) => "in-use",
                (CleanupDecision::Keep(_), false) if state.facts.dirty_files > 0 => "dirty",
                (CleanupDecision::Keep(_), false) => "unpushed",
                _ => "clean",
            };
            let mut removed = false;
            let mut note = match &decision {
                CleanupDecision::Keep(reason) => Some(reason.clone()),
                _ => None,
            };
            if prune && !session_alive {
                match decision {
                    CleanupDecision::Remove => match remove(git.as_ref(), info, false) {
                        Ok(_) => {
                            registry.forget(&info.path);
                            removed = true;
                        }
                        Err(e) => note = Some(format!("git could not remove it: {e}")),
                    },
                    // Deleted by hand and its session is gone: only the
                    // record is left to drop.
                    CleanupDecision::AlreadyGone => registry.forget(&info.path),
                    _ => {}
                }
                if removed {
                    pruned.push(info.path.clone());
                }
            }
            let dirty = state.facts.exists.then_some(state.facts.dirty_files > 0);
            rows.push(WorktreeRow {
                path: info.path.clone(),
                branch: info.branch.clone(),
                base: info.base.clone(),
                repo_root: info.repo_root.clone(),
                session: record.session.to_string(),
                title: record.title.clone(),
                session_alive,
                state: status.to_owned(),
                exists: state.facts.exists,
                dirty,
                ahead: state.ahead,
                behind: state.behind,
                unpushed: state.facts.exists.then_some(state.facts.unpushed),
                note,
                removed,
            });
        }
        (rows, pruned)
    })
    .await?;
    Ok(WorktreeList {
        worktrees: rows,
        removed: pruned,
    })
}
