//! Submitting a typed prompt and making sure the agent took it.
//!
//! A pasted prompt followed by Enter was left unsubmitted by a freshly drawn
//! claude 2 times in about 30 first sends (REAL_CLIS.md): the Enter is lost
//! and the text sits in the input box. So an Enter is never assumed to have
//! worked: after it, hangar looks for the start of a turn (the session's own
//! `UserPromptSubmit` hook, a new prompt in its transcript, a new provider id
//! after `/clear`, or the process ending on `exit`), and presses Enter again
//! a bounded number of times. A prompt that still started nothing is
//! reported as not delivered. Another Enter on an empty input box does
//! nothing in claude or codex, so a retry after a slow signal is harmless.

use std::time::Duration;

use hangar_core::{Provider, SessionId};

use crate::Daemon;
use crate::pty::LiveProcess;
use hangar_providers::transcript::turns::{self, TurnMark};

/// How long each Enter is given to show a turn start; one entry per Enter.
const ATTEMPT_WAITS: [Duration; 3] = [
    Duration::from_millis(2000),
    Duration::from_millis(3000),
    Duration::from_millis(5000),
];

/// The most the screen is waited on to show pasted text before the Enter.
const ECHO_WAIT: Duration = Duration::from_millis(1000);

const POLL: Duration = Duration::from_millis(25);

/// What came of pressing Enter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// A turn start was seen after this many Enters.
    Confirmed { enters: usize },
    /// Nothing here can see this session's turns (no transcript, no hooks):
    /// one Enter was pressed and nothing more is known.
    Unconfirmed,
    /// No turn started after every Enter: the text is most likely still in
    /// the agent's input box.
    NotDelivered { enters: usize },
}

/// The facts taken just before typing, that a turn start is compared with.
pub struct Before {
    mark: TurnMark,
    provider_id: Option<String>,
    since_ms: u64,
}

impl Daemon {
    /// Whether a prompt typed into `id` now should start a turn that can be
    /// watched for: a claude or codex session that is not mid-turn or
    /// waiting on the person (text typed then answers a question or is
    /// queued, and starts no turn of its own).
    pub(crate) fn expects_turn(&self, id: &SessionId) -> bool {
        let provider = self.sessions.provider_of(id);
        if !provider.as_ref().is_some_and(turns::is_readable_provider) {
            return false;
        }
        !self.is_busy(id)
    }

    /// The facts before a prompt is typed into `id`.
    pub(crate) async fn before_prompt(&self, id: &SessionId) -> Option<Before> {
        let meta = self.sessions.meta(id)?;
        let provider_id = meta.durable_provider_id().map(str::to_owned);
        let mark = tokio::task::spawn_blocking(move || turns::mark(&meta))
            .await
            .ok()?;
        Some(Before {
            mark,
            provider_id,
            since_ms: crate::now_ms(),
        })
    }

    /// Wait (bounded) for pasted text to reach the screen: an Enter sent
    /// while the agent is still taking in a paste is the one that gets lost.
    pub(crate) async fn wait_echo(&self, live: &LiveProcess, screen_before: &str) {
        let deadline = tokio::time::Instant::now() + ECHO_WAIT;
        while tokio::time::Instant::now() < deadline && live.text() == screen_before {
            tokio::time::sleep(POLL).await;
        }
    }

    /// Press Enter until a turn start shows, at most `ATTEMPT_WAITS.len()`
    /// times. `on_enter` runs after the first Enter with its time.
    pub(crate) async fn submit(
        &self,
        id: &SessionId,
        live: &LiveProcess,
        before: &Before,
        mut on_enter: impl FnMut(u64),
    ) -> std::io::Result<Submitted> {
        for (n, wait) in ATTEMPT_WAITS.iter().enumerate() {
            let at = crate::now_ms();
            live.write(b"\r").await?;
            if n == 0 {
                on_enter(at);
            }
            let deadline = tokio::time::Instant::now() + *wait;
            loop {
                if self.turn_started(id, live, before).await {
                    return Ok(Submitted::Confirmed { enters: n + 1 });
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(POLL).await;
            }
            if !self.can_see_turns(id).await {
                return Ok(Submitted::Unconfirmed);
            }
            tracing::info!(
                "session {id}: no turn started {} ms after Enter {}; pressing it again",
                wait.as_millis(),
                n + 1
            );
        }
        Ok(Submitted::NotDelivered {
            enters: ATTEMPT_WAITS.len(),
        })
    }

    /// Whether anything shows that a turn started since `before`.
    async fn turn_started(&self, id: &SessionId, live: &LiveProcess, before: &Before) -> bool {
        if live.exited().is_some() || self.prompt_submitted_since(id, before.since_ms) {
            return true;
        }
        let Some(meta) = self.sessions.meta(id) else {
            // Closed meanwhile: nothing left to deliver to.
            return true;
        };
        if meta.durable_provider_id() != before.provider_id.as_deref() {
            // `/clear` (or a resume picker) moved it to another conversation.
            return true;
        }
        let mark = before.mark.clone();
        tokio::task::spawn_blocking(move || turns::prompted_since(&meta, &mark))
            .await
            .unwrap_or(false)
    }

    /// Whether hangar has any way to see this session's turns start: its
    /// hooks are installed, or its transcript exists.
    async fn can_see_turns(&self, id: &SessionId) -> bool {
        let Some(meta) = self.sessions.meta(id) else {
            return false;
        };
        if matches!(meta.provider, Provider::Claude) && self.hooks_installed() {
            return true;
        }
        tokio::task::spawn_blocking(move || turns::transcript_path(&meta).is_some())
            .await
            .unwrap_or(false)
    }
}
