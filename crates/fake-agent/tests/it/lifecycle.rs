//! Starting, failing and ending: the knobs for broken starts, `crash`, and
//! the signals hangar sends when it closes a session.

use crate::support;

use support::{Setup, read_jsonl, wait_for_lines, wait_until};

const ID: &str = "9a3e7c10-55b2-4d8e-a1f4-3b2c1d0e9f88";

#[test]
fn expired_auth_prints_the_login_error_and_exits_1() {
    let setup = Setup::new();
    let mut agent = setup.start_with(&["--session-id", ID], &[("FAKE_AGENT_FAIL", "auth")]);
    assert_eq!(agent.wait_exit().code(), Some(1));
    let out = agent.wait_for_output("Please run /login");
    assert!(out.starts_with(
        "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\
         \"message\":\"OAuth token has expired\"}}\n"
    ));
    assert!(
        !setup.claude_transcript(ID).exists(),
        "a failed start writes no transcript"
    );
}

#[test]
fn the_exit_knob_exits_at_start_with_that_code() {
    let setup = Setup::new();
    let mut agent = setup.start_with(&[], &[("FAKE_AGENT_FAIL", "exit:42")]);
    assert_eq!(agent.wait_exit().code(), Some(42));
}

#[test]
fn a_malformed_knob_is_refused_with_its_name() {
    let setup = Setup::new();
    let mut agent = setup.start_with(&[], &[("FAKE_AGENT_FAIL", "maybe")]);
    assert_eq!(agent.wait_exit().code(), Some(2));
    wait_until("stderr names the knob", || {
        agent.stderr().contains("FAKE_AGENT_FAIL").then_some(())
    });
}

#[test]
fn crash_exits_with_the_code_given_after_recording_the_line() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.send("crash 3");
    assert_eq!(agent.wait_exit().code(), Some(3));
    let lines = read_jsonl(&setup.claude_transcript(ID));
    let last = lines.last().unwrap();
    assert_eq!(last["message"]["content"], "crash 3");
}

#[test]
fn exit_ends_the_agent_with_code_0() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.send("exit");
    assert_eq!(agent.wait_exit().code(), Some(0));
    assert_eq!(
        read_jsonl(&setup.claude_transcript(ID)).last().unwrap()["reason"],
        "exit"
    );
}

fn signal_exits_cleanly(sig: i32, name: &str) {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.wait_for_output("> ");
    agent.signal(sig);
    let status = agent.wait_exit();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let lines = read_jsonl(&setup.claude_transcript(ID));
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "system");
    assert_eq!(last["subtype"], "fake-agent-exit");
    assert_eq!(last["signal"], name);
}

#[test]
fn sigterm_exits_cleanly_after_recording_the_exit() {
    signal_exits_cleanly(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sighup_exits_like_sigterm() {
    signal_exits_cleanly(libc::SIGHUP, "SIGHUP");
}

#[test]
fn sigterm_during_a_slow_turn_still_exits_cleanly() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.send("slow 60000 never");
    agent.wait_for_output("working...");
    agent.signal(libc::SIGTERM);
    assert_eq!(agent.wait_exit().code(), Some(0));
}

#[test]
fn an_ignored_sigterm_is_recorded_and_the_agent_keeps_answering() {
    let setup = Setup::new();
    let mut agent = setup.start_with(&["--session-id", ID], &[("FAKE_AGENT_IGNORE_SIGTERM", "1")]);
    agent.wait_for_output("> ");
    agent.signal(libc::SIGTERM);
    wait_for_lines(
        &setup.claude_transcript(ID),
        "the ignored SIGTERM is recorded",
        |l| {
            l.last()
                .is_some_and(|e| e["subtype"] == "fake-agent-signal-ignored")
        },
    );
    agent.send("still here");
    agent.wait_for_output("answer: still here");
    assert!(agent.try_status().is_none());
    agent.signal(libc::SIGKILL);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&agent.wait_exit()),
        Some(libc::SIGKILL)
    );
}

#[test]
fn a_start_delay_still_ends_with_the_banner() {
    let setup = Setup::new();
    let agent = setup.start_with(
        &["--session-id", ID],
        &[("FAKE_AGENT_START_DELAY_MS", "50")],
    );
    agent.wait_for_output(&format!("fake-agent claude session {ID}\n> "));
}

#[test]
fn version_prints_the_name_and_version() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--version"]);
    assert_eq!(agent.wait_exit().code(), Some(0));
    let out = agent.wait_for_output("\n");
    assert_eq!(
        out,
        format!("hangar-fake-agent {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn session_id_with_resume_is_refused_like_claude_code() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID, "--resume", ID]);
    assert_eq!(agent.wait_exit().code(), Some(2));
}

/// Regression: closing the terminal made the agent panic (exit 101) while
/// printing its error to the dead terminal, and could record two exit lines.
#[test]
fn closing_its_terminal_exits_cleanly_with_one_exit_line() {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let setup = Setup::new();
    let (mut master, slave) = open_pty();
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(master.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hangar-fake-agent"));
    cmd.args(["--session-id", ID])
        .env_clear()
        .env("HOME", &setup.home)
        .current_dir(&setup.cwd)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    // SAFETY: only async-signal-safe calls between fork and exec. The new
    // session makes the PTY the agent's controlling terminal, as in hangar.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    let mut agent = support::Agent::spawn(cmd);

    let mut screen = Vec::new();
    wait_until("the prompt is on the terminal", || {
        let mut buf = [0u8; 1024];
        if let Ok(n) = master.read(&mut buf) {
            screen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&screen)
            .contains("> ")
            .then_some(())
    });
    master.write_all(b"hi\n").unwrap();
    wait_until("the answer is on the terminal", || {
        let mut buf = [0u8; 1024];
        if let Ok(n) = master.read(&mut buf) {
            screen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&screen)
            .contains("answer: hi")
            .then_some(())
    });
    drop(master);

    assert_eq!(agent.wait_exit().code(), Some(0));
    let lines = read_jsonl(&setup.claude_transcript(ID));
    let exits = lines
        .iter()
        .filter(|l| l["subtype"] == "fake-agent-exit")
        .count();
    assert_eq!(exits, 1, "{lines:#?}");
    assert_eq!(lines.last().unwrap()["subtype"], "fake-agent-exit");

    /// A PTY pair opened close-on-exec from the start: an `openpty` master
    /// leaks into every process the parallel tests fork, and a leaked master
    /// keeps the terminal from ever hanging up.
    fn open_pty() -> (std::fs::File, OwnedFd) {
        // SAFETY: plain calls on the descriptor posix_openpt returns; ptsname_r
        // writes a NUL-terminated name within the buffer it is given.
        unsafe {
            let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(
                master >= 0,
                "posix_openpt: {}",
                std::io::Error::last_os_error()
            );
            let master = OwnedFd::from_raw_fd(master);
            assert_eq!(libc::grantpt(master.as_raw_fd()), 0);
            assert_eq!(libc::unlockpt(master.as_raw_fd()), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(
                libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()),
                0
            );
            let slave = libc::open(
                name.as_ptr(),
                libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
            );
            assert!(
                slave >= 0,
                "open slave: {}",
                std::io::Error::last_os_error()
            );
            (std::fs::File::from(master), OwnedFd::from_raw_fd(slave))
        }
    }
}
