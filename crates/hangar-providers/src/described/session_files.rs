//! A described CLI's session files (`[session_files]`): found under its
//! state folder by their glob, and read into the facts the identity proof
//! (`hangar_core::found_identity`) and the activity reading need.
//!
//! Reading a file never decides anything: a file is a candidate, and only
//! `found_identity::prove` says whether it is a session's own.

use std::path::{Path, PathBuf};

use hangar_core::activity::Activity;
use hangar_core::found_identity::FoundFile;
use serde_json::Value;

use super::format::{FileFormat, SessionFiles};

/// The files under `root` that `glob` names (`*` within one segment), in
/// name order.
pub fn matching_files(root: &Path, glob: &str) -> Vec<PathBuf> {
    let mut found = vec![root.to_path_buf()];
    for segment in glob.split('/').filter(|s| !s.is_empty()) {
        let mut next = Vec::new();
        for dir in &found {
            if !segment.contains('*') {
                let p = dir.join(segment);
                if p.exists() {
                    next.push(p);
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<_> = entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| wildcard(segment, n)))
                .map(|e| e.path())
                .collect();
            names.sort();
            next.extend(names);
        }
        found = next;
    }
    found.retain(|p| p.is_file());
    found
}

/// Whether `name` matches `pattern`, where `*` matches any run of
/// characters.
pub fn wildcard(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == name;
    }
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

/// The documents of a file: the one JSON document, or each JSON line
/// (lines that do not parse, such as a line being written, are skipped).
fn documents(format: FileFormat, text: &str) -> Vec<Value> {
    match format {
        FileFormat::Json => serde_json::from_str(text).into_iter().collect(),
        FileFormat::Jsonl => text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    }
}

/// The first value any document holds at `pointer`.
fn first_at<'v>(docs: &'v [Value], pointer: &str) -> Option<&'v Value> {
    docs.iter().find_map(|d| d.pointer(pointer))
}

/// The conversation's entries: the array at `entries` in a `json` file,
/// every line of a `jsonl` one.
fn entries<'v>(rule: &SessionFiles, docs: &'v [Value]) -> Vec<&'v Value> {
    match (rule.format, &rule.entries) {
        (FileFormat::Json, Some(p)) => first_at(docs, p)
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        (FileFormat::Json, None) => Vec::new(),
        (FileFormat::Jsonl, Some(p)) => docs.iter().filter_map(|d| d.pointer(p)).collect(),
        (FileFormat::Jsonl, None) => docs.iter().collect(),
    }
}

/// A time field: RFC 3339 text or ms since the epoch.
fn time_ms(v: &Value) -> Option<u64> {
    if let Some(ms) = v.as_u64() {
        return Some(ms);
    }
    let at: jiff::Timestamp = v.as_str()?.parse().ok()?;
    u64::try_from(at.as_millisecond()).ok()
}

/// A prompt's text: a string, or the `text` of each part of an array.
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).or(p.as_str()))
                .collect();
            (!texts.is_empty()).then(|| texts.join(""))
        }
        _ => None,
    }
}

/// What one session file says, for the identity proof; `file_ms`: the
/// file's own time, taken when the file names no start. `None` when it
/// holds no id (yet).
pub fn read_found(rule: &SessionFiles, path: &Path, text: &str, file_ms: u64) -> Option<FoundFile> {
    let docs = documents(rule.format, text);
    let id = if rule.id == super::format::ID_IS_FILE_STEM {
        path.file_stem()?.to_str()?.to_owned()
    } else {
        first_at(&docs, &rule.id)?.as_str()?.to_owned()
    };
    let field = |p: &Option<String>| p.as_deref().and_then(|p| first_at(&docs, p));
    let prompts = match &rule.turns {
        Some(turns) => entries(rule, &docs)
            .into_iter()
            .filter(|e| {
                e.pointer(&turns.kind)
                    .and_then(Value::as_str)
                    .is_some_and(|k| turns.prompt.iter().any(|p| p == k))
            })
            .filter_map(|e| {
                let text = turns.text.as_deref().unwrap_or("/text");
                e.pointer(text).and_then(text_of)
            })
            .collect(),
        None => Vec::new(),
    };
    Some(FoundFile {
        id,
        cwd: field(&rule.cwd).and_then(Value::as_str).map(str::to_owned),
        pid: field(&rule.pid)
            .and_then(Value::as_u64)
            .and_then(|p| u32::try_from(p).ok()),
        started_ms: field(&rule.started).and_then(time_ms).unwrap_or(file_ms),
        prompts,
    })
}

