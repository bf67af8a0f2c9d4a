//! Telling the person when an agent starts waiting for them or finishes its
//! turn while nobody is looking at its pane.
//!
//! Three channels, each optional: a configured command (given the session's
//! id, title and state in its environment), the terminal's own notification
//! escapes (OSC 9 and OSC 777) sent to attached clients, and `notify-send`
//! when it is on PATH. A notification is decided from a committed
//! transition only, so there is never more than one per state change; it is
//! never sent while a client views that session. Running a command must
//! never block the daemon: it is spawned and reaped in the background.

use std::process::Stdio;

use hangar_core::display;
use serde::Deserialize;

use super::Activity;

/// `[notify]` in config.toml.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// A shell command run on each notification, with HANGAR_SESSION_ID,
    /// HANGAR_SESSION_TITLE (escaped as listings show it: a script may
    /// print it on a terminal), HANGAR_SESSION_TITLE_RAW (as it was set)
    /// and HANGAR_ACTIVITY in its environment.
    #[serde(default)]
    pub command: Option<String>,
    /// Send OSC 9 / OSC 777 notifications to attached clients.
    #[serde(default = "yes")]
    pub osc: bool,
    /// Run `notify-send` when it is on PATH.
    #[serde(default = "yes")]
    pub desktop: bool,
    /// Watch every `[hosts.NAME]` while the daemon runs and tell this
    /// machine, the same ways, when an agent there starts waiting or
    /// finishes its turn (the command gets HANGAR_HOST too).
    #[serde(default = "yes")]
    pub far_hosts: bool,
}

fn yes() -> bool {
    true
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            command: None,
            osc: true,
            desktop: true,
            far_hosts: true,
        }
    }
}

/// Whether a committed change is worth telling the person about: the agent
/// started waiting for them, or finished a turn. A change out of `unknown`
/// is not news (a daemon start, a wake).
pub fn worth_notifying(from: Activity, to: Activity) -> bool {
    match to {
        Activity::Waiting => matches!(from, Activity::Working | Activity::Idle),
        // From waiting too: a permission answered and the turn done before
        // "working" outlasted the debounce.
        Activity::Idle => matches!(from, Activity::Working | Activity::Waiting),
        _ => false,
    }
}

/// The one-line message of a notification.
pub fn message(title: &str, id: &str, to: Activity) -> String {
    let who = if title.trim().is_empty() {
        id.get(..8).unwrap_or(id).to_owned()
    } else {
        title.trim().to_owned()
    };
    match to {
        Activity::Waiting => format!("{who} is waiting for you"),
        Activity::Idle => format!("{who} finished its turn"),
        other => format!("{who} is {}", other.name()),
    }
}

/// OSC 9 (iTerm2, WezTerm, kitty, Windows Terminal) and OSC 777 (urxvt,
/// foot, Ghostty) notifications; terminals ignore the one they don't know.
pub fn osc_bytes(text: &str) -> Vec<u8> {
    // The title inside comes from the agent: a control character would end
    // the escape early and start one of its own; shown escaped instead.
    let clean = display::name(text);
    format!("\x1b]9;hangar: {clean}\x07\x1b]777;notify;hangar;{clean}\x07").into_bytes()
}

