//! Eviction of stale parked records and closing of idle agents.
//!
//! Evicting removes a parked record and its metadata, never the provider's
//! transcripts: the printed (and `evicted.jsonl`-recorded) resume command is
//! how the conversation comes back. Closing idle agents re-checks each one
//! right before closing it and skips any that became busy meanwhile.
//!
//! Neither ever takes a session in use (mid-turn, waiting for the person,
//! attached), nor a parent without its whole close cascade (no orphaned
//! children), and both close through the same path as `hangar close`, so
//! clean worktrees are removed and ones holding work are reported.
//!
//! These are the `Governor`'s (its loop evicts too); the requests' answers
//! are built in `handlers/fleet.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use hangar_core::in_use::{InUse, in_use_when_evicting, is_idle};
use hangar_core::{Provider, SessionId, SessionMeta};
use hangar_protocol::reply::{EvictedRow, Skipped, WorktreeKept, WorktreeRemoved};
use serde_json::json;

use crate::errors::ApiError;
use crate::governor::Governor;
use crate::journal::{CloseCause, Event};
use crate::sessions::RunState;

/// What a close of many candidates may take: whole close cascades, and the
/// candidates skipped with the reason (JSON rows for the reply).
pub struct CascadePlan {
    pub groups: Vec<Vec<SessionId>>,
    pub skipped: Vec<Skipped>,
}

/// What an evict did, or in a dry run would do: rows for the reply.
pub struct Evicted {
    pub evicted: Vec<EvictedRow>,
    pub skipped: Vec<Skipped>,
    pub kept_worktrees: Vec<WorktreeKept>,
    pub removed_worktrees: Vec<WorktreeRemoved>,
}

/// What a close of idle agents did: rows for the reply.
pub struct ClosedIdle {
    pub closed: Vec<String>,
    pub skipped: Vec<Skipped>,
    pub kept_worktrees: Vec<WorktreeKept>,
    pub removed_worktrees: Vec<WorktreeRemoved>,
}