/// Where the conversation is in its turn, from its session file: its last
/// entry that is a prompt (`Working`: the answer has not come) or an answer
/// (`Idle`); `Unknown` without one.
pub fn turn_activity(rule: &SessionFiles, text: &str) -> Activity {
    let Some(turns) = &rule.turns else {
        return Activity::Unknown;
    };
    let docs = documents(rule.format, text);
    entries(rule, &docs)
        .into_iter()
        .rev()
        .find_map(|e| {
            let kind = e.pointer(&turns.kind)?.as_str()?;
            if turns.prompt.iter().any(|p| p == kind) {
                Some(Activity::Working)
            } else if turns.answer.iter().any(|a| a == kind) {
                Some(Activity::Idle)
            } else {
                None
            }
        })
        .unwrap_or(Activity::Unknown)
}

/// Whether the entries in `text` hold a person's prompt (a turn began).
pub fn holds_a_prompt(rule: &SessionFiles, text: &str) -> bool {
    let Some(turns) = &rule.turns else {
        return false;
    };
    let docs = documents(rule.format, text);
    entries(rule, &docs).into_iter().any(|e| {
        e.pointer(&turns.kind)
            .and_then(Value::as_str)
            .is_some_and(|k| turns.prompt.iter().any(|p| p == k))
    })
}

/// The session file of conversation `id` under `root`: one whose name
/// holds the id is looked at first (Qwen Code's `<id>.jsonl`), then every
/// other the glob matches.
pub fn file_of(rule: &SessionFiles, root: &Path, id: &str) -> Option<PathBuf> {
    let mut files = matching_files(root, &rule.glob);
    files.sort_by_key(|p| {
        !p.file_name()
            .is_some_and(|n| n.to_string_lossy().contains(id))
    });
    files.into_iter().find(|p| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|text| read_found(rule, p, &text, 0))
            .is_some_and(|f| f.id == id)
    })
}

/// Whether a conversation `id` is recorded under `root` so that the CLI
/// resumes it: a file holding its id and, where turns are described, one
/// of them (Gemini CLI 0.61 writes the file at start but resumes only one
/// holding a message: `hasResumableContent`; docs/clis/gemini.md).
pub fn conversation_recorded(rule: &SessionFiles, root: &Path, id: &str) -> bool {
    matching_files(root, &rule.glob).iter().any(|p| {
        std::fs::read_to_string(p).ok().is_some_and(|text| {
            read_found(rule, p, &text, 0).is_some_and(|f| f.id == id)
                && (rule.turns.is_none() || turn_activity(rule, &text) != Activity::Unknown)
        })
    })
}

