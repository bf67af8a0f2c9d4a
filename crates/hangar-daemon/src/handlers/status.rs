//! What the daemon reports about itself and a session's screen: `status`
//! (counts, restore progress, queue, budget, notices) and `screen` (the live
//! terminal, or the last one kept).

use hangar_protocol::message as msg;
use serde_json::{Value, json};

use crate::Daemon;
use crate::errors::ApiError;
use crate::sessions::RunState;

pub fn status(daemon: &Daemon) -> Value {
    let config = daemon.config.snapshot();
    let memory_bytes = daemon.governor.fleet_memory();
    let last_check = daemon.governor.budget_status();
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
                max_live: config.governor.max_live,
                max_memory_bytes: config.governor.budget().max_memory_bytes,
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
                memory_bytes,
                over_budget: last_check.over_budget,
                reason: last_check.reason,
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

/// The most lines one `history` reply carries: a page fits one frame
/// comfortably (lines of a wide screen with colours are a few hundred bytes).
const MAX_HISTORY_PAGE: usize = 5_000;

/// A page of a session's history by line number, live or saved (no wake).
pub fn history_page(daemon: &Daemon, req: &msg::HistoryPage) -> Result<Value, ApiError> {
    let model = daemon.config.snapshot().terminal.model();
    let lines = (req.lines as usize).min(MAX_HISTORY_PAGE);
    daemon.sessions.read(|st| {
        let id = st.resolve_session(&req.session)?;
        let live = st.runtimes.get(&id).and_then(|r| r.proc.clone());
        let (page, source) = match live {
            Some(l) => (l.history_page(req.before, lines), "live"),
            None => {
                let saved = st.store.load_screen(&id)?.unwrap_or_default();
                let mut t = hangar_terminal::Terminal::restore(&saved, model);
                (t.history_page(req.before, lines), "saved")
            }
        };
        Ok(json!({
            "first": page.first,
            "end": page.end,
            "start": page.start,
            "lines": page.lines,
            "source": source,
        }))
    })
}

pub fn screen(daemon: &Daemon, session: &str, scrollback: Option<u32>) -> Result<Value, ApiError> {
    let model = daemon.config.snapshot().terminal.model();
    daemon.sessions.read(|st| {
        let id = st.resolve_session(session)?;
        let live = st.runtimes.get(&id).and_then(|r| r.proc.clone());
        let lines = scrollback.map(|n| n as usize);
        let (text, history, source) = match live {
            Some(l) => (l.text(), lines.map(|n| l.scrollback(n)), "live"),
            None => {
                let saved = st.store.load_screen(&id)?.unwrap_or_default();
                let mut t = hangar_terminal::Terminal::restore(&saved, model);
                (t.screen_text(), lines.map(|n| t.scrollback(n)), "saved")
            }
        };
        let mut reply = json!({"id": id.to_string(), "screen": text, "source": source});
        if let Some(history) = history {
            reply["history"] = json!(history);
        }
        Ok(reply)
    })
}
