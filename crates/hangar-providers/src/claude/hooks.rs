//! Claude Code's hooks: the events hangar listens to (`UserPromptSubmit`,
//! `Stop`, `Notification`, each calling back `hangar hook <event> --session
//! <id>`, plus `SessionStart`, whose `session_id` feeds the resume ledger),
//! what each says about the session, and the `hooks` settings that install
//! them.
//!
//! Claude Code merges a `--settings` file over the user's own settings; this
//! module only builds its contents. Writing it under `$HANGAR_HOME/hooks/`
//! is the daemon's (`activity::sources::hooks`), and nothing may ever write
//! the user's settings files.

use hangar_core::SessionId;
use serde_json::{Value, json};

use hangar_core::activity::Activity;

/// A hook event hangar listens to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    /// The person submitted a prompt: a turn starts.
    UserPromptSubmit,
    /// The agent finished its turn.
    Stop,
    /// The turn ended in an API error instead (Claude Code 2.1.x: fires
    /// instead of `Stop`; its input's `error` is `rate_limit`,
    /// `authentication_failed`, `billing_error`, `server_error`, ...).
    StopFailure,
    /// The agent needs the person: a permission prompt, or waiting for input.
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 4] = [
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::Notification,
    ];

    /// Claude Code's name of the event.
    pub fn claude_name(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::Notification => "Notification",
        }
    }

    /// The word used on hangar's command line (`hangar hook stop`).
    pub fn cli_name(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "user-prompt-submit",
            HookEvent::Stop => "stop",
            HookEvent::StopFailure => "stop-failure",
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
            HookEvent::Stop | HookEvent::StopFailure => Activity::Idle,
            HookEvent::Notification => Activity::Waiting,
        }
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What a claude session's `--settings` file is built from. Claude Code
/// merges it over the user's own settings (its sources in order: user,
/// project, local, flag, policy); `own_sandbox_off` turns its own sandbox
/// for its commands off (`sandbox.enabled`, a setting of 2.1.197).
pub use crate::adapter::HookSettings as Settings;

/// The settings that call `hangar` back for `session`: the activity events,
/// and `SessionStart`, whose `session_id` feeds the resume ledger (the
/// daemon's `identity`).
pub fn settings_json(settings: &Settings, session: &SessionId) -> Value {
    let mut hooks = serde_json::Map::new();
    let activity_events = HookEvent::ALL
        .into_iter()
        .map(|e| (e.claude_name(), e.cli_name()));
    let events = activity_events.chain([("SessionStart", "session-start")]);
    for (claude_name, cli_name) in events.filter(|_| settings.hooks) {
        // HANGAR_HOME is in the agent's environment already; naming it here
        // too keeps the callback right if the agent scrubs its environment.
        let command = format!(
            "HANGAR_HOME={} {} hook {} --session {}",
            shell_quote(&settings.home.display().to_string()),
            shell_quote(&settings.hangar.display().to_string()),
            cli_name,
            shell_quote(session.as_str()),
        );
        hooks.insert(
            claude_name.to_owned(),
            json!([{ "hooks": [{ "type": "command", "command": command, "timeout": 10 }] }]),
        );
    }
    let mut out = json!({ "hooks": hooks });
    if settings.own_sandbox_off {
        out["sandbox"] = json!({ "enabled": false });
    }
    out
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
        assert_eq!(
            HookEvent::parse("StopFailure"),
            Some(HookEvent::StopFailure)
        );
        assert_eq!(HookEvent::parse("PreToolUse"), None);
    }

    #[test]
    fn a_shell_running_any_hook_these_settings_write_is_hangars_not_the_agents_work() {
        // The command Claude Code hands `sh -c`, quoted as written here: seen
        // in CI as "a command it started is still running" while the shell
        // had not yet become `hangar hook` (the quotes hid the program).
        let settings = Settings {
            hangar: "/opt/my tools/hangar".into(),
            home: "/home/a/.hangar".into(),
            hooks: true,
            own_sandbox_off: false,
        };
        let json = settings_json(&settings, &SessionId::from("s-1"));
        let commands: Vec<&str> = json["hooks"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v[0]["hooks"][0]["command"].as_str().unwrap())
            .collect();
        assert_eq!(commands.len(), 5);
        for command in commands {
            let shell = hangar_core::work_in_flight::TreeProcess {
                pid: 20,
                parent: Some(1),
                argv: vec!["/bin/sh".into(), "-c".into(), command.into()],
            };
            assert_eq!(
                hangar_core::work_in_flight::in_flight(false, &[shell]),
                None,
                "{command}"
            );
        }
    }
}
