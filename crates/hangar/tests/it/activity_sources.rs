//! Issue 11 acceptance, the sources of activity: each state (working,
//! waiting, idle) is detected from each source with the fake agent, and
//! with a source turned off the next one still works. Activity is read from
//! `hangar ls --json` (`activity`, `activity_since`), as scripts read it.

use crate::pty_screen;
use crate::support;

use std::fs;
use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use hangar_testkit::http::read_request;
use serde_json::Value;
use support::*;

fn with_config(h: &Hangar, config: &str) {
    fs::create_dir_all(&h.home).unwrap();
    fs::write(h.home.join("config.toml"), config).unwrap();
}

fn activity(h: &Hangar, id: &str) -> String {
    h.session(id)["activity"].as_str().unwrap_or("").to_owned()
}

/// Waits until `ls` reports `state` for `id`; returns the row.
fn wait_activity(h: &Hangar, id: &str, state: &str) -> Value {
    let what = format!("session {id} is {state}");
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let row = h.session(id);
        if row["activity"] == state {
            return row;
        }
        let last = row["activity"].as_str().unwrap_or("").to_owned();
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what} (last seen {last}); screen:\n{}",
            h.screen(id)
        );
        std::thread::sleep(Duration::from_millis(40));
    }
}

fn send(h: &Hangar, id: &str, text: &str) {
    h.ok(&["send", id, text]);
}

/// A fresh claude pane, ready at its prompt.
fn agent(h: &Hangar) -> String {
    let id = h.new_pane();
    h.wait_screen(&id, "> ");
    id
}

/// Drives `a` (idle at its prompt) through a slow answer, a question and a
/// permission prompt, checking the activity `ls` reports at each step.
fn each_state_in_turn(h: &Hangar, a: &str, tool: &str) {
    wait_activity(h, a, "idle");

    send(h, a, "slow 4000 think");
    h.wait_screen(a, "working...");
    let row = wait_activity(h, a, "working");
    assert!(row["activity_since"].as_u64().is_some());
    wait_activity(h, a, "idle");

    send(h, a, "ask which branch");
    wait_activity(h, a, "waiting");
    send(h, a, "main");
    wait_activity(h, a, "idle");

    send(h, a, &format!("permission {tool}"));
    h.wait_screen(a, &format!("Do you want to allow {tool}?"));
    wait_activity(h, a, "waiting");
    send(h, a, "1");
    h.wait_screen(a, "allowed");
    wait_activity(h, a, "idle");
}

const TRANSCRIPT_ONLY: &str = "[activity]\nsources = [\"transcript\"]\ndebounce_ms = 200\n";

#[test]
fn the_transcript_alone_shows_working_waiting_and_idle() {
    let h = Hangar::new();
    with_config(&h, TRANSCRIPT_ONLY);
    let a = agent(&h);
    each_state_in_turn(&h, &a, "Bash");
}

#[test]
fn the_codex_rollout_alone_shows_working_waiting_and_idle() {
    let h = Hangar::new();
    with_config(&h, TRANSCRIPT_ONLY);
    let a = h.new_agent(&["--provider", "codex"]);
    h.wait_screen(&a, "> ");
    each_state_in_turn(&h, &a, "shell");
}

#[test]
fn with_no_transcript_the_claude_hooks_show_each_state() {
    // The transcript (most trusted) gives nothing: the hooks are next.
    let h = Hangar::with_env(&[("FAKE_AGENT_NO_TRANSCRIPT", "1")]);
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let a = agent(&h);

    // The hooks come from a 0600 settings file under HANGAR_HOME; the
    // user's own Claude settings are never written.
    let settings: Vec<_> = fs::read_dir(h.home.join("hooks"))
        .expect("a hooks folder under HANGAR_HOME")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(settings.len(), 1, "{settings:?}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&settings[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(!h.claude_dir.join("settings.json").exists());
    assert!(!h.user_home.join(".claude").exists());
    assert!(
        !h.claude_dir.join("projects").exists(),
        "the agent wrote a transcript"
    );

    send(&h, &a, "slow 4000 think");
    h.wait_screen(&a, "working...");
    wait_activity(&h, &a, "working");
    wait_activity(&h, &a, "idle");

    send(&h, &a, "ask which branch");
    wait_activity(&h, &a, "waiting");
    send(&h, &a, "main");
    wait_activity(&h, &a, "idle");

    send(&h, &a, "permission Bash");
    wait_activity(&h, &a, "waiting");
    send(&h, &a, "2");
    h.wait_screen(&a, "denied");
    wait_activity(&h, &a, "idle");
}

#[test]
fn with_hooks_off_and_no_transcript_a_permission_prompt_is_seen_on_the_screen() {
    let h = Hangar::with_env(&[("FAKE_AGENT_NO_TRANSCRIPT", "1")]);
    with_config(
        &h,
        "[activity]\nsources = [\"transcript\", \"proxy\", \"screen\"]\ndebounce_ms = 200\n",
    );
    let a = agent(&h);
    assert!(
        !h.home.join("hooks").exists(),
        "no hook settings when the hooks source is off"
    );
    send(&h, &a, "permission Bash");
    h.wait_screen(&a, "Do you want to allow Bash?");
    wait_activity(&h, &a, "waiting");
    send(&h, &a, "1");
    h.wait_screen(&a, "allowed");
    // Answered: the prompt is no longer open, and nothing else knows.
    wait_activity(&h, &a, "unknown");
}

#[test]
fn a_permission_prompt_shown_only_on_the_screen_is_waiting() {
    let h = Hangar::new();
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let a = agent(&h);
    wait_activity(&h, &a, "idle");
    send(&h, &a, "permission-screen-only Bash");
    h.wait_screen(&a, "Do you want to allow Bash?");
    // The transcript and the hooks say a turn is in progress; the screen
    // shows it blocked on the person.
    wait_activity(&h, &a, "waiting");
    send(&h, &a, "1");
    h.wait_screen(&a, "allowed");
    wait_activity(&h, &a, "idle");
}

/// A plain-HTTP stand-in for the provider API: answers one POST with an
/// Anthropic-style event stream whose end (`message_delta` with `end_turn`)
/// is sent only when the test says so.
struct SlowApi {
    port: u16,
    finish: mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SlowApi {
    fn start() -> SlowApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (finish, release) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let Ok((mut conn, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let _ = read_request(&mut reader);
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
                  event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
            );
            let _ = conn.flush();
            // Hold the turn open until the test has seen it in flight.
            let _ = release.recv_timeout(DEADLINE);
            let _ = conn.write_all(
                b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n\
                  event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
            );
        });
        SlowApi {
            port,
            finish,
            thread: Some(thread),
        }
    }
}

