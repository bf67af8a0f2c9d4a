//! What an agent is doing: working on a turn, waiting for the user, or idle.
//!
//! Read from structured signals first (the provider's transcript) and the
//! screen last (permission prompts). The governor uses it to never hibernate
//! an agent mid-turn or at a permission prompt.

use std::path::{Path, PathBuf};

use hangar_core::{Provider, SessionMeta};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Activity {
    Working,
    Waiting,
    Idle,
    Unknown,
}

/// Screen patterns of permission prompts, per provider family.
pub const PERMISSION_PROMPTS: &[&str] = &[
    "Do you want to allow",
    "Do you want to proceed?",
    "Allow command?",
    "approve this",
];

/// Claude Code's project folder name for a cwd.
pub fn claude_slug(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect()
}

pub fn claude_config_dir() -> PathBuf {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".claude"))
}

pub fn codex_home() -> PathBuf {
    std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".codex"))
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The claude transcript of a session's current provider id, if any.
pub fn claude_transcript(meta: &SessionMeta) -> Option<PathBuf> {
    let id = meta.provider_session.as_ref()?.id.clone();
    let cwd = std::fs::canonicalize(&meta.cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| meta.cwd.clone());
    let p = claude_config_dir()
        .join("projects")
        .join(claude_slug(&cwd))
        .join(format!("{id}.jsonl"));
    p.exists().then_some(p)
}

/// The last few lines of a file, read from its end (bounded cost).
pub fn tail_lines(path: &Path, max_bytes: u64) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max_bytes);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if start > 0 && !lines.is_empty() {
        // The first line was cut by the seek.
        lines.remove(0);
    }
    lines
}

/// Activity from a claude transcript's last conversational entry.
pub fn claude_activity(lines: &[String]) -> Activity {
    for line in lines.iter().rev() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("user") => return Activity::Working,
            Some("assistant") => {
                let stop = v
                    .pointer("/message/stop_reason")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                return match stop {
                    "tool_use" => Activity::Waiting,
                    "end_turn" | "stop_sequence" => Activity::Idle,
                    _ => Activity::Working,
                };
            }
            _ => continue,
        }
    }
    Activity::Unknown
}

/// Activity of a session from its transcript, falling back to its screen.
pub fn session_activity(meta: &SessionMeta, screen: Option<&str>) -> Activity {
    let from_transcript = match meta.provider {
        Provider::Claude => claude_transcript(meta)
            .map(|p| claude_activity(&tail_lines(&p, 64 * 1024)))
            .unwrap_or(Activity::Unknown),
        _ => Activity::Unknown,
    };
    if from_transcript != Activity::Unknown {
        return from_transcript;
    }
    match screen {
        Some(s) if PERMISSION_PROMPTS.iter().any(|p| s.contains(p)) => Activity::Waiting,
        _ => Activity::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_user_entry_last_means_a_turn_is_in_progress() {
        let l = lines(&[
            r#"{"type":"system"}"#,
            r#"{"type":"user","message":{"role":"user","content":"hi"}}"#,
        ]);
        assert_eq!(claude_activity(&l), Activity::Working);
    }

    #[test]
    fn a_tool_use_stop_means_waiting_and_end_turn_means_idle() {
        let waiting = lines(&[r#"{"type":"assistant","message":{"stop_reason":"tool_use"}}"#]);
        assert_eq!(claude_activity(&waiting), Activity::Waiting);
        let idle = lines(&[
            r#"{"type":"assistant","message":{"stop_reason":"end_turn"}}"#,
            r#"{"type":"system","subtype":"fake-agent-exit"}"#,
        ]);
        assert_eq!(claude_activity(&idle), Activity::Idle);
    }

    #[test]
    fn the_slug_replaces_slashes_and_dots() {
        assert_eq!(claude_slug("/tmp/a.b/c"), "-tmp-a-b-c");
    }
}
