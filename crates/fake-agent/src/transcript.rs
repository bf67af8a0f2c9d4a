//! The transcript file of the current session, written one whole line at a time.
//!
//! Each line goes out in a single `write` on a file opened in append mode, so
//! a reader polling the file never sees half a line, and a resumed session
//! appends after whatever an earlier process wrote. Nothing is buffered:
//! a line is on disk (in the page cache) before the screen shows its effect.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::args::Style;
use crate::claude_lines::{self, LineContext};
use crate::codex_lines;
use crate::event::Event;
use crate::timestamp::UtcTime;
use crate::transcript_paths::{self, Roots};

pub struct Transcript {
    style: Style,
    path: PathBuf,
    /// `None` with `FAKE_AGENT_NO_TRANSCRIPT=1`: nothing is written.
    file: Option<File>,
    session_id: String,
    cwd: String,
    model: String,
    /// The previous line's `uuid`, for Claude's `parentUuid` chain.
    last_uuid: Option<String>,
    /// An exit line has been written; nothing follows it. Without this a
    /// hangup wrote two exit lines: one from the signal watcher, one from the
    /// main thread seeing its terminal gone.
    closed: bool,
    /// The opencode style's SQLite store (as real OpenCode keeps one).
    opencode: Option<crate::opencode_db::Store>,
    /// Lines not yet written (`FAKE_AGENT_DRAIN_ON_EXIT_MS`): written when
    /// the fake exits, as Claude Code drains its queued writes on SIGTERM.
    queued: Option<Vec<Value>>,
    /// A claude fork's copy of the conversation it forked, written (with
    /// the file itself) at the first prompt, as Claude Code does.
    fork_copy: Option<Vec<Value>>,
}

/// Where a session's transcript is, and whether it already exists.
pub struct Placement {
    pub path: PathBuf,
    pub existed: bool,
    /// Whether the transcript is written at all (`FAKE_AGENT_NO_TRANSCRIPT`).
    pub write: bool,
    /// The file is made only with the first prompt (a claude fork).
    pub deferred: bool,
}

impl Transcript {
    /// Finds the file for `session_id`. A fresh Claude start whose file
    /// already exists is refused, as the real CLI refuses a reused
    /// `--session-id`.
    pub fn place(
        roots: &Roots,
        style: Style,
        cwd: &str,
        session_id: &str,
        resume: bool,
    ) -> anyhow::Result<Placement> {
        let path = match style {
            Style::Claude => transcript_paths::claude_transcript(
                &roots.claude_dir().map_err(anyhow::Error::msg)?,
                cwd,
                session_id,
            ),
            Style::Opencode => transcript_paths::opencode_transcript(
                &roots.opencode_dir().map_err(anyhow::Error::msg)?,
                session_id,
            ),
            Style::Codex => {
                let home = roots.codex_dir().map_err(anyhow::Error::msg)?;
                let existing = if resume {
                    transcript_paths::find_codex_rollout(&home, session_id)
                } else {
                    None
                };
                existing.unwrap_or_else(|| {
                    transcript_paths::codex_new_rollout(&home, &UtcTime::now(), session_id)
                })
            }
        };
        let existed = path.exists();
        if existed && !resume && style == Style::Claude {
            bail!("Session ID {session_id} is already in use.");
        }
        Ok(Placement {
            path,
            existed,
            write: true,
            deferred: false,
        })
    }

    /// Opens (creating directories and file as needed) for appending.
    pub fn open(
        placement: &Placement,
        style: Style,
        cwd: &str,
        session_id: &str,
        model: &str,
    ) -> anyhow::Result<Transcript> {
        let file = if placement.write && !placement.deferred {
            if let Some(dir) = placement.path.parent() {
                fs::create_dir_all(dir)
                    .with_context(|| format!("creating transcript directory {}", dir.display()))?;
            }
            Some(
                OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&placement.path)
                    .with_context(|| format!("opening transcript {}", placement.path.display()))?,
            )
        } else {
            None
        };
        let opencode = if style == Style::Opencode {
            let db = crate::opencode_db::path(&|k| std::env::var(k).ok())
                .context("no XDG_DATA_HOME or HOME for opencode's store")?;
            Some(crate::opencode_db::Store::open(&db)?)
        } else {
            None
        };
        Ok(Transcript {
            opencode,
            style,
            path: placement.path.clone(),
            file,
            session_id: session_id.into(),
            cwd: cwd.into(),
            model: model.into(),
            last_uuid: None,
            closed: false,
            queued: if placement.deferred && placement.write {
                Some(Vec::new())
            } else {
                None
            },
            fork_copy: None,
        })
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Where the transcript is (or would be, when not written).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The lines real Claude Code (2.1.197) writes first in a new
    /// transcript, before anything else: they carry `sessionId` but no
    /// `cwd`, so a reader must take the folder from a later line. A fresh
    /// start writes `mode` and `permission-mode`; a `/clear` only `mode`.
    /// Other styles write nothing here.
    pub fn lead_lines(&mut self, permission_mode: bool) -> anyhow::Result<()> {
        if self.style != Style::Claude {
            return Ok(());
        }
        let mut lines =
            vec![json!({"type": "mode", "mode": "normal", "sessionId": self.session_id})];
        if permission_mode {
            lines.push(json!({
                "type": "permission-mode",
                "permissionMode": "default",
                "sessionId": self.session_id,
            }));
        }
        self.write_lines(lines)
    }