/// The body of a `notify-send` notification: escaped for the terminal
/// rules, and for the markup the notification spec lets servers read in a
/// body (`<a href>`, `<img>`, `<b>`), so a title is shown, never obeyed.
pub fn desktop_body(text: &str) -> String {
    let mut out = String::new();
    for c in display::name(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Run the configured command and `notify-send` for one notification.
pub fn run_commands(config: &NotifyConfig, id: &str, title: &str, to: Activity) {
    run_text_commands(config, id, title, to.name(), &message(title, id, to));
}

/// Run the configured command and `notify-send`: `state` goes in
/// HANGAR_ACTIVITY (an activity's name, or `limited`, `limit-continue`),
/// `text` is the desktop message.
pub fn run_text_commands(config: &NotifyConfig, id: &str, title: &str, state: &str, text: &str) {
    run_commands_about(config, None, id, title, state, text);
}

/// `run_text_commands` about a session of another host: HANGAR_HOST names
/// it (`[hosts.NAME]`), and is absent for this machine's own.
pub fn run_commands_about(
    config: &NotifyConfig,
    host: Option<&str>,
    id: &str,
    title: &str,
    state: &str,
    text: &str,
) {
    if let Some(cmd) = config.command.as_deref().filter(|c| !c.trim().is_empty()) {
        let mut c = tokio::process::Command::new("/bin/sh");
        if let Some(host) = host {
            c.env("HANGAR_HOST", host);
        }
        c.arg("-c")
            .arg(cmd)
            .env("HANGAR_SESSION_ID", id)
            // A title is untrusted text (rule 11): a command that echoes it
            // must not reach a terminal raw; the raw one is asked for by name.
            .env("HANGAR_SESSION_TITLE", display::name(title).as_ref())
            .env("HANGAR_SESSION_TITLE_RAW", title)
            .env("HANGAR_ACTIVITY", state);
        spawn_and_reap(c, "notify.command");
    }
    if config.desktop
        && let Some(bin) = hangar_providers::launch::find_program(
            "notify-send",
            std::env::var("PATH").ok().as_deref(),
        )
    {
        let mut c = tokio::process::Command::new(bin);
        c.arg("--app-name=hangar")
            .arg("hangar")
            .arg(desktop_body(text));
        spawn_and_reap(c, "notify-send");
    }
}

fn spawn_and_reap(mut cmd: tokio::process::Command, what: &'static str) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(false);
    match cmd.spawn() {
        Ok(mut child) => {
            tokio::spawn(async move {
                // Bounded: a hung notifier is killed, never left behind.
                let waited =
                    tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await;
                if waited.is_err() {
                    let _ = child.kill().await;
                }
            });
        }
        Err(e) => tracing::warn!("cannot run {what}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_and_finished_turns_are_news_but_starts_are_not() {
        assert!(worth_notifying(Activity::Working, Activity::Waiting));
        assert!(worth_notifying(Activity::Idle, Activity::Waiting));
        assert!(worth_notifying(Activity::Working, Activity::Idle));
        assert!(!worth_notifying(Activity::Unknown, Activity::Idle));
        assert!(!worth_notifying(Activity::Unknown, Activity::Waiting));
        assert!(worth_notifying(Activity::Waiting, Activity::Idle));
        assert!(!worth_notifying(Activity::Idle, Activity::Idle));
        assert!(!worth_notifying(Activity::Idle, Activity::Working));
    }

    #[test]
    fn the_escape_carries_the_message_without_control_characters() {
        let b = String::from_utf8(osc_bytes("api\x07 review is waiting")).unwrap();
        assert_eq!(
            b,
            "\x1b]9;hangar: api\\u{7} review is waiting\x07\x1b]777;notify;hangar;api\\u{7} review is waiting\x07"
        );
        assert_eq!(
            message("", "0123456789", Activity::Idle),
            "01234567 finished its turn"
        );
    }

    #[test]
    fn a_hostile_title_is_shown_in_the_escape_and_never_ends_or_starts_one() {
        let b = String::from_utf8(osc_bytes("x\x1b]52;c;aGk=\x07\u{9c}\u{202e}y")).unwrap();
        assert_eq!(
            b,
            "\x1b]9;hangar: x\\u{1b}]52;c;aGk=\\u{7}\\u{9c}\\u{202e}y\x07\
             \x1b]777;notify;hangar;x\\u{1b}]52;c;aGk=\\u{7}\\u{9c}\\u{202e}y\x07"
        );
        assert_eq!(
            desktop_body("<a href=\"https://evil.example\">fix</a> & \x1b[2J"),
            "&lt;a href=\"https://evil.example\"&gt;fix&lt;/a&gt; &amp; \\u{1b}[2J"
        );
    }
}
