//! The capture files: one JSON line per event of every intercepted exchange,
//! in `$HANGAR_HOME/capture/<session>/<date>.jsonl`.
//!
//! Lines are written by one writer thread fed through a channel, so a
//! streamed response is never held back by the disk: the proxy hands each
//! chunk over and forwards it at once. Only selected headers are kept (never
//! authorization, cookies, API keys), bodies are capped, secrets that look
//! like keys or bearer tokens are redacted, a file is rotated past
//! `max_capture_bytes`, and a session keeps at most `max_files` files.
//!
//! It must never write a credential, and never block the traffic it records.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde_json::{Value, json};

/// Size limits, from `[proxy]` in config.toml.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// A capture file is rotated once it would grow past this.
    pub max_file_bytes: u64,
    /// Files kept per session; the oldest go first.
    pub max_files: usize,
    /// Most bytes of a request body, and of one response's chunks, recorded.
    pub max_body_bytes: usize,
}

enum Job {
    Line { session: String, line: String },
    Close(String),
}

/// Hands capture lines to the writer thread. Cheap to clone.
#[derive(Clone)]
pub struct Sink {
    tx: mpsc::Sender<Job>,
    pub limits: Limits,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink")
            .field("limits", &self.limits)
            .finish()
    }
}

impl Sink {
    /// Start the writer thread for captures under `root`
    /// (`$HANGAR_HOME/capture`).
    pub fn start(root: PathBuf, limits: Limits) -> std::io::Result<Sink> {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("hangar-capture".into())
            .spawn(move || {
                let mut writer = Writer {
                    root,
                    limits,
                    open: HashMap::new(),
                };
                for job in rx {
                    match job {
                        Job::Line { session, line } => {
                            if let Err(e) = writer.write(&session, &line) {
                                tracing::warn!("capture of {session}: {e}");
                            }
                        }
                        Job::Close(session) => {
                            writer.open.remove(&session);
                        }
                    }
                }
            })?;
        Ok(Sink { tx, limits })
    }

    /// Record one event of `session`. `ts` and `session` are added.
    pub fn record(&self, session: &str, mut event: Value) {
        if let Some(obj) = event.as_object_mut() {
            obj.insert("ts".into(), json!(hangar_clock::now_ms()));
            obj.insert("session".into(), json!(session));
        }
        let _ = self.tx.send(Job::Line {
            session: session.to_owned(),
            line: event.to_string(),
        });
    }

    /// Let go of a session's open file (its process ended).
    pub fn close(&self, session: &str) {
        let _ = self.tx.send(Job::Close(session.to_owned()));
    }
}

struct OpenFile {
    date: String,
    file: File,
    size: u64,
}

struct Writer {
    root: PathBuf,
    limits: Limits,
    open: HashMap<String, OpenFile>,
}

