//! Claude Code's own background-agent supervisor (issue 16 defect 9).
//!
//! Claude Code 2.1.x can run a conversation as a background agent
//! (`claude --bg`, managed with `claude agents`): a `claude daemon run`
//! process holds it, and while it does, `claude --resume <id>` refuses and
//! exits 1 with (observed on 2.1.197):
//!
//! ```text
//! Session <id> is currently running as a background agent (bg). Use `claude agents` to
//! find and attach to it, or add --fork-session to branch off a copy.
//! ```
//!
//! The process holding it writes `$CLAUDE_CONFIG_DIR/sessions/<pid>.json`
//! with `"kind": "bg"`, its `sessionId` and `jobId`. hangar looks there
//! before resuming a claude session, and reads the refusal on screen when
//! a start fails anyway, and says what to do instead of a bare exit code.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The words claude prints when it refuses to resume a held conversation.
const REFUSAL: &str = "is currently running as a background agent";

/// A background agent holding a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BgHolder {
    pub pid: u32,
    /// The short id `claude attach` / `claude stop` take.
    pub job: Option<String>,
}

/// The records of `$CLAUDE_CONFIG_DIR/sessions` that name `psid` as a
/// background agent; `alive(pid)` says whether a pid still runs.
pub fn holder_in(records: &[Value], psid: &str, alive: &dyn Fn(u32) -> bool) -> Option<BgHolder> {
    records.iter().find_map(|r| {
        let pid = r["pid"].as_u64()? as u32;
        (r["sessionId"] == psid && r["kind"] == "bg" && alive(pid)).then(|| BgHolder {
            pid,
            job: r["jobId"].as_str().map(str::to_owned),
        })
    })
}

fn sessions_dir(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let dir = var("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            var("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".claude"))
        })?;
    Some(dir.join("sessions"))
}

/// The background agent holding `psid`, read from the daemon's
/// `CLAUDE_CONFIG_DIR` (the one its claude sessions inherit).
pub fn holder(psid: &str) -> Option<BgHolder> {
    let var = |k: &str| std::env::var(k).ok();
    let dir = sessions_dir(&var)?;
    let records: Vec<Value> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "json").then_some(())?;
            serde_json::from_slice(&std::fs::read(path).ok()?).ok()
        })
        .collect();
    holder_in(&records, psid, &|pid| {
        Path::new(&format!("/proc/{pid}")).exists()
    })
}

/// The reason a person sees for a claude session held by a background
/// agent.
pub fn reason(short: &str, psid: &str, holder: Option<&BgHolder>) -> String {
    let job = holder
        .and_then(|h| h.job.clone())
        .unwrap_or_else(|| psid.get(..8).unwrap_or(psid).to_owned());
    let by = holder
        .map(|h| format!(" (pid {})", h.pid))
        .unwrap_or_default();
    format!(
        "cannot resume claude conversation {psid}: Claude Code's own background-agent \
         supervisor holds it{by} (`claude agents`), and claude refuses --resume while it runs \
         there. Either stop it there (`claude stop {job}`) and then `hangar wake {short}`, or \
         open it where it runs (`claude attach {job}`)"
    )
}

/// Whether a failed start's screen shows claude's refusal.
pub fn refused_on_screen(screen: &str) -> bool {
    // The line is wrapped at the terminal's width: compare without breaks.
    let flat: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.contains(REFUSAL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_live_background_record_naming_the_conversation_is_its_holder() {
        // The shape of `sessions/<pid>.json` claude 2.1.197 wrote for `--bg`.
        let records = vec![
            json!({"pid": 18603, "sessionId": "abe1713d-8a41-41bc-abae-bf168ddf3062",
                   "cwd": "/w", "kind": "bg", "jobId": "abe1713d", "status": "busy"}),
            json!({"pid": 7, "sessionId": "other", "kind": "interactive"}),
        ];
        let alive = |pid: u32| pid == 18603;
        assert_eq!(
            holder_in(&records, "abe1713d-8a41-41bc-abae-bf168ddf3062", &alive),
            Some(BgHolder {
                pid: 18603,
                job: Some("abe1713d".into())
            })
        );
        assert_eq!(holder_in(&records, "other", &alive), None);
        assert_eq!(
            holder_in(&records, "abe1713d-8a41-41bc-abae-bf168ddf3062", &|_| false),
            None,
            "a record left by a dead process holds nothing"
        );
    }

    #[test]
    fn the_refusal_is_recognised_across_a_wrapped_line_and_the_reason_says_what_to_do() {
        let screen = "Session abe1713d-8a41 is currently running as a background\nagent (bg). Use `claude agents` to\nfind and attach to it";
        assert!(refused_on_screen(screen));
        assert!(!refused_on_screen("Welcome back!"));
        let r = reason(
            "s1234567",
            "abe1713d-8a41",
            Some(&BgHolder {
                pid: 9,
                job: Some("abe1713d".into()),
            }),
        );
        assert!(r.contains("claude stop abe1713d"));
        assert!(r.contains("hangar wake s1234567"));
        assert!(r.contains("claude attach abe1713d"));
    }
}