impl Drop for SlowApi {
    fn drop(&mut self) {
        let _ = self.finish.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn the_proxy_alone_shows_a_request_in_flight_as_working_and_its_end_turn_as_idle() {
    let h = Hangar::new();
    with_config(
        &h,
        "[activity]\nsources = [\"proxy\"]\ndebounce_ms = 200\n[proxy]\nallow_hosts = [\"127.0.0.1\"]\n",
    );
    let api = SlowApi::start();
    let a = agent(&h);
    assert_eq!(activity(&h, &a), "unknown", "nothing seen yet");
    // Typed through an attached terminal, not `hangar send`: typed input
    // must not be what makes it "working" here.
    let mut term = pty_screen::PtyApp::spawn(h.command(&["attach", &a]), 24, 100);
    term.wait_text("fake-agent claude session");
    term.write(format!("api http://127.0.0.1:{}/v1/messages hello\r", api.port).as_bytes());
    h.wait_screen(&a, "api-chunk:");
    wait_activity(&h, &a, "working");
    api.finish.send(()).unwrap();
    h.wait_screen(&a, "api-done 200");
    wait_activity(&h, &a, "idle");
}

#[test]
fn a_hibernated_sessions_activity_is_read_from_its_transcript_without_waking_it() {
    let h = Hangar::new();
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let a = agent(&h);
    send(&h, &a, "ask which branch");
    wait_activity(&h, &a, "waiting");
    h.ok(&["hibernate", &a]);
    h.wait_state(&a, "hibernated");
    let agents_before = h.pids_for_home().len();
    for _ in 0..3 {
        let row = h.session(&a);
        assert_eq!(row["activity"], "waiting", "{row}");
        assert!(row["activity_since"].as_u64().is_some());
        assert_eq!(row["state"], "hibernated");
        assert_eq!(row["pid"], Value::Null);
    }
    assert_eq!(
        h.pids_for_home().len(),
        agents_before,
        "reading activity must not start the agent"
    );
}

/// Regression: Claude Code 2.1.197 ends a `/clear` with a `system`/
/// `local_command` transcript entry and no answer (real_cli_support/
/// OBSERVED.md); read without it, a cleared claude stayed `working` until
/// its next turn and a prompt sent meanwhile went unconfirmed.
#[test]
fn a_clear_sent_to_claude_is_confirmed_and_its_new_conversation_reads_idle() {
    let h = Hangar::new();
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let a = agent(&h);
    send(&h, &a, "before clear");
    h.wait_screen(&a, "answer: before clear");
    wait_activity(&h, &a, "idle");
    let before = h.wait_transcript_id(&a);

    let sent_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let sent = h.json(&["send", &a, "/clear"]);
    assert_eq!(sent["confirmed"], true, "{sent}");
    let screen = h.wait_screen(&a, "cleared: new session ");
    let new = screen
        .lines()
        .find_map(|l| l.split("cleared: new session ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the clear line is on screen")
        .to_owned();
    assert_ne!(new, before);

    // The send itself made the session `working`; the new conversation's
    // transcript must bring it back to idle.
    let mut last = Value::Null;
    let settled = poll_for(DEADLINE, || {
        last = h.session(&a);
        (last["provider_session_id"] == new.as_str() && last["activity"] == "idle")
            .then(|| last.clone())
    });
    let row = settled.unwrap_or_else(|| {
        panic!(
            "the cleared session never read idle in its new conversation {new}; last row {last}\n\
             its transcript:\n{}\nscreen:\n{}",
            fs::read_to_string(h.claude_transcript(&h.work, &new)).unwrap_or_default(),
            h.screen(&a)
        )
    });
    assert!(
        row["activity_since"].as_u64().is_some_and(|t| t >= sent_at),
        "idle since before the /clear: {row}"
    );
}
