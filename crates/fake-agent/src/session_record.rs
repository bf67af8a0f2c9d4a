//! Claude Code's per-process record, `$CLAUDE_CONFIG_DIR/sessions/<pid>.json`.
//!
//! Observed with Claude Code 2.1.197: the interactive process writes it at
//! start (`{"pid","sessionId","cwd","startedAt","procStart","version",
//! "peerProtocol","kind","entrypoint","name","nameSource","status",
//! "updatedAt","statusUpdatedAt"}`, `procStart` being field 22 of
//! `/proc/<pid>/stat`), rewrites it with the new `sessionId` the moment a
//! `/clear` starts a new conversation, and removes it on a clean exit. The
//! folder is mode 0700. hangar reads it as the live process's own word on
//! which conversation it writes, so the fake keeps it exactly in step.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde_json::json;

use std::time::{SystemTime, UNIX_EPOCH};

/// The record of this process.
pub struct SessionRecord {
    path: PathBuf,
    pid: u32,
    cwd: String,
    started_ms: u64,
}

impl SessionRecord {
    /// Writes the record for `session_id` under `claude_dir/sessions/`.
    pub fn create(
        claude_dir: &Path,
        cwd: &str,
        session_id: &str,
    ) -> std::io::Result<SessionRecord> {
        let dir = claude_dir.join("sessions");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let pid = std::process::id();
        let record = SessionRecord {
            path: dir.join(format!("{pid}.json")),
            pid,
            cwd: cwd.to_owned(),
            started_ms: now_ms(),
        };
        record.write(session_id)?;
        Ok(record)
    }

    /// Names `session_id` as the conversation this process now writes.
    pub fn write(&self, session_id: &str) -> std::io::Result<()> {
        let now = now_ms();
        let body = json!({
            "pid": self.pid,
            "sessionId": session_id,
            "cwd": self.cwd,
            "startedAt": self.started_ms,
            "procStart": proc_start(),
            "version": concat!(env!("CARGO_PKG_VERSION"), "-fake"),
            "peerProtocol": 1,
            "kind": "interactive",
            "entrypoint": "cli",
            "status": "idle",
            "updatedAt": now,
            "statusUpdatedAt": now,
        });
        // Written whole under a temporary name and renamed, so a reader
        // never sees half a record.
        let tmp = self.path.with_extension("json.tmp");
        {
            let mut f = fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .mode(0o644)
                .open(&tmp)?;
            f.write_all(body.to_string().as_bytes())?;
        }
        fs::rename(&tmp, &self.path)
    }

    /// Removes the record, as a clean exit does.
    pub fn remove(&self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Field 22 of `/proc/self/stat` (start time in clock ticks), as text.
fn proc_start() -> String {
    fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let after = &s[s.rfind(')')? + 1..];
            // Fields after the command name start at field 3.
            after.split_whitespace().nth(22 - 3).map(str::to_owned)
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_names_the_current_id_and_goes_away_on_remove() {
        let dir = tempfile::tempdir().unwrap();
        let r = SessionRecord::create(dir.path(), "/w", "a").unwrap();
        let path = dir
            .path()
            .join("sessions")
            .join(format!("{}.json", std::process::id()));
        let v: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["sessionId"], "a");
        assert_eq!(v["pid"], std::process::id());
        assert_eq!(v["cwd"], "/w");
        assert!(!v["procStart"].as_str().unwrap().is_empty());
        r.write("b").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["sessionId"], "b");
        r.remove();
        assert!(!path.exists());
    }
}
