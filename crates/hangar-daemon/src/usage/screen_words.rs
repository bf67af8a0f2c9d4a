//! Limits read from an agent's screen: the words a CLI prints when its
//! provider refused it for a usage limit (`You've hit your limit · resets
//! 4pm (Europe/Berlin)`, `5-hour limit reached ∙ resets 5:30am`, Codex's
//! `... try again at 3:28 PM.`), for the requests the recording proxy did
//! not see (capture off, a bypassed host).
//!
//! The least trusted source: only the bottom lines of an agent's screen are
//! read, only when a turn began or ended and only between turns, and a line already acted on is never acted on
//! again while it stays on the screen (a continued limit's words stay
//! visible; they must not make the session limited a second time). The
//! rules are hangar-core's `parse_limit_text` and `resolve_reset`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hangar_core::usage_limits::{self, SessionLimit};

use super::Ledger;
use crate::activity::Monitor;
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;

/// How long after a turn ended the screens are read.
const SETTLE: Duration = Duration::from_millis(300);
/// The transcripts are read again after this, for lines written late.
const AGAIN: Duration = Duration::from_secs(1);
/// How many non-empty lines at the bottom of a screen are read.
const BOTTOM_LINES: usize = 8;

pub struct ScreenWords {
    pub ledger: Arc<Ledger>,
    pub sessions: Arc<Sessions>,
    pub monitor: Arc<Monitor>,
    pub shutdown: Shutdown,
    pub transcripts: Arc<super::transcripts::Transcripts>,
    /// The limit line last acted on, per session, while it is on screen.
    pub seen: Mutex<HashMap<String, String>>,
}

impl ScreenWords {
    /// Looks after each committed activity change (the words come at the
    /// end of a turn), once the screen has settled; never on a timer.
    /// The transcripts are read at the same moments (`transcripts.rs`).
    pub async fn run(self: Arc<Self>) {
        let mut down = self.shutdown.watch();
        let mut changes = self.ledger.activity_changes();
        loop {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = down.wait_for(|s| *s) => return,
            }
            tokio::time::sleep(SETTLE).await;
            self.look();
            for pause in [Duration::ZERO, AGAIN] {
                tokio::time::sleep(pause).await;
                let transcripts = self.transcripts.clone();
                if let Err(e) = tokio::task::spawn_blocking(move || transcripts.look()).await {
                    tracing::warn!("usage: transcript look failed: {e}");
                }
            }
        }
    }

    fn look(&self) {
        let now = self.ledger.now();
        for candidate in self.sessions.budget_candidates() {
            let id = candidate.id;
            if self.monitor.is_busy(&id) {
                continue;
            }
            let Some(live) = self.sessions.process(&id) else {
                continue;
            };
            let text = live.text();
            let found = text
                .lines()
                .rev()
                .filter(|l| !l.trim().is_empty())
                .take(BOTTOM_LINES)
                .find_map(|l| usage_limits::parse_limit_text(l).map(|r| (l.trim().to_owned(), r)));
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            let Some((line, reset)) = found else {
                seen.remove(id.as_str());
                continue;
            };
            if seen.get(id.as_str()) == Some(&line) {
                continue;
            }
            seen.insert(id.to_string(), line);
            drop(seen);
            let resets_at =
                usage_limits::resolve_reset(&reset, now, &|z| super::zone_offset(z, now));
            self.ledger.limited(
                &id,
                SessionLimit {
                    kind: "rate_limit".to_owned(),
                    resets_at,
                    source: "screen".to_owned(),
                    since_ms: now,
                    continue_at: None,
                    stopped_mid_task: true,
                    continued: false,
                    account: None,
                },
            );
        }
    }
}
