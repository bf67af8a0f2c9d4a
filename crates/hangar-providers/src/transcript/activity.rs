//! The most trusted source: the provider's own transcript.
//!
//! claude: the last conversational entry's role and the assistant's
//! `stop_reason`; codex: the last turn event of its rollout. A live session's
//! transcript is watched with bounded cost (one `stat` per change the daemon's
//! folder watch reports in [`TranscriptWatch::folders`], a re-read of the
//! last 64 KiB only when size or time changed); a hibernated one is read
//! once per change, never watched, and never woken. This module must never
//! read a whole transcript.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hangar_core::Provider;
use serde_json::Value;

use crate::transcript::discovery;
use hangar_core::activity::{Activity, Reading};

/// How much of a transcript's end is read.
const TAIL_BYTES: u64 = 64 * 1024;
/// How often a transcript that was not found is looked for again, for a CLI
/// whose search is a walk (codex's sessions folder).
const MISS_RETRY: Duration = Duration::from_secs(2);

/// The last lines of a file, read from its end. `complete` is true when the
/// whole file was read.
pub fn tail_lines(path: &Path, max_bytes: u64) -> Option<(Vec<String>, bool)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(max_bytes);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if start > 0 && !lines.is_empty() {
        // The first line was cut by the seek.
        lines.remove(0);
    }
    Some((lines, start == 0))
}

fn timestamp_ms(v: &Value) -> Option<u64> {
    let t = v.get("timestamp")?.as_str()?;
    let at = humantime::parse_rfc3339_weak(t).ok()?;
    at.duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64)
}

/// A question ends the turn the same way an answer does; only its text
/// tells them apart.
fn is_question(text: &str) -> bool {
    text.trim_end().ends_with('?')
}

fn claude_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The activity of the last entry `classify` recognises, newest first
/// (`fallback_ms` stands in for entries without a timestamp). A complete file
/// with only unrecognised entries (start records) is a fresh conversation,
/// ready for its first prompt.
fn last_reading(
    lines: &[String],
    complete: bool,
    fallback_ms: u64,
    classify: impl Fn(&Value) -> Option<Activity>,
) -> Option<Reading> {
    let mut last_at = None;
    for line in lines.iter().rev() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let at = timestamp_ms(&v).unwrap_or(fallback_ms);
        last_at.get_or_insert(at);
        if let Some(activity) = classify(&v) {
            return Some(Reading {
                activity,
                at_ms: at,
            });
        }
    }
    (complete && !lines.is_empty()).then(|| Reading {
        activity: Activity::Idle,
        at_ms: last_at.unwrap_or(fallback_ms),
    })
}

/// The activity of the newest entry `classify` recognises by its own
/// timestamp, not by its place in the file (a later line wins a tie, and an
/// entry without a timestamp counts as no older than the one before it).
/// Claude Code 2.1.197 on a loaded machine appended a turn's answer and
/// `turn_duration` before the prompt's own `user` entry (observed): read by
/// position, the session stayed `working` after its turn ended.
fn newest_reading(
    lines: &[String],
    complete: bool,
    fallback_ms: u64,
    classify: impl Fn(&Value) -> Option<Activity>,
) -> Option<Reading> {
    // (the entry's time for ordering, its reading)
    let mut newest: Option<(u64, Reading)> = None;
    for line in lines {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(activity) = classify(&v) else {
            continue;
        };
        let stamped = timestamp_ms(&v);
        let order = match (stamped, &newest) {
            (Some(t), _) => t,
            (None, Some((t, _))) => *t,
            (None, None) => 0,
        };
        if newest.as_ref().is_none_or(|(t, _)| order >= *t) {
            let reading = Reading {
                activity,
                at_ms: stamped.unwrap_or(fallback_ms),
            };
            newest = Some((order, reading));
        }
    }
    match newest {
        Some((_, r)) => Some(r),
        // Only start records: as `last_reading` says.
        None => last_reading(lines, complete, fallback_ms, |_| None),
    }
}

