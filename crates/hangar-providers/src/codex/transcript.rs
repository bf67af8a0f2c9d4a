//! Codex's rollouts: `sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`
//! under `CODEX_HOME`, dated by the LOCAL day; the `session_meta` entry's
//! payload names the thread and folder, `response_item`s hold the messages
//! and `event_msg`s the turn's events. Shapes read from codex 0.171.0's own
//! files (docs/src/cli-facts.md).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use hangar_core::activity::Activity;
use hangar_core::ledger::TranscriptFacts;
use serde_json::Value;

use crate::transcript::discovery::{TranscriptIndex, keep_newest, str_at, utc_date};
use crate::transcript::messages::{Message, content_text, timestamp};
use crate::transcript::turns::TurnFacts;

/// The date folders a session's rollouts can appear in.
///
/// Codex names its date folders by the LOCAL date, so the days are taken in
/// both UTC and local time: one day either side of the session's start
/// (its first rollout) and of now (a rollout begun since). The days in
/// between are not listed, which keeps a long-lived session's poll to at
/// most a dozen folders; a rollout begun on such a day was seen while it
/// was "now", and an open one is found through the process anyway.
pub fn dirs(
    root: &Path,
    started_ms: u64,
    now_ms: u64,
    local_offset_ms: &dyn Fn(u64) -> i64,
) -> Vec<PathBuf> {
    const DAY: i64 = 86_400_000;
    let mut days = Vec::new();
    for anchor in [started_ms, now_ms.max(started_ms)] {
        for offset in [0, local_offset_ms(anchor)] {
            for shift in [-DAY, 0, DAY] {
                let at = (anchor as i64).saturating_add(offset + shift).max(0) as u64;
                let day = utc_date(at);
                if !days.contains(&day) {
                    days.push(day);
                }
            }
        }
    }
    days.sort();
    days.into_iter()
        .map(|(y, m, d)| {
            root.join("sessions")
                .join(format!("{y:04}"))
                .join(format!("{m:02}"))
                .join(format!("{d:02}"))
        })
        .collect()
}

pub fn is_rollout_name(name: &str) -> bool {
    name.starts_with("rollout-") && name.ends_with(".jsonl")
}

/// A codex rollout: the `session_meta` entry's payload has `id` and `cwd`.
pub fn entry_facts(v: &Value) -> Option<TranscriptFacts> {
    if v.get("type").and_then(Value::as_str) != Some("session_meta") {
        return None;
    }
    let p = v.get("payload")?;
    Some(TranscriptFacts {
        id: str_at(p, "id")?,
        cwd: str_at(p, "cwd"),
        modified_ms: 0,
    })
}

/// Any rollout under `sessions/` whose name ends in the id (the newest).
pub fn find(root: &Path, psid: &str) -> Option<PathBuf> {
    let suffix = format!("-{psid}");
    let mut best: Option<(SystemTime, PathBuf)> = None;
    each_rollout(root, |stem, e| {
        if stem.ends_with(&suffix) {
            keep_newest(&mut best, e);
        }
    });
    best.map(|(_, p)| p)
}

/// Every rollout by the ids its name can end in, in one walk.
pub fn index(root: &Path) -> TranscriptIndex {
    let mut newest: HashMap<String, Option<(SystemTime, PathBuf)>> = HashMap::new();
    each_rollout(root, |stem, e| {
        // `rollout-<time>-<id>`: the id is what follows one of its
        // dashes, and the time has dashes too, so each is a candidate
        // (exactly the names `find` would match).
        for (i, _) in stem.match_indices('-') {
            keep_newest(newest.entry(stem[i + 1..].to_owned()).or_default(), e);
        }
    });
    TranscriptIndex {
        newest: newest
            .into_iter()
            .filter_map(|(id, best)| Some((id, best?)))
            .collect(),
    }
}

/// Every codex rollout under `root/sessions` (`rollout-….jsonl`, at any
/// depth), with its name without `.jsonl`.
fn each_rollout(root: &Path, mut f: impl FnMut(&str, &fs::DirEntry)) {
    let mut stack = vec![root.join("sessions")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
                continue;
            }
            let name = e.file_name();
            let stem = name
                .to_str()
                .filter(|n| n.starts_with("rollout-"))
                .and_then(|n| n.strip_suffix(".jsonl"));
            if let Some(stem) = stem {
                f(stem, &e);
            }
        }
    }
}

/// A codex `response_item`: a message, a function call or its output.
pub fn message(v: &Value) -> Option<Message> {
    if v.get("type").and_then(Value::as_str)? != "response_item" {
        return None;
    }
    let p = v.get("payload")?;
    let (role, text) = match p.get("type").and_then(Value::as_str)? {
        "message" => (
            p.get("role").and_then(Value::as_str)?.to_owned(),
            content_text(p.get("content")?)?,
        ),
        "function_call" => (
            "assistant".to_owned(),
            format!(
                "[tool use: {}]",
                p.get("name").and_then(Value::as_str).unwrap_or("?")
            ),
        ),
        "function_call_output" => (
            "user".to_owned(),
            format!(
                "[tool result: {}]",
                p.get("output").and_then(Value::as_str).unwrap_or_default()
            ),
        ),
        _ => return None,
    };
    Some(Message {
        role,
        text,
        timestamp: timestamp(v),
    })
}

/// A user `message` is a prompt; the turn's events give the activity.
pub fn turn(lines: &[String]) -> TurnFacts {
    let mut facts = TurnFacts {
        prompted: false,
        activity: Activity::Unknown,
    };
    for line in lines {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        let p = v.get("payload").cloned().unwrap_or(Value::Null);
        let ptype = p.get("type").and_then(Value::as_str).unwrap_or("");
        match (kind, ptype) {
            ("response_item", "message")
                if p.get("role").and_then(Value::as_str) == Some("user") =>
            {
                facts.prompted = true;
                facts.activity = Activity::Working;
            }
            ("event_msg", "task_started") | ("response_item", "function_call_output") => {
                facts.activity = Activity::Working
            }
            ("event_msg", "exec_approval_request") => facts.activity = Activity::Waiting,
            ("event_msg", "task_complete") => facts.activity = Activity::Idle,
            _ => {}
        }
    }
    facts
}
