//! Forks, as each real CLI makes them (observed with Claude Code 2.1.197,
//! Codex 0.171.0 and OpenCode 1.18.33; see README.md, Forks):
//!
//! - claude `--resume O --fork-session [--session-id N]`: a new transcript
//!   `N` holding `O`'s conversation lines with `sessionId` and `cwd` made
//!   `N`'s, written only with the fork's first prompt; `O` may be an id in
//!   the folder's project or the absolute path of a transcript.
//! - codex `fork O`: a new rollout at once whose `session_meta` names
//!   `forked_from_id` and `forked_from_ordinal_exclusive`, copying nothing.
//! - opencode `--session O --fork`: a new conversation in the store at once,
//!   titled `<title> (fork #N)`, with `O`'s messages copied.
//!
//! The forked conversation itself is never written to.

use std::path::PathBuf;

use serde_json::Value;

use crate::args::Style;
use crate::transcript::Transcript;
use crate::transcript_paths::{self, Roots};

/// What a fork starts from.
pub struct ForkSource {
    pub style: Style,
    /// The forked conversation's id.
    pub id: String,
    /// Codex: how many lines of its rollout the fork carries on from.
    pub ordinal: usize,
    /// Claude: its transcript.
    path: Option<PathBuf>,
}

/// The conversation `from` as the CLI of `style` finds it, or the words it
/// refuses with when it finds none.
pub fn source(
    style: Style,
    roots: &Roots,
    cwd: &str,
    from: &str,
) -> anyhow::Result<Result<ForkSource, String>> {
    Ok(match style {
        Style::Claude => {
            let dir = roots.claude_dir().map_err(anyhow::Error::msg)?;
            let path = if from.starts_with('/') {
                PathBuf::from(from)
            } else {
                transcript_paths::claude_transcript(&dir, cwd, from)
            };
            if !path.is_file() {
                // Claude Code 2.1.197's words (it exits 1).
                return Ok(Err(format!(
                    "No conversation found with session ID: {from}"
                )));
            }
            let id = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| from.to_owned());
            Ok(ForkSource {
                style,
                id,
                ordinal: 0,
                path: Some(path),
            })
        }
        Style::Codex => {
            let home = roots.codex_dir().map_err(anyhow::Error::msg)?;
            match transcript_paths::find_codex_rollout(&home, from) {
                Some(path) => Ok(ForkSource {
                    style,
                    id: from.to_owned(),
                    ordinal: std::fs::read_to_string(&path)?.lines().count(),
                    path: Some(path),
                }),
                // Not the real words (not observed): the fake's own.
                None => Err(format!(
                    "hangar-fake-agent: no rollout of thread {from} under $CODEX_HOME/sessions"
                )),
            }
        }
        Style::Opencode => {
            let db = crate::opencode_db::path(&|k| std::env::var(k).ok())
                .ok_or_else(|| anyhow::anyhow!("no XDG_DATA_HOME or HOME for opencode's store"))?;
            if crate::opencode_db::Store::open(&db)?.has(from)? {
                Ok(ForkSource {
                    style,
                    id: from.to_owned(),
                    ordinal: 0,
                    path: None,
                })
            } else {
                // OpenCode 1.18.33's words, as for `--session`.
                Err(format!("Error: Session not found: {from}"))
            }
        }
    })
}

/// Make the fork `new` of `source` in folder `cwd`.
pub fn start(
    source: &ForkSource,
    transcript: &mut Transcript,
    new: &str,
    cwd: &str,
) -> anyhow::Result<()> {
    match source.style {
        Style::Claude => {
            let text = match &source.path {
                Some(p) => std::fs::read_to_string(p)?,
                None => String::new(),
            };
            // The conversation: the fake's own start and exit records are
            // its bookkeeping, not conversation, and stay behind.
            let copied = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| {
                    matches!(
                        v.get("type").and_then(Value::as_str),
                        Some("user" | "assistant")
                    )
                })
                .map(|mut v| {
                    if let Some(o) = v.as_object_mut() {
                        o.insert("sessionId".into(), new.into());
                        o.insert("cwd".into(), cwd.into());
                    }
                    v
                })
                .collect();
            transcript.begin_fork(copied);
        }
        Style::Opencode => {
            let db = crate::opencode_db::path(&|k| std::env::var(k).ok())
                .ok_or_else(|| anyhow::anyhow!("no XDG_DATA_HOME or HOME for opencode's store"))?;
            crate::opencode_db::Store::open(&db)?.fork(&source.id, new, cwd)?;
        }
        Style::Codex => {}
    }
    Ok(())
}
