//! Claude Code's transcripts: `projects/<cwd slug>/<session id>.jsonl`
//! under its config folder, one JSON entry a line (`sessionId` on most
//! entries, `cwd` from the first conversational one on; `user` and
//! `assistant` entries hold the messages). Shapes read from Claude Code
//! 2.1.197's own files (docs/src/cli-facts.md).

use std::fs;
use std::path::{Path, PathBuf};

use hangar_core::activity::Activity;
use hangar_core::ledger::TranscriptFacts;
use serde_json::Value;

use crate::transcript::activity::claude_reading;
use crate::transcript::discovery::{canonical_cwd, claude_slug, str_at};
use crate::transcript::messages::{Message, content_text, timestamp};
use crate::transcript::turns::TurnFacts;

/// A session's project folder: the only one its new transcripts appear in.
pub fn dirs(root: &Path, cwd: &str) -> Vec<PathBuf> {
    vec![root.join("projects").join(claude_slug(cwd))]
}

/// A claude entry: `sessionId` on most entries, `cwd` from the first
/// conversational one on.
pub fn entry_facts(v: &Value) -> Option<TranscriptFacts> {
    Some(TranscriptFacts {
        id: str_at(v, "sessionId")?,
        cwd: str_at(v, "cwd"),
        modified_ms: 0,
    })
}

/// The project folder of `cwd` first, then any project folder (a session
/// moved to another folder keeps its file where it began).
pub fn find(root: &Path, cwd: &str, psid: &str) -> Option<PathBuf> {
    let name = format!("{psid}.jsonl");
    let direct = root
        .join("projects")
        .join(claude_slug(&canonical_cwd(cwd)))
        .join(&name);
    if direct.is_file() {
        return Some(direct);
    }
    fs::read_dir(root.join("projects"))
        .ok()?
        .flatten()
        .map(|e| e.path().join(&name))
        .find(|p| p.is_file())
}

/// A claude `user` or `assistant` entry.
pub fn message(v: &Value) -> Option<Message> {
    let role = v.get("type").and_then(Value::as_str)?;
    if role != "user" && role != "assistant" {
        return None;
    }
    let text = content_text(v.get("message")?.get("content")?)?;
    Some(Message {
        role: role.to_owned(),
        text,
        timestamp: timestamp(v),
    })
}

/// A `user` entry is a prompt; the activity is the last conversational
/// entry's.
pub fn turn(lines: &[String]) -> TurnFacts {
    TurnFacts {
        prompted: lines.iter().any(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("user"))
        }),
        activity: claude_reading(lines, false, 0)
            .map(|r| r.activity)
            .unwrap_or(Activity::Unknown),
    }
}
