//! Usage after a restart: each session's token usage and errors rebuilt
//! from the `end` and `error` events of its capture files, so `hangar ls`
//! and `hangar status` do not drop to zero every time the daemon starts.
//!
//! The capture files are the record; nothing else is persisted. Only
//! events written before this daemon started are counted (`before_ms`):
//! the running proxy counts its own turns live, and counting them here too
//! would count them twice. It must never fail the daemon's start: an
//! unreadable file or line is skipped.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use super::usage::Usage;

/// What the capture files say about one session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replayed {
    pub usage: Usage,
    /// The latest error and when it happened (ms since the epoch).
    pub last_error: Option<(u64, String)>,
}

/// Every session's totals under `root` (`$HANGAR_HOME/capture`), from
/// events stamped before `before_ms`. Keyed by the session folder's name.
pub fn replay(root: &Path, before_ms: u64) -> HashMap<String, Replayed> {
    let mut out = HashMap::new();
    let Ok(dirs) = std::fs::read_dir(root) else {
        return out;
    };
    for dir in dirs.filter_map(Result::ok) {
        let Ok(files) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        let mut totals = Replayed::default();
        for file in files.filter_map(Result::ok) {
            let path = file.path();
            if path.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            if let Ok(f) = std::fs::File::open(&path) {
                read_events(std::io::BufReader::new(f), before_ms, &mut totals);
            }
        }
        if totals != Replayed::default() {
            out.insert(dir.file_name().to_string_lossy().into_owned(), totals);
        }
    }
    out
}

/// Add the turns of one capture file to `totals`.
fn read_events(reader: impl BufRead, before_ms: u64, totals: &mut Replayed) {
    for line in reader.split(b'\n').map_while(Result::ok) {
        // Chunks are most of a capture: skip them without parsing.
        let is_turn =
            contains(&line, br#""event":"end""#) || contains(&line, br#""event":"error""#);
        if !is_turn {
            continue;
        }
        let Ok(event) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let ts = event["ts"].as_u64().unwrap_or(0);
        if ts >= before_ms {
            continue;
        }
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        let error = match event["event"].as_str() {
            Some("end") => {
                let u = &event["usage"];
                totals.usage.add(&Usage {
                    input_tokens: n(&u["input_tokens"]),
                    output_tokens: n(&u["output_tokens"]),
                    requests: n(&u["requests"]).max(1),
                    errors: n(&u["errors"]),
                });
                event["error"].as_str().map(str::to_owned)
            }
            // The upstream could not be reached: a failed request.
            Some("error") => {
                totals.usage.add(&Usage {
                    requests: 1,
                    errors: 1,
                    ..Default::default()
                });
                event["message"].as_str().map(str::to_owned)
            }
            _ => None,
        };
        if let Some(message) = error
            && totals.last_error.as_ref().is_none_or(|(at, _)| *at <= ts)
        {
            totals.last_error = Some((ts, message));
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(root: &Path, session: &str, file: &str, events: &[Value]) {
        let dir = root.join(session);
        std::fs::create_dir_all(&dir).unwrap();
        let text: String = events.iter().map(|e| format!("{e}\n")).collect();
        std::fs::write(dir.join(file), text).unwrap();
    }

    fn end(ts: u64, input: u64, output: u64, error: Option<&str>) -> Value {
        json!({"event": "end", "ts": ts, "session": "s", "status": 200,
               "usage": {"input_tokens": input, "output_tokens": output, "requests": 1,
                         "errors": u64::from(error.is_some())},
               "error": error})
    }

    #[test]
    fn usage_is_summed_over_every_capture_file_of_a_session() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "s",
            "2026-11-29.jsonl",
            &[
                json!({"event": "request", "ts": 1, "body": "\"event\":\"end\""}),
                json!({"event": "chunk", "ts": 2, "data": "x"}),
                end(3, 10, 5, None),
            ],
        );
        write(
            dir.path(),
            "s",
            "2026-11-30.jsonl",
            &[end(
                7,
                1,
                2,
                Some("the response was cut off before its end"),
            )],
        );
        write(
            dir.path(),
            "s",
            "2026-11-30.1.jsonl",
            &[end(5, 100, 50, None)],
        );
        write(dir.path(), "t", "2026-11-30.jsonl", &[end(4, 3, 3, None)]);
        let all = replay(dir.path(), u64::MAX);
        assert_eq!(
            all["s"].usage,
            Usage {
                input_tokens: 111,
                output_tokens: 57,
                requests: 3,
                errors: 1
            }
        );
        assert_eq!(
            all["s"].last_error,
            Some((7, "the response was cut off before its end".to_owned()))
        );
        assert_eq!(all["t"].usage.requests, 1);
        assert_eq!(all["t"].last_error, None);
    }

    #[test]
    fn an_unreachable_upstream_counts_a_failed_request_with_its_message() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "s",
            "d.jsonl",
            &[
                json!({"event": "error", "ts": 9, "message": "hangar proxy: upstream failed: refused"}),
            ],
        );
        let all = replay(dir.path(), u64::MAX);
        assert_eq!((all["s"].usage.requests, all["s"].usage.errors), (1, 1));
        assert_eq!(
            all["s"].last_error.as_ref().map(|(_, m)| m.as_str()),
            Some("hangar proxy: upstream failed: refused")
        );
    }

    #[test]
    fn turns_recorded_after_the_daemon_started_are_left_to_the_live_count() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "s",
            "d.jsonl",
            &[end(10, 1, 1, None), end(20, 5, 5, None)],
        );
        let all = replay(dir.path(), 20);
        assert_eq!(all["s"].usage.requests, 1);
        assert_eq!(all["s"].usage.input_tokens, 1);
    }

    #[test]
    fn garbage_lines_other_files_and_a_missing_root_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let sdir = dir.path().join("s");
        std::fs::create_dir_all(&sdir).unwrap();
        std::fs::write(
            sdir.join("d.jsonl"),
            "{\"event\":\"end\", broken\n\u{0}\u{1}\n",
        )
        .unwrap();
        std::fs::write(sdir.join("notes.txt"), format!("{}\n", end(1, 9, 9, None))).unwrap();
        assert!(replay(dir.path(), u64::MAX).is_empty());
        assert!(replay(&dir.path().join("missing"), u64::MAX).is_empty());
    }
}
