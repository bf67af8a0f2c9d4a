//! Whether a child agent has finished its turn, and what it last said, read
//! from its provider transcript without waking it.
//!
//! "Finished its turn" means: the transcript shows a prompt after the point
//! where hangar last sent one (a byte offset remembered at send time) and the
//! conversation since then ends idle. Without such a mark, the last entry of
//! the transcript decides. Transcript locating and message parsing are
//! `discovery`'s and `messages`'s; this module only adds the turn state. It
//! reads bounded tails only, and the daemon calls it off its state lock
//! (it reads files).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use hangar_core::{Provider, SessionMeta};

use crate::transcript::{discovery, messages};
use hangar_core::activity::Activity;

/// The most of a transcript read to decide a turn's state.
const TURN_BYTES: u64 = 1024 * 1024;

/// Where a turn started: the transcript and its length when hangar typed the
/// prompt (`None` when it had no transcript yet: all of it is new).
#[derive(Clone, Debug, PartialEq)]
pub struct TurnMark {
    pub path: Option<PathBuf>,
    pub offset: u64,
}

/// The transcript of a session's provider session, if it has one on disk.
pub fn transcript_path(meta: &SessionMeta) -> Option<PathBuf> {
    let root = discovery::session_transcript_root(meta, &discovery::env_var)?;
    let psid = meta.provider_session.as_ref()?.id.clone();
    discovery::find_transcript(&meta.provider, &root, &meta.cwd, &psid)
}

/// Mark the start of a turn about to be prompted.
pub fn mark(meta: &SessionMeta) -> TurnMark {
    let path = transcript_path(meta);
    let offset = path
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .unwrap_or(0);
    TurnMark { path, offset }
}

/// Complete lines of `path` from `offset` (at most the last `TURN_BYTES`).
fn lines_from(path: &Path, offset: u64) -> Vec<String> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = offset.max(len.saturating_sub(TURN_BYTES)).min(len);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if start > offset && !lines.is_empty() {
        // Started mid-line because of the size bound.
        lines.remove(0);
    }
    lines
}

/// What a run of transcript lines says: whether a prompt arrived in them,
/// and the activity at their end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnFacts {
    pub prompted: bool,
    pub activity: Activity,
}

pub fn turn_facts(provider: &Provider, lines: &[String]) -> TurnFacts {
    crate::adapter::adapter(provider).turn_facts(lines)
}

/// Where a live agent is in its turn: `Working`, `Waiting` (for a person),
/// `Idle` (finished), or `Unknown` (no transcript hangar can read).
pub fn turn_activity(meta: &SessionMeta, mark: Option<&TurnMark>) -> Activity {
    let Some(path) = transcript_path(meta) else {
        // A prompt was sent but its transcript is not there yet: the turn
        // has not visibly started.
        return if mark.is_some() && is_readable_provider(&meta.provider) {
            Activity::Working
        } else {
            Activity::Unknown
        };
    };
    match mark {
        Some(m) => {
            let offset = if m.path.as_deref() == Some(path.as_path()) {
                m.offset
            } else {
                0
            };
            let facts = turn_facts(&meta.provider, &lines_from(&path, offset));
            if !facts.prompted {
                Activity::Working
            } else {
                facts.activity
            }
        }
        None => turn_facts(&meta.provider, &lines_from(&path, 0)).activity,
    }
}

/// Whether a prompt reached the transcript since `mark` (a new transcript,
/// as a fresh claude writes with its first prompt, counts from its start).
pub fn prompted_since(meta: &SessionMeta, mark: &TurnMark) -> bool {
    let Some(path) = transcript_path(meta) else {
        return false;
    };
    let offset = if mark.path.as_deref() == Some(path.as_path()) {
        mark.offset
    } else {
        0
    };
    turn_facts(&meta.provider, &lines_from(&path, offset)).prompted
}

/// Whether `p`'s CLI writes transcripts hangar reads.
pub fn is_readable_provider(p: &Provider) -> bool {
    crate::adapter::adapter(p).transcript_state().is_some()
}

