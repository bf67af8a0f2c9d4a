//! The conversation in a transcript, as messages a person can read:
//! `hangar transcript ID --tail N` without waking the session.
//!
//! Only the tail of a large file is read (see `TAIL_BYTES`), so asking for
//! the last few messages of a week-long conversation stays cheap. Lines this
//! module does not understand are skipped, never an error: transcripts are
//! written by other programs and change shape between their versions.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use hangar_core::Provider;
use serde::Serialize;
use serde_json::Value;

/// The most of a transcript read from its end.
const TAIL_BYTES: u64 = 8 * 1024 * 1024;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: String,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// The last `tail` messages of the transcript at `path`.
pub fn read_tail(provider: &Provider, path: &Path, tail: usize) -> std::io::Result<Vec<Message>> {
    let adapter = crate::adapter::adapter(provider);
    let mut file = fs::File::open(path)?;
    let len = file.metadata()?.len();
    let skip_first = len > TAIL_BYTES;
    if skip_first {
        file.seek(SeekFrom::Start(len - TAIL_BYTES))?;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    if skip_first {
        // We started mid-line.
        lines.next();
    }
    let mut all: Vec<Message> = lines
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| adapter.transcript_message(&v))
        .collect();
    let start = all.len().saturating_sub(tail);
    Ok(all.split_off(start))
}

pub(crate) fn timestamp(v: &Value) -> Option<String> {
    v.get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The readable text of one content block.
fn block_text(b: &Value) -> Option<String> {
    match b.get("type").and_then(Value::as_str)? {
        "text" | "input_text" | "output_text" => {
            b.get("text").and_then(Value::as_str).map(str::to_owned)
        }
        "tool_use" => Some(format!(
            "[tool use: {}]",
            b.get("name").and_then(Value::as_str).unwrap_or("?")
        )),
        "tool_result" => Some(format!(
            "[tool result: {}]",
            match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            }
        )),
        _ => None,
    }
}

pub(crate) fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let parts: Vec<String> = blocks.iter().filter_map(block_text).collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_claude_messages_are_read_with_tool_blocks_summarised() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let lines = [
            r#"{"type":"system","subtype":"fake-agent-start","sessionId":"s"}"#,
            r#"{"type":"user","timestamp":"t1","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"assistant","timestamp":"t2","message":{"content":[{"type":"text","text":"answer: hi"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"ok?"},{"type":"tool_use","name":"Bash","input":{}}]}}"#,
            "{half a line",
        ];
        fs::write(&p, lines.join("\n")).unwrap();
        let m = read_tail(&Provider::Claude, &p, 2).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].text, "answer: hi");
        assert_eq!(m[0].timestamp.as_deref(), Some("t2"));
        assert_eq!(m[1].text, "ok?\n[tool use: Bash]");
        assert_eq!(read_tail(&Provider::Claude, &p, 100).unwrap().len(), 3);
    }

    #[test]
    fn codex_response_items_become_messages_and_events_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rollout.jsonl");
        let lines = [
            r#"{"type":"session_meta","payload":{"id":"x","cwd":"/w"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
            r#"{"type":"event_msg","payload":{"type":"user_message","message":"hi"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer: hi"}]}}"#,
        ];
        fs::write(&p, lines.join("\n")).unwrap();
        let m = read_tail(&Provider::Codex, &p, 10).unwrap();
        assert_eq!(
            m.iter()
                .map(|m| (m.role.as_str(), m.text.as_str()))
                .collect::<Vec<_>>(),
            vec![("user", "hi"), ("assistant", "answer: hi")]
        );
    }
}
