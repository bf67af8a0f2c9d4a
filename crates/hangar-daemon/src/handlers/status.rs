//! What the daemon reports about itself and a session's screen: `status`
//! (counts, restore progress, queue, budget, notices) and `screen` (the live
//! terminal, or the last one kept).

use hangar_protocol::message as msg;
use hangar_protocol::reply::{HistoryLines, ScreenText};
use hangar_protocol::view::StatusView;

use crate::Daemon;
use crate::errors::ApiError;
use crate::sessions::ScreenSource;

pub fn status(daemon: &Daemon) -> StatusView {
    let config = daemon.config.snapshot();
    let memory = daemon.governor.fleet_memory();
    let last_check = daemon.governor.budget_status();
    let facts = daemon.sessions.status_facts();
    hangar_protocol::view::StatusView {
        daemon: hangar_protocol::view::DaemonView {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            home: daemon.paths.home.display().to_string(),
        },
        sessions: facts.counts,
        restore: facts.restore,
        dangerous: facts.dangerous,
        notices: facts.notices,
        budget: hangar_protocol::view::BudgetView {
            max_live: config.governor.max_live,
            max_memory_bytes: config.governor.budget().max_memory_bytes,
            live: daemon.sessions.budget_live_count(),
            memory_bytes: memory.proportional,
            resident_bytes: memory.resident,
            waiting_for_memory: daemon.governor.waiting_for_memory(),
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
        failed: facts.failed,
        limited: daemon
            .usage
            .limited_sessions()
            .into_iter()
            .map(|(id, limit)| hangar_protocol::view::LimitedView {
                title: daemon
                    .sessions
                    .meta(&hangar_core::SessionId::from(id.as_str()))
                    .map(|m| m.title)
                    .unwrap_or_default(),
                id,
                limit,
            })
            .collect(),
    }
}

/// The most lines one `history` reply carries: a page fits one frame
/// comfortably (lines of a wide screen with colours are a few hundred bytes).
const MAX_HISTORY_PAGE: usize = 5_000;

/// A page of a session's history by line number, live or saved (no wake).
pub fn history_page(daemon: &Daemon, req: &msg::HistoryPage) -> Result<HistoryLines, ApiError> {
    let model = daemon.config.snapshot().terminal.model();
    let lines = (req.lines as usize).min(MAX_HISTORY_PAGE);
    let (_, source) = daemon.sessions.screen_source(&req.session)?;
    let (page, source) = match source {
        ScreenSource::Live(l) => (l.history_page(req.before, lines), "live"),
        ScreenSource::Saved(saved) => {
            let mut t = hangar_terminal::Terminal::restore(&saved, model);
            (t.history_page(req.before, lines), "saved")
        }
    };
    Ok(HistoryLines {
        first: page.first,
        end: page.end,
        start: page.start,
        lines: page.lines,
        source: source.to_owned(),
    })
}

pub fn screen(
    daemon: &Daemon,
    session: &str,
    scrollback: Option<u32>,
) -> Result<ScreenText, ApiError> {
    let model = daemon.config.snapshot().terminal.model();
    let (id, source) = daemon.sessions.screen_source(session)?;
    let lines = scrollback.map(|n| n as usize);
    let (text, history, source) = match source {
        ScreenSource::Live(l) => (l.text(), lines.map(|n| l.scrollback(n)), "live"),
        ScreenSource::Saved(saved) => {
            let mut t = hangar_terminal::Terminal::restore(&saved, model);
            (t.screen_text(), lines.map(|n| t.scrollback(n)), "saved")
        }
    };
    Ok(ScreenText {
        id: id.to_string(),
        screen: text,
        source: source.to_owned(),
        history,
    })
}