/// The shell command that resumes a session's conversation outside hangar.
pub fn resume_command(meta: &SessionMeta) -> String {
    let cwd = shell_quote(&meta.cwd);
    let id = meta.durable_provider_id();
    if meta.provider == Provider::Shell {
        return format!("cd {cwd}");
    }
    // The CLI's own resume arguments (its adapter's), never dangerous.
    let resume = id
        .filter(|_| meta.provider.is_agent())
        .map(|id| {
            hangar_providers::adapter(&meta.provider)
                .session_args(Some(id), false, false, &String::new)
                .args
        })
        .unwrap_or_default();
    let cmd = std::iter::once(meta.provider.name().to_owned())
        .chain(resume.iter().map(|a| shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ");
    format!("cd {cwd} && {cmd}")
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-_.:@%+=,".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Governor {
    /// Remove parked records untouched for longer than `older_than_ms`.
    ///
    /// A record in use (mid-turn, waiting for the person, attached) is
    /// skipped, and so is a parent whose close would take a child that may
    /// not go: evicting takes a parent together with its whole cascade or
    /// not at all, so no child is left running as an orphan. Every skip is
    /// reported with its reason.
    pub async fn evict_parked(
        &self,
        older_than_ms: u64,
        dry_run: bool,
    ) -> Result<Evicted, ApiError> {
        let now = self.os.now_ms();
        let stale: Vec<SessionId> = self.sessions.stale_parked(now, older_than_ms);
        let plan = self.plan_whole_cascades(&stale, true);
        let mut skipped = plan.skipped;
        let mut evicted = Vec::new();
        let mut kept_worktrees = Vec::new();
        let mut removed_worktrees = Vec::new();
        for group in plan.groups {
            // Re-checked right before: a record may have been woken, attached
            // or given a turn since the plan.
            if !dry_run && let Some((id, why)) = self.first_in_use(&group, true) {
                skipped.extend(self.skip_rows(&group, &id, why));
                continue;
            }
            let rows = self.evicted_rows(&group);
            if !dry_run {
                let (kept, removed) = self
                    .close_sessions(&group, false, CloseCause::Evicted, &group)
                    .await?;
                kept_worktrees.extend(kept);
                removed_worktrees.extend(removed);
                self.record_evicted(&rows, now);
                for id in &group {
                    self.journal.record(Event::Evict {
                        session: id.to_string(),
                    });
                }
            }
            evicted.extend(rows);
        }
        Ok(Evicted {
            evicted,
            skipped,
            kept_worktrees,
            removed_worktrees,
        })
    }

    /// Split `candidates` into whole close cascades that may go (every
    /// member is a candidate and not in use) and skipped
    /// candidates with the reason. Off the state lock: reading a hibernated
    /// session's activity may read its transcript.
    fn plan_whole_cascades(&self, candidates: &[SessionId], evicting: bool) -> CascadePlan {
        let in_use: BTreeMap<SessionId, &'static str> = candidates
            .iter()
            .filter_map(|id| Some((id.clone(), self.in_use_for(id, evicting)?)))
            .collect();
        let wanted: BTreeSet<&SessionId> = candidates.iter().collect();
        let (groups, held) = self.sessions.whole_cascades(candidates, |id| {
            wanted.contains(id) && !in_use.contains_key(id)
        });
        let skipped = held
            .into_iter()
            .map(|(id, blocker)| {
                let reason = match in_use.get(&blocker) {
                    Some(why) if blocker == id => (*why).to_owned(),
                    Some(why) => format!("its linked session {} is {why}", blocker.short()),
                    None => format!(
                        "its close would also take linked session {}, which does not qualify",
                        blocker.short()
                    ),
                };
                self.skip_row(&id, reason)
            })
            .collect();
        CascadePlan { groups, skipped }
    }

    /// The first session of `ids` that is in use now, and why.
    fn first_in_use(&self, ids: &[SessionId], evicting: bool) -> Option<(SessionId, &'static str)> {
        ids.iter()
            .find_map(|id| Some((id.clone(), self.in_use_for(id, evicting)?)))
    }

    /// Whether `id` is in use. When `evicting` stale records, a hibernated
    /// record whose transcript ends with a question is not: nothing runs,
    /// and it is stale by its age (its resume command is kept). Closing
    /// idle agents counts it, since a person may still answer.
    fn in_use_for(&self, id: &SessionId, evicting: bool) -> Option<&'static str> {
        if !evicting {
            return self.in_use(id);
        }
        let running = matches!(
            self.sessions.run_state(id),
            RunState::Live | RunState::Spawning
        );
        in_use_when_evicting(self.activity.viewers(id), running, || {
            self.monitor.activity_of(id).0
        })
        .map(InUse::reason)
    }

    fn skip_row(&self, id: &SessionId, reason: String) -> Skipped {
        let title = self.sessions.meta(id).map(|m| m.title).unwrap_or_default();
        Skipped {
            id: id.to_string(),
            title,
            reason,
        }
    }

    /// A group skipped at the last moment because `busy` became `why`.
    fn skip_rows(&self, group: &[SessionId], busy: &SessionId, why: &str) -> Vec<Skipped> {
        group
            .iter()
            .map(|id| {
                let reason = if id == busy {
                    format!("became {why}")
                } else {
                    format!("its linked session {} became {why}", busy.short())
                };
                self.skip_row(id, reason)
            })
            .collect()
    }

    fn evicted_rows(&self, ids: &[SessionId]) -> Vec<EvictedRow> {
        self.sessions
            .metas(ids)
            .iter()
            .map(|m| EvictedRow {
                id: m.id.to_string(),
                title: m.title.clone(),
                resume_command: resume_command(m),
            })
            .collect()
    }

    /// Append the evicted sessions and their resume commands to
    /// `evicted.jsonl`, so the conversations can be found again.
    fn record_evicted(&self, rows: &[EvictedRow], now: u64) {
        let path = self.paths.home.join("evicted.jsonl");
        let mut lines = Vec::new();
        for e in rows {
            let mut line = json!(e);
            line["evicted_at_ms"] = json!(now);
            lines.extend(serde_json::to_vec(&line).unwrap_or_default());
            lines.push(b'\n');
        }
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(&lines));
        if let Err(e) = written {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }

    /// Stop the processes of `ids` and remove them from the model.
    pub async fn stop_and_remove(&self, ids: &[SessionId]) -> Result<(), ApiError> {
        let lives = self.sessions.take_processes(ids);
        futures::future::join_all(lives.iter().map(|l| self.spawner.stop_process(l))).await;
        let keep_ms = self.mcp.get().tombstone_keep_ms();
        let saved = self.sessions.remove_sessions(ids, |ws| {
            self.orchestration.remember_closed(ws, ids, keep_ms)
        });
        // Off the lock: removes each session's hook settings file.
        for id in ids {
            self.monitor.forget_activity(id);
        }
        saved
    }

    /// Inactive for longer than `older_than_ms` (and not live unless
    /// `include_live`). Whether it is in use is checked separately.
    fn idle_candidate(
        &self,
        id: &SessionId,
        now: u64,
        older_than_ms: u64,
        include_live: bool,
    ) -> bool {
        let Some((last_active_ms, running)) = self.sessions.last_use(id) else {
            return false;
        };
        is_idle(last_active_ms, now, older_than_ms, running, include_live)
    }

    /// The agents inactive for longer than `older_than_ms`, as whole close
    /// cascades that may go, and the ones skipped with why: what a close of
    /// idle agents would close.
    pub fn idle_plan(&self, older_than_ms: u64, include_live: bool) -> CascadePlan {
        let now = self.os.now_ms();
        let idle: Vec<SessionId> = {
            let ids: Vec<SessionId> = self.sessions.ids();
            ids.into_iter()
                .filter(|id| self.idle_candidate(id, now, older_than_ms, include_live))
                .collect()
        };
        self.plan_whole_cascades(&idle, false)
    }

    /// Close the groups of `plan` (from `idle_plan`). Like evict, a parent
    /// goes only with its whole cascade and only when all of it is idle;
    /// sessions in use (mid-turn, waiting, attached) stay.
    pub async fn close_idle(
        &self,
        plan: CascadePlan,
        older_than_ms: u64,
        include_live: bool,
    ) -> Result<ClosedIdle, ApiError> {
        let mut skipped = plan.skipped;
        let mut closed = Vec::new();
        let mut kept_worktrees = Vec::new();
        let mut removed_worktrees = Vec::new();
        for group in plan.groups {
            // Re-check right before closing: it may have become busy.
            let later = self.os.now_ms();
            if let Some(id) = group
                .iter()
                .find(|id| !self.idle_candidate(id, later, older_than_ms, include_live))
            {
                skipped.extend(self.skip_rows(&group, id, "active"));
                continue;
            }
            if let Some((id, why)) = self.first_in_use(&group, false) {
                skipped.extend(self.skip_rows(&group, &id, why));
                continue;
            }
            let (kept, removed) = self
                .close_sessions(&group, false, CloseCause::Idle, &group)
                .await?;
            kept_worktrees.extend(kept);
            removed_worktrees.extend(removed);
            closed.extend(group.iter().map(|s| s.to_string()));
        }
        Ok(ClosedIdle {
            closed,
            skipped,
            kept_worktrees,
            removed_worktrees,
        })
    }

    /// Stop every process of `ids` and remove them from the model, then
    /// remove their clean worktrees. Returns the worktrees kept (they hold
    /// work) and removed, for the reply. Every close path goes through here
    /// (close, tab close, evict, close-idle, an agent's close), so none
    /// leaves a worktree behind; each closed session is journaled with
    /// `cause` when it is one of `named`, as `cascade` otherwise.
    pub async fn close_sessions(
        &self,
        ids: &[SessionId],
        delete_branch: bool,
        cause: CloseCause,
        named: &[SessionId],
    ) -> Result<(Vec<WorktreeKept>, Vec<WorktreeRemoved>), ApiError> {
        let worktrees: Vec<_> = ids
            .iter()
            .cloned()
            .zip(self.sessions.worktrees_of(ids))
            .filter_map(|(id, w)| Some((id, w?)))
            .collect();
        let metas: Vec<_> = ids.iter().filter_map(|id| self.sessions.meta(id)).collect();
        self.stop_and_remove(ids).await?;
        // What their places made goes with them (containers and volumes).
        self.places.remove(&metas).await;
        for id in ids {
            self.journal.record(Event::Close {
                session: id.to_string(),
                cause: if named.contains(id) {
                    cause
                } else {
                    CloseCause::Cascade
                },
            });
        }
        Ok(self
            .worktrees
            .clean_up_worktrees(worktrees, delete_branch)
            .await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_commands_name_the_provider_and_its_durable_id() {
        let mut m = SessionMeta::new(SessionId::from("s"), Provider::Claude, "/tmp/my proj");
        m.provider_session = Some(hangar_core::ProviderSessionId::new(
            "abc",
            hangar_core::IdSource::Transcript,
        ));
        assert_eq!(
            resume_command(&m),
            "cd '/tmp/my proj' && claude --resume abc"
        );
        m.provider = Provider::Codex;
        assert_eq!(resume_command(&m), "cd '/tmp/my proj' && codex resume abc");
        m.provider_session = None;
        assert_eq!(resume_command(&m), "cd '/tmp/my proj' && codex");
    }
}
