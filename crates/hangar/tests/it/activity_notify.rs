//! Issue 11 acceptance, notifications: the `notify.command` runs exactly once
//! per transition (an agent starts waiting for the person, or finishes its
//! turn) with the session's id, title and state in its environment; it stays
//! quiet while a client is attached to that pane; and clients attached
//! elsewhere get the terminal's own notification escape (OSC 9 / OSC 777).

use crate::pty_screen;
use crate::support;

use std::fs;
use std::path::Path;

use pty_screen::PtyApp;
use support::*;

fn notified(file: &Path) -> Vec<String> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A hangar whose notify command appends "<id> <title> <activity>" to a file.
fn hangar_with_notify() -> (Hangar, std::path::PathBuf) {
    let h = Hangar::new();
    let log = h.root.join("notified.log");
    fs::create_dir_all(&h.home).unwrap();
    fs::write(
        h.home.join("config.toml"),
        format!(
            "[activity]\ndebounce_ms = 200\n[notify]\ndesktop = false\ncommand = \"printf '%s %s %s\\\\n' \\\"$HANGAR_SESSION_ID\\\" \\\"$HANGAR_SESSION_TITLE\\\" \\\"$HANGAR_ACTIVITY\\\" >> '{}'\"\n",
            log.display()
        ),
    )
    .unwrap();
    (h, log)
}

fn wait_activity(h: &Hangar, id: &str, state: &str) {
    h.wait_until(&format!("{id} is {state}"), DEADLINE, || {
        h.session(id)["activity"] == state
    });
}

fn wait_lines(h: &Hangar, log: &Path, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    h.wait_until(&format!("{n} notifications"), DEADLINE, || {
        lines = notified(log);
        lines.len() >= n
    });
    lines
}

#[test]
fn the_notify_command_runs_exactly_once_per_transition_and_not_while_the_pane_is_viewed() {
    let (h, log) = hangar_with_notify();
    let a = h.new_agent(&["--provider", "claude", "--title", "api-review"]);
    h.wait_screen(&a, "> ");
    wait_activity(&h, &a, "idle");
    assert!(notified(&log).is_empty(), "starting up is not news");

    h.ok(&["send", &a, "ask which branch"]);
    let lines = wait_lines(&h, &log, 1);
    assert_eq!(lines, vec![format!("{a} api-review waiting")]);

    h.ok(&["send", &a, "slow 600 main"]);
    h.ok(&["wait", &a, "--until", "idle", "--timeout", "60s"]);
    let lines = wait_lines(&h, &log, 2);
    assert_eq!(lines[1], format!("{a} api-review idle"));

    // A client views the pane: the next transitions stay quiet.
    let mut term = PtyApp::spawn(h.command(&["attach", &a]), 24, 100);
    term.wait_text("fake-agent claude session");
    h.ok(&["send", &a, "ask and now"]);
    wait_activity(&h, &a, "waiting");
    h.ok(&["send", &a, "slow 300 ok"]);
    h.ok(&["wait", &a, "--until", "idle", "--timeout", "60s"]);
    term.write(b"\x02d");
    assert_eq!(term.wait_exit(), Some(0));

    // Nobody looks any more: the next transition is announced, and it is
    // the third line: nothing came while attached, nothing was repeated.
    h.ok(&["send", &a, "ask one more"]);
    let lines = wait_lines(&h, &log, 3);
    assert_eq!(
        lines,
        vec![
            format!("{a} api-review waiting"),
            format!("{a} api-review idle"),
            format!("{a} api-review waiting"),
        ]
    );
}

#[test]
fn a_client_attached_to_another_pane_gets_the_terminal_notification_escape() {
    let (h, log) = hangar_with_notify();
    let a = h.new_agent(&["--provider", "claude", "--title", "builder"]);
    let b = h.split(&a, "vertical");
    h.wait_screen(&a, "> ");
    h.wait_screen(&b, "> ");
    wait_activity(&h, &a, "idle");
    let term = PtyApp::spawn(h.command(&["attach", &b]), 24, 100);
    term.wait_text("fake-agent claude session");

    h.ok(&["send", &a, "ask ready to ship"]);
    wait_lines(&h, &log, 1);
    h.wait_until("the OSC 9 escape reached the client", DEADLINE, || {
        let raw = String::from_utf8_lossy(&term.raw_output()).into_owned();
        raw.contains("\x1b]9;hangar: builder is waiting for you\x07")
            && raw.contains("\x1b]777;notify;hangar;builder is waiting for you\x07")
    });
}

#[test]
fn notify_send_on_path_is_run_once_per_transition_with_a_readable_message() {
    // A stand-in `notify-send` first on the daemon's PATH records its argv.
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("notify-send.log");
    let script = bin.path().join("notify-send");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\necho >> '{}'\n",
            log.display(),
            log.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let h = Hangar::with_env(&[("PATH", &path)]);
    fs::create_dir_all(&h.home).unwrap();
    fs::write(
        h.home.join("config.toml"),
        "[activity]\ndebounce_ms = 200\n",
    )
    .unwrap();
    let a = h.new_agent(&["--provider", "claude", "--title", "deploy"]);
    h.wait_screen(&a, "> ");
    wait_activity(&h, &a, "idle");

    h.ok(&["send", &a, "ask which region"]);
    let lines = wait_lines(&h, &log, 1);
    assert_eq!(
        lines,
        vec!["--app-name=hangar|hangar|deploy is waiting for you|"]
    );
    h.ok(&["send", &a, "eu"]);
    h.ok(&["wait", &a, "--until", "idle", "--timeout", "60s"]);
    h.ok(&["send", &a, "ask and then"]);
    let lines = wait_lines(&h, &log, 3);
    assert_eq!(
        lines,
        vec![
            "--app-name=hangar|hangar|deploy is waiting for you|",
            "--app-name=hangar|hangar|deploy finished its turn|",
            "--app-name=hangar|hangar|deploy is waiting for you|",
        ]
    );
}

#[test]
fn the_notify_command_gets_the_title_escaped_and_the_raw_one_only_by_its_own_name() {
    let h = Hangar::new();
    let (shown, raw) = (h.root.join("shown.log"), h.root.join("raw.log"));
    h.write_config(&format!(
        "[activity]\ndebounce_ms = 200\n[notify]\ndesktop = false\ncommand = \"printf '%s' \\\"$HANGAR_SESSION_TITLE\\\" > '{}'; printf '%s' \\\"$HANGAR_SESSION_TITLE_RAW\\\" > '{}'\"\n",
        shown.display(),
        raw.display()
    ));
    // A title that clears the screen and sets the window title when printed.
    let title = "fix\x1b[2J\x1b]0;owned\x07 it";
    let a = h.new_agent(&["--provider", "claude", "--title", title]);
    h.wait_screen(&a, "> ");
    h.ok(&["send", &a, "ask which branch"]);
    h.wait_until("the notify command ran", DEADLINE, || {
        fs::metadata(&raw).is_ok_and(|m| m.len() > 0)
    });
    let shown = fs::read(&shown).unwrap();
    assert!(!shown.iter().any(|b| b.is_ascii_control()), "{shown:?}");
    let shown = String::from_utf8(shown).unwrap();
    assert!(
        shown.starts_with("fix") && shown.ends_with(" it"),
        "{shown}"
    );
    assert_eq!(fs::read_to_string(&raw).unwrap(), title);
}
