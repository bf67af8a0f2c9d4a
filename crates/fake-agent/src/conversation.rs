//! The interactive loop: read a line, record it, answer, record the answer.
//!
//! Order matters to hangar's tests: every transcript line is written *before*
//! the screen shows its effect, so a test that waits for `answer: hi` on
//! screen can read the transcript at once and find the answer there. While
//! a `slow` turn waits, the transcript's last entry is the user's line: a
//! turn in progress.

use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::json;

use crate::args::Style;
use crate::ballast::Ballast;
use crate::event::{Event, StartRecord};
use crate::hooks::Hooks;
use crate::input::{self, Input};
use crate::session_record::SessionRecord;
use crate::terminal;
use crate::transcript::Transcript;
use crate::transcript_paths::Roots;

/// The current transcript, shared with the signal watcher; `/clear` swaps it.
pub type SharedTranscript = Arc<Mutex<Transcript>>;

pub fn lock(shared: &SharedTranscript) -> MutexGuard<'_, Transcript> {
    // A poisoned lock only means another thread panicked mid-write; the file
    // handle is still good for the lines that follow.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Conversation {
    pub transcript: SharedTranscript,
    /// The start record of this process, reused for the file `/clear` opens.
    pub start: StartRecord,
    pub roots: Roots,
    pub cwd: String,
    pub model: String,
    pub ballast: Ballast,
    /// Children from `spawn-child`, kept so they are not reaped early.
    pub children: Vec<Child>,
    /// The Claude Code hooks of `--settings`.
    pub hooks: Hooks,
    /// `false` with `FAKE_AGENT_NO_TRANSCRIPT=1` (also for `/clear`'s file).
    pub write_transcript: bool,
    /// `$CLAUDE_CONFIG_DIR/sessions/<pid>.json` (claude style only).
    pub session_record: Arc<Option<SessionRecord>>,
    /// The id of the line being answered (hooks carry it).
    pub prompt_id: String,
    /// The last answer, for the `Stop` hook's `last_assistant_message`.
    pub last_answer: Mutex<String>,
    /// Enters still to lose (`FAKE_AGENT_SWALLOW_ENTERS`).
    pub swallow_enters: u64,
    /// A line whose Enter was lost, still in the input line.
    pub unsubmitted: Option<String>,
    /// `FAKE_AGENT_TRANSCRIPT_LAG_MS`: how long after drawing an answer (and
    /// its `Stop` hook) it is written.
    pub transcript_lag: Option<std::time::Duration>,
    /// An answer drawn but not yet in the transcript (with a lag).
    pub unwritten: Option<String>,
}

/// How the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Ending {
    pub code: i32,
}