/// Activity from a claude transcript's newest entries.
pub fn claude_reading(lines: &[String], complete: bool, fallback_ms: u64) -> Option<Reading> {
    newest_reading(lines, complete, fallback_ms, |v| {
        if v.get("isMeta").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        match v.get("type").and_then(Value::as_str) {
            // A prompt, or a tool's result: the agent goes on.
            Some("user") => Some(Activity::Working),
            // A local slash command (`/clear`) ran: Claude Code 2.1.197
            // writes its `<command-name>` user entry, then this, and no
            // answer; without it a session read as working until its next
            // turn, and a prompt sent meanwhile went unconfirmed.
            Some("system") if v.get("subtype").and_then(Value::as_str) == Some("local_command") => {
                Some(Activity::Idle)
            }
            Some("assistant") => {
                let message = v.get("message").unwrap_or(&Value::Null);
                Some(match message.get("stop_reason").and_then(Value::as_str) {
                    Some("tool_use") => Activity::Waiting,
                    Some("end_turn" | "stop_sequence" | "max_tokens" | "refusal") => {
                        if is_question(&claude_text(message)) {
                            Activity::Waiting
                        } else {
                            Activity::Idle
                        }
                    }
                    _ => Activity::Working,
                })
            }
            _ => None,
        }
    })
}

/// Activity from a codex rollout's last events.
pub fn codex_reading(lines: &[String], complete: bool, fallback_ms: u64) -> Option<Reading> {
    last_reading(lines, complete, fallback_ms, |v| {
        let payload = v.get("payload").unwrap_or(&Value::Null);
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
        Some(match (v.get("type").and_then(Value::as_str), kind) {
            (Some("event_msg"), "task_complete") => {
                let last = payload
                    .get("last_agent_message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if is_question(last) {
                    Activity::Waiting
                } else {
                    Activity::Idle
                }
            }
            (Some("event_msg"), "turn_aborted") => Activity::Idle,
            (Some("event_msg"), k) if k.ends_with("approval_request") => Activity::Waiting,
            (Some("event_msg"), "task_started" | "user_message" | "agent_message") => {
                Activity::Working
            }
            (Some("response_item"), "message" | "function_call" | "function_call_output") => {
                Activity::Working
            }
            _ => return None,
        })
    })
}

/// Activity from a run of claude transcript lines (a whole conversation's
/// tail, or the lines since a turn mark); `unknown` when none is
/// conversational.
pub fn claude_activity(lines: &[String]) -> Activity {
    claude_reading(lines, false, 0)
        .map(|r| r.activity)
        .unwrap_or(Activity::Unknown)
}

