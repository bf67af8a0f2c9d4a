//! The codex style's shared background server, as docs/src/cli-facts.md says real
//! codex 0.171.0 behaves: without `--no-daemon` it starts `app-server
//! --managed-daemon` in a session and process group of its own, one per
//! `CODEX_HOME`, which outlives the TUI; with `--no-daemon` it starts none.
//! (Opt-in with `FAKE_AGENT_CODEX_SHARED_SERVER=1`.)

use crate::support;

use std::time::Duration;

use support::Setup;

const SHARED: (&str, &str) = ("FAKE_AGENT_CODEX_SHARED_SERVER", "1");

fn server_pid(setup: &Setup) -> Option<i32> {
    let file = setup
        .home
        .join(".codex/app-server-control/fake-app-server.pid");
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(false)
}

/// (session id, process group) of a process, from /proc.
fn session_and_group(pid: i32) -> (i32, i32) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split_whitespace().collect();
    (f[3].parse().unwrap(), f[2].parse().unwrap())
}

/// Kills the server even when the test fails.
struct Reap(Option<i32>);
impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: kill has no memory effects; the pid is the fake server
            // this test started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

#[test]
fn without_no_daemon_one_shared_server_runs_outside_the_tui_and_outlives_it() {
    let setup = Setup::new();
    let mut first = setup.start_with(&["--style", "codex"], &[SHARED]);
    first.wait_for_output("> ");
    let pid = support::wait_until("the shared server records its pid", || server_pid(&setup));
    let mut reap = Reap(Some(pid));
    assert!(alive(pid));
    assert_ne!(
        session_and_group(pid),
        session_and_group(first.pid()),
        "the server has a session and group of its own"
    );
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(
        String::from_utf8_lossy(&cmdline)
            .contains("app-server\0--listen\0unix://\0--managed-daemon")
    );

    // A second TUI of the same CODEX_HOME joins it.
    let mut second = setup.start_with(&["--style", "codex"], &[SHARED]);
    second.wait_for_output("> ");
    assert_eq!(server_pid(&setup), Some(pid));

    first.send("exit");
    first.wait_exit();
    second.send("exit");
    second.wait_exit();
    std::thread::sleep(Duration::from_millis(100));
    assert!(alive(pid), "the server outlives every TUI");
    // SAFETY: as in Reap.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    support::wait_until("SIGTERM ends the server", || (!alive(pid)).then_some(()));
    reap.0 = None;
}

#[test]
fn with_no_daemon_no_server_is_started_and_help_offers_the_flag() {
    let setup = Setup::new();
    let mut agent = setup.start_with(&["--style", "codex", "--no-daemon"], &[SHARED]);
    agent.wait_for_output("> ");
    agent.send("hi");
    agent.wait_for_output("answer: hi");
    assert_eq!(server_pid(&setup), None);
    let help = setup
        .command(&["--style", "codex", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--no-daemon"));
    let old = setup
        .command(&["--style", "codex", "--help"])
        .env("FAKE_AGENT_CODEX_NO_DAEMON_HELP", "0")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&old.stdout).contains("--no-daemon"));
}