impl Conversation {
    pub fn run(
        &mut self,
        input: &mut impl BufRead,
        out: &mut impl Write,
    ) -> anyhow::Result<Ending> {
        let source = if self.start.resumed {
            "resume"
        } else {
            "startup"
        };
        self.hook(
            "SessionStart",
            json!({ "source": source, "model": self.model }),
        );
        prompt(out);
        loop {
            let line = match read_line(input) {
                Ok(Some(line)) => line,
                Ok(None) => return self.finish("eof"),
                // EIO: the terminal hung up. The SIGHUP that comes with it may
                // win the race to record the exit; either way the exit is clean.
                Err(_) => return self.finish("input-error"),
            };
            // Text whose Enter was lost is still in the input line: the next
            // Enter submits it together with whatever was typed since.
            let line = match self.unsubmitted.take() {
                Some(before) => before + &line,
                None => line,
            };
            if self.swallow_enters > 0 && !line.trim().is_empty() {
                self.swallow_enters -= 1;
                // The terminal already echoed the newline: go back up and
                // draw the input line as it was, so the screen shows the
                // text still waiting there (as claude's input box would).
                let _ = write!(out, "\x1b[1A\r\x1b[2K> {line}");
                let _ = out.flush();
                self.unsubmitted = Some(line);
                continue;
            }
            let parsed = input::parse(&line);
            // Claude Code gives every submitted line (a slash command too) a
            // prompt id that the turn's hooks carry.
            if !matches!(parsed, Input::Blank) {
                self.prompt_id = uuid::Uuid::new_v4().to_string();
            }
            if parsed.is_turn() {
                self.hook(
                    "UserPromptSubmit",
                    json!({
                        "prompt_id": self.prompt_id,
                        "permission_mode": self.permission_mode(),
                        "prompt": line,
                    }),
                );
            }
            match parsed {
                Input::Blank => {}
                Input::Exit => {
                    self.record(Event::User(&line))?;
                    self.session_end("prompt_input_exit");
                    return self.finish("exit");
                }
                Input::Crash(code) => {
                    self.record(Event::User(&line))?;
                    return Ok(Ending { code });
                }
                Input::Clear => {
                    // Claude Code 2.1.197 leaves the old transcript as it was
                    // and writes the command in the new one (`clear`); the
                    // other styles keep the line in the old one.
                    if self.start.style != Style::Claude {
                        self.record(Event::User(&line))?;
                    }
                    // As Claude Code 2.1.197: SessionEnd for the old id, then
                    // SessionStart for the new one, both with the prompt id.
                    self.session_end("clear");
                    let id = self.clear()?;
                    self.hook(
                        "SessionStart",
                        json!({ "prompt_id": self.prompt_id, "source": "clear" }),
                    );
                    say(out, &format!("cleared: new session {id}"));
                }
                Input::Prompt(text) => self.turn(out, &line, &format!("answer: {text}"))?,
                Input::Slow { ms, text } => {
                    self.record(Event::User(&line))?;
                    say(out, "working...");
                    std::thread::sleep(Duration::from_millis(ms));
                    self.answer(out, &format!("answer: {text}"))?;
                }
                Input::Ask(text) => {
                    let question = format!("question: {}?", text.trim_end_matches('?'));
                    self.turn(out, &line, &question)?;
                    let _ = out.flush();
                    // The turn ends with a question: Stop, then the agent
                    // waits for the person.
                    self.stop_hook();
                    self.hook(
                        "Notification",
                        json!({ "message": "Claude is waiting for your input" }),
                    );
                    prompt(out);
                    continue;
                }
                Input::PermissionScreenOnly(tool) => {
                    self.record(Event::User(&line))?;
                    if !self.ask_on_screen(input, out, tool)? {
                        return self.finish("eof");
                    }
                }
                Input::Permission(tool) => {
                    self.record(Event::User(&line))?;
                    if !self.ask_permission(input, out, tool)? {
                        return self.finish("eof");
                    }
                }
                Input::Size => {
                    let reply = match terminal::size() {
                        Some((cols, rows)) => format!("size: {cols}x{rows}"),
                        None => "size: unknown (stdin is not a terminal)".to_string(),
                    };
                    self.turn(out, &line, &reply)?;
                }
                Input::SpawnChild => {
                    self.record(Event::User(&line))?;
                    let reply = match self.spawn_child() {
                        Ok(pid) => format!("child: {pid}"),
                        Err(e) => format!("child: failed to start sleep: {e}"),
                    };
                    self.answer(out, &reply)?;
                }
                Input::Tiocsti(text) => {
                    self.record(Event::User(&line))?;
                    let reply = match crate::terminal::push_input(text) {
                        Ok(()) => format!("tiocsti: injected {} bytes", text.len()),
                        Err(e) => format!("tiocsti: refused ({e})"),
                    };
                    self.answer(out, &reply)?;
                }
                Input::Api { url, text } => {
                    self.record(Event::User(&line))?;
                    let session = lock(&self.transcript).session_id().to_owned();
                    let style = self.start.style;
                    let called =
                        crate::api::call(url, text, style, &session, &mut |l: &str| say(out, l));
                    let reply = match called {
                        Ok(status) => format!("api-done {status}"),
                        Err(e) => format!("api-error: {e:#}"),
                    };
                    self.answer(out, &reply)?;
                }
                Input::Alloc(mb) => {
                    self.record(Event::User(&line))?;
                    self.ballast.add(mb);
                    self.answer(out, &format!("allocated {mb}"))?;
                }
                Input::Grow { mb, ms } => {
                    self.record(Event::User(&line))?;
                    say(out, "working...");
                    // Ten steps: the tree grows while the turn runs, as a
                    // tool run's memory does, not all at once.
                    let steps = 10usize;
                    for step in 0..steps {
                        self.ballast
                            .add(mb / steps + usize::from(step < mb % steps));
                        std::thread::sleep(Duration::from_millis(ms / steps as u64));
                    }
                    self.answer(out, &format!("grew {mb}"))?;
                }
            }
            if parsed.is_turn() {
                let _ = out.flush();
                self.stop_hook();
            }
            if let Some(reply) = self.unwritten.take() {
                std::thread::sleep(self.transcript_lag.unwrap_or_default());
                self.record(Event::Assistant(&reply))?;
            }
            prompt(out);
        }
    }

