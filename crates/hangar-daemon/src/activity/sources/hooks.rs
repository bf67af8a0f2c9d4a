//! The provider's own hook mechanism: Claude Code's `UserPromptSubmit`,
//! `Stop` and `Notification` hooks, each calling back `hangar hook <event>
//! --session <id>` (plus `SessionStart`, which reports the provider session
//! id to the resume ledger, not an activity).
//!
//! The hooks are installed through a settings file hangar writes for each
//! session under `$HANGAR_HOME/hooks/` (mode 0600) and passes with
//! `--settings`; Claude Code merges it over the user's own settings. This
//! module must never write the user's settings files.

use std::io::Write;
use std::path::{Path, PathBuf};

use hangar_core::SessionId;
use serde_json::{Value, json};

use crate::activity::Activity;

/// A hook event hangar listens to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    /// The person submitted a prompt: a turn starts.
    UserPromptSubmit,
    /// The agent finished its turn.
    Stop,
    /// The agent needs the person: a permission prompt, or waiting for input.
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 3] = [
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::Notification,
    ];

    /// Claude Code's name of the event.
    pub fn claude_name(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::Notification => "Notification",
        }
    }

    /// The word used on hangar's command line (`hangar hook stop`).
    pub fn cli_name(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "user-prompt-submit",
            HookEvent::Stop => "stop",
            HookEvent::Notification => "notification",
        }
    }

    /// From either spelling, case-insensitively.
    pub fn parse(s: &str) -> Option<HookEvent> {
        let s = s.trim();
        HookEvent::ALL.into_iter().find(|e| {
            e.cli_name().eq_ignore_ascii_case(s) || e.claude_name().eq_ignore_ascii_case(s)
        })
    }

    /// What the event says about the session.
    pub fn activity(self) -> Activity {
        match self {
            HookEvent::UserPromptSubmit => Activity::Working,
            HookEvent::Stop => Activity::Idle,
            HookEvent::Notification => Activity::Waiting,
        }
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The `hooks` settings that call `hangar` back for `session`: the
/// activity events, and `SessionStart`, whose `session_id` feeds the resume
/// ledger (see `crate::identity`).
pub fn settings_json(hangar: &Path, home: &Path, session: &SessionId) -> Value {
    let mut hooks = serde_json::Map::new();
    let activity_events = HookEvent::ALL
        .into_iter()
        .map(|e| (e.claude_name(), e.cli_name()));
    for (claude_name, cli_name) in activity_events.chain([("SessionStart", "session-start")]) {
        // HANGAR_HOME is in the agent's environment already; naming it here
        // too keeps the callback right if the agent scrubs its environment.
        let command = format!(
            "HANGAR_HOME={} {} hook {} --session {}",
            shell_quote(&home.display().to_string()),
            shell_quote(&hangar.display().to_string()),
            cli_name,
            shell_quote(session.as_str()),
        );
        hooks.insert(
            claude_name.to_owned(),
            json!([{ "hooks": [{ "type": "command", "command": command, "timeout": 10 }] }]),
        );
    }
    json!({ "hooks": hooks })
}

/// The settings file of `session`.
pub fn settings_path(home: &Path, session: &SessionId) -> PathBuf {
    home.join("hooks")
        .join(format!("{}.json", session.as_str()))
}

/// Write the settings file (0600, in a 0700 folder) and return its path.
pub fn write_settings(hangar: &Path, home: &Path, session: &SessionId) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = settings_path(home, session);
    let dir = home.join("hooks");
    crate::paths::ensure_private_dir(&dir)?;
    let body = serde_json::to_vec_pretty(&settings_json(hangar, home, session))
        .map_err(std::io::Error::other)?;
    // Written to a temporary name and renamed: an agent starting at the same
    // moment never reads half a file.
    let tmp = dir.join(format!(".{}.tmp", session.as_str()));
    {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Remove a closed session's settings file.
pub fn remove_settings(home: &Path, session: &SessionId) {
    let _ = std::fs::remove_file(settings_path(home, session));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_of_an_event_are_understood() {
        assert_eq!(HookEvent::parse("stop"), Some(HookEvent::Stop));
        assert_eq!(
            HookEvent::parse("Notification"),
            Some(HookEvent::Notification)
        );
        assert_eq!(
            HookEvent::parse("user-prompt-submit"),
            Some(HookEvent::UserPromptSubmit)
        );
        assert_eq!(HookEvent::parse("PreToolUse"), None);
    }

    #[test]
    fn the_settings_file_is_private_and_calls_hangar_back_for_every_event() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::from("s-1");
        let path = write_settings(Path::new("/bin/hangar"), dir.path(), &id).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for event in HookEvent::ALL {
            let cmd = v["hooks"][event.claude_name()][0]["hooks"][0]["command"]
                .as_str()
                .unwrap();
            assert!(
                cmd.contains(&format!(
                    "'/bin/hangar' hook {} --session 's-1'",
                    event.cli_name()
                )),
                "{cmd}"
            );
        }
        let start = v["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert!(
            start.contains("hook session-start --session 's-1'"),
            "{start}"
        );
        remove_settings(dir.path(), &id);
        assert!(!path.exists());
    }
}