impl Writer {
    fn write(&mut self, session: &str, line: &str) -> std::io::Result<()> {
        let date = today();
        let dir = self.root.join(safe_name(session));
        let needed = line.len() as u64 + 1;
        let reopen = match self.open.get(session) {
            None => true,
            Some(f) => {
                f.date != date || (f.size > 0 && f.size + needed > self.limits.max_file_bytes)
            }
        };
        if reopen {
            self.open.remove(session);
            hangar_protocol::paths::ensure_private_dir(&dir)?;
            let path = dir.join(format!("{date}.jsonl"));
            let existing = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if existing > 0 && existing + needed > self.limits.max_file_bytes {
                rotate(&dir, &date)?;
            }
            let file = open_append(&path)?;
            let size = file.metadata()?.len();
            prune(&dir, self.limits.max_files.max(1))?;
            self.open
                .insert(session.to_owned(), OpenFile { date, file, size });
        }
        let Some(f) = self.open.get_mut(session) else {
            return Ok(());
        };
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        // One write per line: a follower never reads half a line.
        f.file.write_all(&buf)?;
        f.size += needed;
        Ok(())
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// `<date>.jsonl` -> `<date>.<n>.jsonl`, n the next free number.
fn rotate(dir: &Path, date: &str) -> std::io::Result<()> {
    let current = dir.join(format!("{date}.jsonl"));
    let mut n = 1;
    loop {
        let to = dir.join(format!("{date}.{n}.jsonl"));
        if !to.exists() {
            return std::fs::rename(current, to);
        }
        n += 1;
    }
}

/// Keep the newest `keep` capture files of a session.
fn prune(dir: &Path, keep: usize) -> std::io::Result<()> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= keep {
        return Ok(());
    }
    files.sort();
    let excess = files.len() - keep;
    for (_, path) in files.into_iter().take(excess) {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Session ids are uuids; anything else is made safe to use as a folder.
fn safe_name(session: &str) -> String {
    session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The folder holding a session's captures.
pub fn session_dir(root: &Path, session: &str) -> PathBuf {
    root.join(safe_name(session))
}

/// Today's date, UTC, `YYYY-MM-DD`.
pub fn today() -> String {
    let (y, m, d) = super::ca::utc_date(hangar_clock::now_ms());
    format!("{y:04}-{m:02}-{d:02}")
}

/// Whether a header is kept in a capture. Anything that could carry a
/// credential is refused first, whatever else matches.
pub fn header_is_kept(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let secret = [
        "auth",
        "cookie",
        "key",
        "token",
        "secret",
        "password",
        "session-token",
    ];
    if secret.iter().any(|s| n.contains(s)) {
        return false;
    }
    const EXACT: &[&str] = &[
        "accept",
        "user-agent",
        "request-id",
        "x-request-id",
        "retry-after",
        "originator",
        "version",
        "session_id",
        "conversation_id",
        "x-claude-code-session-id",
        "x-app",
    ];
    const PREFIXES: &[&str] = &[
        "content-",
        "anthropic-",
        "openai-",
        "x-stainless-",
        "x-ratelimit-",
        "x-codex-",
    ];
    EXACT.contains(&n.as_str()) || PREFIXES.iter().any(|p| n.starts_with(p))
}

/// The kept headers of a message, values redacted.
pub fn kept_headers(headers: &hyper::HeaderMap) -> Value {
    let mut out = serde_json::Map::new();
    for (name, value) in headers {
        if header_is_kept(name.as_str()) {
            let v = String::from_utf8_lossy(value.as_bytes());
            out.insert(name.as_str().to_owned(), json!(redact(&v)));
        }
    }
    Value::Object(out)
}

/// A body for the capture: at most `cap` bytes, as text, secrets redacted.
/// Returns the text and whether it was cut.
pub fn body_text(bytes: &[u8], cap: usize) -> (String, bool) {
    let cut = bytes.len() > cap;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(cap)]);
    (redact(&text).into_owned(), cut)
}

const REDACTED: &str = "[redacted]";

/// JSON keys whose string values are secrets.
const SECRET_KEYS: &[&str] = &[
    "api_key",
    "apikey",
    "api-key",
    "access_token",
    "refresh_token",
    "id_token",
    "authorization",
    "password",
    "client_secret",
    "secret",
];

/// Blank out what looks like a credential: `sk-...` keys, `Bearer ...`
/// tokens, and the string values of secret-named JSON keys.
pub fn redact(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    let token_char = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.';
    while i < b.len() {
        // sk-... API keys (Anthropic sk-ant-..., OpenAI sk-proj-..., sk-...).
        if b[i..].starts_with(b"sk-") && (i == 0 || !token_char(b[i - 1])) {
            let end = i + 3 + b[i + 3..].iter().take_while(|&&c| token_char(c)).count();
            if end - i >= 20 {
                let o = out.get_or_insert_with(String::new);
                o.push_str(&text[copied..i]);
                o.push_str("sk-");
                o.push_str(REDACTED);
                copied = end;
                i = end;
                continue;
            }
        }
        // Bearer <token>.
        if b.len() - i > 7 && b[i..i + 7].eq_ignore_ascii_case(b"bearer ") {
            let start = i + 7;
            let end = start + b[start..].iter().take_while(|&&c| token_char(c)).count();
            if end - start >= 8 {
                let o = out.get_or_insert_with(String::new);
                o.push_str(&text[copied..start]);
                o.push_str(REDACTED);
                copied = end;
                i = end;
                continue;
            }
        }
        // "secret_key": "value"
        if b[i] == b'"'
            && let Some((value_start, value_end)) = secret_value_at(b, i)
        {
            let o = out.get_or_insert_with(String::new);
            o.push_str(&text[copied..value_start]);
            o.push_str(REDACTED);
            copied = value_end;
            i = value_end;
            continue;
        }
        i += 1;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
    }
}

/// At a `"` opening a JSON key: if the key is secret-named and its value is
/// a string, the byte range of that string's contents.
fn secret_value_at(b: &[u8], quote: usize) -> Option<(usize, usize)> {
    let key_end = quote + 1 + b[quote + 1..].iter().position(|&c| c == b'"')?;
    let key = std::str::from_utf8(&b[quote + 1..key_end]).ok()?;
    if !SECRET_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key)) {
        return None;
    }
    let mut j = key_end + 1;
    while j < b.len() && b[j].is_ascii_whitespace() {
        j += 1;
    }
    if b.get(j) != Some(&b':') {
        return None;
    }
    j += 1;
    while j < b.len() && b[j].is_ascii_whitespace() {
        j += 1;
    }
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let start = j + 1;
    let mut k = start;
    while k < b.len() {
        match b[k] {
            b'\\' => k += 2,
            b'"' => return Some((start, k)),
            _ => k += 1,
        }
    }
    Some((start, b.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_file_bytes: u64, max_files: usize) -> Limits {
        Limits {
            max_file_bytes,
            max_files,
            max_body_bytes: 1024,
        }
    }

    #[test]
    fn credential_headers_are_never_kept() {
        for h in [
            "authorization",
            "Authorization",
            "proxy-authorization",
            "cookie",
            "set-cookie",
            "x-api-key",
            "anthropic-api-key",
            "openai-organization-token",
        ] {
            assert!(!header_is_kept(h), "{h}");
        }
        for h in [
            "content-type",
            "anthropic-version",
            "user-agent",
            "session_id",
        ] {
            assert!(header_is_kept(h), "{h}");
        }
    }

    #[test]
    fn keys_tokens_and_secret_fields_are_redacted() {
        let t = r#"{"key":"sk-ant-api03-abcdefghijklmnopqrstuvwxyz","api_key" : "hunter2\"x","note":"Bearer abcdefgh12345 ok","text":"ask-me sk-short"}"#;
        let r = redact(t);
        assert!(!r.contains("abcdefghijklmnop"), "{r}");
        assert!(!r.contains("hunter2"), "{r}");
        assert!(!r.contains("abcdefgh12345"), "{r}");
        assert!(r.contains("ask-me sk-short"), "{r}");
        assert!(r.contains(r#""note":"Bearer [redacted] ok""#), "{r}");
        assert_eq!(redact("plain text é"), "plain text é");
    }

    #[test]
    fn bodies_are_capped() {
        let (t, cut) = body_text(b"0123456789", 4);
        assert_eq!((t.as_str(), cut), ("0123", true));
        let (t, cut) = body_text(b"01", 4);
        assert_eq!((t.as_str(), cut), ("01", false));
    }

    fn wait_for_lines(dir: &Path, want: usize) -> Vec<PathBuf> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map(|r| r.filter_map(Result::ok).map(|e| e.path()).collect())
                .unwrap_or_default();
            files.sort();
            let lines: usize = files
                .iter()
                .map(|f| {
                    std::fs::read_to_string(f)
                        .unwrap_or_default()
                        .lines()
                        .count()
                })
                .sum();
            if lines >= want || std::time::Instant::now() > deadline {
                return files;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn events_land_in_the_sessions_dated_file() {
        let dir = tempfile::tempdir().unwrap();
        let sink = Sink::start(dir.path().to_path_buf(), limits(1 << 20, 4)).unwrap();
        sink.record("s1", json!({"event": "request", "path": "/v1"}));
        sink.record("s2", json!({"event": "request", "path": "/v2"}));
        let files = wait_for_lines(&dir.path().join("s1"), 1);
        assert_eq!(
            files,
            vec![dir.path().join("s1").join(format!("{}.jsonl", today()))]
        );
        let line: Value =
            serde_json::from_str(std::fs::read_to_string(&files[0]).unwrap().trim()).unwrap();
        assert_eq!(line["session"], "s1");
        assert_eq!(line["path"], "/v1");
        assert!(line["ts"].is_u64());
    }

    #[test]
    fn files_rotate_past_the_size_cap_and_only_max_files_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let sink = Sink::start(dir.path().to_path_buf(), limits(200, 3)).unwrap();
        for i in 0..40 {
            sink.record(
                "s",
                json!({"event": "chunk", "seq": i, "data": "x".repeat(60)}),
            );
        }
        sink.record("s", json!({"event": "end"}));
        let sdir = dir.path().join("s");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(sdir.join(format!("{}.jsonl", today())))
            .unwrap_or_default()
            .contains("\"end\"")
        {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let files: Vec<_> = std::fs::read_dir(&sdir).unwrap().collect();
        assert!(files.len() <= 3, "{} files", files.len());
        for f in files {
            let len = f.unwrap().metadata().unwrap().len();
            assert!(len <= 200, "file of {len} bytes");
        }
    }
}