/// Activity from a transcript's lines, for a provider that has one.
pub fn reading(
    provider: &Provider,
    lines: &[String],
    complete: bool,
    fallback_ms: u64,
) -> Option<Reading> {
    crate::adapter::adapter(provider).transcript_reading(lines, complete, fallback_ms)
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What a session's transcript says, remembered so an unchanged file is
/// never re-read.
#[derive(Debug, Default)]
pub struct TranscriptWatch {
    /// The provider session id the path was found for, and the path.
    found: Option<(String, PathBuf)>,
    /// When a search found nothing (codex searches are walks).
    missed: Option<(String, Instant)>,
    /// Size and modification time of the last read.
    stamp: Option<(u64, u64)>,
    reading: Option<Reading>,
}

impl TranscriptWatch {
    /// The current reading of provider session `psid`'s transcript.
    pub fn read(
        &mut self,
        provider: &Provider,
        root: &Path,
        cwd: &str,
        psid: Option<&str>,
    ) -> Option<Reading> {
        let psid = psid?;
        let path = self.locate(provider, root, cwd, psid)?;
        let Ok(md) = std::fs::metadata(&path) else {
            // Gone (deleted, or moved by the provider): look again next time.
            self.found = None;
            self.stamp = None;
            self.reading = None;
            return None;
        };
        let modified = md.modified().map(millis).unwrap_or(0);
        let stamp = (md.len(), modified);
        if self.stamp != Some(stamp) {
            self.stamp = Some(stamp);
            self.reading = tail_lines(&path, TAIL_BYTES)
                .and_then(|(lines, complete)| reading(provider, &lines, complete, modified));
        }
        self.reading
    }

    /// The folders whose changes can change the reading of `psid`: the found
    /// transcript's own folder; before it is found, where it will appear
    /// (claude's project folder of `cwd`; codex's date folders of today).
    pub fn folders(
        &self,
        provider: &Provider,
        root: &Path,
        cwd: &str,
        psid: Option<&str>,
        now_ms: u64,
    ) -> Vec<PathBuf> {
        let Some(psid) = psid else {
            return Vec::new();
        };
        if let Some((id, path)) = &self.found
            && id == psid
        {
            return path.parent().map(Path::to_path_buf).into_iter().collect();
        }
        discovery::candidate_dirs(
            provider,
            root,
            &discovery::canonical_cwd(cwd),
            now_ms,
            now_ms,
        )
    }

    /// How long until a search that found nothing may be tried again
    /// (a walk, as codex's, at most every `MISS_RETRY`); `None` when there
    /// is no such wait, so a folder change alone is enough.
    pub fn retry_in(&self, provider: &Provider) -> Option<Duration> {
        if !crate::adapter::adapter(provider).finding_walks() || self.found.is_some() {
            return None;
        }
        self.missed
            .as_ref()
            .map(|(_, when)| MISS_RETRY.saturating_sub(when.elapsed()))
    }

    fn locate(
        &mut self,
        provider: &Provider,
        root: &Path,
        cwd: &str,
        psid: &str,
    ) -> Option<PathBuf> {
        if let Some((id, path)) = &self.found
            && id == psid
        {
            return Some(path.clone());
        }
        self.stamp = None;
        self.reading = None;
        self.found = None;
        if let Some((id, when)) = &self.missed
            && id == psid
            && when.elapsed() < MISS_RETRY
            && crate::adapter::adapter(provider).finding_walks()
        {
            return None;
        }
        // Claude's path is known without a search (its adapter looks there
        // first); the file may not exist yet (a fresh start writes it with
        // the first prompt).
        let path = discovery::find_transcript(provider, root, cwd, psid);
        match path {
            Some(p) => {
                self.missed = None;
                self.found = Some((psid.to_owned(), p.clone()));
                Some(p)
            }
            None => {
                self.missed = Some((psid.to_owned(), Instant::now()));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn activity(r: Option<Reading>) -> Activity {
        r.map(|r| r.activity).unwrap_or(Activity::Unknown)
    }

    #[test]
    fn a_user_entry_last_means_a_turn_is_in_progress_since_its_timestamp() {
        let l = lines(&[
            r#"{"type":"system"}"#,
            r#"{"type":"user","timestamp":"2025-01-02T03:04:05.678Z","message":{"role":"user","content":"hi"}}"#,
        ]);
        let r = claude_reading(&l, true, 7).unwrap();
        assert_eq!(r.activity, Activity::Working);
        assert_eq!(r.at_ms, 1_735_787_045_678);
    }

    /// Regression: the hooks-off `/clear` test under load found the
    /// session `working` after its answer, so `/clear` went unconfirmed.
    #[test]
    fn a_claude_prompt_entry_appended_after_its_answer_does_not_reopen_the_turn() {
        // The order Claude Code 2.1.197 wrote on a loaded machine (observed;
        // the entries cut to the fields read here).
        let l = lines(&[
            r#"{"type":"assistant","message":{"content":[{"text":"ANSWER(before clear)","type":"text"}],"stop_reason":"end_turn"},"timestamp":"2026-12-04T17:26:17.848Z"}"#,
            r#"{"type":"system","subtype":"turn_duration","isMeta":false,"timestamp":"2026-12-04T17:26:17.863Z"}"#,
            r#"{"type":"file-history-snapshot","messageId":"m","isSnapshotUpdate":false}"#,
            r#"{"type":"user","message":{"role":"user","content":"before clear"},"timestamp":"2026-12-04T17:26:17.152Z"}"#,
            r#"{"type":"attachment","timestamp":"2026-12-04T17:26:17.152Z"}"#,
        ]);
        let r = claude_reading(&l, true, 0).unwrap();
        assert_eq!(r.activity, Activity::Idle);
        assert_eq!(r.at_ms, 1_796_405_177_848);
    }

    #[test]
    fn a_local_command_like_clear_leaves_claude_idle() {
        // The new transcript Claude Code 2.1.197 wrote on `/clear` (observed).
        let cleared = lines(&[
            r#"{"type":"mode","mode":"normal","sessionId":"d68027df-2635-4ed2-9c72-d977ac0e35b4"}"#,
            r#"{"parentUuid":null,"isSidechain":false,"promptId":"e65700c8-8da9-4d8d-b959-01faf3eff575","type":"user","message":{"role":"user","content":"<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.</local-command-caveat>"},"isMeta":true,"uuid":"eb72644a-871a-492c-a83f-c6d0a2a57ee9","timestamp":"2026-12-04T17:01:11.956Z","userType":"external","entrypoint":"cli","cwd":"/tmp/hangar-test-no1uSi/proj.x/work","sessionId":"d68027df-2635-4ed2-9c72-d977ac0e35b4","version":"2.1.197","gitBranch":"HEAD"}"#,
            r#"{"parentUuid":"eb72644a-871a-492c-a83f-c6d0a2a57ee9","isSidechain":false,"promptId":"e65700c8-8da9-4d8d-b959-01faf3eff575","type":"user","message":{"role":"user","content":"<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n            <command-args></command-args>"},"uuid":"54d88f7e-6533-451a-b109-b42d9c45e2f5","timestamp":"2026-12-04T17:01:11.858Z","userType":"external","entrypoint":"cli","cwd":"/tmp/hangar-test-no1uSi/proj.x/work","sessionId":"d68027df-2635-4ed2-9c72-d977ac0e35b4","version":"2.1.197","gitBranch":"HEAD"}"#,
            r#"{"parentUuid":"54d88f7e-6533-451a-b109-b42d9c45e2f5","isSidechain":false,"type":"system","subtype":"local_command","content":"<local-command-stdout></local-command-stdout>","level":"info","timestamp":"2026-12-04T17:01:11.956Z","uuid":"0da596aa-44c5-48a4-b988-b29c845ebe2a","isMeta":false,"userType":"external","entrypoint":"cli","cwd":"/tmp/hangar-test-no1uSi/proj.x/work","sessionId":"d68027df-2635-4ed2-9c72-d977ac0e35b4","version":"2.1.197","gitBranch":"HEAD"}"#,
        ]);
        let r = claude_reading(&cleared, true, 0).unwrap();
        assert_eq!(r.activity, Activity::Idle);
        assert_eq!(r.at_ms, 1_796_403_671_956);
        // The command alone, before its end is written, still runs.
        assert_eq!(
            activity(claude_reading(&cleared[..3], true, 0)),
            Activity::Working
        );
    }

    #[test]
    fn a_tool_use_stop_means_waiting_and_end_turn_means_idle() {
        let waiting = lines(&[r#"{"type":"assistant","message":{"stop_reason":"tool_use"}}"#]);
        assert_eq!(
            activity(claude_reading(&waiting, true, 0)),
            Activity::Waiting
        );
        let idle = lines(&[
            r#"{"type":"assistant","message":{"stop_reason":"end_turn","content":[{"type":"text","text":"done."}]}}"#,
            r#"{"type":"system","subtype":"fake-agent-exit"}"#,
        ]);
        assert_eq!(activity(claude_reading(&idle, true, 0)), Activity::Idle);
    }

    #[test]
    fn a_turn_that_ends_with_a_question_is_waiting_for_the_user() {
        let asked = lines(&[
            r#"{"type":"assistant","message":{"stop_reason":"end_turn","content":[{"type":"text","text":"question: which branch?"}]}}"#,
        ]);
        assert_eq!(activity(claude_reading(&asked, true, 0)), Activity::Waiting);
    }

    #[test]
    fn a_streaming_assistant_entry_without_a_stop_reason_is_still_working() {
        let l = lines(&[r#"{"type":"assistant","message":{"stop_reason":null}}"#]);
        assert_eq!(activity(claude_reading(&l, true, 0)), Activity::Working);
    }

    #[test]
    fn a_transcript_of_start_records_only_is_idle_but_a_cut_tail_says_nothing() {
        let l = lines(&[r#"{"type":"system","subtype":"fake-agent-start"}"#]);
        assert_eq!(activity(claude_reading(&l, true, 0)), Activity::Idle);
        assert_eq!(claude_reading(&l, false, 0), None);
        assert_eq!(claude_reading(&[], true, 0), None);
    }

    #[test]
    fn codex_turn_events_give_each_state() {
        let working = lines(&[
            r#"{"type":"session_meta","payload":{"id":"t"}}"#,
            r#"{"type":"event_msg","payload":{"type":"task_started"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user"}}"#,
        ]);
        assert_eq!(
            activity(codex_reading(&working, true, 0)),
            Activity::Working
        );
        let idle = lines(&[
            r#"{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":"answer: hi"}}"#,
            r#"{"type":"event_msg","payload":{"type":"fake_agent_exit"}}"#,
        ]);
        assert_eq!(activity(codex_reading(&idle, true, 0)), Activity::Idle);
        let asked = lines(&[
            r#"{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":"question: why?"}}"#,
        ]);
        assert_eq!(activity(codex_reading(&asked, true, 0)), Activity::Waiting);
        let approval = lines(&[
            r#"{"type":"response_item","payload":{"type":"function_call"}}"#,
            r#"{"type":"event_msg","payload":{"type":"exec_approval_request"}}"#,
        ]);
        assert_eq!(
            activity(codex_reading(&approval, true, 0)),
            Activity::Waiting
        );
        let fresh = lines(&[r#"{"type":"session_meta","payload":{"id":"t"}}"#]);
        assert_eq!(activity(codex_reading(&fresh, true, 0)), Activity::Idle);
    }

    #[test]
    fn an_unchanged_transcript_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("w");
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd = cwd.display().to_string();
        let folder = dir
            .path()
            .join("projects")
            .join(discovery::claude_slug(&discovery::canonical_cwd(&cwd)));
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("p1.jsonl");
        std::fs::write(&file, "{\"type\":\"user\",\"message\":{}}\n").unwrap();
        let mut w = TranscriptWatch::default();
        let r = w.read(&Provider::Claude, dir.path(), &cwd, Some("p1"));
        assert_eq!(activity(r), Activity::Working);
        let stamp = w.stamp;
        assert_eq!(
            activity(w.read(&Provider::Claude, dir.path(), &cwd, Some("p1"))),
            Activity::Working
        );
        assert_eq!(w.stamp, stamp);
        std::fs::write(
            &file,
            "{\"type\":\"user\",\"message\":{}}\n{\"type\":\"assistant\",\"message\":{\"stop_reason\":\"end_turn\"}}\n",
        )
        .unwrap();
        assert_eq!(
            activity(w.read(&Provider::Claude, dir.path(), &cwd, Some("p1"))),
            Activity::Idle
        );
        assert_eq!(w.read(&Provider::Claude, dir.path(), &cwd, None), None);
    }
}
