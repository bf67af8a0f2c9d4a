//! `hangar capture ID [--follow] [--json]`: read a session's captured API
//! traffic from `$HANGAR_HOME/capture/<session>/`.
//!
//! The files are local, so this reads them directly and never starts the
//! daemon or wakes a session. An ID is the session id or a unique prefix of
//! one. It only reads; it must never modify or remove a capture file.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use hangar_core::display;
use hangar_protocol::paths::Paths;
use serde_json::{Value, json};

/// The capture folder of the session `given` names.
fn session_dir(paths: &Paths, given: &str) -> anyhow::Result<(String, PathBuf)> {
    let root = paths.home.join("capture");
    let given = given.trim();
    if given.is_empty() {
        bail!("empty session id");
    }
    let mut matches: Vec<String> = std::fs::read_dir(&root)
        .map(|r| {
            r.filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(given))
                .collect()
        })
        .unwrap_or_default();
    matches.sort();
    if let Some(exact) = matches.iter().find(|m| *m == given) {
        return Ok((exact.clone(), root.join(exact)));
    }
    match matches.as_slice() {
        [] => bail!(
            "no capture for session {given:?} in {}: capture starts with the session's first API call \
             (claude and codex sessions, unless started with --no-capture or [proxy] enabled = false)",
            root.display()
        ),
        [one] => Ok((one.clone(), root.join(one))),
        many => bail!(
            "session id {given:?} is ambiguous: it matches {}; give more characters",
            many.join(", ")
        ),
    }
}

/// A session's capture files, oldest first: by date, and within a date the
/// rotated files (`<date>.<n>.jsonl`, n ascending) before the current one.
fn capture_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<(String, u64, PathBuf)> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(Result::ok)
                .map(|e| e.path())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.strip_suffix(".jsonl")?.to_owned();
            let (date, n) = match name.split_once('.') {
                Some((d, n)) => (d.to_owned(), n.parse().ok()?),
                None => (name, u64::MAX),
            };
            Some((date, n, p))
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, _, p)| p).collect()
}

fn events_in(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines().filter_map(|l| serde_json::from_str(l).ok())
}

/// One event for a person.
fn human_line(e: &Value) -> String {
    let ts = e["ts"].as_u64().unwrap_or(0);
    let secs = (ts / 1000) % 86_400;
    let clock = format!(
        "{:02}:{:02}:{:02}.{:03}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60,
        ts % 1000
    );
    let n = &e["exchange"];
    // Hosts, paths, stream data and errors come from the agent and the
    // model's servers: escaped (stream data as a body, its lines kept).
    let s = |v: &Value| display::name(v.as_str().unwrap_or("")).into_owned();
    match e["event"].as_str().unwrap_or("") {
        "request" => format!(
            "{clock} #{n} > {} https://{}{} ({} bytes)",
            s(&e["method"]),
            s(&e["host"]),
            s(&e["path"]),
            e["body_bytes"]
        ),
        "response" => format!("{clock} #{n} < {}", display::json(&e["status"].to_string())),
        "chunk" => format!(
            "{clock} #{n}   {}{}",
            display::body(e["data"].as_str().unwrap_or("").trim_end()),
            if e["truncated"] == true { " [cut]" } else { "" }
        ),
        "end" => format!(
            "{clock} #{n} end: {} chunk(s), {} bytes, {} ms; tokens in {} out {}{}",
            e["chunks"],
            e["bytes"],
            e["duration_ms"],
            e["usage"]["input_tokens"],
            e["usage"]["output_tokens"],
            e["error"]
                .as_str()
                .map(|x| format!("; error: {}", display::name(x)))
                .unwrap_or_default()
        ),
        "error" => format!("{clock} #{n} error: {}", s(&e["message"])),
        other => format!(
            "{clock} #{n} {}: {}",
            display::name(other),
            display::json(&e.to_string())
        ),
    }
}

/// `hangar capture`.
pub fn capture(paths: &Paths, json: bool, id: &str, follow: bool) -> anyhow::Result<ExitCode> {
    let (session, dir) = session_dir(paths, id)?;
    let files = capture_files(&dir);
    if !follow {
        let mut events = Vec::new();
        for f in &files {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read {}", f.display()))?;
            events.extend(events_in(&text));
        }
        if json {
            let doc = json!({
                "session": session,
                "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
                "events": events,
            });
            crate::human::print_json(&doc);
        } else {
            for e in &events {
                println!("{}", human_line(e));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    follow_files(&dir, json)
}

/// Print what is there, then every line as it is appended, until
/// interrupted. With `--json`, one event per line. Files are tracked by
/// inode, so a rotation (a rename) neither repeats nor loses lines.
fn follow_files(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    use std::os::unix::fs::MetadataExt;
    let mut read_up_to: std::collections::HashMap<u64, u64> = Default::default();
    let mut pending = String::new();
    let out = std::io::stdout();
    loop {
        for f in capture_files(dir) {
            let Ok(mut file) = std::fs::File::open(&f) else {
                continue;
            };
            let Ok(meta) = file.metadata() else {
                continue;
            };
            let pos = read_up_to.entry(meta.ino()).or_insert(0);
            if meta.len() <= *pos {
                continue;
            }
            file.seek(SeekFrom::Start(*pos))?;
            let mut buf = Vec::new();
            let n = file.read_to_end(&mut buf)?;
            *pos += n as u64;
            pending.push_str(&String::from_utf8_lossy(&buf));
        }
        while let Some(i) = pending.find('\n') {
            let line: String = pending.drain(..=i).collect();
            let Ok(e) = serde_json::from_str::<Value>(line.trim()) else {
                continue;
            };
            let mut o = out.lock();
            let printed = if json {
                writeln!(o, "{}", display::json(&e.to_string()))
            } else {
                writeln!(o, "{}", human_line(&e))
            };
            if printed.and_then(|_| o.flush()).is_err() {
                // The reader went away (a closed pipe): stop quietly.
                return Ok(ExitCode::SUCCESS);
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_files_come_before_the_current_file_of_their_date() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "2025-01-02.jsonl",
            "2025-01-01.jsonl",
            "2025-01-02.2.jsonl",
            "2025-01-02.1.jsonl",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        let names: Vec<String> = capture_files(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "2025-01-01.jsonl",
                "2025-01-02.1.jsonl",
                "2025-01-02.2.jsonl",
                "2025-01-02.jsonl"
            ]
        );
    }

    #[test]
    fn events_read_as_lines_a_person_can_follow() {
        let e = json!({"ts": 3_723_004u64, "exchange": 7, "event": "response", "status": 200});
        assert_eq!(human_line(&e), "01:02:03.004 #7 < 200");
    }
}
