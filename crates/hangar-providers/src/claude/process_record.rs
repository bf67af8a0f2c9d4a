//! Claude Code's own per-process record, `$CLAUDE_CONFIG_DIR/sessions/<pid>.json`:
//! the live process's word on which conversation it writes right now.
//!
//! Observed with Claude Code 2.1.197: the interactive process writes
//! `{"pid", "sessionId", "cwd", "procStart", "status", ...}` at start,
//! rewrites it with the new id the moment `/clear` starts a new
//! conversation (hooks or not), and removes it on a clean exit. `procStart`
//! is field 22 of `/proc/<pid>/stat`, so a record left behind by a crashed
//! process whose pid was later reused is told apart. Only the records of
//! the session's own process tree are read (DESIGN.md rule 10): a person's
//! own `claude` in the same folder has its own pid, never in that tree.

use std::path::Path;

use serde_json::Value;

/// What one record says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessRecord {
    pub pid: u32,
    pub session_id: String,
    /// The folder the process runs in, when the record names it.
    pub cwd: Option<String>,
}

/// The record of the first process in `tree` (the session's process first,
/// then its descendants by depth) that has a valid one: a claude the agent
/// itself runs (`claude -p` in a tool call) sits deeper and never wins over
/// the session's own.
pub fn own_record(claude_root: &Path, tree: &[u32]) -> Option<ProcessRecord> {
    let dir = claude_root.join("sessions");
    tree.iter().find_map(|&pid| read_record(&dir, pid))
}

fn read_record(dir: &Path, pid: u32) -> Option<ProcessRecord> {
    let bytes = std::fs::read(dir.join(format!("{pid}.json"))).ok()?;
    parse_record(&bytes, pid, proc_start(pid).as_deref())
}

/// A record's facts, if it is the record of process `pid` started at
/// `started` (field 22 of its stat; `None` when it cannot be read).
pub fn parse_record(bytes: &[u8], pid: u32, started: Option<&str>) -> Option<ProcessRecord> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    if v.get("pid").and_then(Value::as_u64) != Some(u64::from(pid)) {
        return None;
    }
    if let (Some(recorded), Some(now)) = (v.get("procStart").and_then(Value::as_str), started)
        && recorded != now
    {
        // A stale record of an earlier process that had the same pid.
        return None;
    }
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some(ProcessRecord {
        pid,
        session_id: text("sessionId")?,
        cwd: text("cwd"),
    })
}

/// Field 22 of `/proc/<pid>/stat`: the process's start time in clock ticks.
fn proc_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    // The fields after the command name begin with field 3.
    after.split_whitespace().nth(22 - 3).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as Claude Code 2.1.197 wrote it (2026-12-01).
    const REAL: &str = r#"{"pid":12558,"sessionId":"aa5cf64b-8af2-482d-9d00-cc94febb5d7f","cwd":"/tmp/obs/w/my.proj_dir/a b/é","startedAt":1796113096391,"procStart":"32759","version":"2.1.197","peerProtocol":1,"kind":"interactive","entrypoint":"cli","name":"claude-b7","nameSource":"derived","status":"idle","updatedAt":1796113126277,"statusUpdatedAt":1796113126277}"#;

    #[test]
    fn a_real_record_names_the_conversation_and_folder() {
        let r = parse_record(REAL.as_bytes(), 12558, Some("32759")).unwrap();
        assert_eq!(r.session_id, "aa5cf64b-8af2-482d-9d00-cc94febb5d7f");
        assert_eq!(r.cwd.as_deref(), Some("/tmp/obs/w/my.proj_dir/a b/é"));
    }

    #[test]
    fn a_record_of_another_pid_or_an_earlier_process_with_the_same_pid_is_refused() {
        assert_eq!(parse_record(REAL.as_bytes(), 12559, Some("32759")), None);
        assert_eq!(parse_record(REAL.as_bytes(), 12558, Some("99999")), None);
        // Unknown start time (a foreign /proc): the pid check still holds.
        assert!(parse_record(REAL.as_bytes(), 12558, None).is_some());
        assert_eq!(parse_record(b"{not json", 12558, None), None);
    }

    #[test]
    fn the_shallowest_process_of_the_tree_with_a_record_wins() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let me = std::process::id();
        let started = proc_start(me).unwrap();
        let write = |pid: u32, id: &str, start: &str| {
            std::fs::write(
                sessions.join(format!("{pid}.json")),
                format!(r#"{{"pid":{pid},"sessionId":"{id}","cwd":"/w","procStart":"{start}"}}"#),
            )
            .unwrap();
        };
        // A start time pid 1 can never have: its record is refused.
        write(1, "init", "not-a-start-time");
        write(me, "mine", &started);
        let got = own_record(dir.path(), &[4_000_000, 1, me]).unwrap();
        assert_eq!((got.pid, got.session_id.as_str()), (me, "mine"));
        assert_eq!(own_record(dir.path(), &[4_000_000]), None);
    }
}
