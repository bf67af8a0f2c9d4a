//! What the daemon reports about itself and a session's screen: `status`
//! (counts, restore progress, queue, budget, notices) and `screen` (the live
//! terminal, or the last one kept).

use serde_json::{Value, json};

use crate::Daemon;
use crate::errors::ApiError;
use crate::sessions::RunState;

pub fn status(daemon: &Daemon) -> Value {
    daemon.sessions.read(|st| {
        let view = hangar_protocol::view::StatusView {
            daemon: hangar_protocol::view::DaemonView {
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                home: daemon.paths.home.display().to_string(),
            },
            sessions: st.counts(),
            restore: st.restore.view(),
            dangerous: st.ws.settings.dangerous,
            notices: st.notices.clone(),
            budget: hangar_protocol::view::BudgetView {
                max_live: daemon.config.governor.max_live,
                max_memory_bytes: daemon.config.governor.budget().max_memory_bytes,
                live: st
                    .runtimes
                    .iter()
                    .filter(|(id, r)| {
                        st.ws.sessions.get(*id).is_some_and(|m| {
                            hangar_core::in_use::counts_toward_budget(
                                &m.provider,
                                r.state == RunState::Live,
                            )
                        })
                    })
                    .count(),
                memory_bytes: st.budget.memory_bytes,
                over_budget: st.budget.over_budget,
                reason: st.budget.reason.clone(),
            },
            wake_queue: {
                let q = daemon.queue.snapshot();
                hangar_protocol::view::WakeQueueView {
                    pending: q.pending,
                    running: q.running,
                    breaker: if q.breaker_open { "open" } else { "closed" }.to_owned(),
                    consecutive_auth_failures: q.consecutive_auth_failures,
                }
            },
            proxy: daemon.proxy.view(),
            failed: st.failed_views(),
        };
        serde_json::to_value(view).unwrap_or(Value::Null)
    })
}

pub fn screen(daemon: &Daemon, session: &str) -> Result<Value, ApiError> {
    daemon.sessions.read(|st| {
        let id = st.resolve_session(session)?;
        let live = st.runtimes.get(&id).and_then(|r| r.proc.clone());
        let (text, source) = match live {
            Some(l) => (l.text(), "live"),
            None => {
                let saved = st.store.load_screen(&id)?.unwrap_or_default();
                (strip_ansi(&String::from_utf8_lossy(&saved)), "saved")
            }
        };
        Ok(json!({"id": id.to_string(), "screen": text, "source": source}))
    })
}

/// Plain text of a screen saved with its escape sequences.
fn strip_ansi(s: &str) -> String {
    let mut parser = vt100::Parser::new(
        std::num::NonZeroU16::new(200).unwrap_or(std::num::NonZeroU16::MIN),
        std::num::NonZeroU16::new(400).unwrap_or(std::num::NonZeroU16::MIN),
        0,
    );
    parser.process(s.as_bytes());
    parser
        .screen()
        .contents()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_owned()
}