/// The last `max_messages` messages, the newest kept whole first, within
/// `max_chars` in total. Returns them oldest first and whether any were cut.
pub fn read_messages(
    meta: &SessionMeta,
    max_messages: usize,
    max_chars: usize,
) -> Result<(Vec<messages::Message>, bool), String> {
    if !is_readable_provider(&meta.provider) {
        return Err(format!(
            "session {} runs {}; only claude and codex transcripts can be read",
            meta.id, meta.provider
        ));
    }
    let Some(path) = transcript_path(meta) else {
        return Ok((Vec::new(), false));
    };
    let all = messages::read_tail(&meta.provider, &path, max_messages)
        .map_err(|e| format!("cannot read the transcript {}: {e}", path.display()))?;
    Ok(fit(all, max_chars))
}

/// Keep the newest messages within `max_chars`; the oldest one kept may be
/// cut from its start.
pub fn fit(all: Vec<messages::Message>, max_chars: usize) -> (Vec<messages::Message>, bool) {
    let mut budget = max_chars;
    let mut kept = Vec::new();
    let mut truncated = false;
    for mut m in all.into_iter().rev() {
        if budget == 0 {
            truncated = true;
            break;
        }
        let n = m.text.chars().count();
        if n > budget {
            m.text = tail_chars(&m.text, budget);
            truncated = true;
            budget = 0;
        } else {
            budget -= n;
        }
        kept.push(m);
    }
    kept.reverse();
    (kept, truncated)
}

/// The last assistant message, cut to its last `max_chars` characters.
pub fn latest_output(meta: &SessionMeta, max_chars: usize) -> (Option<String>, bool) {
    let Some(path) = transcript_path(meta) else {
        return (None, false);
    };
    let Ok(msgs) = messages::read_tail(&meta.provider, &path, 50) else {
        return (None, false);
    };
    match msgs.into_iter().rev().find(|m| m.role == "assistant") {
        Some(m) if m.text.chars().count() > max_chars => {
            (Some(tail_chars(&m.text, max_chars)), true)
        }
        Some(m) => (Some(m.text), false),
        None => (None, false),
    }
}

fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_claude_turn_is_finished_only_once_a_prompt_was_answered() {
        let started = lines(&[r#"{"type":"user","message":{"content":"slow 100 x"}}"#]);
        assert_eq!(
            turn_facts(&Provider::Claude, &started),
            TurnFacts {
                prompted: true,
                activity: Activity::Working
            }
        );
        let done = lines(&[
            r#"{"type":"user","message":{"content":"x"}}"#,
            r#"{"type":"assistant","message":{"stop_reason":"end_turn"}}"#,
        ]);
        assert_eq!(
            turn_facts(&Provider::Claude, &done).activity,
            Activity::Idle
        );
        assert!(!turn_facts(&Provider::Claude, &[]).prompted);
    }

    #[test]
    fn a_codex_turn_ends_at_task_complete_and_waits_at_an_approval_request() {
        let l = lines(&[
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started"}}"#,
        ]);
        assert_eq!(turn_facts(&Provider::Codex, &l).activity, Activity::Working);
        let mut done = l.clone();
        done.push(r#"{"type":"event_msg","payload":{"type":"task_complete"}}"#.into());
        assert_eq!(turn_facts(&Provider::Codex, &done).activity, Activity::Idle);
        let mut asking = l;
        asking.push(r#"{"type":"event_msg","payload":{"type":"exec_approval_request"}}"#.into());
        assert_eq!(
            turn_facts(&Provider::Codex, &asking).activity,
            Activity::Waiting
        );
    }

    #[test]
    fn fitting_keeps_the_newest_messages_and_cuts_the_oldest_kept_one() {
        let m = |t: &str| messages::Message {
            role: "assistant".into(),
            text: t.into(),
            timestamp: None,
        };
        let (kept, cut) = fit(vec![m("aaaa"), m("bbbb"), m("cc")], 5);
        assert!(cut);
        assert_eq!(
            kept.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
            vec!["bbb", "cc"]
        );
        let (kept, cut) = fit(vec![m("a"), m("b")], 10);
        assert!(!cut && kept.len() == 2);
    }
}