/// Every conversation recorded under `root` in a file changed at or after
/// `since_ms`: the candidates the daemon's identity watch hands to
/// `found_identity::prove`. A file that names no start is taken as started
/// when it was created; where the file system cannot say, at 0, which no
/// proof accepts (its modification time would let an older outside
/// conversation, written to again, pass as new).
pub fn candidates(rule: &SessionFiles, root: &Path, since_ms: u64) -> Vec<FoundFile> {
    let ms = |t: std::io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_millis()).ok())
    };
    matching_files(root, &rule.glob)
        .into_iter()
        .filter_map(|p| {
            let meta = std::fs::metadata(&p).ok()?;
            if ms(meta.modified())? < since_ms {
                return None;
            }
            let text = std::fs::read_to_string(&p).ok()?;
            read_found(rule, &p, &text, ms(meta.created()).unwrap_or(0))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(format: FileFormat) -> SessionFiles {
        SessionFiles {
            glob: "tmp/*/chats/session-*.json".into(),
            format,
            id: "/sessionId".into(),
            cwd: Some("/cwd".into()),
            pid: Some("/pid".into()),
            started: Some("/startTime".into()),
            entries: match format {
                FileFormat::Json => Some("/messages".into()),
                FileFormat::Jsonl => None,
            },
            turns: Some(super::super::format::Turns {
                kind: "/type".into(),
                prompt: vec!["user".into()],
                answer: vec!["gemini".into()],
                text: Some("/content".into()),
            }),
        }
    }

    #[test]
    fn a_json_session_file_gives_its_id_folder_process_start_and_prompts() {
        let text = r#"{"sessionId":"s-1","cwd":"/w","pid":42,"startTime":"2026-12-07T16:00:00.000Z",
            "messages":[{"type":"user","content":[{"text":"fix "},{"text":"it"}]},{"type":"gemini","content":"ok"}]}"#;
        let f = read_found(&rule(FileFormat::Json), Path::new("s.json"), text, 7).unwrap();
        assert_eq!(f.id, "s-1");
        assert_eq!(f.cwd.as_deref(), Some("/w"));
        assert_eq!(f.pid, Some(42));
        assert_eq!(f.started_ms, 1_796_659_200_000);
        assert_eq!(f.prompts, ["fix it"]);
        assert_eq!(turn_activity(&rule(FileFormat::Json), text), Activity::Idle);
    }

    #[test]
    fn a_jsonl_file_takes_each_field_from_the_first_line_holding_it_and_skips_a_torn_line() {
        let text = "{\"sessionId\":\"s-2\"}\n{\"type\":\"user\",\"content\":\"go\",\"cwd\":\"/w\"}\n{\"type\":\"gemi";
        let f = read_found(&rule(FileFormat::Jsonl), Path::new("s.jsonl"), text, 9).unwrap();
        assert_eq!((f.id.as_str(), f.cwd.as_deref()), ("s-2", Some("/w")));
        assert_eq!(f.pid, None);
        assert_eq!(f.started_ms, 9, "no start field: the file's own time");
        assert_eq!(f.prompts, ["go"]);
        assert_eq!(
            turn_activity(&rule(FileFormat::Jsonl), text),
            Activity::Working
        );
        assert_eq!(
            read_found(&rule(FileFormat::Jsonl), Path::new("s.jsonl"), "{}", 0),
            None
        );
    }

    #[test]
    fn the_glob_matches_within_one_segment_only() {
        let root = tempfile::tempdir().unwrap();
        let chats = root.path().join("tmp/abc/chats");
        std::fs::create_dir_all(&chats).unwrap();
        std::fs::write(
            chats.join("session-1-aa.json"),
            r#"{"sessionId":"aa","messages":[{"type":"user","content":"hi"}]}"#,
        )
        .unwrap();
        std::fs::write(chats.join("session-2-cc.json"), r#"{"sessionId":"cc"}"#).unwrap();
        std::fs::write(chats.join("other.json"), "{}").unwrap();
        std::fs::create_dir_all(root.path().join("tmp/abc/deeper/chats")).unwrap();
        let found = matching_files(root.path(), "tmp/*/chats/session-*.json");
        assert_eq!(
            found,
            [
                chats.join("session-1-aa.json"),
                chats.join("session-2-cc.json")
            ]
        );
        let rule = rule(FileFormat::Json);
        assert!(conversation_recorded(&rule, root.path(), "aa"));
        assert!(!conversation_recorded(&rule, root.path(), "bb"));
        // A file holding the id but no turn yet is not resumable.
        assert!(!conversation_recorded(&rule, root.path(), "cc"));
        let all = candidates(&rule, root.path(), 0);
        assert_eq!(
            all.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
            ["aa", "cc"]
        );
        assert!(candidates(&rule, root.path(), u64::MAX).is_empty());
        assert!(wildcard("a*b*c", "axxbyyc"));
        assert!(!wildcard("a*b*c", "axxc"));
        assert!(!wildcard("ab*ba", "aba"));
    }
}
