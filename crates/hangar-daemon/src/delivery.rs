//! Submitting a typed prompt and making sure the agent took it.
//!
//! A pasted prompt followed by Enter was left unsubmitted by a freshly drawn
//! claude 2 times in about 30 first sends (docs/src/cli-facts.md): the Enter is lost
//! and the text sits in the input box. So an Enter is never assumed to have
//! worked: after it, hangar looks for the start of a turn (the session's own
//! `UserPromptSubmit` hook, a new prompt in its transcript, a new provider id
//! after `/clear`, or the process ending on `exit`), and presses Enter again
//! a bounded number of times. A prompt that still started nothing is
//! reported as not delivered. Another Enter on an empty input box does
//! nothing in claude or codex, so a retry after a slow signal is harmless.
//!
//! `Delivery` is built with the session owner, the activity monitor (is a
//! turn running, did a hook see it start) and identity (OpenCode's typed
//! prompts); `send` is what `hangar send` and an agent's prompt share.

use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;
use hangar_protocol::message::codes;
use hangar_protocol::reply;
use serde_json::json;

use crate::activity::{Monitor, TurnEnd};
use crate::errors::ApiError;
use crate::identity::Identity;
use crate::os::Clock;
use crate::pty::LiveProcess;
use crate::sessions::Sessions;
use hangar_providers::transcript::turns::{self, TurnMark};

/// How long each Enter is given to show a turn start; one entry per Enter.
const ATTEMPT_WAITS: [Duration; 3] = [
    Duration::from_millis(2000),
    Duration::from_millis(3000),
    Duration::from_millis(5000),
];

/// How long after its first Enter a prompt that left the input box is
/// given to show its turn: no Enter is pressed any more, so waiting costs
/// nothing but the caller's time, and on a loaded machine a CLI's hook or
/// transcript write can come well after the Enters' 10 s (CI at load 17).
/// Within the contract's minute for a delivered prompt to reach the model.
const TAKEN_WAIT: Duration = Duration::from_millis(45_000);

/// The most a prompt waits for a turn that is ending (its answer written,
/// its Stop hook not reported yet) before it is typed as a queued one.
const TURN_END_WAIT: Duration = Duration::from_millis(10_000);

/// The most the screen is waited on to show pasted text before the Enter.
const ECHO_WAIT: Duration = Duration::from_millis(1000);

const POLL: Duration = Duration::from_millis(25);

/// The gap between typing a prompt and pressing Enter, so a TUI that treats
/// a fast burst as a paste does not swallow the Enter.
const ENTER_DELAY: Duration = Duration::from_millis(30);

/// What came of pressing Enter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// A turn start was seen after this many Enters.
    Confirmed { enters: usize },
    /// Nothing here can see this session's turns (no transcript, no hooks,
    /// no request through the proxy yet): `enters` were pressed, another
    /// only while the text stayed in the input box, and nothing more is
    /// known.
    Unconfirmed { enters: usize },
    /// No turn started after every Enter pressed: `in_input` says whether
    /// the text was still in the agent's input box at the end.
    NotDelivered { enters: usize, in_input: bool },
}

/// The facts taken just before typing, that a turn start is compared with.
pub struct Before {
    mark: TurnMark,
    provider_id: Option<String>,
    since_ms: u64,
    /// The prompt about to be typed.
    typed: String,
}

/// Typing into sessions and confirming the turns it starts.
pub struct Delivery {
    sessions: Arc<Sessions>,
    monitor: Arc<Monitor>,
    identity: Arc<Identity>,
    clock: Arc<dyn Clock>,
}

impl Delivery {
    pub fn new(
        sessions: Arc<Sessions>,
        monitor: Arc<Monitor>,
        identity: Arc<Identity>,
        clock: Arc<dyn Clock>,
    ) -> Delivery {
        Delivery {
            sessions,
            monitor,
            identity,
            clock,
        }
    }

