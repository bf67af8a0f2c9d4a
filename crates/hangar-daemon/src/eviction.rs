//! Eviction of stale parked records and closing of idle agents.
//!
//! Evicting removes a parked record and its metadata, never the provider's
//! transcripts: the printed (and `evicted.jsonl`-recorded) resume command is
//! how the conversation comes back. Closing idle agents re-checks each one
//! right before closing it and skips any that became busy meanwhile.

use std::io::Write;
use std::sync::Arc;

use hangar_core::governor::stale_parked;
use hangar_core::{Provider, SessionId, SessionMeta};
use hangar_protocol::message::codes;
use serde_json::{Value, json};

use crate::Daemon;
use crate::journal::{CloseCause, Event};
use crate::state::{ApiError, RunState};

/// The shell command that resumes a session's conversation outside hangar.
pub fn resume_command(meta: &SessionMeta) -> String {
    let cwd = shell_quote(&meta.cwd);
    let id = meta.durable_provider_id();
    let cmd = match (&meta.provider, id) {
        (Provider::Claude, Some(id)) => format!("claude --resume {}", shell_quote(id)),
        (Provider::Codex, Some(id)) => format!("codex resume {}", shell_quote(id)),
        (Provider::Opencode, Some(id)) => format!("opencode --session {}", shell_quote(id)),
        (p, _) if p.is_agent() => p.name().to_owned(),
        (Provider::Shell, _) => return format!("cd {cwd}"),
        (p, _) => p.name().to_owned(),
    };
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

impl Daemon {
    /// Remove parked records untouched for longer than `older_than_ms`.
    pub async fn evict_parked(
        self: &Arc<Self>,
        older_than_ms: u64,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let now = crate::now_ms();
        let stale: Vec<(SessionId, SessionMeta)> = {
            let st = self.lock();
            stale_parked(&st.ws, now, older_than_ms)
                .into_iter()
                .filter_map(|id| st.ws.sessions.get(&id).cloned().map(|m| (id, m)))
                .collect()
        };
        let evicted: Vec<Value> = stale
            .iter()
            .map(|(id, m)| json!({"id": id.to_string(), "title": m.title, "resume_command": resume_command(m)}))
            .collect();
        if !dry_run && !stale.is_empty() {
            let ids: Vec<SessionId> = stale.iter().map(|(id, _)| id.clone()).collect();
            self.stop_and_remove(&ids).await?;
            let path = self.paths.home.join("evicted.jsonl");
            let mut lines = Vec::new();
            for e in &evicted {
                let mut line = e.clone();
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
            for id in &ids {
                self.journal.record(Event::Evict {
                    session: id.to_string(),
                });
            }
        }
        Ok(json!({"evicted": evicted, "dry_run": dry_run}))
    }

    /// Stop the processes of `ids` and remove them from the model.
    pub async fn stop_and_remove(self: &Arc<Self>, ids: &[SessionId]) -> Result<(), ApiError> {
        let lives: Vec<_> = {
            let mut st = self.lock();
            ids.iter()
                .filter_map(|id| {
                    let rt = st.runtimes.get_mut(id)?;
                    let live = rt.proc.take();
                    rt.set_state(RunState::Hibernated);
                    live
                })
                .collect()
        };
        futures::future::join_all(lives.iter().map(|l| self.stop_process(l))).await;
        let mut st = self.lock();
        self.orchestration_closed(&st.ws, ids);
        st.ws.remove_sessions(ids);
        for id in ids {
            st.runtimes.remove(id);
            let _ = st.store.forget_process(id);
            self.forget_activity(id);
        }
        st.save(ids)?;
        Ok(())
    }

    fn idle_candidate(
        &self,
        id: &SessionId,
        now: u64,
        older_than_ms: u64,
        include_live: bool,
    ) -> bool {
        let st = self.lock();
        let Some(meta) = st.ws.sessions.get(id) else {
            return false;
        };
        if now.saturating_sub(meta.last_active_ms) <= older_than_ms {
            return false;
        }
        let rt = st.runtimes.get(id);
        let live = rt.is_some_and(|r| matches!(r.state, RunState::Live | RunState::Spawning));
        if live && !include_live {
            return false;
        }
        if st.ws.close_cascade(id).len() > 1 {
            return false;
        }
        drop(st);
        // Off the state lock: a hibernated session's transcript may be read.
        !self.is_busy(id)
    }

    /// Close agents inactive for longer than `older_than_ms`.
    pub async fn close_idle(
        self: &Arc<Self>,
        older_than_ms: u64,
        include_live: bool,
        yes: bool,
    ) -> Result<Value, ApiError> {
        let now = crate::now_ms();
        let candidates: Vec<SessionId> = {
            let ids: Vec<SessionId> = self.lock().ws.sessions.keys().cloned().collect();
            ids.into_iter()
                .filter(|id| self.idle_candidate(id, now, older_than_ms, include_live))
                .collect()
        };
        if !yes {
            return Err(ApiError {
                code: codes::NEEDS_CONFIRMATION,
                message: format!(
                    "{} idle session(s) would be closed; pass --yes to close them",
                    candidates.len()
                ),
                detail: json!({"would_close": candidates.iter().map(|s| s.to_string()).collect::<Vec<_>>()}),
            });
        }
        let mut closed = Vec::new();
        let mut skipped = Vec::new();
        for id in candidates {
            // Re-check right before closing: it may have become busy.
            if !self.idle_candidate(&id, crate::now_ms(), older_than_ms, include_live) {
                skipped.push(json!({"id": id.to_string(), "reason": "became active"}));
                continue;
            }
            self.stop_and_remove(std::slice::from_ref(&id)).await?;
            self.journal.record(Event::Close {
                session: id.to_string(),
                cause: CloseCause::Idle,
            });
            closed.push(id.to_string());
        }
        Ok(json!({"closed": closed, "skipped": skipped}))
    }

    pub fn resume_queue(&self) -> Value {
        let was_open = self.queue.resume();
        if was_open {
            self.journal.record(Event::BreakerReset);
        }
        json!({"breaker": "closed", "was_open": was_open})
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