    /// Claude Code's entries for its local command `/<name>`, run without a
    /// turn (`claude_lines::local_command`). Other styles write nothing here.
    pub fn local_command(&mut self, name: &str) -> anyhow::Result<()> {
        if self.style != Style::Claude || self.closed {
            return Ok(());
        }
        let timestamp = UtcTime::now().rfc3339();
        let ids: [String; 3] = std::array::from_fn(|_| uuid::Uuid::new_v4().to_string());
        let ctx = LineContext {
            session_id: &self.session_id,
            cwd: &self.cwd,
            timestamp: &timestamp,
            uuid: &ids[0],
            parent_uuid: self.last_uuid.as_deref(),
            model: &self.model,
        };
        let lines = claude_lines::local_command(name, &ctx, [&ids[0], &ids[1], &ids[2]]);
        let [_, _, end] = ids;
        self.last_uuid = Some(end);
        self.write_lines(lines)
    }

    /// A claude fork: `copied` (the forked conversation's lines, already
    /// rewritten to this session) goes into the file made at the first
    /// prompt, after its lead lines and before everything since.
    pub fn begin_fork(&mut self, copied: Vec<Value>) {
        self.last_uuid = copied
            .iter()
            .rev()
            .find_map(|l| l.get("uuid").and_then(Value::as_str).map(str::to_owned));
        self.fork_copy = Some(copied);
    }

    /// The first prompt of a claude fork: make the file and write what
    /// waited for it.
    fn materialize_fork(&mut self) -> anyhow::Result<()> {
        let Some(copied) = self.fork_copy.take() else {
            return Ok(());
        };
        let waiting = self.queued.take().unwrap_or_default();
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)
                .with_context(|| format!("creating transcript directory {}", dir.display()))?;
        }
        self.file = Some(
            OpenOptions::new()
                .append(true)
                .create(true)
                .open(&self.path)
                .with_context(|| format!("opening transcript {}", self.path.display()))?,
        );
        let is_lead = |l: &Value| {
            matches!(
                l.get("type").and_then(Value::as_str),
                Some("mode" | "permission-mode")
            )
        };
        let (lead, rest): (Vec<Value>, Vec<Value>) = waiting.into_iter().partition(is_lead);
        self.write_lines(lead)?;
        self.write_lines(copied)?;
        self.write_lines(rest)
    }

    /// From now on, lines are queued and only written when the fake exits
    /// (or `drain` is called).
    pub fn defer_writes(&mut self) {
        self.queued.get_or_insert_with(Vec::new);
    }

    /// Writes every queued line; later lines are written at once again.
    pub fn drain(&mut self) -> anyhow::Result<()> {
        match self.queued.take() {
            Some(lines) => self.write_lines(lines),
            None => Ok(()),
        }
    }

    fn write_lines(&mut self, lines: Vec<Value>) -> anyhow::Result<()> {
        if let Some(queued) = self.queued.as_mut() {
            queued.extend(lines);
            return Ok(());
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        for line in lines {
            let mut text = line.to_string();
            text.push('\n');
            // One write per line: append-mode writes of a line this size land whole.
            file.write_all(text.as_bytes())
                .with_context(|| format!("writing transcript {}", self.path.display()))?;
        }
        Ok(())
    }

    /// Appends the lines for `event`. After an `Exit` this does nothing.
    pub fn record(&mut self, event: Event<'_>) -> anyhow::Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = matches!(event, Event::Exit { .. });
        if self.closed {
            self.drain()?;
        }
        if matches!(event, Event::User(_)) && self.fork_copy.is_some() {
            self.materialize_fork()?;
        }
        match (&self.opencode, &event) {
            (Some(store), Event::User(text)) => {
                store.user_prompt(&self.session_id, &self.cwd, text)?
            }
            (Some(store), Event::Assistant(text)) if store.has(&self.session_id)? => {
                store.answer(&self.session_id, text)?
            }
            _ => {}
        }
        let timestamp = UtcTime::now().rfc3339();
        let lines: Vec<Value> = match self.style {
            Style::Claude | Style::Opencode => {
                let uuid = uuid::Uuid::new_v4().to_string();
                let ctx = LineContext {
                    session_id: &self.session_id,
                    cwd: &self.cwd,
                    timestamp: &timestamp,
                    uuid: &uuid,
                    parent_uuid: self.last_uuid.as_deref(),
                    model: &self.model,
                };
                let line = claude_lines::line(&event, &ctx);
                self.last_uuid = Some(uuid);
                vec![line]
            }
            Style::Codex => codex_lines::lines(&event, &self.session_id, &self.cwd, &timestamp),
        };
        self.write_lines(lines)
    }
}