    /// Type `text` into session `id` (already woken by the caller) and, with
    /// `enter`, submit it and make sure a turn started: `hangar send`'s
    /// answer. A prompt typed but never submitted is an error whose detail
    /// says `"delivered": false`.
    /// A fork into another CLI starts with its handoff prompt (issue 30):
    /// typed once the new agent runs, whichever wake starts it (the fork
    /// itself, a parked fork's first wake, a restore), off the wake's path.
    /// At most once: the prompt is taken out of the session's record and
    /// saved before it is typed, so a restart never types it again.
    pub fn deliver_pending_handoff(self: &Arc<Self>, id: &SessionId) {
        let text = match self.sessions.take_pending_prompt(id) {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(e) => {
                // Kept in the record: the next wake tries again.
                tracing::warn!(session = %id, "cannot record the handoff prompt as sent: {}", e.message);
                return;
            }
        };
        let delivery = self.clone();
        let id = id.clone();
        tokio::spawn(async move {
            if let Err(e) = delivery.send(&id, &text, true).await {
                tracing::warn!(session = %id, "the handoff prompt was not delivered: {}", e.message);
            }
        });
    }

    pub async fn send(
        &self,
        id: &SessionId,
        text: &str,
        enter: bool,
    ) -> Result<reply::Sent, ApiError> {
        let typed = self
            .send_checked(id, text, enter, || Ok::<(), std::convert::Infallible>(()))
            .await?;
        Ok(typed.unwrap_or_else(|never| match never {}))
    }

    /// `send` for an automatic prompt (a goal's turn, a limit's
    /// continuation): `check` runs once this prompt holds the session's
    /// typing and its turn was waited on, right before the first key goes
    /// out; when it refuses, nothing is typed and its refusal is returned
    /// (the inner `Err`). Without this, a goal stopped or a limit that came
    /// while a turn settled still got its prompt typed (issue 44).
    pub async fn send_checked<E>(
        &self,
        id: &SessionId,
        text: &str,
        enter: bool,
        check: impl FnOnce() -> Result<(), E>,
    ) -> Result<Result<reply::Sent, E>, ApiError> {
        let id = id.clone();
        let live = self.sessions.process(&id).ok_or_else(|| {
            ApiError::new(
                codes::FAILED,
                format!("session {} is not running", id.short()),
            )
        })?;
        let write = |e: std::io::Error| {
            ApiError::new(
                codes::FAILED,
                format!("cannot type into {}: {e}", id.short()),
            )
        };
        let _typing = live.typing().await;
        // Only a prompt typed into an agent ready for one starts a turn
        // hangar can watch for; anything else (a bare Enter too) is typed
        // and Entered once.
        let before = if enter && !text.trim().is_empty() && self.expects_turn(&id).await {
            self.before_prompt(&id, text).await
        } else {
            None
        };
        let screen_before = live.text();
        // No await between this look and the first key.
        if let Err(refused) = check() {
            return Ok(Err(refused));
        }
        if text.is_empty() {
            // A bare Enter: an empty paste is not nothing to every TUI
            // (Claude Code 2.1.337's auto-mode dialog took one and then
            // ignored the Enter after it).
        } else if live.bracketed_paste() {
            let mut bytes = b"\x1b[200~".to_vec();
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(b"\x1b[201~");
            live.write(&bytes).await.map_err(write)?;
        } else {
            live.write(text.as_bytes()).await.map_err(write)?;
        }
        let mut delivery = None;
        if enter {
            // Noted before the Enter: the agent may record the prompt (and
            // a fast one its answer too) before a turn is confirmed, and a
            // look at its records then must already know the prompt.
            self.identity.note_typed(&id, text);
            self.wait_echo(&live, &screen_before).await;
            tokio::time::sleep(ENTER_DELAY).await;
            match &before {
                Some(before) => {
                    // The time is taken before the first Enter, so the
                    // agent's reply is never older.
                    let submitted = self
                        .submit(&id, &live, text, before, |at| {
                            self.monitor.note_input(&id, at)
                        })
                        .await
                        .map_err(write)?;
                    delivery = Some(submitted);
                }
                None => {
                    let typed_at = self.clock.now_ms();
                    live.write(b"\r").await.map_err(write)?;
                    self.monitor.note_input(&id, typed_at);
                }
            }
        }
        self.sessions.touch(&id, self.clock.now_ms());
        // The text is typed: a last-use time the disk cannot take (full,
        // read-only) must not turn a delivered send into an error.
        if let Err(e) = self.sessions.save_observed() {
            tracing::warn!("cannot store the last use of {id}: {}", e.message);
        }
        let (confirmed, enters) = match delivery {
            Some(Submitted::NotDelivered { enters, in_input }) => {
                // What the person would see: the screen's last lines, as
                // text (an agent's words, escaped where they are printed).
                let screen = live.text();
                let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
                let bottom = lines[lines.len().saturating_sub(6)..].join("\n");
                let where_it_is = if in_input {
                    "it is still in its input box"
                } else {
                    "it left the input box, but the agent recorded no turn"
                };
                let mut err = ApiError::new(
                    codes::FAILED,
                    format!(
                        "the prompt was typed into {} but no turn started after {enters} Enter{}; \
                         {where_it_is}. `hangar attach {}` shows it. The screen ends with:\n{bottom}",
                        id.short(),
                        if enters == 1 { "" } else { "s" },
                        id.short()
                    ),
                );
                err.detail = json!({
                    "id": id.to_string(),
                    "delivered": false,
                    "enters": enters,
                    "in_input": in_input,
                    "screen": bottom,
                });
                return Err(err);
            }
            Some(Submitted::Confirmed { enters }) => (Some(true), Some(enters)),
            Some(Submitted::Unconfirmed { enters }) => (Some(false), Some(enters)),
            None => (None, enter.then_some(1)),
        };
        Ok(Ok(reply::Sent {
            id: id.to_string(),
            sent: text.len(),
            confirmed,
            enters,
        }))
    }

