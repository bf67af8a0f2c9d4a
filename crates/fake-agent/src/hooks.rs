//! Claude Code hooks, as configured in the `--settings <file>` the agent was
//! started with: `UserPromptSubmit` when a line arrives, `Stop` when a turn
//! ends, `Notification` when a permission prompt or a question is shown.
//!
//! Like Claude Code, each configured command runs through `/bin/sh -c` with
//! the hook's JSON input on stdin, and the agent waits for it (bounded by
//! the hook's `timeout`, default 60 s). A hook's output never reaches the
//! screen, and a failing hook never stops the agent.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// One configured hook command.
#[derive(Debug, Clone, PartialEq)]
struct HookCommand {
    event: String,
    command: String,
    timeout: Duration,
}

/// The hooks of one settings file; empty without `--settings`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hooks {
    commands: Vec<HookCommand>,
}

impl Hooks {
    /// Reads the `hooks` of a settings file. A file that cannot be read or
    /// parsed means no hooks (Claude Code reports it and carries on).
    pub fn load(settings: Option<&str>) -> Hooks {
        let Some(path) = settings else {
            return Hooks::default();
        };
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| Hooks::from_settings(&v))
            .unwrap_or_default()
    }

    /// `{"hooks": {"Stop": [{"matcher": .., "hooks": [{"type": "command", "command": ..}]}]}}`
    pub fn from_settings(settings: &Value) -> Hooks {
        let mut commands = Vec::new();
        let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
            return Hooks::default();
        };
        for (event, groups) in events {
            for group in groups.as_array().into_iter().flatten() {
                for hook in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if hook.get("type").and_then(Value::as_str) != Some("command") {
                        continue;
                    }
                    let Some(command) = hook.get("command").and_then(Value::as_str) else {
                        continue;
                    };
                    let secs = hook.get("timeout").and_then(Value::as_u64).unwrap_or(60);
                    commands.push(HookCommand {
                        event: event.clone(),
                        command: command.to_owned(),
                        timeout: Duration::from_secs(secs.max(1)),
                    });
                }
            }
        }
        Hooks { commands }
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Runs every command configured for `event`, one after another, with
    /// `common` plus `extra` as the JSON input.
    pub fn run(&self, event: &str, common: &Map<String, Value>, extra: Value) {
        let mut input = common.clone();
        input.insert("hook_event_name".into(), json!(event));
        if let Value::Object(extra) = extra {
            input.extend(extra);
        }
        let body = Value::Object(input).to_string();
        for hook in self.commands.iter().filter(|h| h.event == event) {
            run_one(&hook.command, &body, hook.timeout);
        }
    }
}

fn run_one(command: &str, input: &str, timeout: Duration) {
    let child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_per_event_and_other_hook_types_are_skipped() {
        let settings = json!({"hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "echo stop", "timeout": 5}]}],
            "Notification": [{"matcher": "", "hooks": [
                {"type": "command", "command": "echo a"},
                {"type": "prompt", "prompt": "ignored"}
            ]}]
        }});
        let h = Hooks::from_settings(&settings);
        assert_eq!(h.commands.len(), 2);
        assert!(
            h.commands
                .iter()
                .any(|c| c.event == "Stop" && c.timeout == Duration::from_secs(5))
        );
        assert!(Hooks::from_settings(&json!({"model": "x"})).is_empty());
        assert!(Hooks::load(Some("/nonexistent/settings.json")).is_empty());
    }

    #[test]
    fn a_hook_gets_its_json_input_on_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        let settings = json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": format!("cat > '{}'", out.display())}
        ]}]}});
        let mut common = Map::new();
        common.insert("session_id".into(), json!("s1"));
        Hooks::from_settings(&settings).run("Stop", &common, json!({"stop_hook_active": false}));
        let got: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(got["hook_event_name"], "Stop");
        assert_eq!(got["session_id"], "s1");
        assert_eq!(got["stop_hook_active"], false);
    }
}