    fn permission_mode(&self) -> &'static str {
        if self.start.invocation.dangerous {
            "bypassPermissions"
        } else {
            "default"
        }
    }

    /// The `Stop` hook, with the fields Claude Code 2.1.197 sends.
    fn stop_hook(&self) {
        let last = self
            .last_answer
            .lock()
            .map(|a| a.clone())
            .unwrap_or_default();
        self.hook(
            "Stop",
            json!({
                "prompt_id": self.prompt_id,
                "permission_mode": self.permission_mode(),
                "effort": { "level": "high" },
                "stop_hook_active": false,
                "last_assistant_message": last,
                "background_tasks": [],
                "session_crons": [],
            }),
        );
    }

    /// `SessionEnd` with Claude Code's reason (`clear`, `prompt_input_exit`).
    fn session_end(&self, reason: &str) {
        self.hook(
            "SessionEnd",
            json!({ "prompt_id": self.prompt_id, "reason": reason }),
        );
    }

    /// Runs the hooks configured for `event` (see hooks.rs).
    fn hook(&self, event: &str, extra: serde_json::Value) {
        if self.hooks.is_empty() {
            return;
        }
        let (session_id, path) = {
            let t = lock(&self.transcript);
            (t.session_id().to_owned(), t.path().display().to_string())
        };
        let mut common = serde_json::Map::new();
        common.insert("session_id".into(), json!(session_id));
        common.insert("transcript_path".into(), json!(path));
        common.insert("cwd".into(), json!(self.cwd));
        self.hooks.run(event, &common, extra);
    }

    pub fn record(&self, event: Event<'_>) -> anyhow::Result<()> {
        lock(&self.transcript).record(event)
    }

    /// A user line and its finished answer.
    fn turn(&mut self, out: &mut impl Write, line: &str, reply: &str) -> anyhow::Result<()> {
        self.record(Event::User(line))?;
        self.answer(out, reply)
    }

    /// With `FAKE_AGENT_TRANSCRIPT_LAG_MS`, drawn first and written after
    /// the turn's `Stop` hook and the lag, as a loaded Claude Code does;
    /// without it written just before it is drawn, so a test that saw the
    /// answer finds it in the transcript (the real gap is then too short
    /// to matter, and a test waiting on it would only be slower).
    fn answer(&mut self, out: &mut impl Write, reply: &str) -> anyhow::Result<()> {
        if let Ok(mut last) = self.last_answer.lock() {
            reply.clone_into(&mut last);
        }
        if self.transcript_lag.is_some() {
            say(out, reply);
            let _ = out.flush();
            self.unwritten = Some(reply.to_owned());
            return Ok(());
        }
        self.record(Event::Assistant(reply))?;
        say(out, reply);
        Ok(())
    }

    fn finish(&self, reason: &str) -> anyhow::Result<Ending> {
        self.record(Event::Exit {
            reason,
            signal: None,
        })?;
        if let Some(r) = self.session_record.as_ref() {
            r.remove();
        }
        Ok(Ending { code: 0 })
    }

    /// Asks like Claude Code does and reads the answer. `false` on end of input.
    fn ask_permission(
        &self,
        input: &mut impl BufRead,
        out: &mut impl Write,
        tool: &str,
    ) -> anyhow::Result<bool> {
        let call_id = format!("toolu_fake_{}", uuid::Uuid::new_v4().simple());
        self.record(Event::PermissionAsk {
            tool,
            call_id: &call_id,
        })?;
        say(out, &format!("Do you want to allow {tool}?"));
        say(out, "❯ 1. Yes");
        say(out, "  2. No");
        let _ = out.flush();
        self.hook(
            "Notification",
            json!({ "message": format!("Claude needs your permission to use {tool}") }),
        );
        let Ok(Some(reply)) = read_line(input) else {
            return Ok(false);
        };
        let allowed = matches!(
            reply.trim().to_ascii_lowercase().as_str(),
            "1" | "y" | "yes"
        );
        self.record(Event::ToolResult {
            call_id: &call_id,
            allowed,
        })?;
        if allowed {
            self.record(Event::Assistant("done"))?;
            say(out, "allowed");
        } else {
            self.record(Event::Assistant("denied"))?;
            say(out, "denied");
        }
        Ok(true)
    }

    /// A permission prompt that only the screen shows: nothing is recorded
    /// until it is answered, and no hook runs. `false` on end of input.
    fn ask_on_screen(
        &mut self,
        input: &mut impl BufRead,
        out: &mut impl Write,
        tool: &str,
    ) -> anyhow::Result<bool> {
        say(out, &format!("Do you want to allow {tool}?"));
        say(out, "❯ 1. Yes");
        say(out, "  2. No");
        let _ = out.flush();
        let Ok(Some(reply)) = read_line(input) else {
            return Ok(false);
        };
        let allowed = matches!(
            reply.trim().to_ascii_lowercase().as_str(),
            "1" | "y" | "yes"
        );
        self.answer(out, if allowed { "allowed" } else { "denied" })?;
        Ok(true)
    }

    /// Rotates to a fresh session id with a new transcript, like Claude Code's `/clear`.
    fn clear(&mut self) -> anyhow::Result<String> {
        let mut shared = lock(&self.transcript);
        let new_id = uuid::Uuid::new_v4().to_string();
        let style = self.start.style;
        let mut placement = Transcript::place(&self.roots, style, &self.cwd, &new_id, false)?;
        placement.write = self.write_transcript;
        let mut next = Transcript::open(&placement, style, &self.cwd, &new_id, &self.model)?;
        // Like Claude Code, nothing in the new transcript names the old id.
        let start = StartRecord {
            resumed: false,
            transcript_existed: placement.existed,
            ..self.start.clone()
        };
        next.lead_lines(false)?;
        next.record(Event::Start(&start))?;
        // Written at once, not with the next prompt, and ending with the
        // `local_command` entry hangar reads as "idle": as Claude Code
        // 2.1.197 did (crates/hangar/tests/it/real_cli_support/OBSERVED.md,
        // "`/clear` in Claude Code 2.1.197").
        next.local_command("clear")?;
        *shared = next;
        if let Some(r) = self.session_record.as_ref() {
            // Claude Code names the new conversation at once; a failed write
            // leaves the old id there, as a stale record would.
            let _ = r.write(&new_id);
        }
        Ok(new_id)
    }

    /// A `sleep 1000` in this process group, with no hold on the terminal.
    fn spawn_child(&mut self) -> std::io::Result<u32> {
        let mut cmd = Command::new("sleep");
        cmd.arg("1000")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Without this the child inherited the fake's blocked SIGTERM/SIGHUP
        // (std does not reset the mask), so a SIGTERM to the group never
        // reached it and group-kill tests needed SIGKILL.
        crate::child_setup::clear_signal_mask(&mut cmd, false);
        let child = cmd.spawn()?;
        let pid = child.id();
        self.children.push(child);
        Ok(pid)
    }
}

/// One line without its terminator; `None` at end of input.
fn read_line(input: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    if input.read_until(b'\n', &mut buf)? == 0 {
        return Ok(None);
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// Writes one screen line. A closed terminal is not an error here: the
/// hangup (or end of input) that follows ends the process.
pub fn say(out: &mut impl Write, text: &str) {
    let _ = writeln!(out, "{text}");
}

fn prompt(out: &mut impl Write) {
    let _ = write!(out, "> ");
    let _ = out.flush();
}