    /// Whether a prompt typed into `id` now should start a turn that can be
    /// watched for: a claude or codex session that is not mid-turn or
    /// waiting on the person (text typed then answers a question or is
    /// queued, and starts no turn of its own). Judged by the latest
    /// readings, not the debounced state: a prompt sent just after an
    /// answer must still be confirmed, or an Enter claude drops is never
    /// pressed again (CI's `/clear` that stayed in the input box). A turn
    /// whose answer is in but whose Stop hook has not reported yet is
    /// waited for (bounded): claude would queue the prompt until then.
    pub(crate) async fn expects_turn(&self, id: &SessionId) -> bool {
        let readable = match self.sessions.meta(id) {
            Some(meta) => turns::is_readable_provider(&meta.provider) || keeps_turns_stored(&meta),
            None => false,
        };
        if !readable {
            return false;
        }
        let deadline = tokio::time::Instant::now() + TURN_END_WAIT;
        loop {
            let monitor = self.monitor.clone();
            let at = id.clone();
            let end = tokio::task::spawn_blocking(move || monitor.turn_end_now(&at))
                .await
                .unwrap_or(TurnEnd::Busy);
            match end {
                TurnEnd::Over => return true,
                TurnEnd::Busy => return false,
                TurnEnd::Ending if tokio::time::Instant::now() >= deadline => return false,
                TurnEnd::Ending => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// The facts before a prompt is typed into `id`.
    pub(crate) async fn before_prompt(&self, id: &SessionId, typed: &str) -> Option<Before> {
        let meta = self.sessions.meta(id)?;
        let provider_id = meta.durable_provider_id().map(str::to_owned);
        let mark = tokio::task::spawn_blocking(move || turns::mark(&meta))
            .await
            .ok()?;
        Some(Before {
            mark,
            provider_id,
            since_ms: self.clock.now_ms(),
            typed: typed.to_owned(),
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
    /// times, and again only while `text` is still in the agent's input box
    /// (`hangar_core::input_box`): once it left the box the agent took it,
    /// and the rest of the waits, up to `TAKEN_WAIT` after the first Enter,
    /// only look for its turn (issue 44: a prompt never reaches the model
    /// twice). `on_enter` runs after the first Enter with its time.
    pub(crate) async fn submit(
        &self,
        id: &SessionId,
        live: &LiveProcess,
        text: &str,
        before: &Before,
        mut on_enter: impl FnMut(u64),
    ) -> std::io::Result<Submitted> {
        let mut enters = 0;
        let first_enter = tokio::time::Instant::now();
        // What the screen was as the first Enter went out: an Enter the
        // agent lost changes nothing on it.
        let at_first_enter = live.text();
        for (n, wait) in ATTEMPT_WAITS.iter().enumerate() {
            if n == 0 || hangar_core::input_box::still_in_input(&live.text(), text) {
                let at = self.clock.now_ms();
                live.write(b"\r").await?;
                enters += 1;
                if n == 0 {
                    on_enter(at);
                }
            } else {
                tracing::info!(
                    "session {id}: the prompt left the input box; waiting for its turn, no Enter"
                );
            }
            let deadline = tokio::time::Instant::now() + *wait;
            loop {
                if self.turn_started(id, live, before).await {
                    return Ok(Submitted::Confirmed { enters });
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(POLL).await;
            }
            if !self.can_see_turns(id).await {
                // Nothing records its turns (yet: an agent in a container
                // shows them only through the proxy, once it made a
                // request). The screen still shows an Enter it lost: the
                // text stays in its box and nothing else moved, and the
                // next Enter submits it (CI's first prompt to claude in a
                // Podman container). A screen that changed took the Enter,
                // whatever sits near its bottom: another Enter there could
                // answer the question the prompt raised.
                let more = n + 1 < ATTEMPT_WAITS.len();
                let screen = live.text();
                if more
                    && screen == at_first_enter
                    && hangar_core::input_box::still_in_input(&screen, text)
                {
                    continue;
                }
                return Ok(Submitted::Unconfirmed { enters });
            }
            tracing::info!(
                "session {id}: no turn started {} ms after Enter {enters}",
                wait.as_millis(),
            );
        }
        if !hangar_core::input_box::still_in_input(&live.text(), text) {
            tracing::info!("session {id}: the prompt left the input box; waiting for its turn");
            let deadline = first_enter + TAKEN_WAIT;
            while tokio::time::Instant::now() < deadline {
                if self.turn_started(id, live, before).await {
                    return Ok(Submitted::Confirmed { enters });
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(Submitted::NotDelivered {
            enters,
            in_input: hangar_core::input_box::still_in_input(&live.text(), text),
        })
    }

    /// Whether anything shows that a turn started since `before`.
    async fn turn_started(&self, id: &SessionId, live: &LiveProcess, before: &Before) -> bool {
        if live.exited().is_some() || self.monitor.prompt_submitted_since(id, before.since_ms) {
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
        if meta.engine.is_some() {
            // Its hooks and transcript are inside its container: the one
            // record hangar has is its requests through the proxy, and only
            // one carrying the prompt is its turn (a CLI's own requests as
            // it wakes are not).
            return self
                .monitor
                .prompt_sent_to_model_since(id, before.since_ms, &before.typed)
                == Some(true);
        }
        if keeps_turns_stored(&meta) {
            // Any message of its conversation since the prompt: OpenCode
            // writes the prompt, then each step, into its database.
            let since = before.since_ms;
            return tokio::task::spawn_blocking(move || {
                stored_turn_ms(&meta).is_some_and(|at| at >= since)
            })
            .await
            .unwrap_or(false);
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
        // On an engine, its hooks and transcript are inside the container;
        // its requests through the proxy are seen once it made one.
        if meta.engine.is_some() {
            return self.monitor.model_requests_seen(id);
        }
        if keeps_turns_stored(&meta) {
            return tokio::task::spawn_blocking(move || stored_turn_ms(&meta).is_some())
                .await
                .unwrap_or(false);
        }
        // A sandboxed claude's hooks reach hangar too (its own socket).
        if hangar_providers::adapter(&meta.provider).takes_hooks() && self.monitor.hooks_installed()
        {
            return true;
        }
        // A described CLI writes its session file with its first prompt:
        // under load that first write comes seconds after the Enter (Qwen
        // Code's first send read unconfirmed in the whole suite).
        if meta.sandbox.is_none()
            && meta.provider_session.is_some()
            && hangar_providers::described::records_turns(&meta.provider)
        {
            return true;
        }
        tokio::task::spawn_blocking(move || turns::transcript_path(&meta).is_some())
            .await
            .unwrap_or(false)
    }
}

/// Whether `meta`'s agent keeps its turns in a database of its own that
/// hangar reads (OpenCode; `Adapter::stored_reading`) for a conversation
/// already known. A sandboxed one's database is inside its sandbox.
fn keeps_turns_stored(meta: &hangar_core::SessionMeta) -> bool {
    meta.sandbox.is_none()
        && meta.provider_session.is_some()
        && hangar_providers::adapter(&meta.provider)
            .stored_folder(&hangar_providers::transcript::discovery::env_var)
            .is_some()
}

/// When `meta`'s conversation last moved in the agent's database (its
/// newest message's time, on the daemon's clock); `None` when it cannot be
/// read or holds no message yet.
fn stored_turn_ms(meta: &hangar_core::SessionMeta) -> Option<u64> {
    let conversation = &meta.provider_session.as_ref()?.id;
    let reading = hangar_providers::adapter(&meta.provider)
        .stored_reading(
            conversation,
            &hangar_providers::transcript::discovery::env_var,
        )
        .inspect_err(|e| tracing::debug!("session {}: {e}", meta.id))
        .ok()??;
    Some(hangar_clock::from_wall_ms(reading.at_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Caller;
    use crate::on_a_fake_machine::{FakeMachine, until, with_sessions};
    use crate::os::FakeProgram;
    use crate::sessions::RunState;

    /// A machine with session `a` live, running `program`.
    async fn live(program: FakeProgram) -> (FakeMachine, SessionId, u32) {
        let m = with_sessions(&["a"], &[]);
        m.os.script("a", program);
        woken(m).await
    }

    /// `m` with its session `a` woken, and its pid.
    async fn woken(m: FakeMachine) -> (FakeMachine, SessionId, u32) {
        let a = SessionId::from("a");
        let state = m.daemon.spawner.wake_as(&a, Caller::Cli).await;
        assert_eq!(state.unwrap(), RunState::Live);
        let pid = m.daemon.sessions.process(&a).unwrap().pid;
        (m, a, pid)
    }

    #[tokio::test(start_paused = true)]
    async fn a_prompt_into_a_shell_is_typed_then_entered_once_and_counts_as_a_use() {
        let (m, a, pid) = live(FakeProgram {
            echoes: true,
            ..FakeProgram::default()
        })
        .await;
        m.os.advance(Duration::from_secs(60));
        let reply = m.daemon.delivery.send(&a, "echo hi", true).await.unwrap();
        assert_eq!(reply.sent, 7);
        assert_eq!(reply.enters, Some(1));
        assert!(reply.confirmed.is_none(), "a shell has no turns: {reply:?}");
        until("the Enter reached the program", || {
            m.os.typed(pid) == b"echo hi\r"
        })
        .await;
        let used = m.daemon.sessions.meta(&a).unwrap().last_active_ms;
        assert_eq!(used, m.os.now_ms(), "last used on the daemon's clock");
    }

    #[tokio::test(start_paused = true)]
    async fn a_prompt_into_a_program_that_asked_for_bracketed_paste_arrives_as_one_paste() {
        let (m, a, pid) = live(FakeProgram {
            prints: b"\x1b[?2004h$ ".to_vec(),
            ..FakeProgram::default()
        })
        .await;
        let process = m.daemon.sessions.process(&a).unwrap();
        until("the paste mode is on", || process.bracketed_paste()).await;
        m.daemon
            .delivery
            .send(&a, "two\nlines", true)
            .await
            .unwrap();
        until("the Enter reached the program", || {
            m.os.typed(pid).ends_with(b"\r")
        })
        .await;
        assert_eq!(m.os.typed(pid), b"\x1b[200~two\nlines\x1b[201~\r");
        // A bare Enter (`hangar send ID ""`) is an Enter, never an empty
        // paste before it.
        m.daemon.delivery.send(&a, "", true).await.unwrap();
        until("the second Enter reached the program", || {
            m.os.typed(pid).ends_with(b"\x1b[201~\r\r")
        })
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn typing_into_a_session_that_is_not_running_is_refused() {
        let m = with_sessions(&["a"], &[]);
        let err = m
            .daemon
            .delivery
            .send(&SessionId::from("a"), "hi", true)
            .await
            .unwrap_err();
        assert!(err.message.contains("is not running"), "{}", err.message);
        assert!(m.os.spawned().is_empty());
    }

    /// A machine with a claude session `a` live (its program prints and
    /// echoes nothing: what hangar types never shows in an input box).
    async fn live_claude() -> (FakeMachine, SessionId, u32) {
        live_claude_running(FakeProgram::default(), true).await
    }

    /// A machine with a claude session `a` live, running `program`, with
    /// hangar's hooks installed or not (`hooks`).
    async fn live_claude_running(
        program: FakeProgram,
        hooks: bool,
    ) -> (FakeMachine, SessionId, u32) {
        let m = crate::on_a_fake_machine::build(
            &["a"],
            &[],
            |c| {
                crate::on_a_fake_machine::find_claude(c);
                if !hooks {
                    c.activity
                        .sources
                        .retain(|s| *s != crate::activity::Source::Hooks);
                }
            },
            |m| m.provider = hangar_core::Provider::Claude,
        );
        m.os.script("a", program);
        woken(m).await
    }

    /// A claude whose turns nothing here records (no hooks, no transcript,
    /// as one in a container before its first request), showing what is
    /// typed in an input box that loses its first `loses` Enters.
    async fn unseen_claude_losing_enters(loses: usize) -> (FakeMachine, SessionId, u32) {
        let program = FakeProgram {
            echoes: true,
            input_box_loses_enters: Some(loses),
            ..FakeProgram::default()
        };
        live_claude_running(program, false).await
    }

    #[tokio::test(start_paused = true)]
    async fn an_enter_lost_by_an_agent_whose_turns_are_unseen_is_pressed_again_while_the_text_stays()
     {
        // CI: the first prompt to claude in a Podman container stayed in
        // its box; hangar saw no request yet and pressed no second Enter.
        let (m, a, pid) = unseen_claude_losing_enters(1).await;
        let reply = m.daemon.delivery.send(&a, "run it", true).await.unwrap();
        assert_eq!(reply.confirmed, Some(false), "{reply:?}");
        assert_eq!(reply.enters, Some(2), "{reply:?}");
        assert_eq!(m.os.typed(pid), b"run it\r\r");
        let screen = m.daemon.sessions.process(&a).unwrap().text();
        assert!(
            !hangar_core::input_box::still_in_input(&screen, "run it"),
            "{screen}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unseen_agent_whose_screen_moved_after_the_enter_gets_no_second_one() {
        // The fake agent of `activity_sources` (no hooks, no transcript):
        // it echoes the prompt and asks a question under it. The prompt is
        // still among the bottom lines, but the screen moved: the Enter was
        // taken, and another would answer the question.
        let program = FakeProgram {
            echoes: true,
            input_box_loses_enters: Some(0),
            input_box_answer: b"Do you want to allow Bash?\r\n> 1. Yes\r\n".to_vec(),
            ..FakeProgram::default()
        };
        let (m, a, pid) = live_claude_running(program, false).await;
        let reply = m
            .daemon
            .delivery
            .send(&a, "permission Bash", true)
            .await
            .unwrap();
        assert_eq!(reply.enters, Some(1), "{reply:?}");
        assert_eq!(m.os.typed(pid), b"permission Bash\r");
    }

    #[tokio::test(start_paused = true)]
    async fn a_prompt_an_unseen_agent_took_gets_one_enter() {
        let (m, a, pid) = unseen_claude_losing_enters(0).await;
        let reply = m.daemon.delivery.send(&a, "run it", true).await.unwrap();
        assert_eq!(reply.confirmed, Some(false), "{reply:?}");
        assert_eq!(reply.enters, Some(1), "{reply:?}");
        assert_eq!(m.os.typed(pid), b"run it\r");
    }

    #[tokio::test(start_paused = true)]
    async fn a_prompt_that_left_the_box_is_confirmed_by_a_turn_start_after_the_enters_waits() {
        // On a loaded machine claude's hook came after the Enters' 10 s
        // (CI at load 17): the prompt had left the box, nothing was pressed
        // again, and the send must still say delivered when the turn shows.
        let (m, a, pid) = live_claude().await;
        let (os, monitor, id) = (m.os.clone(), m.daemon.monitor.clone(), a.clone());
        tokio::spawn(async move {
            until("the Enter is typed", || os.typed(pid).ends_with(b"\r")).await;
            tokio::time::sleep(Duration::from_secs(20)).await;
            monitor.record_hook(
                &id,
                hangar_providers::claude::hooks::HookEvent::UserPromptSubmit,
            );
        });
        let reply = m.daemon.delivery.send(&a, "run it", true).await.unwrap();
        assert_eq!(reply.confirmed, Some(true), "{reply:?}");
        assert_eq!(
            reply.enters,
            Some(1),
            "no Enter once the prompt left the box"
        );
        assert_eq!(m.os.typed(pid), b"run it\r");
    }

    /// Sends `text` to `a`, which takes it out of its box and never shows a
    /// turn: the send says it was not delivered.
    async fn not_delivered(m: &FakeMachine, a: &SessionId, text: &str) {
        let err = m.daemon.delivery.send(a, text, true).await.unwrap_err();
        assert!(
            err.message.contains("left the input box"),
            "{}",
            err.message
        );
        assert_eq!(err.detail["delivered"], false);
    }

    #[tokio::test(start_paused = true)]
    async fn a_prompt_that_left_the_box_and_never_started_a_turn_is_not_delivered() {
        let (m, a, pid) = live_claude().await;
        not_delivered(&m, &a, "run it").await;
        assert_eq!(m.os.typed(pid), b"run it\r", "one Enter, never another");
    }

    /// Qwen Code writes its session file with its first prompt; under load
    /// that write came after the first Enter's wait, and the whole suite's
    /// first send read unconfirmed. A described CLI whose session files
    /// hangar reads can have its turns seen before the file exists: a send
    /// whose turn never shows is not delivered, not "unconfirmed".
    #[tokio::test(start_paused = true)]
    async fn a_described_cli_before_its_session_file_exists_has_its_turn_watched_for() {
        let m = crate::on_a_fake_machine::build(
            &["a"],
            &[],
            |c| {
                let program = hangar_providers::ProviderConfig {
                    program: Some("/bin/sh".into()),
                    ..Default::default()
                };
                c.providers.insert("qwen".into(), program);
            },
            |m| m.provider = hangar_core::Provider::from_name("qwen"),
        );
        m.os.script("a", FakeProgram::default());
        let (m, a, pid) = woken(m).await;
        assert!(
            m.daemon
                .sessions
                .meta(&a)
                .unwrap()
                .provider_session
                .is_some(),
            "hangar minted its id"
        );
        not_delivered(&m, &a, "first question").await;
        assert_eq!(m.os.typed(pid), b"first question\r");
    }
}
